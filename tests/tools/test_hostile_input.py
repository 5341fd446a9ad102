"""Hostile and careless ids through every surface (issue 13, defects 1-6): a card id is
never a git pathspec, no traceback or hang, nothing outside the store touched, and
nothing but the card committed."""
from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest
from gitremote import cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cardmem.store.errors import CardmemError
from cardmem.store.cards.paths import normalize_id
from cardmem.store.store import Store, init
from cardmem.store.git.writer import Message


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=True).stdout


def staged(root: Path) -> list[str]:
    return [p for p in git(root, "diff", "--cached", "--name-only", "-z").split("\0") if p]


def last_commit_paths(root: Path) -> list[str]:
    out = git(root, "diff-tree", "--no-commit-id", "--name-only", "-z", "-r", "--root", "HEAD")
    return [p for p in out.split("\0") if p]


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file's bytes below folder, .git and .cardmem left out."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if d not in (".git", ".cardmem")]
        for f in filenames:
            p = Path(dirpath, f)
            out[str(p.relative_to(folder))] = b"link" if p.is_symlink() else p.read_bytes()
    return out


class Bystanders:
    """A store with what a careless commit would sweep in: an untracked .env and notes,
    a card with an uncommitted edit; and a folder beside the store that must stay as it is."""

    def __init__(self, tmp: Path) -> None:
        self.store = init(tmp / "s")[0]
        self.root = self.store.root
        self.outside = tmp / "outside"
        self.outside.mkdir()
        (self.outside / "x.md").write_text("outside\n")
        self.store.commit({"reference/draft.md": b"# Draft\n", "memories/notes.md": b"# n\n"},
                          Message("seed", source="test"), agent=False)
        (self.root / ".env").write_text("AWS_SECRET_ACCESS_KEY=abc\n")
        (self.root / "notes.txt").write_text("draft\n")
        (self.root / "reference" / "draft.md").write_text("# Draft\n\nunsaved edit\n")
        (self.root / "memories" / "notes.md").write_text("# n\n\nunsaved edit\n")
        self.status = git(self.root, "status", "--porcelain=v1", "-z", "--untracked-files=all")

    def check(self, head: str, outside: dict[str, bytes], wrote: str | None,
              text: str | None = None) -> None:
        """Since head: nothing committed (wrote None), or the write that was reported, and
        seen to have happened: one commit of wrote alone, the file in the tree (holding
        text), the same blob in git's index and in the commit, the card in the search
        index. Either way nothing else staged or changed, nothing outside touched."""
        now = git(self.root, "rev-parse", "HEAD")
        if wrote is None:
            assert now == head, f"a commit where no write was reported: {last_commit_paths(self.root)}"
        else:
            assert now != head, f"{wrote!r} reported written, but nothing was committed"
            assert last_commit_paths(self.root) == [wrote]
            assert git(self.root, "rev-parse", "HEAD~1") == head, "more than one commit"
            self._written(wrote, text)
        assert staged(self.root) == []
        status = git(self.root, "status", "--porcelain=v1", "-z", "--untracked-files=all")
        assert status == self.status, status  # the bystanders are still uncommitted
        assert snapshot(self.outside) == outside

    def _written(self, rel: str, text: str | None) -> None:
        from cardmem.store.index.db import Index

        path = self.root / rel
        assert path.is_file() and not path.is_symlink(), f"{rel!r} reported written, no file"
        if text is not None:
            assert text in path.read_text(encoding="utf-8"), path.read_text(encoding="utf-8")
        on_disk = git(self.root, "hash-object", "--no-filters", "--", str(path)).strip()
        lit = ("--literal-pathspecs",)
        in_index = git(self.root, *lit, "ls-files", "-s", "-z", "--", rel).split("\0")[0]
        in_commit = git(self.root, *lit, "ls-tree", "-z", "HEAD", "--", rel).split("\0")[0]
        assert in_index.split()[1:2] == [on_disk], (rel, in_index, on_disk)
        assert in_commit.split()[2:3] == [on_disk], (rel, in_commit, on_disk)
        with Index(self.store) as idx:
            idx.refresh()
            assert rel.removesuffix(".md") in idx.ids(), f"{rel!r} is not in the search index"

    def before(self) -> tuple[str, dict[str, bytes]]:
        return git(self.root, "rev-parse", "HEAD"), snapshot(self.outside)


@pytest.fixture
def by(tmp_path: Path) -> Bystanders:
    return Bystanders(tmp_path)


