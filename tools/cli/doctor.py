"""`cardmem doctor`: check the store, its settings, cards and index; say what is wrong.

Each check returns (ok, line). A failing check says what to do, like every error here.
"""
from __future__ import annotations
import time

from pathlib import Path
from typing import Callable
from collections import Counter

import click

from cardmem.store import config
from cardmem.store.cards.paths import id_of_path
from cardmem.store.git import runner as git
from cardmem.store.git import status as git_status
from cardmem.store.errors import CardmemError
from cardmem.store.store import Store

from .options import emit_json, json_option, open_store, store_option
from cardmem.store.wording import plural
from cardmem.store.git.writer import recover, write_lock
from cardmem.store.index.db import Index
from cardmem.store.learning.retry import retry_backlog
from cardmem.store.learning.spool import SPOOL
from .. import model
from cardmem.tools.secrets.redact import secret_kinds
from cardmem.store import maintain_record as record
from .progress import bar

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
    dirty = sorted(p for p in git_status.changes(store.root) if id_of_path(p))
    if dirty:
        out.append((True, f"{plural(len(dirty), 'card')} with uncommitted edits (e.g. {dirty[0]}); "
                          "`cardmem watch` or git commits them"))
    return out


def check_identity(store: Store) -> list[tuple[bool | None, str]]:
    """A person's commits need a git identity; without one they go out as cardmem's
    (a warning: the store works, but `git log` cannot tell its people apart)."""
    if git.identity_env(store.root):
        return [(None, f"git has no user.name/user.email here: your commits say "
                        f"{git.FALLBACK_NAME} <{git.FALLBACK_EMAIL}>; set them with "
                        "`git config --global user.name NAME` (and user.email)")]
    return [(True, "git identity: set")]


def check_interrupted(store: Store) -> list[tuple[bool, str]]:
    """A writer killed between `git add` and its commit: unstage what it left staged
    (the writer's own recovery, run now rather than at the next write)."""
    try:
        with write_lock(store.root, timeout_s=2.0):
            staged = recover(store.root)
    except CardmemError:
        return []  # a live writer holds the lock: nothing was interrupted
    if not staged:
        return []
    return [(True, f"unstaged {plural(len(staged), 'card')} an interrupted write had staged "
                   f"(e.g. {staged[0]}); their files are kept as uncommitted edits")]


def check_config(store: Store) -> list[tuple[bool | None, str]]:
    """Every wrong value (a problem) and every unknown section or key (a warning: a
    misspelt key is silently its default)."""
    _cfg, errors, unknown = config.check(store.root)
    out: list[tuple[bool | None, str]] = [(False, str(e)) for e in errors]
    out += [(None, u) for u in unknown]
    return out or [(True, f"{config.FILE}: valid")]


def check_cards(store: Store) -> list[tuple[bool, str]]:
    cards, problems = store.scan()
    out = [(True, f"{plural(len(cards), 'card')} readable")]
    out += [(False, f"{p.path}: skipped: {p.reason}") for p in problems]
    return out


def check_index(store: Store) -> list[tuple[bool, str]]:
    """The index: readable, whole (FTS5's own integrity check) and up to date."""
    idx = Index.open(store)
    try:
        wrong = idx.verify(deep=True)
        counts = idx.refresh(walk=True)  # every card, not only what git names
    finally:
        idx.close()
    out = [(False, f"index was damaged ({w}); rebuilt it") for w in wrong[:3]]
    changed = sum(counts.get(k, 0) for k in ("added", "updated", "removed"))
    out.append((True, f"index: up to date ({plural(changed, 'card')} refreshed just now)"))
    return out


def check_conflicts(store: Store) -> list[tuple[bool | None, str]]:
    """Conflict cards `sync` left (store/sharing/conflicts.py): each holds a side of a clash
    a person still has to merge by hand; a warning until they are gone."""
    idx = Index.open(store)
    try:
        ids = [i for (i,) in idx.conn.execute(
            "SELECT id FROM cards WHERE type = 'conflict' ORDER BY id")]
    finally:
        idx.close()
    if not ids:
        return []
    shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    return [(None, f"sync: {plural(len(ids), 'conflict card')} to merge by hand: {shown} "
                   "(each names its card; merge what is missing, then `cardmem rm` it)")]


# A session waiting longer than this has outlived the queue's backoff (about 15 h):
# something keeps failing that retries alone will not mend.
BACKLOG_STALE_S = 24 * 3600


def check_backlog(store: Store) -> list[tuple[bool, str]]:
    """The retry queue: sessions whose extraction failed, waiting or given up."""
    b = retry_backlog(store.root, detail=True)
    error = f" (last error: {b['last_error']})" if b["last_error"] else ""
    out = []
    if b["given_up"]:
        out.append((False, f"{b['given_up']} session(s) given up after failed extraction"
                           f"{error}; their excerpts are in .cardmem/retry/given-up/: move one "
                           "back to .cardmem/retry/ to try it again, or delete it"))
    age = b["oldest_age_s"]
    if b["waiting"]:
        waiting = (f"{b['waiting']} session(s) waiting to be learned, oldest failed "
                   f"{_age(age)} ago")
        if age is not None and age > BACKLOG_STALE_S:
            out.append((False, f"{waiting}{error}; check the model (ANTHROPIC_API_KEY, "
                               "[model] in cardmem.toml) and .cardmem/hooks.log"))
        else:
            out.append((True, f"{waiting}; the next hook runs retry them"))
    elif not b["given_up"]:
        out.append((True, "retry queue: empty"))
    out += _spool(store)
    return out


