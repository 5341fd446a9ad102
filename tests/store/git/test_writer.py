"""Writes: one lock, atomic files, one commit per logical change, nothing else swept in."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import GIT_ID

from cardmem.store.cards import card as cardlib
from cardmem.store.git import runner as git
from cardmem.store.errors import CardmemError, StoreBusy
from cardmem.store.store import Store, init
from cardmem.store.git.writer import AS_IS, Message, commit_changes

def g(root: Path, *args: str) -> str:
    """Raw git, as a person at a terminal would run it."""
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=True, env={**os.environ, **GIT_ID}).stdout


def count(root: Path) -> int:
    return int(g(root, "rev-list", "--count", "HEAD"))


def trailers(root: Path, rev: str = "HEAD") -> dict[str, str]:
    out = g(root, "log", "-1", "--format=%(trailers:only,unfold)", rev)
    return dict(ln.split(": ", 1) for ln in out.splitlines() if ln.strip())


def test_init_makes_a_store_with_one_commit(tmp_path: Path) -> None:
    store, created = init(tmp_path / "s")
    assert created
    assert count(store.root) == 1
    assert sorted(g(store.root, "ls-files").split()) == [".gitignore", "cardmem.toml"]
    assert ".cardmem/" in (store.root / ".gitignore").read_text()
    assert trailers(store.root) == {"Cardmem-Source": "init"}


def test_one_commit_per_logical_change_with_trailers(store: Store) -> None:
    base = count(store.root)
    store.new("reference/a", title="A", body="first")
    assert count(store.root) == base + 1
    assert g(store.root, "log", "-1", "--format=%s") == "new: reference/a\n"
    assert trailers(store.root) == {"Cardmem-Source": "cli"}
    assert g(store.root, "show", "--format=", "--name-only", "HEAD").split() == ["reference/a.md"]

    store.update_text("reference/a", lambda t: cardlib.append_history(t, "2026-11-30 · x"),
                      "history: reference/a", source="stop-hook", session="0a6a12f",
                      lines=["reference/a  x"])
    assert count(store.root) == base + 2
    msg = g(store.root, "log", "-1", "--format=%B")
    assert msg.startswith("history: reference/a\n\nreference/a  x\n")
    assert trailers(store.root) == {"Cardmem-Source": "stop-hook", "Cardmem-Session": "0a6a12f"}

    # One logical change over several cards is still one commit.
    sha = commit_changes(store.root, {"reference/b.md": b"b\n", "reference/c.md": b"c\n",
                                      "reference/a.md": None},
                         Message("compound: 3 cards", ["b", "c"], "compound"), agent=True)
    assert sha == g(store.root, "rev-parse", "HEAD").strip()
    assert count(store.root) == base + 3
    assert sorted(g(store.root, "show", "--format=", "--name-only", "HEAD").split()) == [
        "reference/a.md", "reference/b.md", "reference/c.md"]
    assert not (store.root / "reference" / "a.md").exists()


def test_a_write_that_changes_nothing_makes_no_commit(store: Store) -> None:
    store.new("reference/a", body="same")
    base = count(store.root)
    assert store.update_text("reference/a", lambda t: t, "noop") is None
    text = (store.root / "reference/a.md").read_bytes()
    assert commit_changes(store.root, {"reference/a.md": text}, Message("same"), agent=False) is None
    assert count(store.root) == base


def test_agent_writes_have_the_agent_identity(store: Store) -> None:
    store.new("reference/by-agent", body="x", agent=True, source="mcp")
    store.new("reference/by-person", body="y")
    agent = g(store.root, "log", "--author=cardmem-agent", "--format=%s").splitlines()
    assert agent == ["new: reference/by-agent"]
    assert g(store.root, "log", "-1", "--format=%an <%ae> / %cn <%ce>", "HEAD~1") == \
        "cardmem-agent <agent@cardmem.invalid> / cardmem-agent <agent@cardmem.invalid>\n"


def test_human_writes_use_the_users_git_identity(store: Store) -> None:
    g(store.root, "config", "user.name", "Mara Okonkwo")
    g(store.root, "config", "user.email", "mara@example.com")
    store.new("reference/mine", body="x")
    assert g(store.root, "log", "-1", "--format=%an <%ae>") == "Mara Okonkwo <mara@example.com>\n"


def test_human_writes_without_any_git_identity_still_commit(store: Store) -> None:
    # The hermetic test config has no user.name/email, as on a fresh machine.
    store.new("reference/fresh", body="x")
    assert g(store.root, "log", "-1", "--format=%an <%ae>") == "cardmem <cardmem@localhost>\n"


def test_users_uncommitted_edits_stay_uncommitted(store: Store) -> None:
    root = store.root
    (root / "reference").mkdir()
    for name in ("tracked", "staged"):
        (root / "reference" / f"{name}.md").write_text(f"{name} v1\n")
    g(root, "add", "reference")
    g(root, "commit", "-q", "-m", "user cards")
    (root / "reference" / "tracked.md").write_text("tracked v2, not staged\n")
    (root / "reference" / "staged.md").write_text("staged v2\n")
    g(root, "add", "reference/staged.md")
    (root / "reference" / "staged.md").write_text("staged v3, on top of the staged v2\n")
    (root / "reference" / "untracked.md").write_text("untracked\n")
    (root / "notes.txt").write_text("not a card either\n")
    status = g(root, "status", "--porcelain")
    staged_blob = g(root, "rev-parse", ":reference/staged.md")

    store.new("reference/new-card", body="from cardmem")
    store.remember("New card", "appended by cardmem")  # reference/new-card again

    assert g(root, "show", "--format=", "--name-only", "HEAD").split() == ["reference/new-card.md"]
    assert g(root, "show", "--format=", "--name-only", "HEAD~1").split() == ["reference/new-card.md"]
    assert g(root, "status", "--porcelain") == status
    assert g(root, "rev-parse", ":reference/staged.md") == staged_blob
    assert (root / "reference" / "tracked.md").read_text() == "tracked v2, not staged\n"
    assert (root / "reference" / "staged.md").read_text() == "staged v3, on top of the staged v2\n"
    assert (root / "reference" / "untracked.md").read_text() == "untracked\n"


def _hold_lock(root: Path) -> subprocess.Popen:
    """Another process holding the store's write lock until its stdin closes."""
    code = ("import sys; from filelock import FileLock; "
            f"l = FileLock({str(root / '.cardmem' / 'write.lock')!r}); l.acquire(); "
            "print('held', flush=True); sys.stdin.read()")
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_store_busy_is_quick_and_clear(store: Store) -> None:
    (store.root / "cardmem.toml").write_text("[store]\nlock_timeout_s = 0.3\n")
    store = Store(store.root)  # re-read the settings
    holder = _hold_lock(store.root)
    try:
        t0 = time.monotonic()
        with pytest.raises(StoreBusy) as exc:
            store.new("reference/blocked", body="x")
        took = time.monotonic() - t0
        assert 0.25 < took < 3, took
        assert "store busy" in str(exc.value) and "try again" in str(exc.value)
        assert exc.value.exit_code == 4
        assert not (store.root / "reference" / "blocked.md").exists()
        cli = subprocess.run([sys.executable, "-m", "cardmem.tools.cli", "new", "reference/b2",
                              "--store", str(store.root)], capture_output=True, text=True)
        assert cli.returncode == 4
        assert cli.stderr.count("\n") == 1 and cli.stderr.startswith("cardmem: ")
        assert "store busy" in cli.stderr
    finally:
        holder.stdin.close()
        holder.wait(10)
    store.new("reference/after", body="the lock is free again")
    assert (store.root / "reference" / "after.md").exists()


