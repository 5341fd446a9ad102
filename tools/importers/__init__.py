"""Bring memory kept by another tool into a store: `cardmem import KIND PATH`.

One module per kind reads its source into drafts (model.py); plan.py decides what
they change in the store; `run` redacts secrets, makes the plan under the write lock
and commits it as one commit with the person's identity, `Cardmem-Source: import` and
a `Cardmem-Import: <kind> <where>` trailer naming the source.
"""
from __future__ import annotations

import importlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cardmem.store.cards.card import MAX_CARD_BYTES
from cardmem.store.cards.paths import project_key
from cardmem.store.context.session import project_for
from cardmem.store.errors import CardmemError
from cardmem.store.store import Store
from cardmem.store.git.writer import Message
from cardmem.store.progress import quiet
from cardmem.tools.secrets.redact import screen

from .model import Draft, Parsed, Skipped, shown
from .plan import IMPORT_TRAILER, Outcome, Plan, make

if TYPE_CHECKING:
    from cardmem.store.progress import Progress

# kind -> its module (loaded when used)
KINDS = {"claude-md": "claude_md", "claude-memory": "claude_memory",
         "basic-memory": "basic_memory", "mcp-memory": "mcp_memory"}


@dataclass
class Report:
    kind: str
    source: str
    project: str | None
    dry_run: bool
    outcomes: list[Outcome] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    unresolved: list[str] = field(default_factory=list)
    secrets: dict[str, int] = field(default_factory=dict)
    kept_secrets: bool = False
    commit: str | None = None

    def count(self, action: str) -> int:
        return sum(o.action == action for o in self.outcomes)

    @property
    def exit_code(self) -> int:
        """1 when any input was skipped (the rest is imported), else 0."""
        return 1 if self.skipped else 0

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "source": self.source, "project": self.project,
                "dry_run": self.dry_run, "commit": self.commit,
                "cards": [o.as_dict() for o in self.outcomes],
                "skipped": [s.as_dict() for s in self.skipped],
                "unresolved_links": self.unresolved,
                "secrets": {"redacted": not self.kept_secrets, "kinds": self.secrets}}


def parse(kind: str, path: Path, project: str | None,
          store: Store | None = None) -> tuple[Parsed, str | None]:
    """The drafts of a source, and the project they were scoped to: the one given, else
    the one the source names or sits in, named as session start names a working folder
    (its repository's folder, through `[projects]` in cardmem.toml)."""
    if kind not in KINDS:
        raise CardmemError(f"import KIND {kind!r}", f"is none of {', '.join(KINDS)}")
    if not path.exists():
        raise CardmemError(f"import {kind} PATH", f"{path}: no such file or folder")
    module = importlib.import_module(f"{__name__}.{KINDS[kind]}")
    if project is not None:
        project = project_key(project)
    elif hasattr(module, "guess_project"):
        guess = module.guess_project(path)
        if isinstance(guess, Path) and store is not None:
            project = project_for(store, guess)
        else:
            project = project_key(guess.name if isinstance(guess, Path) else guess)
    return module.parse(path.absolute(), project), project


def _drop_oversized(parsed: Parsed) -> None:
    """An item too large for any card is skipped, named, not the whole import refused."""
    room = MAX_CARD_BYTES - 8192  # the frontmatter's share
    for d in [d for d in parsed.drafts if len(d.body.encode()) > room]:
        parsed.drafts.remove(d)
        parsed.skipped.append(Skipped(f"{shown(parsed.origin) if parsed.origin else ''}#{d.key}",
                                      f"{len(d.body.encode()):,} bytes; a card holds at "
                                      f"most {room:,}"))


def screen_drafts(drafts: list[Draft], keep: bool = False) -> dict[str, int]:
    """Every draft's text screened for secrets as every write is (redact.screen): replaced
    by markers unless keep; how many of each kind."""
    kinds: Counter[str] = Counter()
    for d in drafts:
        n = len(d.aliases)
        (d.title, d.body, d.description, *names), found = screen(
            [d.title, d.body, d.description, *d.aliases, *d.tags], keep)
        d.aliases, d.tags = names[:n], names[n:]
        kinds.update(found)
    return dict(kinds)


def run(store: Store, kind: str, path: str | Path, *, project: str | None = None,
        dry_run: bool = False, keep_secrets: bool = False, as_proposals: bool = False,
        agent: bool = False, progress: Progress = quiet) -> Report:
    """Import one source: one commit (none for a dry run, or when nothing changes).

    An agent's import (agent=True) is committed as the agent's, redacts secrets always,
    and files every rule and user card as a proposal: agents never set a rule.
    progress: store/progress.py's callback, told each phase (reading, secrets, writing)."""
    if agent:
        keep_secrets, as_proposals = False, True
    given = Path(path).expanduser()
    progress(f"reading {kind}", 0, None)
    parsed, project = parse(kind, given, project, store)
    n = len(parsed.drafts)
    progress(f"reading {kind}", n, n)
    progress("looking for secrets", 0, n)
    where = shown(parsed.origin or given.absolute())
    report = Report(kind, where, project, dry_run, skipped=parsed.skipped,
                    unresolved=parsed.unresolved, kept_secrets=keep_secrets)
    _drop_oversized(parsed)
    report.secrets = screen_drafts(parsed.drafts, keep_secrets)
    progress("looking for secrets", n, n)
    if not parsed.drafts:
        return report
    if dry_run:
        report.outcomes = make(store, kind, where, parsed.drafts,
                               as_proposals=as_proposals).outcomes
        return report
    msg = Message(f"import: {kind} {where}", [], "import", trailers={IMPORT_TRAILER:
                                                                     f"{kind} {where}"})
    done: list[Plan] = []

    def compute() -> dict[str, bytes | None]:
        done.clear()
        plan = make(store, kind, where, parsed.drafts, as_proposals=as_proposals)
        done.append(plan)
        n = len(plan.changes)
        msg.subject = f"import: {n} card{'s' if n != 1 else ''} from {kind} {where}"
        msg.lines = plan.lines()
        return plan.changes

    progress("writing cards", 0, n)
    report.commit = store.commit(compute, msg, agent=agent)
    progress("writing cards", n, n)
    report.outcomes = done[0].outcomes if done else []
    return report
