"""The live watcher against real inotify, a real git repo and the real SQLite index.

Tests poll with timeouts (never fixed long sleeps): `until` returns as soon as the index
shows what the test expects, and fails with what it saw instead.
"""
from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from cardmem.store.index.db import Index
from cardmem.store.search.query import search_index
from cardmem.store.watch.names import card_id
from cardmem.store.watch.watcher import Watcher

ME = {"GIT_AUTHOR_NAME": "Tess Tester", "GIT_AUTHOR_EMAIL": "tess@example.com",
      "GIT_COMMITTER_NAME": "Tess Tester", "GIT_COMMITTER_EMAIL": "tess@example.com"}


def until(cond: Callable[[], Any], timeout: float = 5.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what or cond}")
        time.sleep(0.01)


def card(title: str, body: str, extra: str = "") -> str:
    return f"---\ntitle: {title}\n{extra}---\n{body}\n"


def write(root: Path, cid: str, text: str) -> Path:
    p = root / f"{cid}.md"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          text=True, env={**os.environ, **ME}).stdout


def hits(idx: Index, query: str) -> list[str]:
    return [r["id"] for r in search_index(idx, query).results]


def exact(store) -> bool:
    """The live index equals one built from scratch over the same files."""
    fresh = Index(root=store.root, db_path=store.root.parent / f"fresh-{time.time_ns()}.sqlite")
    try:
        fresh.refresh()
        with Index(store) as live:
            return live.rows() == fresh.rows() and live.problems() == fresh.problems()
    finally:
        fresh.close()


class Said(list):
    """Collects what the watcher says on stderr."""

    def __call__(self, line: str) -> None:
        self.append(line)


@pytest.fixture
def said() -> Said:
    return Said()


@pytest.fixture
def start(store, said):
    """start(**kw) -> a running Watcher on `store`; stopped at teardown."""
    running: list[Watcher] = []

    def _start(**kw: Any) -> Watcher:
        kw.setdefault("autocommit", False)
        kw.setdefault("say", said)
        w = Watcher(store, **kw).start()
        running.append(w)
        assert w.wait_idle(10), "the start rescan did not finish"
        return w

    yield _start
    for w in running:
        w.stop()


@pytest.fixture
def idx(store):
    with Index(store) as i:
        yield i


# --- which paths are cards ---------------------------------------------------------------

@pytest.mark.parametrize("rel, expected", [
    ("feedback/run-tests.md", "feedback/run-tests"),
    ("projects/acme/deploy.md", "projects/acme/deploy"),
    ("people/README.md", "people/README"),  # only a top-level README is no card
    ("README.md", None),
    ("feedback/.run-tests.md.swp", None),  # vim swap files
    ("feedback/.run-tests.md.swo", None),
    ("feedback/.run-tests.md.swx", None),
    ("feedback/run-tests.md.swp", None),  # swap with `set directory=.`, not hidden
    ("feedback/4913", None),  # vim's can-I-write probe
    ("feedback/run-tests.md~", None),  # vim / emacs backup
    ("feedback/#run-tests.md#", None),  # emacs auto-save
    ("feedback/.#run-tests.md", None),  # emacs lock link
    ("feedback/.run-tests.md.1a2b.tmp", None),  # cardmem's own atomic-write temp
    ("feedback/run-tests.md.tmp", None),
    ("feedback/run-tests.md___jb_tmp___", None),  # JetBrains safe write
    (".git/feedback.md", None),
    (".cardmem/index.md", None),
    (".obsidian/workspace.md", None),  # any hidden folder
    ("notes.txt", None),
])
def test_which_paths_are_cards(tmp_path: Path, rel: str, expected: str | None) -> None:
    assert card_id(str(tmp_path), str(tmp_path / rel)) == expected


def test_paths_outside_the_store_are_no_cards(tmp_path: Path) -> None:
    assert card_id(str(tmp_path / "s"), str(tmp_path / "other" / "a.md")) is None
    assert card_id(str(tmp_path / "s"), str(tmp_path / "s")) is None


