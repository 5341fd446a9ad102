"""`cardmem maintain`: what in the store has stopped being true, and --apply to
consolidate it. A thin shell over store/maintain/ (model-free findings) and
tools/maintain/ (the model-judged contradictions, the consolidating commits)."""
from __future__ import annotations

from pathlib import Path

import click

from cardmem.tools.cli.options import emit_json, json_option, open_store, store_option

KINDS = ("broken-link", "duplicate", "contradiction", "drift", "stale", "long-history",
         "unfiled-answer")

EXAMPLE = """\b
Example:
    cardmem maintain
    cardmem maintain --json --only broken-link --only duplicate
    cardmem maintain --apply"""


@click.command(epilog=EXAMPLE)
@click.option("--only", "only", multiple=True, type=click.Choice(KINDS),
              help="Look for this kind only (repeatable).")
@click.option("--apply", "apply", is_flag=True,
              help="Consolidate what was found: one agent commit per change.")
@json_option
@store_option
def maintain(only: tuple[str, ...], apply: bool, as_json: bool, store_path: Path | None) -> None:
    """Findings: broken links, duplicates, contradictions (model-judged), drift from the
    project's checkout, stale cards, long Histories, and `ask` answers the judge found
    supported that no card says yet. Reads only, unless --apply."""
    from cardmem.tools.maintain import run

    store = open_store(store_path)
    report = run(store, set(only) or None, apply=apply)
    if as_json:
        emit_json(report.as_dict())
        return
    for f in report.findings:
        click.echo(f"{f.kind}  {'  '.join(f.ids)}")
        click.echo(f"    {f.detail}")
        click.echo(f"    -> {f.suggestion}")
    for note in report.notes:
        click.echo(f"note: {note}")
    for change in report.applied:
        click.echo(f"applied {change['commit'][:10]}  {change['subject']}")
    if not report.findings:
        click.echo("no findings")