def one_line(err: str) -> None:
    assert err.count("\n") == 1 and err.startswith("cardmem: "), err


def mcp(store: Store, name: str, args: dict | None = None):
    """One MCP tool call in-process, through the SDK's client (as test_mcp_server does)."""
    import anyio
    from mcp import Client

    from cardmem.tools.agents.mcp_server import build_server

    async def go():
        async with Client(build_server(store)) as client:
            return await client.call_tool(name, args or {})

    return anyio.run(go)


def mcp_error(result) -> str:
    assert result.is_error, result
    text = result.content[0].text
    assert "Traceback" not in text and 'File "' not in text
    return text


# --- defect 1: pathspec magic ---------------------------------------------------------

MAGIC = [":!*", ":(exclude)x", ":^x", ":(glob)**/*", ":(top)t", ":/z", "reference/*",
         "reference/[d]raft-2", "reference/?", ":(icase)reference/draft", "*"]


@pytest.mark.parametrize("cid", MAGIC)
def test_a_pathspec_id_commits_its_own_card_and_nothing_else(by: Bystanders, cid: str) -> None:
    head, outside = by.before()
    code, out, err = cli("new", cid, "--body", "x", "--store", str(by.root))
    assert (code, out, err) == (0, f"created {cid}\n", "")
    assert (by.root / f"{cid}.md").is_file()
    by.check(head, outside, f"{cid}.md")
    code, out, _ = cli("show", cid, "--store", str(by.root))
    assert code == 0 and out.endswith("x\n")


def test_the_memory_tool_takes_a_bracket_path_as_itself(by: Bystanders) -> None:
    from cardmem.tools.agents.memory_tool import memory_tool

    head, outside = by.before()
    memory_tool(by.store).call({"command": "create", "path": "/memories/[n]otes.md",
                                "file_text": "bracketed\n"})
    by.check(head, outside, "memories/[n]otes.md", "bracketed")


def test_a_glob_id_does_not_stage_other_edits(by: Bystanders) -> None:
    head, outside = by.before()
    by.store.new("reference/*", body="x")
    by.check(head, outside, "reference/*.md")


# --- defect 2: one line, never a traceback --------------------------------------------

@pytest.mark.parametrize("cid, why", [
    ("reference/" + "é" * 127, "has a file or folder name of 257 bytes"),
    ("reference/ok.md/x", "reference/ok.md is a file, not a folder"),
    ("reference/bad-\udcff", "contains bytes that are not UTF-8"),
])
def test_ids_the_file_system_cannot_take_are_one_line(by: Bystanders, cid: str, why: str) -> None:
    by.store.new("reference/ok", body="x")
    head, outside = by.before()
    for command in (["new", cid], ["show", cid], ["log", cid]):
        code, out, err = cli(*command, "--store", str(by.root))
        assert code != 0 and out == "", (command, out)
        one_line(err)
        assert why in err, err
    by.check(head, outside, None)


@pytest.mark.parametrize("n", range(120, 127))
def test_a_name_up_to_the_file_system_limit_is_written(by: Bystanders, n: int) -> None:
    # "é" is two bytes: 240-252 byte names plus ".md", to which the temp file adds more
    cid = "reference/" + "é" * n
    code, out, err = cli("new", cid, "--body", "x", "--store", str(by.root))
    assert (code, err) == (0, ""), err
    assert cli("show", cid, "--store", str(by.root))[0] == 0


def test_undecodable_titles_and_bodies_are_one_line(by: Bystanders) -> None:
    head, outside = by.before()
    for args in (["new", "reference/t", "--title", "bad \udcff"],
                 ["new", "reference/b", "--body", "bad \udcff"],
                 ["remember", "bad \udcff title"], ["remember", "fine", "--body", "\udcff"]):
        code, _, err = cli(*args, "--store", str(by.root))
        assert code != 0
        one_line(err)
        assert "not UTF-8" in err
    by.check(head, outside, None)


def test_an_unforeseen_os_error_is_one_line_from_the_console_script(
        by: Bystanders, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    import errno
    import sys

    from cardmem.tools.cli import group as climod

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device", str(by.root / "reference"))

    monkeypatch.setattr(Store, "new", full)
    monkeypatch.setattr(sys, "argv", ["cardmem", "new", "reference/x", "--store", str(by.root)])
    with pytest.raises(SystemExit) as exc:
        climod.main()
    assert exc.value.code == 1
    err = capsys.readouterr().err
    one_line(err)
    assert "No space left on device" in err


# --- defect 3: a named pipe where a card should be -------------------------------------

def _within(seconds: float, fn):
    """fn's result, or a failure if it has not returned in time (it would hang)."""
    box: dict[str, object] = {}

    def go() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        # unblock the reader so the thread can end: open the pipe's other end
        for p in _PIPES:
            try:
                fd = os.open(p, os.O_WRONLY | os.O_NONBLOCK)
                os.close(fd)
            except OSError:
                pass
        pytest.fail(f"did not return within {seconds} s (blocked on a named pipe)")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]


