"""What a write brings up to date before it returns: the state derived from the rules.

Three things are derived from the rules (the active `feedback` cards): the index rows the
pile's summary of rules is read from (store/index/pile_view.py), the PreToolUse hook's
trigger table (store/rules/triggers.py), the rules files hosts load at start-up
(store/rules/host_file.py) and the exports into hosts' own files that a person asked for
(store/rules/exports.py: `cardmem export`). Each notices most changes by stat stamps, but not a rule made
in a folder it does not watch (a project's folder, where an import puts them), so every
write brings them up to date here:

- a commit: Store.commit hands `after_commit` to the writer (store/git/writer.py), which
  runs it under the write lock once the commit is made, with the paths it committed (so
  no other writer's refresh, built from older rules, can land after ours);
- a move of the branch (update, rollback, sync) and a revert: `after_move` and
  `after_commit`, through the Store, under the same lock.

The writer and git know nothing of rules: this module is the Store's (store.py composes
git and rules). Only a write that touched a rule (a card that is one now, or was one in
the index before) costs a rebuild. A failure never undoes the commit: the derived state
is left for its reader, which rebuilds it when it finds it stale.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterable

from .cards.paths import id_of_path, type_from_id

RULE_TYPE = "feedback"


def after_commit(store: Any, rels: Iterable[str]) -> bool:
    """After a commit of these store-relative paths: if it touched a rule, refresh their
    index rows, the trigger table and the rules files. Whether it did; never raises."""
    try:
        ids = sorted({cid for rel in rels if (cid := id_of_path(rel)) is not None})
        if not ids or not _touched_rules(store, ids):
            return False
        _rebuild(store)
        return True
    except Exception:  # noqa: BLE001 - the commit stands; readers rebuild what is stale
        return False


def after_move(store: Any) -> None:
    """After the branch moved (update, rollback, sync): the whole index, then the rules'
    tables. An index that cannot be refreshed raises (the move stands; the caller says
    so); the rules' tables never do."""
    from .index.db import Index

    with Index(store) as idx:
        idx.refresh()
    try:
        _rebuild(store)
    except Exception:  # noqa: BLE001 - the next session start and hook call catch up
        pass


def _touched_rules(store: Any, ids: list[str]) -> bool:
    """Whether any of these cards is a rule now or was one as the index knew it; their
    rows are brought up to date on the way (the pile's summary reads them). The files and
    a read-only look at the index answer first: most writes touch no rule, and those open
    no Index (its connection, schema check and refresh code)."""
    from .index.db import DB_NAME, Index

    db = store.root / ".cardmem" / DB_NAME
    if not os.path.exists(db):
        # No index: the derived state, if any, is rebuilt from a full index when read.
        return any(_is_rule(store, cid) for cid in ids) or any(
            not store.path(cid).exists() for cid in ids)
    if not any(_is_rule(store, cid) for cid in ids) and not _rules_among(db, ids):
        return False
    with Index(store) as idx:
        idx.refresh_ids(ids)
    return True


def _rules_among(db: Any, ids: list[str]) -> bool:
    """Whether the index holds any of these ids as a rule (a read that never creates the
    file; an index that cannot be read says yes: the rules' state is rebuilt, not left
    stale)."""
    import sqlite3

    try:
        conn = sqlite3.connect(f"{Path(db).as_uri()}?mode=rw", uri=True, timeout=30.0)
    except sqlite3.Error:
        return True
    try:
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            if conn.execute(f"SELECT 1 FROM cards WHERE type = ? AND id IN ({marks}) LIMIT 1",
                            [RULE_TYPE, *chunk]).fetchone():
                return True
        return False
    except sqlite3.Error:
        return True
    finally:
        conn.close()


# A frontmatter line saying the rule type, read without YAML (as status.says_proposed).
_RULE_LINE = re.compile(r"^type[ \t]*:[ \t]*(['\"]?)" + RULE_TYPE + r"\1[ \t]*(?:#.*)?\r?$",
                        re.M | re.I)
_TYPE_LINE = re.compile(r"^type[ \t]*:", re.M)


def _is_rule(store: Any, cid: str) -> bool:
    """Whether the card's file, as it is now, is a rule: its `type:` line says so, or it
    has none and its folder's type is the rule type (read without YAML: a write stays
    lean)."""
    from .cards.frontmatter import split

    try:
        text = store.path(cid).read_bytes().decode("utf-8", "replace")
    except OSError:
        return False
    span = split(text)
    if span and _RULE_LINE.search(text, span[0], span[1]):
        return True
    if span and _TYPE_LINE.search(text, span[0], span[1]):
        return False
    return type_from_id(cid) == RULE_TYPE


def _rebuild(store: Any) -> None:
    """The trigger table (when one was built: else its first reader builds it), every
    rules file this store delivers and every export kept current, from the rules now."""
    from .rules import exports, host_file, triggers

    if os.path.exists(triggers.path_of(store.root)):
        triggers.build(store)
    host_file.refresh(store)
    exports.refresh(store)  # never raises
