"""`cardmem import KIND PATH`: a thin shell over tools/importers."""
from __future__ import annotations

import os
from pathlib import Path

import click

from cardmem.tools.cli.options import (AGENT_ENV, emit_json, json_option, open_store,
                                       progress_option, store_option)
from .progress import bar

KINDS = ["claude-md", "claude-memory", "basic-memory", "mcp-memory"]
SHOWN = 20  # skipped inputs and unresolved links named before the rest is counted
# Cards made or changed named before the rest is counted: an import of thousands would
# scroll the lines that need a person (kept edits, cards gone from the source) away.
LISTED = 50

EXAMPLE = """\b
Example:
    cardmem import claude-md ./CLAUDE.md
    cardmem import claude-memory ~/.claude/projects/-home-me-src-acme-api/memory --project acme-api
    cardmem import basic-memory ~/basic-memory --dry-run
    cardmem import mcp-memory ~/mcp/memory.json --as-proposals --json"""

VERBS = {"created": "created", "proposed": "proposed", "updated": "updated",
         "unchanged": "unchanged", "kept": "kept your edit of", "gone": "gone from the source:"}
WOULD = {"created": "would create", "proposed": "would propose", "updated": "would update"}
# Who reads an imported instruction file into every session (a claude-md import's source).
READERS = {"claude.md": "Claude Code", "agents.md": "Codex", "gemini.md": "Gemini CLI"}


@click.command(name="import", epilog=EXAMPLE)
@click.argument("kind", metavar="KIND", type=click.Choice(KINDS))
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--project", help="The project the cards belong to (default: the one the "
              "source names or sits in, if any).")
@click.option("--dry-run", is_flag=True, help="List the cards it would write; write nothing.")
@click.option("--keep-secrets", is_flag=True, help="Store secrets (API keys, tokens, "
              "passwords) as written instead of redacting them.")
@click.option("--as-proposals", is_flag=True, help="File imported rules and user cards "
              "for `cardmem review` instead of putting them in force.")
@progress_option
@json_option
@store_option
def import_(kind: str, path: Path, project: str | None, dry_run: bool, keep_secrets: bool,
            as_proposals: bool, progress: bool | None, as_json: bool,
            store_path: Path | None) -> None:
    """Bring memory from another tool: a CLAUDE.md, Claude Code's auto memory folder,
    a basic-memory project or the MCP memory server's memory.json.

    One commit with your identity (Cardmem-Source: import); every card records its
    `source:`. Run it again after the source changed: cards follow it, edits you made
    since are kept and named. Input it cannot read is named and skipped (exit 1), as are
    the other files of a folder holding more than one CLAUDE.md / AGENTS.md (one a run).
    """
    from cardmem.tools.cli.cards import say_secrets
    from cardmem.tools.importers import run

    # An agent shelling out (hooks, MCP set CARDMEM_AGENT=1) gets proposals, never rules.
    agent = os.environ.get(AGENT_ENV) == "1"

    with bar(as_json, progress) as drawn:
        report = run(open_store(store_path), kind, str(path), project=project, dry_run=dry_run,
                     keep_secrets=keep_secrets, as_proposals=as_proposals, agent=agent,
                     progress=drawn)
    say_secrets(report.secrets, report.kept_secrets)
    for s in report.skipped[:SHOWN]:
        click.echo(f"cardmem: {s.where}: skipped: {s.why}", err=True)
    if len(report.skipped) > SHOWN:
        click.echo(f"cardmem: and {len(report.skipped) - SHOWN} more skipped", err=True)
    if as_json:
        emit_json(report.as_dict())
    else:
        _say(report)
    if not report.outcomes and report.skipped:
        click.echo(f"cardmem: import {kind} {report.source}: nothing imported", err=True)
    click.get_current_context().exit(report.exit_code)


def _say(report) -> None:
    words = WOULD if report.dry_run else VERBS
    listed = 0
    for o in report.outcomes:
        if o.action == "unchanged":
            continue
        if o.action in WOULD:  # made or changed: listed up to LISTED, the rest counted
            listed += 1
            if listed > LISTED:
                continue
        verb = words.get(o.action) or VERBS[o.action]
        fields = f" ({', '.join(o.fields)})" if o.fields else ""
        why = f": {o.why}" if o.why else ""
        click.echo(f"{verb} {o.id}{fields}{why}")
    if listed > LISTED:
        done = "to write" if report.dry_run else "written"
        click.echo(f"and {listed - LISTED} more cards {done} (--json lists every one)")
    counts = ", ".join(f"{report.count(a)} {a}" for a in VERBS if report.count(a))
    head = "dry run, nothing written" if report.dry_run else \
        (f"commit {report.commit[:10]}" if report.commit else "no commit (nothing changed)")
    scope = f" (project {report.project})" if report.project else ""
    click.echo(f"import {report.kind} {report.source}{scope}: {counts or 'no cards'}; {head}")
    for link in report.unresolved[:SHOWN]:
        click.echo(f"note: a link names nothing in the source: {link}")
    if len(report.unresolved) > SHOWN:
        click.echo(f"note: and {len(report.unresolved) - SHOWN} more such links")
    if report.kind == "claude-md" and report.commit and (report.count("created")
                                                         or report.count("updated")):
        # The file stays where its host reads it: each rule would reach a session twice,
        # the file's copy going stale as the cards change.
        reader = READERS.get(Path(report.source).name.lower(), "your agent")
        click.echo(f"note: {reader} still reads {report.source}: with cardmem installed, "
                   "what was imported reaches each session twice, and the file's copy goes "
                   f"stale as the cards change; take the imported sections out of it")