# --- the index follows the tree -----------------------------------------------------------

def test_create_edit_rename_delete_are_searchable(store, start, idx) -> None:
    root = store.root
    start()
    write(root, "reference/kiln", card("Kiln firing", "the quasarbloom schedule"))
    until(lambda: hits(idx, "quasarbloom") == ["reference/kiln"], what="created card")

    write(root, "reference/kiln", card("Kiln firing", "the zebrafinch schedule"))
    until(lambda: hits(idx, "zebrafinch") == ["reference/kiln"], what="edited card")
    assert "reference/kiln" not in hits(idx, "quasarbloom")

    os.rename(root / "reference/kiln.md", root / "reference/oven.md")
    until(lambda: idx.ids() == ["reference/oven"], what="renamed card")
    assert hits(idx, "zebrafinch") == ["reference/oven"]

    (root / "reference/oven.md").unlink()
    until(lambda: idx.ids() == [], what="deleted card")
    assert exact(store)


def test_write_temp_then_rename_save(store, start, idx) -> None:
    root = store.root
    write(root, "reference/kiln", card("Kiln", "old words here"))
    start()
    for tmp_name in (".kiln.md.tmp", "kiln.md.tmp", ".goutputstream-X1Y2"):
        tmp = root / "reference" / tmp_name
        tmp.write_text(card("Kiln", f"fresh marmalade {tmp_name}"))
        os.replace(tmp, root / "reference/kiln.md")
        until(lambda: (root / "reference/kiln.md").exists() and hits(idx, "marmalade")
              == ["reference/kiln"], what=f"save via {tmp_name}")
        assert idx.ids() == ["reference/kiln"]
        write(root, "reference/kiln", card("Kiln", "reset text"))
        until(lambda: not hits(idx, "marmalade"), what="reset")
    assert exact(store)


def test_vim_save_ignores_swap_backup_and_probe(store, start, idx) -> None:
    """vim's default save: swap file, 4913 probe, rename to a~ backup, write, delete."""
    root = store.root
    folder = root / "feedback"
    write(root, "feedback/tests", card("Run tests", "with dash x"))
    w = start()
    noted: list[str] = []
    real_note = w.intake.note

    def recording(ids, rescan=None):
        ids = list(ids)
        noted.extend(ids)
        real_note(ids, rescan)

    w.intake.note = recording  # type: ignore[method-assign]
    swp = folder / ".tests.md.swp"
    swp.write_bytes(b"b0VIM 9.0" + b"\0" * 100)
    probe = folder / "4913"
    probe.write_bytes(b"")
    probe.unlink()
    os.rename(folder / "tests.md", folder / "tests.md~")
    (folder / "tests.md").write_text(card("Run tests", "with dash x and the kumquat flag"))
    (folder / "tests.md~").unlink()
    swp.write_bytes(b"b0VIM 9.0 again")
    swp.unlink()
    until(lambda: hits(idx, "kumquat") == ["feedback/tests"], what="vim save")
    assert w.wait_idle(5)
    assert set(noted) == {"feedback/tests"}, noted
    assert idx.ids() == ["feedback/tests"]
    assert exact(store)


def test_thousand_file_burst_ends_exactly_right(store, start, idx) -> None:
    root = store.root
    w = start()
    t0 = time.monotonic()
    for i in range(1000):
        write(root, f"signals/s{i:04d}", card(f"Signal {i}", f"burst item {i} word{i}"))
    until(lambda: len(idx.ids()) == 1000, timeout=30, what="1000 cards")
    assert w.wait_idle(10)
    took = time.monotonic() - t0
    assert exact(store)
    assert hits(idx, "word777") == ["signals/s0777"]
    print(f"1000-file burst indexed exactly in {took:.2f} s; rescans {dict(w.stats.rescans)}")


