"""What `git status` says differs from HEAD: the one reader of it.

Always `--porcelain=v1 -z --no-renames`: with -z a path is given as it is (no quoting
of spaces or non-ASCII names) and, with no renames, every entry is one `XY path` record,
so a rename is a deletion and an addition that no parser can mistake for one odd path.
(The index's freshness check reads the same format from a process it spawns os-only:
store/index/freshness.py.)
"""
from __future__ import annotations

TYPE_CHECKING = False  # the index's freshness check imports this before pathlib
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

ARGS = ("status", "--porcelain=v1", "-z", "--no-renames")


def parse(out: str) -> dict[str, str]:
    """path -> its two-letter status code (`??` untracked, ` M`, `D `, `A `, ...)."""
    return entries(out.split("\0"))


def entries(records: Iterable[str]) -> dict[str, str]:
    """The same, from the output already split at its NULs."""
    return {entry[3:]: entry[:2] for entry in records if len(entry) > 3}


def changes(root: Path, paths: list[str] | None = None, *, untracked: str = "all",
            check: bool = True) -> dict[str, str]:
    """The paths (all, or those among `paths`) that differ from HEAD, with their codes.
    `untracked`: git's --untracked-files (all, normal or no); ignored files never show."""
    if paths is not None and not paths:
        return {}
    args = [*ARGS, f"--untracked-files={untracked}"]
    if paths is not None:
        args += ["--", *paths]
    from . import runner  # not at load: the index's freshness check reads `entries` os-only

    return parse(runner.run(root, *args, check=check))


def kind(code: str) -> str:
    """'new', 'deleted' or 'edited', as a person would say it."""
    return "new" if code == "??" or "A" in code else "deleted" if "D" in code else "edited"
