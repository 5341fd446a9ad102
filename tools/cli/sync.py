"""`cardmem update | rollback | sync | base`: moving a store by git, and attached bases."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from cardmem.store.errors import CardmemError
from cardmem.store.wording import plural
from cardmem.tools.cli.options import emit_json, json_option, open_store, store_option
from cardmem.store.sharing.updates import short, update as do_update, rollback as do_rollback
from cardmem.store.sharing.sync import sync as do_sync
from cardmem.store.sharing import bases
from cardmem.store.sharing.bases import refresh_base, update_base, rollback_base


def _report(moved, as_json: bool, label: str, undo: str = "cardmem rollback") -> None:
    """Print what moved (`undo`: the command that takes it back); an index that failed
    to refresh exits 2, the move standing."""
    m = moved
    if as_json:
        emit_json(m.as_dict())
    else:
        src = f"{m.remote} {m.branch}" if m.remote else ""
        lines = {
            "up-to-date": f"{label}: already at {short(m.new)}" + (f" ({src})" if src else ""),
            "ahead": f"{label}: nothing to take from {src}; this side has commits it lacks "
                     "(`cardmem sync` shares them)",
            "updated": f"{label}: {short(m.old)} -> {short(m.new)}, {m.commits} commit(s) "
                       f"from {src}; `{undo}` returns to {short(m.old)}",
            "forced": f"{label}: forced {short(m.old)} -> {short(m.new)} from {src}; local "
                      f"commits kept at refs/cardmem/forced/{m.old[:10]}…; `{undo}` "
                      f"returns to {short(m.old)}",
            "rolled-back": f"{label}: {short(m.old)} -> {short(m.new)}",
            "pushed": f"{label}: pushed {m.pushed} commit(s) to {src}",
            "synced": f"{label}: took {m.commits} commit(s) from {src}, replayed and pushed "
                      f"{m.pushed}; now at {short(m.new)} (`cardmem rollback` returns to "
                      f"{short(m.old)})",
        }
        click.echo(lines.get(m.status, f"{label}: {m.status} {short(m.new)}"))
        for c in m.conflicts:
            if c["conflict_card"]:
                click.echo(f"  conflict: {c['card']} was changed on both sides; the remote's "
                           f"lines kept, commit {c['commit'][:10]}'s version in "
                           f"{c['conflict_card']} (merge it by hand, then delete it)")
            else:
                click.echo(f"  kept: {c['card']}, deleted on one side and changed on the "
                           "other")
        if m.unshared:
            shown = ", ".join(m.unshared[:5]) + (f" and {len(m.unshared) - 5} more"
                                                 if len(m.unshared) > 5 else "")
            click.echo(f"  not shared: uncommitted edits in {shown} (commit them, or keep "
                       "`cardmem watch` running, then sync)")
    if m.index_error:
        click.echo(f"cardmem: index: {m.index_error}; the {m.kind} stands, the index is stale "
                   "(`cardmem index --full` rebuilds it)", err=True)
        sys.exit(2)


@click.command()
@click.argument("remote", required=False)
@click.option("--force", is_flag=True, help="Take upstream even when histories diverged "
              "(local commits stay reachable; `cardmem rollback` undoes it).")
@click.option("--base", "base_name", metavar="NAME", help="Update an attached base that is "
              "a git clone (fast-forward only).")
@json_option
@store_option
def update(remote: str | None, force: bool, base_name: str | None, as_json: bool,
           store_path: Path | None) -> None:
    """Fast-forward from upstream (REMOTE: a remote name or any git URL); exit 3 if not.

    \b
    Example:
        cardmem update
        cardmem update origin --json
        cardmem update --base docs
    """
    store = open_store(store_path)
    if base_name:
        if force:
            raise CardmemError(f"update --base {base_name}",
                               "bases update by fast-forward only; --force is not offered")
        _report(update_base(store, base_name, remote), as_json, f"base {base_name}",
                undo=f"cardmem rollback --base {base_name}")
        return

    _report(do_update(store, remote, force=force), as_json, "update")


@click.command()
@click.option("--to", "to", metavar="REF", help="A commit or ref to return to instead.")
@click.option("--base", "base_name", metavar="NAME", help="Roll back an attached base.")
@json_option
@store_option
def rollback(to: str | None, base_name: str | None, as_json: bool,
             store_path: Path | None) -> None:
    """Back to the head before the last update (or to REF); refuses over uncommitted edits.

    \b
    Example:
        cardmem rollback
        cardmem rollback --to 3f2a9c1
        cardmem rollback --base docs
    """
    store = open_store(store_path)
    if base_name:
        _report(rollback_base(store, base_name, to), as_json, f"base {base_name}")
        return

    _report(do_rollback(store, to), as_json, "rollback")


@click.command()
@click.argument("remote", required=False)
@json_option
@store_option
def sync(remote: str | None, as_json: bool, store_path: Path | None) -> None:
    """Fetch, replay local commits on the remote's, push; a clash keeps both sides.

    \b
    Example:
        cardmem sync
        cardmem sync origin --json
    """
    _report(do_sync(open_store(store_path), remote), as_json, "sync")


@click.group()
def base() -> None:
    """Attached bases: read-only folders of docs, searched with `search --base NAME`.

    \b
    Example:
        cardmem base attach docs ~/src/handbook
        cardmem search onboarding --base docs
        cardmem base list
    """


@base.command()
@click.argument("name")
@click.argument("path", type=click.Path(path_type=Path))
@json_option
@store_option
def attach(name: str, path: Path, as_json: bool, store_path: Path | None) -> None:
    """Attach the folder PATH under NAME and index it.

    \b
    Example:
        cardmem base attach docs ~/src/handbook
    """
    store = open_store(store_path)
    b = bases.attach(store, name, path)
    count, warnings = refresh_base(store, name)
    for w in warnings:
        click.echo(f"cardmem: {w}", err=True)
    if as_json:
        emit_json({"name": b.name, "path": str(b.path), "documents": count})
    else:
        click.echo(f"attached {b.name}: {b.path} ({plural(count, 'document')})")


@base.command(name="list")
@json_option
@store_option
def list_(as_json: bool, store_path: Path | None) -> None:
    """The attached bases.

    \b
    Example:
        cardmem base list --json
    """
    found = [b.as_dict() for b in bases.load(open_store(store_path)).values()]
    if as_json:
        emit_json(found)
        return
    for b in found:
        flags = "  (git)" if b["git"] else ""
        flags += "" if b["present"] else "  (gone: attach it again or detach it)"
        click.echo(f"{b['name']}  {b['path']}{flags}")


@base.command()
@click.argument("name")
@json_option
@store_option
def detach(name: str, as_json: bool, store_path: Path | None) -> None:
    """Forget a base and its index; its folder is left as it is.

    \b
    Example:
        cardmem base detach docs
    """
    b = bases.detach(open_store(store_path), name)
    if as_json:
        emit_json({"name": b.name, "path": str(b.path), "detached": True})
    else:
        click.echo(f"detached {b.name} ({b.path} untouched)")