def test_burst_beyond_threshold_rescans(store, start, idx) -> None:
    root = store.root
    w = start(burst_ids=20, max_delay_s=1.0)
    for i in range(100):
        write(root, f"signals/b{i:03d}", card(f"B {i}", "x"))
    until(lambda: len(idx.ids()) == 100, timeout=15, what="100 cards")
    assert w.wait_idle(5)
    assert w.stats.rescans["burst"] >= 1
    assert exact(store)


def fast_import(root: Path, branches: dict[str, dict[str, str]]) -> None:
    """Commit each branch's files (path -> text) in one packfile: loose objects for
    hundreds of files cost seconds on a slow disk, a fast-import stream milliseconds."""
    out = []
    for n, (branch, files) in enumerate(branches.items()):
        out.append(f"commit refs/heads/{branch}\ncommitter Tess <tess@example.com> "
                   f"{1700000000 + n} +0000\ndata 7\ncards {n}\nfrom refs/heads/main^0\n"
                   "deleteall\n")
        for path, text in sorted(files.items()):
            data = text.encode()
            out.append(f"M 100644 inline {path}\ndata {len(data)}\n{text}\n")
    subprocess.run(["git", "-C", str(root), "fast-import", "--quiet", "--force"],
                   input="".join(out).encode(), check=True)


def test_branch_checkout_of_many_files_ends_exactly_right(store, start, idx) -> None:
    root = store.root
    keep = {".gitignore": (root / ".gitignore").read_text(),
            "cardmem.toml": (root / "cardmem.toml").read_text()}
    main = {f"projects/p{i % 7}/c{i:03d}.md": card(f"Card {i}", f"main text {i}")
            for i in range(400)}
    other = dict(main)
    for i in range(0, 400, 2):  # edit half
        other[f"projects/p{i % 7}/c{i:03d}.md"] = card(f"Card {i}", f"other text {i} pelican")
    for i in range(1, 100, 2):  # delete some
        del other[f"projects/p{i % 7}/c{i:03d}.md"]
    for i in range(300):  # add a new folder of cards
        other[f"entities/e{i:03d}.md"] = card(f"Entity {i}", f"new on other {i}")
    fast_import(root, {"other": {**keep, **other}, "main": {**keep, **main}})
    git(root, "reset", "-q", "--hard", "main")
    head_before = git(root, "rev-parse", "main", "other")

    w = start(autocommit=True, quiet_s=0.3)  # a checkout is no hand edit: nothing to commit
    assert len(idx.ids()) == 400
    git(root, "switch", "-q", "other")
    until(lambda: len(idx.ids()) == 650, timeout=20, what="650 cards on other")
    assert w.wait_idle(10, commits=True)
    assert exact(store)
    assert "projects/p0/c000" in hits(idx, "pelican")
    git(root, "switch", "-q", "main")
    until(lambda: len(idx.ids()) == 400 and not hits(idx, "pelican"), timeout=20,
          what="back on main")
    assert w.wait_idle(10, commits=True)
    assert exact(store)
    assert git(root, "rev-parse", "main", "other") == head_before
    assert w.stats.commits == 0


def test_folder_moved_out_and_back(store, start, idx, tmp_path: Path) -> None:
    root = store.root
    for i in range(5):
        write(root, f"projects/acme/c{i}", card(f"C {i}", "acme"))
    w = start()
    shutil.move(str(root / "projects/acme"), str(tmp_path / "acme-away"))
    until(lambda: idx.ids() == [], what="folder moved out")
    shutil.move(str(tmp_path / "acme-away"), str(root / "projects/renamed"))
    until(lambda: len(idx.ids()) == 5 and idx.ids()[0].startswith("projects/renamed/"),
          what="folder moved back in")
    assert w.wait_idle(5)
    assert exact(store)


def test_a_polling_observer_sees_in_place_edits_too(store, start, idx) -> None:
    """Backends without close events (polling, and kqueue/FSEvents elsewhere) report an
    edit only as a modify event, which the watcher then listens for."""
    from watchdog.observers.polling import PollingObserver

    write(store.root, "reference/a", card("A", "first words"))
    start(observer_factory=lambda: PollingObserver(timeout=0.1))
    write(store.root, "reference/a", card("A", "second words: sapodilla"))
    until(lambda: hits(idx, "sapodilla") == ["reference/a"], what="polled edit")
    (store.root / "reference/a.md").unlink()
    until(lambda: idx.ids() == [], what="polled delete")


