"""Where the default store lives, as a plain string.

`cardmem search` starts git before it loads pathlib and the rest (tools/entry.py), so
the one rule for the default store lives here, with nothing but os to import;
paths.default_store() gives the same place as a Path.
"""
from __future__ import annotations

import os


def default_store() -> str:
    """$CARDMEM_STORE, else $XDG_DATA_HOME/cardmem, else ~/.local/share/cardmem."""
    if env := os.environ.get("CARDMEM_STORE"):
        return os.path.expanduser(env)
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local",
                                                           "share")
    return os.path.join(data, "cardmem")
