"""Which watched paths are cards: the names editors write while saving are not, nor
anything under a hidden folder (.git/, .cardmem/)."""
from __future__ import annotations

import functools
import os

from ..cards import paths
from ..errors import BadId

# Names editors write next to a file while saving it. None is ever a card; most are
# already ruled out by not ending in .md, but the list says what we know we ignore.
VIM_SUFFIXES = (".swp", ".swo", ".swx", ".swn")
TEMP_SUFFIXES = (".tmp", ".temp", ".bak", ".orig", ".part", ".crdownload", "___jb_tmp___",
                 "___jb_old___")
VIM_PROBE = "4913"  # vim creates and deletes this to test that it may write the folder


def is_editor_artefact(name: str) -> bool:
    """Swap, backup, lock and temp files of editors and atomic savers."""
    return (name.startswith(".")  # vim .x.swp, emacs .#x lock, `.x.md.1234.tmp` temps
            or (name.startswith("#") and name.endswith("#"))  # emacs auto-save
            or name.endswith("~")  # vim and emacs backups
            or name == VIM_PROBE
            or name.endswith(VIM_SUFFIXES) or name.endswith(TEMP_SUFFIXES))


def _rel_parts(root: str, path: str | bytes) -> list[str] | None:
    """path's parts below root, or None if it is outside it or under a hidden folder."""
    path = os.fsdecode(path)
    if not path:
        return None
    prefix = root.rstrip(os.sep) + os.sep
    if path.startswith(prefix):  # how watchdog spells every path: no relpath syscalls
        rel = path[len(prefix):]
    else:
        rel = os.path.relpath(path, root)
        if rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
            return None
    parts = rel.split(os.sep)
    if any(not p or p.startswith(".") for p in parts):
        return None  # .git/, .cardmem/, any hidden folder or file; "." and ".." too
    return parts


@functools.lru_cache(maxsize=8192)  # a saved file is 3-5 events on the same path
def card_id(root: str, path: str | bytes) -> str | None:
    """The card id a watched path stands for, or None when it is not a card."""
    parts = _rel_parts(root, path)
    if parts is None:
        return None
    if paths.id_of_path("/".join(parts)) is None or is_editor_artefact(parts[-1]):
        return None
    try:  # and the id gate's own checks (control characters, lengths)
        return paths.normalize_id("/".join(parts))
    except BadId:
        return None