def test_periodic_rescan_finds_an_edit_no_event_reported(store, start, idx) -> None:
    """The safety net: an observer that is alive but reports nothing (lost events)."""
    from watchdog.observers.polling import PollingObserver

    w = start(observer_factory=lambda: PollingObserver(timeout=3600), rescan_s=0.5)
    write(store.root, "reference/a", card("A", "unseen by events: rambutan"))
    # the row is visible a moment before the watcher counts the rescan that wrote it
    until(lambda: hits(idx, "rambutan") == ["reference/a"] and w.stats.rescans["periodic"] >= 1,
          timeout=10, what="periodic rescan")


def test_inotify_limits_fall_back_to_polling(store, start, idx, said) -> None:
    """fs.inotify.max_user_watches or max_user_instances reached: poll, and say so."""
    import errno

    from watchdog.observers import Observer

    class Exhausted(Observer):  # type: ignore[misc, valid-type]
        def start(self) -> None:
            raise OSError(errno.ENOSPC, "inotify watch limit reached")

    w = start(observer_factory=Exhausted)
    assert type(w.intake.observer).__name__ == "PollingObserver"
    assert any("polling every second" in line for line in said), said
    write(store.root, "reference/a", card("A", "first: ackee"))
    until(lambda: hits(idx, "ackee") == ["reference/a"], what="polled create")
    write(store.root, "reference/a", card("A", "then: jackfruit"))
    until(lambda: hits(idx, "jackfruit") == ["reference/a"], what="polled edit")


# --- robustness ---------------------------------------------------------------------------

def test_refresh_ids_raising_once_does_not_kill_the_watcher(store, start, idx, said) -> None:
    calls = {"n": 0}

    class Flaky(Index):
        def refresh_ids(self, ids):
            calls["n"] += 1
            if calls["n"] == 1:
                raise RuntimeError("injected fault")
            return super().refresh_ids(ids)

    w = start(index_factory=lambda: Flaky(store))
    write(store.root, "reference/a", card("A", "persimmon"))
    until(lambda: hits(idx, "persimmon") == ["reference/a"], what="indexed after the fault")
    assert any("injected fault" in line for line in said), said
    assert w.stats.errors == 1 and w.alive()
    write(store.root, "reference/b", card("B", "loquat"))
    until(lambda: hits(idx, "loquat") == ["reference/b"], what="still watching")


def test_event_handler_raising_does_not_kill_the_observer(store, start, idx, said) -> None:
    w = start()
    real = w.intake.on_event
    boom = {"left": 1}

    def on_event(event):
        if boom["left"]:
            boom["left"] -= 1
            raise ValueError("handler fault")
        real(event)

    w.intake.on_event = on_event  # type: ignore[method-assign]
    write(store.root, "reference/a", card("A", "tamarind"))
    # The event that raised is lost, but the fault asks for a rescan that finds the card.
    until(lambda: hits(idx, "tamarind") == ["reference/a"], what="card after handler fault")
    assert any("handler fault" in line for line in said), said
    assert w.wait_idle(5)  # the stats are counted just after the index commits
    assert w.stats.rescans["handler error"] == 1
    assert w.alive()
    write(store.root, "reference/b", card("B", "rambutan"))
    until(lambda: hits(idx, "rambutan") == ["reference/b"], what="observer still alive")


def test_dead_observer_is_restarted_and_rescans(store, start, idx, said) -> None:
    w = start(health_s=0.1)
    w.intake.observer.stop()  # what a crashed watchdog thread looks like from outside
    write(store.root, "reference/a", card("A", "cherimoya"))  # while nobody watches
    until(lambda: w.stats.restarts == 1, what="observer restart")
    until(lambda: hits(idx, "cherimoya") == ["reference/a"], what="rescan after restart")
    assert w.wait_idle(5)
    assert w.stats.rescans["observer restarted"] == 1
    write(store.root, "reference/b", card("B", "mangosteen"))
    until(lambda: hits(idx, "mangosteen") == ["reference/b"], what="new observer works")
    assert any("restarting" in line for line in said)


