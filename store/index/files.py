"""Which files the index holds: one pass over the tree with stat only.

Shared by the index's refresh (store/index/refresh.py) and freshness from git
(store/index/freshness.py), which walks only the folders git says changed.
"""
from __future__ import annotations

import os
import stat as statmod
from pathlib import Path
TYPE_CHECKING = False  # typing costs a search to import (bench/RESULTS.md); annotations only
if TYPE_CHECKING:
    from typing import Iterator

from ..cards.paths import NOT_CARDS, is_card_name


def walk(root: Path | str, links: set[str] | None = None, dirs: dict[str, int] | None = None,
         prefix: str = "") -> Iterator[tuple[str, str, os.stat_result]]:
    """(id, path, stat) of every card file under root, in no particular order.

    The same files as Store.card_files() (hidden folders and files skipped, `.md` only,
    a top-level README.md is no card), with os.scandir and no Path objects: this walk
    runs before every search, so it costs one stat per file and little else. Ids of
    symlinked cards are added to `links` (they must be checked before they are read);
    `dirs` gets each folder's mtime, taken before it is listed (store/index/freshness.py).
    `prefix`: root's own id prefix ("a/b/"), when walking a folder inside a store.
    """
    stack = [(str(root), prefix)]
    isreg = statmod.S_ISREG
    while stack:
        folder, prefix = stack.pop()
        try:
            if dirs is not None:
                dirs[prefix[:-1]] = os.stat(folder).st_mtime_ns
            it = os.scandir(folder)
        except OSError:
            continue
        with it:
            for e in it:
                name = e.name
                if name[0] == ".":
                    continue
                try:
                    if e.is_dir(follow_symlinks=False):
                        stack.append((e.path, prefix + name + "/"))
                        continue
                    # paths.id_of_path's rule, inlined: this walk runs before every search
                    if not is_card_name(name) or (not prefix and name in NOT_CARDS):
                        continue
                    st = e.stat()  # follows a symlinked card to its file
                except OSError:
                    continue
                if isreg(st.st_mode):
                    if links is not None and e.is_symlink():
                        links.add(prefix + name[:-3])
                    yield prefix + name[:-3], e.path, st