_PIPES: list[str] = []


@pytest.fixture
def piped(by: Bystanders) -> Bystanders:
    by.store.new("reference/ok", body="x")
    pipe = by.root / "reference" / "pipe.md"
    os.mkfifo(pipe)
    _PIPES.append(str(pipe))
    return by


def test_map_skips_a_named_pipe_and_says_so(piped: Bystanders) -> None:
    code, out, err = _within(10, lambda: cli("map", "--store", str(piped.root)))
    assert code == 0 and "reference/ok" in out
    assert "reference/pipe.md: skipped: not a regular file (a named pipe)" in err


def test_doctor_reports_a_named_pipe(piped: Bystanders) -> None:
    code, out, _ = _within(20, lambda: cli("doctor", "--store", str(piped.root)))
    assert code == 1 and "pipe.md: skipped: not a regular file (a named pipe)" in out


def test_mcp_memory_map_and_read_card_do_not_wait_on_a_pipe(piped: Bystanders) -> None:
    res = _within(20, lambda: mcp(piped.store, "memory_map"))
    assert not res.is_error
    data = res.structured_content
    assert [e["id"] for e in data["entries"]] == ["memories/notes", "reference/draft", "reference/ok"]
    assert data["unreadable"] == 1
    assert "not a regular" in mcp_error(_within(20, lambda: mcp(
        piped.store, "read_card", {"id": "reference/pipe"})))


# --- defect 4: locks that stop every write ---------------------------------------------

@pytest.mark.parametrize("lock", ["index.lock", "HEAD.lock", "refs/heads/main.lock"])
def test_doctor_names_each_lock_a_commit_needs(by: Bystanders, lock: str) -> None:
    (by.root / ".git" / lock).write_text("")
    code, out, _ = cli("doctor", "--store", str(by.root))
    assert code == 1
    assert f"PROBLEM  {by.root / '.git' / lock}: exists: a git process is running" in out
    code, _, err = cli("new", "reference/blocked", "--store", str(by.root))
    assert code != 0 and lock in err  # the write it warns about


# --- defect 5: .md stripped once -------------------------------------------------------

def test_an_id_ending_in_md_twice_is_refused_not_written_elsewhere(by: Bystanders) -> None:
    head, outside = by.before()
    code, _, err = cli("new", "reference/notes.md.md", "--store", str(by.root))
    assert code == 2 and "ends in .md twice" in err
    one_line(err)
    assert not (by.root / "reference" / "notes.md").exists()
    by.check(head, outside, None)
    assert normalize_id("reference/notes.md") == normalize_id(normalize_id("reference/notes.md"))


def test_a_file_named_md_md_is_reported_by_map(by: Bystanders) -> None:
    (by.root / "reference" / "odd.md.md").write_text("# odd\n")
    code, out, err = cli("map", "--store", str(by.root))
    assert code == 0 and "odd" not in out
    assert "odd.md.md: skipped: ends in .md.md" in err


# --- defect 6: a link into a hidden folder ---------------------------------------------

@pytest.mark.parametrize("hidden", [".git/y.md", ".cardmem/y.md"])
def test_a_link_into_a_hidden_folder_is_not_served(by: Bystanders, hidden: str) -> None:
    target = by.root / hidden
    target.parent.mkdir(exist_ok=True)
    target.write_text("---\ntitle: hidden secret\n---\nsecret-bytes\n")
    (by.root / "reference" / "x.md").symlink_to(Path("..") / hidden)
    code, out, err = cli("show", "reference/x", "--store", str(by.root))
    assert code == 2 and "secret-bytes" not in out
    one_line(err)
    assert "hidden folder" in err
    code, out, err = cli("map", "--store", str(by.root))
    assert "hidden secret" not in out and "reference/x.md: skipped" in err
    code, out, _ = cli("search", "secret", "--json", "--store", str(by.root))
    assert "reference/x" not in out
    assert "hidden folder" in mcp_error(mcp(by.store, "read_card", {"id": "reference/x"}))


# --- properties: any id, every surface ---------------------------------------------------

