"""Where the default store lives, as a plain string.

`cardmem search` starts git before it loads pathlib and the rest (tools/entry.py), so
the one rule for the default store lives here, with nothing but os to import;
paths.default_store() gives the same place as a Path.
"""
from __future__ import annotations

import os


def default_store() -> str:
    """$CARDMEM_STORE, else the store the current folder is in, else $XDG_DATA_HOME/cardmem,
    else ~/.local/share/cardmem."""
    if env := os.environ.get("CARDMEM_STORE"):
        return os.path.expanduser(env)
    if found := enclosing_store(os.getcwd()):
        return found
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                           "share")
    return os.path.join(data, "cardmem")


def enclosing_store(folder: str) -> str | None:
    """The nearest folder at or above this one holding both `.git` and `cardmem.toml`
    (a store, found the way git finds its repository), or None."""
    try:
        folder = os.path.abspath(folder)
    except OSError:  # the current folder was deleted
        return None
    while True:
        # git/head_file.is_repo's test, inlined: this module imports os alone
        if os.path.exists(os.path.join(folder, ".git")) and \
                os.path.isfile(os.path.join(folder, "cardmem.toml")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
