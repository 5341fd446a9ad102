"""git started without the subprocess module, its output read later: the freshness
check's runner (store/index/freshness.py). Only os is imported: importing subprocess
would cost every search (bench/RESULTS.md, "Figures from comments"), and git
runs on the other CPU while Python loads the rest.
Every other git call goes through runner.py.
"""
from __future__ import annotations

import os

# Paths are card files, never patterns: with git's pathspec magic a card id `:!*` would
# stage and commit every file of the store (.env included). Set for every git cardmem
# starts (runner.py and this module).
LITERAL = {"GIT_LITERAL_PATHSPECS": "1"}
# A read that never takes .git/index.lock from under a writer, in the C locale.
_ENV = {"GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", **LITERAL}


class Git:
    """A git command started now, its output read later, so it runs beside other work."""

    def __init__(self, root: str, args: list[str]) -> None:
        self._pid, self._out = 0, -1
        try:
            r, w = os.pipe()
        except OSError:
            return
        try:
            null = os.open(os.devnull, os.O_RDWR)
            try:
                self._pid = os.posix_spawnp("git", ["git", "-C", root, *args],
                                            {**os.environ, **_ENV}, file_actions=[
                    (os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, w, 1),
                    (os.POSIX_SPAWN_DUP2, null, 2)])
                self._out = r
            finally:
                os.close(null)
        except OSError:
            os.close(r)
        finally:
            os.close(w)

    def paths(self) -> list[str] | None:
        """Its NUL-separated output, or None if it could not run or failed."""
        if not self._pid:
            return None
        chunks = []
        while chunk := os.read(self._out, 1 << 16):
            chunks.append(chunk)
        if self._reap() != 0:
            return None
        return [os.fsdecode(p) for p in b"".join(chunks).split(b"\0") if p]

    def close(self) -> None:
        if self._pid:
            try:
                os.kill(self._pid, 9)
            except OSError:
                pass
            self._reap()

    def _reap(self) -> int:
        os.close(self._out)
        _, status = os.waitpid(self._pid, 0)
        self._pid, self._out = 0, -1
        return os.waitstatus_to_exitcode(status)