def test_dead_worker_is_restarted(store, start, idx) -> None:
    w = start()
    # End the worker thread from under it (as an escaping error would).
    w._stopping.set()
    with w._cv:
        w._cv.notify_all()
    w._worker.join(5)
    assert not w._worker.is_alive() and not w.alive()
    w._stopping.clear()
    w.ensure_alive()
    write(store.root, "reference/a", card("A", "soursop"))
    until(lambda: hits(idx, "soursop") == ["reference/a"], what="worker restarted")


def _max_queued_events() -> int | None:
    try:
        return int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    except (OSError, ValueError):
        return None


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _max_queued_events()
                    or _max_queued_events() > 200_000, reason="needs inotify with a small queue")
def test_real_inotify_queue_overflow_triggers_a_rescan(store, start, idx) -> None:
    """A real kernel overflow: stall watchdog's reader, queue more events than the kernel
    keeps (fs.inotify.max_queued_events), then edit a card whose events are dropped."""
    root = store.root
    write(root, "reference/a", card("A", "before the flood"))
    w = start()
    inotify_fd = w.intake.observer._inotify_fd  # watchdog 7: the thread reading the inotify fd
    limit = _max_queued_events()
    junk = root / "junk"
    junk.mkdir()
    until(lambda: w.wait_idle(1), what="junk folder noted")
    with inotify_fd._lock:  # the reader takes this lock around each read: it stalls here
        time.sleep(0.05)
        names = [str(junk / f"f{k}.txt") for k in range(2)]
        # Twice the queue: the stalled reader may still drain one buffer (2,048 events).
        # Each open-for-write and close is one IN_CLOSE_WRITE; alternating two files
        # keeps the kernel from coalescing them.
        for n in range(2 * limit + 1000):
            os.close(os.open(names[n % 2], os.O_CREAT | os.O_WRONLY))
        write(root, "reference/a", card("A", "after the flood: guanabana"))  # dropped
        time.sleep(0.05)
    until(lambda: w.stats.rescans["overflow"] >= 1, timeout=15, what="overflow rescan")
    until(lambda: hits(idx, "guanabana") == ["reference/a"], timeout=10,
          what="the dropped edit found by the rescan")
    assert w.wait_idle(10)
    assert exact(store)


def test_overflow_reported_in_watchdogs_log_requests_a_rescan(store, start, idx) -> None:
    """The path watchdog 7 uses to report overflow (its log), driven directly."""
    (store.root / "reference").mkdir()  # watched from the start: the card's own events come
    w = start()
    # An edit whose events are lost: they reach a handler that drops them.
    dropped: list[Any] = []
    w.intake.on_event = dropped.append  # type: ignore[method-assign]
    write(store.root, "reference/a", card("A", "feijoa"))
    until(lambda: any(e.event_type == "closed" and e.src_path.endswith("a.md")
                      for e in dropped), what="the card's last event, dropped")
    del w.intake.on_event
    assert hits(idx, "feijoa") == []
    logging.getLogger("watchdog.observers.inotify_c").warning(
        "Inotify queue overflowed; filesystem events were lost")
    until(lambda: hits(idx, "feijoa") == ["reference/a"], what="rescan after overflow log")
    assert w.wait_idle(5)
    assert w.stats.rescans["overflow"] == 1, w.stats.rescans


# --- autocommit ----------------------------------------------------------------------------

def _commits(root: Path) -> list[str]:
    return git(root, "log", "--format=%H").split()


