"""The append-only logs in .cardmem/ have one writer (store/appendlog.py): whole lines,
under a lock, rotated once to `.1` when full, whoever writes them."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cardmem.store.appendlog import append


def test_lines_are_appended_and_a_full_log_starts_again(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    append(log, "one\n", max_bytes=10)
    append(log, b"two\n", max_bytes=10)
    assert log.read_text() == "one\ntwo\n"
    append(log, "three\n", max_bytes=8)  # 8 bytes reached: rotated first
    assert (tmp_path / "x.log.1").read_text() == "one\ntwo\n"
    assert log.read_text() == "three\n"
    append(log, "")  # nothing to write: not even a file
    assert not (tmp_path / "y.log").exists()


def test_a_new_log_takes_the_mode_asked_for(tmp_path: Path) -> None:
    append(tmp_path / "r.jsonl", "{}\n", mode=0o600)
    assert (tmp_path / "r.jsonl").stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("log", ["hooks.log", "rule-events.jsonl"])
def test_writers_meeting_a_full_log_rotate_it_once(tmp_path: Path, monkeypatch, log) -> None:
    """Two hooks find the log full at once and the rotation is slow (a loaded machine):
    the log is rotated once, so the older lines stay in `.1`. (Before the one writer, each
    hook's stat-then-rename let the second rename the first one's new file over `.1`.)"""
    from cardmem.hosts import firings, hooklog

    root = tmp_path
    (root / ".git").mkdir()
    (root / ".cardmem").mkdir()
    path = root / ".cardmem" / log
    limit = hooklog.MAX_BYTES if log == "hooks.log" else firings.MAX_BYTES
    old = "old line\n" * (limit // 9 + 1)
    path.write_text(old)
    real = os.replace

    def slow(a, b, *args, **kw):
        time.sleep(0.3)
        return real(a, b, *args, **kw)

    monkeypatch.setattr(os, "replace", slow)

    def write(k: int) -> None:
        if log == "hooks.log":
            hooklog.write(root, f"event-{k}", time.monotonic(), "ok")
        else:
            firings.record(str(root), "s", "Bash", [{"id": f"feedback/r{k}", "action": "remind",
                                                     "kind": "applies_to"}])

    threads = [threading.Thread(target=write, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert Path(f"{path}.1").read_text() == old
    new = path.read_text()
    assert all(f"{k}" in new for k in range(3)) and new.count("\n") == 3


def test_concurrent_processes_never_tear_a_line(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    code = ("import sys; from cardmem.store.appendlog import append\n"
            "k = sys.argv[1]\n"
            "for i in range(100):\n"
            "    append(sys.argv[2], f'{k} {i} ' + k * 20000 + '\\n', max_bytes=5_000_000)\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(k), str(log)]) for k in range(4)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 4
    lines = [ln for f in (log, Path(f"{log}.1")) if f.exists()
             for ln in f.read_text().splitlines()]
    assert lines and all(ln.endswith(ln.split(" ", 1)[0] * 20000) for ln in lines)
    assert len(lines) == 400  # one rotation at most: nothing lost


def test_a_read_noted_while_the_reads_log_is_compacted_is_kept(tmp_path: Path,
                                                               monkeypatch) -> None:
    """`cardmem maintain` compacts .cardmem/reads.log while a search notes what it showed:
    the note waits for the compaction and lands in the new log (it once went into the old
    file in the instant before the rename, and was lost)."""
    from cardmem.store.maintain.reads import compact, last_read
    from cardmem.store.root import StoreRoot

    (tmp_path / ".git").mkdir()
    (tmp_path / ".cardmem").mkdir()
    (tmp_path / ".cardmem" / "reads.log").write_text("100 a\n200 a\n150 b\n")
    real = os.replace
    renaming = threading.Event()

    def slow(a, b, *args, **kw):
        renaming.set()
        time.sleep(0.3)
        return real(a, b, *args, **kw)

    monkeypatch.setattr(os, "replace", slow)
    t = threading.Thread(target=compact, args=(tmp_path,))
    t.start()
    assert renaming.wait(30)
    StoreRoot(tmp_path).note_reads(["c"], now=300)
    t.join()
    assert last_read(tmp_path) == {"a": 200.0, "b": 150.0, "c": 300.0}
    assert (tmp_path / ".cardmem" / "reads.log").read_text() == "200 a\n150 b\n300 c\n"


def test_two_compactions_at_once_lose_no_read(tmp_path: Path, monkeypatch) -> None:
    """Two `cardmem maintain` runs compact the reads log at once: the second waits for the
    first's lock, on the file the first then replaced. It must read the new file (with the
    reads noted since), not the old one it opened: found by review, a second compaction
    wrote the old file's lines over the new one and a read noted in between was lost."""
    import fcntl

    from cardmem.store import appendlog
    from cardmem.store.maintain.reads import compact, last_read
    from cardmem.store.root import StoreRoot

    (tmp_path / ".git").mkdir()
    (tmp_path / ".cardmem").mkdir()
    log = tmp_path / ".cardmem" / "reads.log"
    log.write_text("100 a\n200 a\n")
    first = os.open(log, os.O_RDONLY)  # the first compaction, holding the lock
    fcntl.flock(first, fcntl.LOCK_EX)
    real = fcntl.flock
    waiting = threading.Event()

    class Flock:  # appendlog's fcntl, telling when the second compaction asks for its lock
        LOCK_EX = fcntl.LOCK_EX

        @staticmethod
        def flock(fd: int, op: int) -> None:
            waiting.set()
            real(fd, op)

    monkeypatch.setattr(appendlog, "fcntl", Flock)
    t = threading.Thread(target=compact, args=(tmp_path,))
    t.start()
    assert waiting.wait(30)
    new = tmp_path / "new"
    new.write_text("200 a\n")
    os.replace(new, log)  # the first compaction's result
    StoreRoot(tmp_path).note_reads(["b"], now=300)  # a search meanwhile: into the new file
    os.close(first)  # the first compaction is done
    t.join(30)
    assert not t.is_alive()
    assert last_read(tmp_path) == {"a": 200.0, "b": 300.0}
