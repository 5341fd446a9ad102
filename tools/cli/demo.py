"""`cardmem demo`: a tour of cardmem on a throwaway copy of the example store."""
from __future__ import annotations

import importlib.util
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import click
from cardmem.store.store import init
from .progress import model_note


def example_store() -> Path:
    """The example store: the package `cardmem.example` (the repository's cards/, shipped
    in the wheel as package data)."""
    spec = importlib.util.find_spec("cardmem.example")
    for place in (spec.submodule_search_locations or []) if spec else []:
        if (Path(place) / "cardmem.toml").is_file():
            return Path(place)
    return Path(__file__).resolve().parents[2] / "cards"


EXAMPLE = example_store()


def _step(title: str, *args: str, store: Path) -> None:
    """Run one cardmem command as a user would, and show it."""
    click.secho(f"\n$ cardmem {shlex.join(args)}", bold=True)  # pasteable as shown
    click.secho(f"  # {title}", dim=True)
    if args[0] == "search":  # the child's stderr is captured: say a first model load here

        model_note()
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
    ("search by meaning, in another language (the semantic layer: labels stay honest)",
     "search", "¿Cómo ejecuto las pruebas?", "--limit", "3"),
    ("answer a question: the cards it starts from, then at most 4 reads the model asks for"
     " (needs ANTHROPIC_API_KEY; a Claude Code login answers from the first cards only)",
     "ask", "Who approves a billing migration?", "--asker", "@priya"),
    ("what that answer read and spent: its receipt", "receipts", "--limit", "1"),
    ("what a coding session starts with: rules, user, project, map, recent changes;"
     " the SessionStart hook hands this to Claude Code", "context", "--project", "acme-api",
     "--budget", "4000"),
]


@click.command()
@click.option("--cards", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=EXAMPLE, show_default=True, help="The example store to copy.")
@click.option("--keep", is_flag=True, help="Keep the temporary store and print its path.")
def demo(cards: Path, keep: bool) -> None:
    """A tour on a copy of the example store.

    \b
    Example:
        cardmem demo
        cardmem demo --keep
    """
    tmp = Path(tempfile.mkdtemp(prefix="cardmem-demo-"))
    root = tmp / "store"
    try:
        shutil.copytree(cards, root, ignore=shutil.ignore_patterns(".cardmem", ".git"))
        init(root)  # a new repository adopts the copied cards in its first commit
        click.secho(f"A copy of the example store, committed to git at {root}", bold=True)
        for title, *args in STEPS:
            _step(title, *args, store=root)
    except BaseException:  # Ctrl-C or a failure: a throwaway copy is not left behind
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    if keep:
        click.secho(f"\nThe demo store is kept at {root}. To go on with it:", bold=True)
        click.echo(f"    export CARDMEM_STORE={shlex.quote(str(root))}")
        click.echo("    cardmem map")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
        click.secho("\nThe demo store was a temporary copy and is gone "
                    "(`cardmem demo --keep` keeps it).", bold=True)
    click.echo("Next, your own store:\n"
               "    cardmem init ~/notes && export CARDMEM_STORE=~/notes\n"
               "    cardmem remember \"Deploy steps\" --body \"make deploy\"\n"
               "    cardmem install claude-code   # memory in every Claude Code session")