def test_autocommit_two_edits_in_one_quiet_period_make_one_commit(store, start, said) -> None:
    root = store.root
    git(root, "config", "user.name", "Ursula User")
    git(root, "config", "user.email", "ursula@example.com")
    write(root, "reference/a", card("A", "one"))
    write(root, "reference/b", card("B", "two"))
    write(root, "reference/untouched", card("U", "three"))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "cards")
    # Uncommitted before the watcher started: not the watcher's to commit.
    write(root, "reference/untouched", card("U", "edited before watching"))
    (root / "notes.txt").write_text("scratch\n")
    before = _commits(root)
    w = start(autocommit=True, quiet_s=0.6)
    write(root, "reference/a", card("A", "one, edited"))
    time.sleep(0.15)
    write(root, "reference/c", card("C", "a new card"))
    (root / "reference/b.md").unlink()
    assert w.wait_idle(10, commits=True)
    after = _commits(root)
    assert len(after) == len(before) + 1, git(root, "log", "--stat", "-3")
    author = git(root, "log", "-1", "--format=%an <%ae>|%cn <%ce>")
    assert author == "Ursula User <ursula@example.com>|Ursula User <ursula@example.com>\n"
    msg = git(root, "log", "-1", "--format=%B")
    assert msg.splitlines()[0] == "watch: 3 cards edited by hand"
    assert "reference/a  edited" in msg and "reference/c  new" in msg
    assert "reference/b  deleted" in msg
    assert "Cardmem-Source: watch" in msg
    files = git(root, "show", "--name-status", "--format=", "HEAD").split("\n")
    assert sorted(f for f in files if f) == ["A\treference/c.md", "D\treference/b.md",
                                             "M\treference/a.md"]
    status = git(root, "status", "--porcelain")
    assert " M reference/untouched.md" in status and "?? notes.txt" in status
    # A second quiet batch is a second commit.
    write(root, "reference/a", card("A", "one, edited twice"))
    assert w.wait_idle(10, commits=True)
    assert len(_commits(root)) == len(before) + 2
    assert w.stats.commits == 2


