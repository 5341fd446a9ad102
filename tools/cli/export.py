"""`cardmem export`: the live rules into a host's own instruction files (store/rules/exports.py)."""
from __future__ import annotations

from pathlib import Path

import click

from cardmem.store.errors import CardmemError
from cardmem.store.wording import plural
from cardmem.tools.cli.options import emit_json, json_option, open_store, store_option
from cardmem.store.context.session import project_for
from cardmem.store.rules.exports import HOSTS as FILES, export_and_keep

HOSTS = ("agents-md", "gemini-md", "cursor-rules", "copilot-instructions")
EXAMPLE = """\b
Example:
    cardmem export agents-md                 # ./AGENTS.md (Codex, and every host)
    cardmem export gemini-md ~/src/acme      # ~/src/acme/GEMINI.md
    cardmem export cursor-rules              # .cursor/rules/cardmem.mdc, cardmem-*.mdc
    cardmem export copilot-instructions --project acme-api --json"""


@click.command(epilog=EXAMPLE)
@click.argument("host", type=click.Choice(HOSTS), metavar="HOST")
@click.argument("path", required=False, metavar="[PATH]")
@click.option("--project", metavar="NAME",
              help="Whose project rules go in besides the store's own (default: the project "
                   "PATH belongs to, as the hooks find it).")
@json_option
@store_option
def export(host: str, path: str | None, project: str | None, as_json: bool,
           store_path: Path | None) -> None:
    """Write the rules in force into HOST's own files under PATH (default: the current
    folder), inside a marked block: a person's text around it is never touched, and a
    second run changes nothing. HOST: agents-md (AGENTS.md), gemini-md (GEMINI.md),
    cursor-rules (.cursor/rules/*.mdc), copilot-instructions (.github/...).

    Each file keeps within its host's cap (AGENTS.md 32 KiB, Cursor 500 lines a rule
    file, Copilot 4,000 characters): rules go in whole or not at all, and the block names
    those left out. A rule whose `applies_to` names paths becomes a Cursor rule with
    `globs` / a Copilot instructions file with `applyTo`. The export is kept current:
    every change to a rule writes it again (take the block out to end that).
    """
    folder = Path(path) if path is not None else Path.cwd()
    if path is not None and not path.strip():
        raise CardmemError("PATH", "is empty; name the project's folder")
    if not folder.is_dir():
        raise CardmemError(f"PATH {path}", "is not a folder (the project's folder, where "
                                           "the host looks for its files)")
    store = open_store(store_path)
    project = project or project_for(store, folder)
    result = export_and_keep(store, host, folder, project)
    if as_json:
        emit_json({"host": host, "total": result.total, "shown": result.shown,
                   "scoped": result.scoped, "left_out": result.left_out,
                   "files": [{"path": str(p), "action": a} for p, a in result.files]})
        return
    for p, action in result.files:
        click.echo(f"{action}: {p}")
    left = f"; {len(result.left_out)} left out to fit (named in the block)" \
        if result.left_out else ""
    scoped = f", {len(result.scoped)} in files of their own by path" if result.scoped else ""
    click.echo(f"{plural(result.total, 'rule')} in force: {len(result.shown)} whole in "
               f"{FILES[host].main}{scoped}{left}; kept current as rules change")
