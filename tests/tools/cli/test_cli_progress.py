"""Progress of long work on a terminal (tools/cli/progress.py): a bar on stderr when it is
a terminal (a real pty, a real process: the terminal is the boundary tested), nothing extra
when stderr is piped or with --json."""
from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

from gitremote import cli

from cardmem.tools.cli.progress import Bars, bar, shown

GIT_ENV = {"GIT_AUTHOR_NAME": "Tess", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "Tess", "GIT_COMMITTER_EMAIL": "t@example.com"}


def on_terminal(*args: str, env: dict[str, str] | None = None, timeout: float = 60,
                python: bool = False, shown=None) -> tuple[int, str, str]:
    """`cardmem ARGS` (python: `python ARGS`) with stderr on a pty (a terminal) and stdout
    on a pipe: its exit code, stdout and what the terminal showed. shown(text) is called
    with what the terminal showed so far, as it grows."""
    leader, follower = pty.openpty()
    argv = [sys.executable, *args] if python else [sys.executable, "-m", "cardmem.tools.cli", *args]
    proc = subprocess.Popen(argv,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=follower,
                            env={**os.environ, **GIT_ENV, **(env or {})})
    os.close(follower)
    shown_, chunks = b"", []
    while True:
        ready, _, _ = select.select([leader], [], [], timeout)
        if not ready:
            proc.kill()
            raise AssertionError("no end within the timeout")
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the process closed the terminal
            break
        if not data:
            break
        chunks.append(data)
        if shown is not None:
            shown(b"".join(chunks).decode(errors="replace"))
    shown_ = b"".join(chunks)
    os.close(leader)
    out = proc.stdout.read().decode()
    return proc.wait(timeout=timeout), out, shown_.decode(errors="replace")


def piped(*args: str) -> tuple[int, str, str]:
    ran = subprocess.run([sys.executable, "-m", "cardmem.tools.cli", *args], text=True,
                         capture_output=True, env={**os.environ, **GIT_ENV}, timeout=60)
    return ran.returncode, ran.stdout, ran.stderr


def _memory_json(tmp: Path, n: int) -> Path:
    src = tmp / "memory.json"
    src.write_text("\n".join(json.dumps({"type": "entity", "name": f"Service {i}",
                                         "entityType": "service",
                                         "observations": [f"runs job {i}"]})
                             for i in range(n)) + "\n")
    return src


def test_import_draws_a_bar_on_a_terminal_and_nothing_when_piped(tmp_path: Path) -> None:
    src = _memory_json(tmp_path, 40)
    for name in ("a", "b", "c"):
        assert cli("init", str(tmp_path / name))[0] == 0
    code, out, term = on_terminal("import", "mcp-memory", str(src), "--store", str(tmp_path / "a"))
    assert code == 0, term
    assert "cardmem: writing cards" in term and "40/40" in term, term
    assert "import mcp-memory" in out

    code, _, err = piped("import", "mcp-memory", str(src), "--store", str(tmp_path / "b"))
    assert code == 0 and err == ""
    code, _, err = piped("import", "mcp-memory", str(src), "--store", str(tmp_path / "b"),
                         "--progress")  # asked for: drawn on a pipe too (the label, once)
    assert code == 0 and "cardmem: reading mcp-memory" in err, err

    code, out, term = on_terminal("import", "mcp-memory", str(src), "--json",
                                  "--store", str(tmp_path / "c"))
    assert code == 0 and "cardmem: writing" not in term and "reading" not in term, term
    assert len(json.loads(out)["cards"]) == 40


def test_the_drawer_follows_phases_and_is_silent_when_off(capsys) -> None:
    with Bars(False) as progress:
        progress("indexing", 0, 3)
        progress("indexing", 3, 3)
    assert capsys.readouterr().err == ""
    assert shown(as_json=True) is False and shown(wanted=True) is True
    assert bar(as_json=True).on is False
    drawn = Bars(True)
    drawn("embedding", 0, None)  # no total yet: a counter
    assert drawn._bar is not None and drawn._bar.length is None
    drawn("embedding", 5, 10)  # a total now: a new bar
    assert drawn._bar.length == 10
    drawn("embedding", 10, 10)  # done: closed
    assert drawn._bar is None
    err = capsys.readouterr().err
    assert "cardmem: embedding" in err


