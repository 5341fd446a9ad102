"""`cardmem edit`: a person edits a card in their editor; the result is one commit."""
from __future__ import annotations

import os
import shlex
import subprocess

from cardmem.store.cards import card as cardlib
from cardmem.store.cards import paths
from cardmem.store.errors import CardmemError
from cardmem.store.store import Store
from cardmem.store.git.writer import Message


def edit_card(store: Store, card_id: str) -> tuple[str, bool]:
    """Open the card in $VISUAL/$EDITOR; commit it if it changed and still parses.
    Returns the card's id and whether a commit was made."""
    path = store.path(card_id)
    cid = paths.normalize_id(card_id)
    store.read_raw(cid)  # refuses a missing card; a broken one opens, to be fixed
    before = path.read_bytes()
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    proc = subprocess.run([*shlex.split(editor), str(path)])
    if proc.returncode != 0:
        raise CardmemError(f"editor {editor}", f"exited {proc.returncode}; nothing committed")
    after = path.read_bytes()
    if after == before:
        return cid, False
    try:
        cardlib.parse(cardlib.decode(after), cid)
    except cardlib.CardProblem as exc:
        raise CardmemError(str(path), f"{exc}; left uncommitted so you can fix it") from None
    store.commit({store.rel(cid): after}, Message(f"edit: {cid}", [f"{cid}  edited by hand"]),
                 agent=False)
    return cid, True
