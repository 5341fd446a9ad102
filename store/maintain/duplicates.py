"""`duplicate`: two cards, or two History lines of one card, that say the same thing.

A cheap pass, no model: each card is the set of Porter stems of its keywords (title,
description, body without its History), weighted by rarity (idf); two cards of one scope
(the same project, or one of them global) are duplicates when the cosine of those
weights reaches DUPLICATE. Candidate pairs are only those sharing one of each card's
RAREST stems, so a 10k store is not 50M comparisons.

Calibration (bench/RESULTS.md): on the agents-md corpus (395 real sections of 46
projects' agent files, none a duplicate of another) the highest pair scores below
DUPLICATE, while a card refiled in other words (tests/store/test_maintain.py) scores above.
"""
from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from itertools import combinations

from ..cards import card as cardlib
from ..learning.matching import entry_line, is_duplicate, keywords
from ..index.porter import stem
from .survey import Finding, Survey

DUPLICATE = 0.6  # idf-weighted cosine of two cards' stems at or above: the same thing
RAREST = 8  # stems per card that select candidate pairs
MIN_STEMS = 4  # a card with fewer says too little to call it anyone's duplicate
LINE_SAME = 0.75  # Jaccard of two History lines' stems (with the same numbers)
_HISTORY = re.compile(r"^## History[ \t]*$", re.M | re.I)


_STEMS: dict[str, str] = {}  # word -> stem: a store repeats its words, porter is slow


def stems(text: str) -> set[str]:
    out = set()
    for w in keywords(text):
        s = _STEMS.get(w)
        if s is None:
            s = _STEMS[w] = stem(w) if w.isascii() else w
        out.add(s)
    return out


def card_text(c: cardlib.Card) -> str:
    body = c.body
    if m := _HISTORY.search(body):
        body = body[:m.start()]
    return " ".join([c.title, *c.aliases, c.description, body])


def _scope(c: cardlib.Card) -> str | None:
    return c.project


def card_pairs(survey: Survey, threshold: float = DUPLICATE) -> list[tuple[float, str, str]]:
    """(score, a, b) of every candidate pair of active cards scoring at or above
    threshold, best first."""
    cards = [c for c in survey.active()]
    words = {c.id: stems(card_text(c)) for c in cards}
    words = {k: v for k, v in words.items() if len(v) >= MIN_STEMS}
    df: Counter[str] = Counter()
    for ws in words.values():
        df.update(ws)
    n = max(1, len(words))
    vec: dict[str, dict[str, float]] = {}
    for cid, ws in words.items():
        v = {w: math.log((n + 1) / df[w]) for w in ws}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        vec[cid] = {w: x / norm for w, x in v.items()}
    by_stem: dict[str, list[str]] = defaultdict(list)
    for cid, ws in words.items():
        # The rarest stems the card shares with another: a stem only it has pairs nothing.
        for w in sorted((w for w in ws if df[w] > 1), key=lambda w: (df[w], w))[:RAREST]:
            by_stem[w].append(cid)
    scope = {c.id: _scope(c) for c in cards}
    seen: set[tuple[str, str]] = set()
    out = []
    for ids in by_stem.values():
        for a, b in combinations(sorted(ids), 2):
            if (a, b) in seen:
                continue
            seen.add((a, b))
            if scope[a] and scope[b] and scope[a] != scope[b]:
                continue
            va, vb = vec[a], vec[b]
            score = sum(va[w] * vb[w] for w in va.keys() & vb.keys())  # set op in C
            if score >= threshold:
                out.append((score, a, b))
    return sorted(out, key=lambda t: (-t[0], t[1], t[2]))


def _keep_first(survey: Survey, a: str, b: str) -> tuple[str, str]:
    """(keep, other): the card that says more is kept (then the older, then by id)."""
    ca, cb = survey.cards[a], survey.cards[b]
    key = {x: (-len(card_text(c)), survey.last_changed(x), x) for x, c in ((a, ca), (b, cb))}
    return (a, b) if key[a] <= key[b] else (b, a)


def _numbers(s: str) -> set[str]:
    return set(re.findall(r"\d+(?:\.\d+)*", s))


def same_line(a: str, b: str) -> bool:
    """Two History lines that say the same: nearly the same words (compound's test), or
    the same stems in another order, with the same numbers."""
    la, lb = entry_line(a), entry_line(b)
    if is_duplicate(la, [lb]):
        return True
    sa, sb = stems(la), stems(lb)
    if len(sa) < MIN_STEMS or len(sb) < MIN_STEMS or _numbers(la) != _numbers(lb):
        return False
    return len(sa & sb) / len(sa | sb) >= LINE_SAME


def line_pairs(c: cardlib.Card) -> list[tuple[str, str]]:
    """(earlier, later) History lines of one card that say the same thing."""
    lines = cardlib.history(c.text)
    out, dup = [], set()
    for i, j in combinations(range(len(lines)), 2):
        if j not in dup and i not in dup and same_line(lines[i], lines[j]):
            out.append((lines[i], lines[j]))
            dup.add(j)
    return out


def find(survey: Survey) -> list[Finding]:
    out = []
    for score, a, b in card_pairs(survey):
        keep, other = _keep_first(survey, a, b)
        out.append(Finding("duplicate", [keep, other],
                           f"{other} says what {keep} says (similarity {score:.2f})",
                           f"merge {other} into {keep}: its unique lines move over, it "
                           f"becomes superseded (--apply does)",
                           fix={"keep": keep, "other": other}))
    for cid in sorted(survey.cards):
        c = survey.cards[cid]
        for first, later in line_pairs(c):
            out.append(Finding("duplicate", [cid],
                               f"History line repeats an earlier one: {later!r} ~ {first!r}",
                               "drop the later line by hand (a long History is folded by --apply)"))
    return out
