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
    out = [(False, str(git.lock_file_error(str(lock))))
           for lock in git.commit_locks(store.root) if lock.exists()]
    if not out:
        out += check_interrupted(store)
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


def check_interrupted(store: Store) -> list[tuple[bool, str]]:
    """A writer killed between `git add` and its commit: unstage what it left staged
    (the writer's own recovery, run now rather than at the next write)."""
    from cardmem.store.writer import recover, write_lock

    try:
        with write_lock(store.root, timeout_s=2.0):
            staged = recover(store.root)
    except CardmemError:
        return []  # a live writer holds the lock: nothing was interrupted
    if not staged:
        return []
    return [(True, f"unstaged {len(staged)} card(s) an interrupted write had staged "
                   f"(e.g. {staged[0]}); their files are kept as uncommitted edits")]


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


CHECKS: list[Check] = [check_repo, check_config, check_cards, check_index]


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