# Whole of Unicode (surrogates, controls, NUL included), with the pieces that matter here
# drawn often: separators, dots, pathspec magic, globs, hidden names, .md.
PIECES = ["/", "//", "..", ".", ":", "!", "^", "*", "?", "[", "]", "(glob)", "(exclude)",
          "(top)", "(icase)", "(attr:x)", "\\", ".md", ".git", ".cardmem", "~", "\x00", "\n",
          "-", " ", "reference", "memories", "é" * 130, "../outside/x",
          "\udcff", "\U0001f600", "\u202e", "\ufeff"]  # undecodable byte, astral, bidi, BOM
MAGIC_PREFIX = st.sampled_from(["", "", ":", ":!", ":^", ":/", ":(glob)", ":(exclude)",
                                ":(top)", ":(icase)", ":(literal)", "reference/", "../", "/"])
IDS = st.tuples(MAGIC_PREFIX, st.lists(st.one_of(
    st.sampled_from(PIECES), st.text(st.characters(codec=None, exclude_categories=()),
                                     max_size=6)), min_size=1, max_size=6)).map(
    lambda t: t[0] + "".join(t[1]))
FAST = settings(max_examples=30, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


def _expected_rel(raw: str) -> str | None:
    try:
        return normalize_id(raw) + ".md"
    except CardmemError:
        return None


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Bystanders:
    return Bystanders(tmp_path_factory.mktemp("prop"))


@FAST
@given(raw=IDS)
def test_new_and_show_of_any_id(shared: Bystanders, raw: str) -> None:
    head, outside = shared.before()
    code, _, err = cli("new", "--store", str(shared.root), "--body", "x", "--", raw)
    if code:
        one_line(err)
    wrote = None if code else _expected_rel(raw)
    assert code or wrote, f"created {raw!r}, an id normalize_id refuses"
    shared.check(head, outside, wrote)
    head = git(shared.root, "rev-parse", "HEAD")
    code, _, err = cli("show", "--store", str(shared.root), "--", raw)
    if code:
        one_line(err)
    shared.check(head, outside, None)


@FAST
@given(title=IDS)
def test_remember_of_any_title(shared: Bystanders, title: str) -> None:
    head, outside = shared.before()
    code, out, err = cli("remember", "--store", str(shared.root), "--body", "x", "--", title)
    if code:
        one_line(err)
        shared.check(head, outside, None)
    else:
        cid = out.split(" ", 1)[1].strip().removeprefix("to ")
        shared.check(head, outside, cid + ".md")


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(raw=IDS)
def test_mcp_read_card_and_remember_of_any_id(shared: Bystanders, raw: str) -> None:
    head, outside = shared.before()
    res = mcp(shared.store, "read_card", {"id": raw})
    assert "Traceback" not in res.content[0].text
    shared.check(head, outside, None)
    res = mcp(shared.store, "remember", {"title": raw, "body": "x"})
    assert "Traceback" not in res.content[0].text
    if res.is_error:
        shared.check(head, outside, None)
    else:
        shared.check(head, outside, res.structured_content["id"] + ".md")


@FAST
@given(raw=IDS)
def test_memory_tool_create_of_any_path(shared: Bystanders, raw: str) -> None:
    from anthropic.lib.tools import ToolError

    from cardmem.tools.agents.memory_tool import memory_tool

    head, outside = shared.before()
    path = f"/memories/{raw}.md"
    try:
        said = memory_tool(shared.store).call({"command": "create", "path": path,
                                               "file_text": "x\n"})
    except ToolError as exc:
        assert "Traceback" not in str(exc)
        shared.check(head, outside, None)
        return
    assert said.startswith("File created successfully"), said
    shared.check(head, outside, _expected_rel(f"memories/{raw}"), "x\n")


def test_the_property_ids_reach_the_gate_in_all_their_forms() -> None:
    """The strategy draws what the properties are about, not only harmless letters."""
    from hypothesis import find

    find(IDS, lambda s: s.startswith(":") and "*" in s, settings=settings(max_examples=500))
    find(IDS, lambda s: any("\ud800" <= c <= "\udfff" for c in s),
         settings=settings(max_examples=500))
    find(IDS, lambda s: any(ord(c) > 0xFFFF for c in s), settings=settings(max_examples=500))


def test_store_new_refuses_nothing_it_then_cannot_read(tmp_path: Path) -> None:
    store = Store(init(tmp_path / "s")[0].root)
    for cid in MAGIC:
        store.new(cid, body="x")
        assert store.read(cid).body.strip() == "x"