def test_stale_index_lock_is_reported_not_deleted(store: Store) -> None:
    lock = store.root / ".git" / "index.lock"
    lock.write_bytes(b"")
    base = count(store.root)
    with pytest.raises(CardmemError) as exc:
        store.new("reference/x", body="x")
    msg = str(exc.value)
    assert "index.lock" in msg and "remove" in msg and "\n" not in msg
    assert lock.exists()
    assert not (store.root / "reference" / "x.md").exists()
    with pytest.raises(CardmemError, match="index.lock"):
        store.revert("HEAD")
    lock.unlink()  # what the person does, having checked no git is running
    store.new("reference/x", body="x")
    assert count(store.root) == base + 1


@pytest.mark.parametrize("lock", ["HEAD.lock", "refs/heads/main.lock"])
def test_stale_ref_locks_are_reported_before_anything_is_written(store: Store, lock: str) -> None:
    path = store.root / ".git" / lock
    path.write_bytes(b"")
    t0 = time.monotonic()
    with pytest.raises(CardmemError) as exc:
        store.new("reference/x", body="x")
    assert time.monotonic() - t0 < 5
    assert exc.value.what == str(path) and "remove the file" in exc.value.why
    assert not (store.root / "reference" / "x.md").exists()
    assert path.exists()


def test_a_lock_held_briefly_by_another_git_is_waited_for(store: Store) -> None:
    """An editor's `git status` holds index.lock for milliseconds: not an error."""
    from cardmem.store.git.writer import INDEX_LOCK_WAIT_S

    lock = store.root / ".git" / "index.lock"
    lock.write_bytes(b"")
    # Gone after a quarter of the writer's wait: a thread, not a child python, whose own
    # start (over a second at load 20) was once longer than the whole wait.
    remover = threading.Timer(INDEX_LOCK_WAIT_S / 4, lock.unlink)
    remover.start()
    store.new("reference/x", body="x")
    remover.join(10)
    assert g(store.root, "log", "-1", "--format=%s") == "new: reference/x\n"


def test_detached_head_is_refused(store: Store) -> None:
    store.new("reference/a", body="a")
    g(store.root, "checkout", "-q", "--detach")
    with pytest.raises(CardmemError) as exc:
        store.new("reference/b", body="b")
    assert "HEAD is detached" in str(exc.value) and "git -C" in str(exc.value)
    assert not (store.root / "reference" / "b.md").exists()
    with pytest.raises(CardmemError, match="detached"):
        store.update_text("reference/a", lambda t: t + "more\n", "edit")
    assert (store.root / "reference" / "a.md").read_text().endswith("a\n")