def test_autocommit_skips_a_card_that_does_not_parse(store, start, said) -> None:
    root = store.root
    before = _commits(root)
    w = start(autocommit=True, quiet_s=0.3)
    write(root, "reference/good", card("Good", "fine"))
    (root / "reference/bad.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    assert w.wait_idle(10, commits=True)
    assert len(_commits(root)) == len(before) + 1
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == ["reference/good.md"]
    assert "?? reference/bad.md" in git(root, "status", "--porcelain")
    assert any(line.startswith("reference/bad: not committed:") for line in said), said
    assert w.stats.not_committed == 1
    # Fixed, it is committed in the next quiet batch.
    (root / "reference/bad.md").write_text("---\ntitle: '[closed'\n---\nbody\n")
    assert w.wait_idle(10, commits=True)
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == ["reference/bad.md"]


def test_wait_idle_waits_for_an_event_held_back_behind_a_move(store, start, tmp_path) -> None:
    """watchdog holds every inotify event queued behind an IN_MOVED_FROM for up to 0.5 s (to
    pair it with its IN_MOVED_TO); git renames .git/index.lock on each commit and status. A
    write made just before wait_idle is not idle while its event is still held back."""
    root = store.root
    before = _commits(root)
    w = start(autocommit=True, quiet_s=0.2)
    # Moved out of the tree: an IN_MOVED_FROM that nothing pairs, so held the full 0.5 s.
    (root / ".cardmem" / "scratch").write_text("x")
    os.rename(root / ".cardmem" / "scratch", tmp_path / "scratch")
    write(root, "reference/a", card("A", "written behind a move"))
    assert w.wait_idle(10, commits=True)
    assert len(_commits(root)) == len(before) + 1
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == ["reference/a.md"]


def test_autocommit_leaves_cardmem_own_writes_alone(store, start) -> None:
    before = _commits(store.root)
    w = start(autocommit=True, quiet_s=0.3)
    store.new("reference/made-by-cardmem", title="Made by cardmem", body="already committed")
    assert w.wait_idle(10, commits=True)
    assert len(_commits(store.root)) == len(before) + 1  # store.new's own commit only
    assert w.stats.commits == 0


def test_autocommit_waits_while_git_is_busy(store, start, said) -> None:
    root = store.root
    before = _commits(root)
    w = start(autocommit=True, quiet_s=0.2)
    lock = root / ".git" / "MERGE_HEAD"
    lock.write_text(git(root, "rev-parse", "HEAD"))
    write(root, "reference/a", card("A", "mid-merge"))
    # the event, not a sleep: the quiet period passed and the watcher chose not to commit
    until(lambda: any("not committing while git is busy (.git/MERGE_HEAD)" in s for s in said),
          timeout=10, what="the watcher holding back")
    assert _commits(root) == before
    lock.unlink()
    until(lambda: len(_commits(root)) == len(before) + 1, timeout=10, what="commit after merge")
    assert w.wait_idle(5, commits=True)


def test_autocommit_retries_while_another_writer_holds_the_lock(store, start, said,
                                                               idx) -> None:
    from cardmem.store.git.writer import write_lock

    root = store.root
    before = _commits(root)
    w = start(autocommit=True, quiet_s=0.2)
    with write_lock(root):
        write(root, "reference/a", card("A", "while locked: breadfruit"))
        until(lambda: any("not committed yet" in line for line in said), timeout=10,
              what="a busy-lock report")
        # The edit is indexed all the same; only its commit waits.
        until(lambda: hits(idx, "breadfruit") == ["reference/a"], what="indexed while locked")
        assert _commits(root) == before
    until(lambda: len(_commits(root)) == len(before) + 1, timeout=10, what="commit after unlock")
    # The retry is the one commit; the busy lock counted as no refusal.
    assert w.wait_idle(10, commits=True)
    assert (w.stats.commits, w.stats.not_committed) == (1, 0)


def test_a_failing_commit_keeps_the_edits_for_the_next_try(store, start, said,
                                                           monkeypatch) -> None:
    from cardmem.store.watch import autocommit as watcher_mod

    real, calls = watcher_mod._status, {"n": 0}

    def flaky_status(root, rels):
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError("injected commit fault")
        return real(root, rels)

    monkeypatch.setattr(watcher_mod, "_status", flaky_status)
    before = _commits(store.root)
    w = start(autocommit=True, quiet_s=0.2)
    write(store.root, "reference/a", card("A", "kept"))
    until(lambda: len(_commits(store.root)) == len(before) + 1, timeout=10,
          what="commit on the second try")
    assert any("injected commit fault" in line for line in said), said
    assert w.alive()


def test_stop_flushes_pending_edits(store) -> None:
    before = _commits(store.root)
    w = Watcher(store, autocommit=True, quiet_s=60, say=lambda line: None).start()
    assert w.wait_idle(10)
    write(store.root, "reference/a", card("A", "flushed on stop"))
    until(lambda: "reference/a" in w.committer.dirty, what="edit noted")
    w.stop()
    assert len(_commits(store.root)) == len(before) + 1
    assert not w.alive()


# --- the command ---------------------------------------------------------------------------

@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_cardmem_watch_process_indexes_and_stops_cleanly(store, idx, sig) -> None:
    root = store.root
    proc = subprocess.Popen([sys.executable, "-m", "cardmem.tools.cli", "watch", "--store",
                             str(root), "--no-autocommit"], stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stderr.readline()
        assert first.startswith(f"cardmem: watching {root}"), first
        write(root, "reference/a", card("A", "jabuticaba"))
        until(lambda: hits(idx, "jabuticaba") == ["reference/a"], what="indexed by the CLI")
        proc.send_signal(sig)
        rc = proc.wait(timeout=10)
        rest = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == 0, rest
    assert "cardmem: watch stopped" in rest
    assert "Traceback" not in rest


def test_cardmem_watch_refuses_a_missing_store(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "cardmem.tools.cli", "watch", "--store",
                           str(tmp_path / "nope")], capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0
    assert proc.stderr.startswith(f"cardmem: store {tmp_path / 'nope'}: does not exist")
