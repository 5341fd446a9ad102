"""`cardmem demo`: a tour of cardmem on a throwaway copy of the example store."""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import click

EXAMPLE = Path(__file__).resolve().parents[2] / "cards"


def _step(title: str, *args: str, store: Path) -> None:
    """Run one cardmem command as a user would, and show it."""
    click.secho(f"\n$ cardmem {' '.join(args)}", bold=True)
    click.secho(f"  # {title}", dim=True)
    proc = subprocess.run([sys.executable, "-m", "cardmem.tools.cli", *args, "--store", str(store)],
                          capture_output=True, text=True)
    out = proc.stdout if len(proc.stdout) < 4000 else proc.stdout[:4000] + "\n  [… cut for the tour]\n"
    click.echo(out.rstrip())
    if proc.stderr.strip():
        click.echo(proc.stderr.rstrip())


# Later capabilities add their steps here: (title, args…).
STEPS: list[tuple[str, ...]] = [
    ("every card: id, type, title, description", "map"),
    ("one card, whole", "show", "entities/billing-service"),
    ("remember something new (a commit by you)", "remember", "Demo note",
     "--body", "cardmem demo ran here."),
    ("the store's history, from git", "log", "--limit", "5"),
    ("search, typo-tolerant", "search", "pytets fixtrues"),
    ("answer a question: rung 1, then a walk of at most 4 reads (needs ANTHROPIC_API_KEY;"
     " a Claude Code login answers from rung 1 only)",
     "ask", "Who approves a billing migration?", "--asker", "@priya"),
    ("what that answer read and spent: its receipt", "receipts", "--last", "1"),
    ("what a coding session starts with (rung 1): rules, user, project, map, recent changes;"
     " the SessionStart hook hands this to Claude Code", "context", "--project", "acme-api",
     "--budget", "4000"),
]


@click.command()
@click.option("--cards", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=EXAMPLE, show_default=True, help="The example store to copy.")
@click.option("--keep", is_flag=True, help="Keep the temporary store and print its path.")
def demo(cards: Path, keep: bool) -> None:
    """A tour on a copy of the example store."""
    from cardmem.store.store import init

    tmp = Path(tempfile.mkdtemp(prefix="cardmem-demo-"))
    root = tmp / "store"
    shutil.copytree(cards, root, ignore=shutil.ignore_patterns(".cardmem", ".git"))
    init(root)  # a new repository adopts the copied cards in its first commit
    click.secho(f"A copy of the example store, committed to git at {root}", bold=True)
    for title, *args in STEPS:
        _step(title, *args, store=root)
    if keep:
        click.echo(f"\nThe demo store is kept at {root}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
