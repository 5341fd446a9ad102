"""`cardmem review`: rules and user cards that agents wrote wait here for a person.

A thin shell over store/learning/proposals.py: list, accept, reject.
"""
from __future__ import annotations

import difflib
from pathlib import Path

import click

from cardmem.tools.cli.options import emit_json, json_option, open_store, store_option
from cardmem.store.learning.proposals import proposals

SHOWN_LINES = 12  # of a proposal's body, or of its diff, in the text listing

EXAMPLE = """\b
Example:
    cardmem review
    cardmem review --json
    cardmem review accept feedback/always-squash-commits
    cardmem review reject feedback/obey-the-readme"""


@click.group(invoke_without_command=True, epilog=EXAMPLE)
@json_option
@store_option
@click.pass_context
def review(ctx: click.Context, as_json: bool, store_path: Path | None) -> None:
    """List proposals: rules and user cards written by agents (MCP, the memory tool, the
    stop hook), which are not in force until a person accepts them."""
    ctx.obj = store_path
    if ctx.invoked_subcommand is not None:
        return

    store = open_store(store_path)
    found = proposals(store)
    if as_json:
        emit_json([p.as_dict() for p in found])
        return
    if not found:
        click.echo("no proposals await review")
        return
    for p in found:
        click.echo(f"{p.id}  [{p.type or '?'}]  {p.title}")
        made = f" in {p.commit[:10]}" if p.commit else ""
        click.echo(f"    proposed by {p.proposed_by or 'unknown'}{made}"
                   + "".join(f"; supersedes {s}" for s in p.supersedes))
        for line in _shown(store, p):
            click.echo(f"    | {line}")
    click.echo(f"\n{len(found)} proposal(s). `cardmem review accept ID` puts one in force, "
               "`cardmem review reject ID` removes it.")


def _shown(store, p) -> list[str]:
    """A new card's body, or a change's diff against the card as it is now."""
    lines = p.body.strip("\n").splitlines()
    if p.changes:
        try:
            now = store.read(p.changes).text.splitlines()
        except Exception as exc:  # noqa: BLE001 - the listing goes on; accept will refuse
            return [f"(proposes a change to {p.changes}, which cannot be read: {exc})"]
        lines = [f"proposes a change to {p.changes}:"] + [
            ln for ln in difflib.unified_diff(now, lines, p.changes, p.id, lineterm="", n=1)][2:]
    more = len(lines) - SHOWN_LINES
    return lines[:SHOWN_LINES] + ([f"... {more} more line(s): `cardmem show {p.id}`"]
                                  if more > 0 else [])


def _decided(store_path: Path | None, ctx: click.Context, card_id: str, verb: str) -> None:
    from cardmem.store.learning import proposals

    d = getattr(proposals, verb)(open_store(store_path or ctx.obj), card_id)
    click.echo(f"{verb}ed {d.id}" + (f" in {d.commit[:10]}" if d.commit else ""))
    for line in d.lines:
        click.echo(f"    {line}")


@review.command(epilog=EXAMPLE)
@click.argument("card_id", metavar="ID")
@store_option
@click.pass_context
def accept(ctx: click.Context, card_id: str, store_path: Path | None) -> None:
    """Put a proposal in force: one commit, with your own git identity. A proposed change
    replaces the card it names; a card that `supersedes` another marks that one
    superseded."""
    _decided(store_path, ctx, card_id, "accept")


@review.command(epilog=EXAMPLE)
@click.argument("card_id", metavar="ID")
@store_option
@click.pass_context
def reject(ctx: click.Context, card_id: str, store_path: Path | None) -> None:
    """Remove a proposal: one commit, with your own git identity."""
    _decided(store_path, ctx, card_id, "reject")
