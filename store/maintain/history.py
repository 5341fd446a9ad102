"""`long-history`: a card whose `## History` has grown into a wall of dated lines.

A card (not a signal card: those are a log) with `[maintain] history_fold_at` History
lines or more is found. --apply folds it (tools/maintain/fold.py): the model rewrites the
body to say what holds now, the newest `history_keep` lines stay in `## History`, and the
older raw lines are kept, word for word, below it in `## Folded history`.

    folded(text, body, keep) -> the card's new text (pure; frontmatter bytes kept)
"""
from __future__ import annotations

from datetime import date

from ..cards import card as cardlib
from ..cards.status import is_active
from .survey import Finding, Survey

FOLDED = "Folded history"


def limits(store) -> tuple[int, int]:
    """(fold_at, keep) from [maintain]; keep is below fold_at, so a fold ends the finding."""
    cfg = store.config.get("maintain", {})
    fold_at = max(2, int(cfg.get("history_fold_at", 40)))
    return fold_at, max(0, min(int(cfg.get("history_keep", 20)), fold_at - 1))


def parts(text: str) -> tuple[str, str, list[str], list[str]]:
    """(frontmatter, body without its History and Folded history sections, History lines,
    the lines of Folded history as they are)."""
    span = cardlib.split(text)
    start = span[2] if span else 0
    head, body = text[:start], text[start:]
    lines, prior = cardlib.history(text), []
    for name in (FOLDED, "History"):
        if sec := cardlib.section_span(body, name):
            if name == FOLDED:
                prior = [ln.rstrip("\r\n") for ln in body[sec[0]:sec[1]].splitlines(True)[1:]
                         if ln.strip()]
            body = body[:sec[0]] + body[sec[1]:]
    return head, body, lines, prior


def folded(text: str, body: str, keep: int, today: str | None = None) -> str:
    """The card with `body` in place of its text (History sections aside), the newest
    `keep` History lines kept in `## History`, the older ones appended, raw, to
    `## Folded history` below it."""
    nl = "\r\n" if "\r\n" in text else "\n"
    head, _, lines, prior = parts(text)
    old, new = (lines[:-keep], lines[-keep:]) if keep else (lines, [])
    day = today or date.today().isoformat()
    out = head + nl.join(body.strip().splitlines()) + nl + nl
    out += f"## History{nl}" + "".join(f"- {ln}{nl}" for ln in new)
    out += f"{nl}## {FOLDED}{nl}" + "".join(ln + nl for ln in prior)
    out += f"<!-- {day}: {len(old)} line(s) folded into the text above -->{nl}"
    return out + "".join(f"- {ln}{nl}" for ln in old)


def find(survey: Survey) -> list[Finding]:
    fold_at, keep = limits(survey.store)
    out = []
    for cid in sorted(survey.cards):
        c = survey.cards[cid]
        if c.type == "signal" or not is_active(c):
            continue
        n = len(cardlib.history(c.text))
        if n >= fold_at:
            out.append(Finding("long-history", [cid], f"## History has {n} lines "
                               f"(fold at {fold_at})",
                               f"fold the oldest {n - keep} into the text, raw lines kept "
                               "below it (--apply does, with a model)",
                               fix={"card": cid, "keep": keep}))
    return out