def test_a_write_waiting_for_the_lock_says_who_holds_it(tmp_path: Path) -> None:
    import fcntl
    import threading

    from cardmem.store.git.writer import LOCK_FILE, _mark_holder

    store = tmp_path / "s"
    assert cli("init", str(store))[0] == 0
    fd = os.open(store / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    _mark_holder(fd)
    released = threading.Event()

    def release(term: str = "waiting") -> None:  # closing the file releases the lock
        if "waiting" in term and not released.is_set():
            released.set()
            os.close(fd)

    threading.Timer(8, release).start()  # at the latest (the store waits 10 s)
    code, out, term = on_terminal("new", "reference/waited", "--body", "x", "--store", str(store),
                                  shown=release)
    assert code == 0, term
    assert f"waiting for the store's lock, held by pid {os.getpid()} (cardmem" in term, term
    assert "created reference/waited" in out

    fd = os.open(store / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    threading.Timer(3, os.close, [fd]).start()  # --json: nothing to see, so a fixed wait
    code, out, term = on_terminal("new", "reference/waited-json", "--body", "x", "--json",
                                  "--store", str(store))
    assert code == 0 and "waiting" not in term, term
    assert json.loads(out)["id"] == "reference/waited-json"


def test_the_first_model_load_is_said_on_a_terminal_only(tmp_path: Path) -> None:
    """The console script's lean search (tools/entry.py) with no model cache yet: one line
    before the seconds of the first load; none with --json, none once the cache is built."""
    store = tmp_path / "s"
    assert cli("init", str(store))[0] == 0
    said = "loading the search model, once"

    def search(cache: Path, *more: str) -> tuple[int, str, str]:
        env = {"XDG_CACHE_HOME": str(cache), "CARDMEM_SEMANTIC": "on"}
        # A first load builds the model's cache (~2 s CPU alone): at load ~25 it went past
        # 60 s without a byte on the terminal; the bound is for a hang.
        return on_terminal_script("search", "deploy", "--store", str(store), *more, env=env,
                                  timeout=300)

    code, out, term = search(tmp_path / "cache-a", "--json")
    assert code == 0 and said not in term, term
    assert json.loads(out)["semantic"]["status"] == "on"  # the model did load
    code, _, term = search(tmp_path / "cache-a")
    assert code == 0 and said not in term, term  # cached now: no seconds to warn of
    code, _, term = search(tmp_path / "cache-b")
    assert code == 0 and said in term, term


def on_terminal_script(*args: str, env: dict[str, str], timeout: float = 60) -> tuple[int, str, str]:
    """As on_terminal, through the console script's main (tools/entry.py)."""
    code = "import sys; from cardmem.tools.entry import main; sys.argv[0] = 'cardmem'; main()"
    return on_terminal("-c", code, *args, env=env, python=True, timeout=timeout)


def test_doctor_draws_its_checks_on_a_terminal_only(tmp_path: Path) -> None:
    store = tmp_path / "s"
    assert cli("init", str(store))[0] == 0
    env = {"HOME": str(tmp_path)}
    code, out, term = on_terminal("doctor", "--store", str(store), env=env)
    assert "cardmem: checking" in term and "ok       git" in out, term
    code, out, term = on_terminal("doctor", "--json", "--store", str(store), env=env)
    assert "checking" not in term and json.loads(out)


def test_maintain_draws_its_passes_on_a_terminal_only(tmp_path: Path) -> None:
    """maintain on a terminal shows what it is checking (seconds at 10k cards); nothing
    extra with --json or on a pipe."""
    store = tmp_path / "s"
    assert cli("init", str(store))[0] == 0
    for i in range(30):
        assert cli("new", f"notes/n{i}", "--title", f"Note {i}", "--body",
                   f"Service {i} listens on port {8000 + i}.", "--store", str(store))[0] == 0
    code, out, term = on_terminal("maintain", "--store", str(store))
    assert code == 0 and "cardmem: checking the store" in term, term
    code, out, term = on_terminal("maintain", "--json", "--store", str(store))
    assert code == 0 and "checking" not in term and "findings" in json.loads(out), term
    code, _, err = piped("maintain", "--store", str(store))
    assert code == 0 and "checking" not in err, err
