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
    cardmem maintain --json --only broken-link --only duplicate
    cardmem maintain --reject dup-3f0c9a1b2c
    cardmem maintain --apply"""


@click.command(epilog=EXAMPLE)
@click.option("--only", "only", multiple=True, type=click.Choice(KINDS),
              help="Look for this kind only (repeatable).")
@click.option("--apply", "apply", is_flag=True,
              help="Consolidate what was found: one agent commit per change.")
@click.option("--reject", "reject", metavar="FINDING", multiple=True,
              help="These cards are different: never propose this duplicate finding "
                   "(named dup-…) again while its cards are unchanged. Repeatable.")
@json_option
@store_option
def maintain(only: tuple[str, ...], apply: bool, reject: tuple[str, ...], as_json: bool,
             store_path: Path | None) -> None:
    """Findings: broken links, duplicates, contradictions (model-judged), drift from the
    project's checkout, stale cards, long Histories, and `ask` answers the judge found
    supported that no card says yet. Reads only, unless --apply or --reject.

    Duplicates are groups of cards of one project with the same facts (numbers,
    versions, paths, negations) and nearly the same words; --apply merges each into the
    card kept (a rule first), moving every sentence it lacks. A finding you disagree with:
    --reject its name (shown as `dup-…`); the decision is committed to the store
    (maintain-distinct.txt), so teammates see it too. Rejecting a merge proposal in
    `cardmem review` does the same."""
    from cardmem.tools.maintain import run

    store = open_store(store_path)
    if reject:
        from cardmem.tools.maintain import reject as reject_finding

        done = [reject_finding(store, key) for key in reject]
        if as_json:
            emit_json({"rejected": [{"finding": d.id, "commit": d.commit} for d in done]})
            return
        for d in done:
            click.echo(f"rejected {d.id}" + (f" in {d.commit[:10]}" if d.commit else ""))
            for line in d.lines:
                click.echo(f"    {line}")
        return
    from cardmem.tools.cli.progress import bar

    with bar(as_json) as progress:  # on a terminal only: a 10k store takes seconds
        report = run(store, set(only) or None, apply=apply, progress=progress)
    if as_json:
        emit_json(report.as_dict())
        return
    for f in report.findings:
        click.echo(f"{f.kind}  {'  '.join(f.ids)}" + (f"  [{f.key}]" if f.key else ""))
        click.echo(f"    {f.detail}")
        click.echo(f"    -> {f.suggestion}")
    for note in report.notes:
        click.echo(f"note: {note}")
    for change in report.applied:
        click.echo(f"applied {change['commit'][:10]}  {change['subject']}")
    if not report.findings:
        click.echo("no findings")