def _spool(store: Store) -> list[tuple[bool, str]]:
    """Signals extracted while the store was busy wait in the spool for the next filing;
    a spool file older than a day means no hook has filed since."""
    try:
        files = [p for p in (store.state_dir / SPOOL).iterdir() if p.suffix == ".json"]
    except OSError:
        files = []
    if not files:
        return []
    age = time.time() - min(p.stat().st_mtime for p in files)
    line = f"{len(files)} batch(es) of signals spooled (the store was busy), oldest {_age(age)} old"
    if age > BACKLOG_STALE_S:
        return [(False, f"{line}; no hook has filed them since (the next session's "
                        "learner does; .cardmem/hooks.log says why it has not)")]
    return [(True, f"{line}; the next hook run files them")]


def _age(seconds: float | None) -> str:
    s = int(seconds or 0)
    return f"{s // 86400} d" if s >= 86400 else f"{s // 3600} h" if s >= 3600 else \
        f"{s // 60} min"


def check_model(store: Store) -> list[tuple[bool | None, str]]:
    """Which model route a call would take; no model call. With route = auto and no
    route at all the store is still healthy (only learning, ask and judge need a model),
    so that is a warning (sessions are not learned from); a route asked for by name that
    cannot work is a problem."""
    try:
        settings = model.settings(store.config.get("model"))
    except model.ModelError as exc:
        return [(False, f"model route: none: {exc.why}")]
    ok, line = model.route_status(settings)
    if not ok and settings.route == "auto":
        return [(None, line + " (learning, ask and judge need one)")]
    return [(ok, line)]


# Host adapters (hosts/) sit above tools/: they offer their checks as entry points.
CHECK_GROUP = "cardmem.checks"


def _plugin_checks() -> list[Check]:
    from importlib.metadata import entry_points

    # Once per name: cardmem's metadata seen twice on the path (an installed copy and a
    # clone's egg-info, say) lists every check twice, and doctor said each line twice.
    once = {ep.name: ep for ep in entry_points(group=CHECK_GROUP)}
    return [once[name].load() for name in sorted(once)]


def check_secrets(store: Store) -> list[tuple[bool, str]]:
    """Cards that hold a secret: their ids and the kinds, never the values."""
    cards, _ = store.scan()
    found = [(c.id, kinds) for c in cards if (kinds := secret_kinds(c.text))]
    if not found:
        return [(True, f"secrets: none found in {plural(len(cards), 'card')}")]
    return [(False, f"{cid}: holds {', '.join(f'{k} x{n}' if n > 1 else k for k, n in sorted(kinds.items()))}; "
                    "remove it, rotate it (git history keeps it)") for cid, kinds in found]


def check_maintain(store: Store) -> list[tuple[bool | None, str]]:
    """Open findings of the last `cardmem maintain` (or the Stop hook's daily pass): a
    warning to look at, not a failure; never run is only said."""
    kinds = record.load(store.root)
    at = record.checked_at(store.root)
    if at is None:
        return [(True, "maintain: never run (`cardmem maintain` finds broken links, "
                       "duplicates, contradictions, drift and stale cards)")]

    n = Counter({k: len(v.get("findings") or ()) for k, v in kinds.items()})
    when = f"checked {_age(time.time() - at)} ago"
    if not sum(n.values()):
        return [(True, f"maintain: no open findings ({when})")]
    listed = ", ".join(f"{c} {k}" for k, c in sorted(n.items(), key=lambda kv: (-kv[1], kv[0]))
                       if c)
    return [(None, f"maintain: {sum(n.values())} open finding(s): {listed} ({when}); "
                   "`cardmem maintain` lists them, --apply consolidates")]


CHECKS: list[Check] = [check_repo, check_identity, check_config, check_cards, check_secrets,
                       check_index, check_conflicts, check_backlog, check_model, check_maintain]


def run_checks(store: Store, progress=None) -> list[tuple[bool, str]]:
    """Every check's lines; progress (store/progress.py's) told each check as it ends (all
    the cards are read more than once: seconds at a few thousand)."""
    results = []
    checks = CHECKS + _plugin_checks()
    for n, check in enumerate(checks):
        if progress is not None:
            progress("checking", n, len(checks))
        try:
            results += check(store)
        except CardmemError as exc:
            results.append((False, str(exc)))
        except Exception as exc:  # noqa: BLE001 - one broken check must not hide the rest
            results.append((False, f"{getattr(check, '__name__', 'check')}: "
                                   f"{type(exc).__name__}: {exc}"))
    if progress is not None:
        progress("checking", len(checks), len(checks))
    return results


@click.command()
@store_option
@json_option
def doctor(store_path: Path | None, as_json: bool) -> None:
    """Check the store, settings, cards and index; say what is wrong.

    \b
    Example:
        cardmem doctor
        cardmem doctor --json
    """
    with bar(as_json) as progress:  # done before the first line is printed
        results = run_checks(open_store(store_path), progress)
    # ok is True, False (a problem: exit 1) or None (a warning: worth a look, no failure)
    if as_json:
        emit_json([{"ok": ok is not False, "message": msg, **({"warning": True} if ok is None
                                                              else {})} for ok, msg in results])
    else:
        for ok, msg in results:
            click.echo(f"{'ok     ' if ok else 'warning' if ok is None else 'PROBLEM'}  {msg}")
    bad = sum(1 for ok, _ in results if ok is False)
    if bad:
        raise click.exceptions.Exit(1)