def test_missing_store_and_not_a_repo(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    for call in (lambda: Store.open(missing),
                 lambda: commit_changes(missing, {"a.md": b"x"}, Message("m"), agent=False)):
        with pytest.raises(CardmemError) as exc:
            call()
        assert str(exc.value) == f"store {missing}: does not exist; run `cardmem init {missing}`"
    assert not missing.exists()
    plain = tmp_path / "plain"
    plain.mkdir()
    for call in (lambda: Store.open(plain),
                 lambda: commit_changes(plain, {"a.md": b"x"}, Message("m"), agent=False)):
        with pytest.raises(CardmemError) as exc:
            call()
        assert "is not a git repository; run `cardmem init" in str(exc.value)
    assert list(plain.iterdir()) == []


def test_atomic_write_keeps_mode_and_leaves_no_temp_files(store: Store) -> None:
    store.new("reference/a", body="a")
    path = store.root / "reference" / "a.md"
    path.chmod(0o600)
    store.update_text("reference/a", lambda t: t + "b\n", "edit")
    assert path.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["a.md"]


def test_update_sees_the_current_text_under_the_lock(store: Store) -> None:
    """The edit function runs under the lock on what is on disk then, not a stale read."""
    store.new("reference/a", body="a")
    (store.root / "reference" / "a.md").write_text("changed by hand\n")
    store.update_text("reference/a", lambda t: t + "appended\n", "edit")
    assert g(store.root, "show", "HEAD:reference/a.md") == "changed by hand\nappended\n"


def test_git_failure_is_one_line(store: Store) -> None:
    with pytest.raises(CardmemError) as exc:
        git.run(store.root, "rev-parse", "--verify", "no-such-ref")
    assert "\n" not in str(exc.value) and str(exc.value).startswith("git rev-parse: ")


def test_a_cli_write_imports_neither_yaml_nor_filelock(store: Store) -> None:
    """Most of a `cardmem new` was importing these (yaml 30-50 ms, filelock 40-140 ms)."""
    code = ("import sys; sys.argv = ['cardmem', 'new', 'reference/lean', '--body', 'x', "
            f"'--store', {str(store.root)!r}]\n"
            "from cardmem.tools.cli.group import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('yaml', 'frontmatter', 'filelock') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.splitlines() == ["created reference/lean", "[]"], proc.stderr


def test_as_is_commits_a_persons_bytes_without_rewriting_them(store: Store) -> None:
    root = store.root
    store.new("reference/a", body="one")
    store.new("reference/gone", body="bye")
    edited = root / "reference" / "a.md"
    edited.write_bytes(b"edited by hand\r\n")
    inode = edited.stat().st_ino
    (root / "reference" / "gone.md").unlink()
    (root / "reference" / "fresh.md").write_text("new by hand\n")

    def changes() -> dict:
        # A save that lands after the caller looked is what gets committed.
        edited.write_bytes(b"saved again\n")
        return {"reference/a.md": AS_IS, "reference/gone.md": AS_IS,
                "reference/fresh.md": AS_IS}

    commit_changes(root, changes, Message("watch: 3 cards edited by hand"), agent=False)
    assert edited.stat().st_ino == inode  # never replaced by the writer
    assert g(root, "show", "HEAD:reference/a.md") == "saved again\n"
    assert g(root, "show", "HEAD:reference/fresh.md") == "new by hand\n"
    assert "reference/gone.md" not in g(root, "ls-files")
    assert g(root, "status", "--porcelain") == ""


def test_an_agent_never_writes_over_a_persons_unsaved_edit(tmp_path: Path) -> None:
    """An agent's write to a card a person changed and has not committed is refused,
    naming the card: appending would sweep the edit into the agent's commit under the
    agent's name, replacing would lose it. A person's own write goes ahead as before."""
    from cardmem.tools.agents.memory_tool import CardMemory
    from cardmem.tools.agents.memory_folder import MemoryToolError

    store, _ = init(tmp_path / "s")
    store.commit({"memories/notes.md": b"---\ntitle: n\n---\n# n\n"}, Message("seed"), agent=False)
    unsaved = "---\ntitle: n\n---\n# n\n\nunsaved edit\n"
    (store.root / "memories" / "notes.md").write_text(unsaved)
    head = git.run(store.root, "rev-parse", "HEAD")
    with pytest.raises(CardmemError) as said:
        store.remember("n", "x", agent=True)
    assert "memories/notes" in str(said.value) and "not yet committed" in str(said.value)
    with pytest.raises((CardmemError, MemoryToolError)):
        CardMemory(store).create("/memories/notes.md", "x\n")
    assert (store.root / "memories" / "notes.md").read_text() == unsaved
    assert git.run(store.root, "rev-parse", "HEAD") == head
    store.remember("n", "mine", agent=False)  # a person appends to their own edit
    assert "unsaved edit" in (store.root / "memories" / "notes.md").read_text()
