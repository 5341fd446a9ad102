"""`cardmem doctor`: check the store, its settings, cards and index; say what is wrong.

Each check returns (ok, line). A failing check says what to do, like every error here.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import click

from cardmem.store import config, git
from cardmem.store.errors import CardmemError
from cardmem.store.store import Store

from .cli import emit_json, json_option, open_store, store_option

Check = Callable[[Store], list[tuple[bool, str]]]


def check_repo(store: Store) -> list[tuple[bool, str]]:
    out = []
    lock = store.root / ".git" / "index.lock"
    if lock.exists():
        out.append((False, str(git.lock_file_error(str(lock)))))
    if git.head(store.root) is None:
        out.append((False, "the repository has no commits; run `cardmem init`"))
    elif (branch := git.branch(store.root)) is None:
        out.append((False, f"HEAD is detached; run `git -C {store.root} switch <branch>`"))
    else:
        out.append((True, f"git: on branch {branch}"))
    dirty = [ln[3:] for ln in git.run(store.root, "status", "--porcelain").splitlines()
             if ln[3:].endswith(".md")]
    if dirty:
        out.append((True, f"{len(dirty)} card(s) with uncommitted edits (e.g. {dirty[0]}); "
                          "`cardmem watch` or git commits them"))
    return out


def check_config(store: Store) -> list[tuple[bool, str]]:
    try:
        config.load(store.root)
    except CardmemError as exc:
        return [(False, str(exc))]
    return [(True, f"{config.FILE}: valid")]


def check_cards(store: Store) -> list[tuple[bool, str]]:
    cards, problems = store.scan()
    out = [(True, f"{len(cards)} cards readable")]
    out += [(False, f"{p.path}: skipped: {p.reason}") for p in problems]
    return out


def check_index(store: Store) -> list[tuple[bool, str]]:
    """The index: readable, whole (FTS5's own integrity check) and up to date."""
    from cardmem.store.index import Index

    idx = Index.open(store)
    try:
        wrong = idx.verify(deep=True)
        counts = idx.refresh(walk=True)  # every card, not only what git names
    finally:
        idx.close()
    out = [(False, f"index was damaged ({w}); rebuilt it") for w in wrong[:3]]
    changed = sum(counts.get(k, 0) for k in ("added", "updated", "removed"))
    out.append((True, f"index: up to date ({changed} card(s) refreshed just now)"))
    return out


def check_secrets(store: Store) -> list[tuple[bool, str]]:
    """Cards that hold a secret: their ids and the kinds, never the values."""
    from cardmem.tools.redact import secret_kinds

    cards, _ = store.scan()
    found = [(c.id, kinds) for c in cards if (kinds := secret_kinds(c.text))]
    if not found:
        return [(True, f"secrets: none found in {len(cards)} cards")]
    return [(False, f"{cid}: holds {', '.join(f'{k} x{n}' if n > 1 else k for k, n in sorted(kinds.items()))}; "
                    "remove it, rotate it (git history keeps it)") for cid, kinds in found]


CHECKS: list[Check] = [check_repo, check_config, check_cards, check_secrets, check_index]


def run_checks(store: Store) -> list[tuple[bool, str]]:
    results = []
    for check in CHECKS:
        try:
            results += check(store)
        except CardmemError as exc:
            results.append((False, str(exc)))
    return results


@click.command()
@store_option
@json_option
def doctor(store_path: Path | None, as_json: bool) -> None:
    """Check the store, settings, cards and index; say what is wrong."""
    results = run_checks(open_store(store_path))
    if as_json:
        emit_json([{"ok": ok, "message": msg} for ok, msg in results])
    else:
        for ok, msg in results:
            click.echo(f"{'ok     ' if ok else 'PROBLEM'}  {msg}")
    bad = sum(1 for ok, _ in results if not ok)
    if bad:
        raise click.exceptions.Exit(1)
