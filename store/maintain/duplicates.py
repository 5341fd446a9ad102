"""`duplicate`: cards, or History lines of one card, that say the same thing.

A cheap pass, no model: each card is the set of Porter stems of its keywords (title,
description, body without its History) and its facts (facts.py: numbers, versions,
dates, identifiers, paths, negations), weighted by rarity (idf). Cards are duplicates
when they have the same scope (project, or none) and the same facts, and the cosine of
those weights reaches DUPLICATE; a chain of such pairs is one group, one finding, which
keeps a rule (a protected type) over any other card. Cards a person called distinct
(distinct.py) are never grouped while they are unchanged. Candidate pairs come from
MinHash LSH (lsh.py), not from every pair. Cards that agree in words but not in facts
are no duplicates: the contradiction pass may put them to its model (card_pairs).

Calibration (bench/RESULTS.md): on the agents-md corpus (395 real sections of 46
projects' agent files, none a duplicate of another) the highest pair scores below
DUPLICATE, while a card refiled in other words (tests/store/maintain/test_maintain.py) scores above.
"""
from __future__ import annotations

import hashlib
import math
import re
import sys
from collections import Counter, defaultdict
from itertools import combinations
from operator import mul

from dataclasses import dataclass

from ..cards import card as cardlib
from ..index.porter import stem
from ..learning.matching import entry_line, is_duplicate, keywords
from ..learning.proposals import digest
from ..cards import distinct
from ..progress import quiet
from . import kept, lsh
from .facts import facts, negated, negates, token_fact, tokens
from .survey import Finding, Survey

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..progress import Progress

DUPLICATE = 0.6  # idf-weighted cosine of two cards' stems at or above: the same thing
RAREST = 8  # stems per card that select candidate pairs (contradiction topics)
MAX_DF = 100  # ...each in at most this many cards
MIN_STEMS = 4  # a card with fewer says too little to call it anyone's duplicate
WIDE, WINDOW = 64, 16  # a candidate bucket above WIDE cards: each meets WINDOW after it
LINE_SAME = 0.75  # Jaccard of two History lines' stems (with the same numbers)


def stems(text: str, toks: set[str] | None = None) -> set[str]:
    """The Porter stems of the text's keywords (learning.matching's), read token by token
    (facts.tokens(text), when the caller has them: no keyword spans a space or a `)."""
    return _TOKENS.of(tokens(text) if toks is None else toks) - _TOKENS.facts


def _stems_of(token: str) -> frozenset[str]:
    return frozenset(map(_STEMMED.__getitem__, keywords(token)))


class _Stemmed(dict):
    """keyword -> its Porter stem (a word stands in many tokens: `test`, `(test`, test.)."""

    def __missing__(self, word: str) -> str:
        self[word] = out = stem(word) if word.isascii() else word
        return out


_STEMMED = _Stemmed()


def card_text(c: cardlib.Card) -> str:
    """What the card says: its names, description and body up to its History section."""
    body = c.body
    if span := cardlib.history_span(c.text):
        body = c.text[len(c.text) - len(body):span[0]]
    return " ".join([c.title, *c.aliases, c.description, body])


def _scope(c: cardlib.Card) -> str | None:
    return c.project


def features(c: cardlib.Card) -> tuple[set[str], frozenset[str]]:
    """(what similarity weighs: stems and facts, the facts alone) of a card."""
    return text_features(card_text(c))


def text_features(text: str) -> tuple[set[str], frozenset[str]]:
    """features of a card whose card_text is text: stems(text) | facts(text), facts(text),
    each token looked up once for both (a store repeats its tokens; porter is slow)."""
    toks = tokens(text)
    words = _TOKENS.of(toks)
    fs = words & _TOKENS.facts  # a stem is a word, never a "#fact"
    if not toks.isdisjoint(_TOKENS.negating):  # a text with none needs no search
        fs |= negated(text)
    words |= fs
    return words, frozenset(fs)


class _TokenFeatures(dict):
    """token -> its keywords' stems and its fact (facts.token_fact), computed when first
    asked for; .facts: every fact among them; .negating: the tokens that hold a negation."""

    def __init__(self) -> None:
        super().__init__()
        self.facts: set[str] = set()
        self.negating: set[str] = set()

    def of(self, toks: set[str]) -> set[str]:
        """The features of these tokens together."""
        if len(self) > 500_000:  # a long-lived process: bounded
            self.clear()
            self.facts.clear()
            self.negating.clear()
            _STEMMED.clear()
        return set().union(*map(self.__getitem__, toks))

    def __missing__(self, token: str) -> frozenset[str]:
        if negates(token):
            self.negating.add(token)
        out = _stems_of(token)
        if (fact := token_fact(token)) is not None:
            self.facts.add(fact)
            out = out | {fact}
        self[token] = out
        return out


_TOKENS = _TokenFeatures()


_FEATURES_CODE = (text_features, facts, keywords, stem)  # their modules name kept features


class _Vectors(dict):
    """id -> its features weighted by rarity (idf), normalised: cosine is a dot product.
    Each made when first asked for: most cards meet no other."""

    def __init__(self, words: dict[str, set[str]]) -> None:
        super().__init__()
        df: Counter[str] = Counter()
        for ws in words.values():
            df.update(ws)
        n = max(1, len(words))
        self.idf = {w: math.log((n + 1) / k) for w, k in df.items()}
        self.words = words

    def __missing__(self, cid: str) -> dict[str, float]:
        ws = self.words[cid]
        xs = list(map(self.idf.__getitem__, ws))
        norm = math.sqrt(sum(map(mul, xs, xs))) or 1.0
        v = self[cid] = dict(zip(ws, map(norm.__rtruediv__, xs)))
        return v


def _score(va: dict[str, float], vb: dict[str, float]) -> float:
    return sum(va[w] * vb[w] for w in va.keys() & vb.keys())  # set op in C


def card_pairs(survey: Survey, threshold: float = DUPLICATE) -> list[tuple[float, str, str]]:
    """(score, a, b) of every candidate pair of active cards of one scope scoring at or
    above threshold, best first, whatever their facts: the contradiction pass's topics.
    Candidates share one of each card's RAREST stems."""
    cards = survey.active()
    words = {c.id: features(c)[0] for c in cards}
    words = {k: v for k, v in words.items() if len(v) >= MIN_STEMS}
    vec = _Vectors(words)
    df: Counter[str] = Counter()
    for ws in words.values():
        df.update(ws)
    by_stem: dict[str, list[str]] = defaultdict(list)
    for cid, ws in words.items():
        # The rarest stems the card shares with another: a stem only it has pairs nothing.
        # A stem of more than MAX_DF cards is no topic (600 cards of one template would
        # otherwise be 179,700 pairs).
        for w in sorted((w for w in ws if 1 < df[w] <= MAX_DF),
                        key=lambda w: (df[w], w))[:RAREST]:
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
            score = _score(vec[a], vec[b])
            if score >= threshold:
                out.append((score, a, b))
    return sorted(out, key=lambda t: (-t[0], t[1], t[2]))


def same_facts(survey: Survey, a: str, b: str) -> bool:
    return facts(card_text(survey.cards[a])) == facts(card_text(survey.cards[b]))


@dataclass
class Group:
    keep: str
    others: list[str]
    scores: list[float]  # the score that brought each of others in


def groups(survey: Survey, progress: Progress = quiet) -> list[Group]:
    """Groups of active cards that say the same thing: one scope, the same facts, a chain
    of pairs scoring DUPLICATE or more; none two of which a person called distinct. The
    card to keep first: a rule (protected type), then the one that says more, the older."""
    cards = survey.active()
    total = len(cards)
    progress("comparing cards", 0, total)
    words: dict[str, set[str]] = {}
    keys: dict[str, object] = {}
    known = kept.Kept(survey.store.root, text_features,  # features of texts seen before
                      [sys.modules[f.__module__].__file__ or "" for f in _FEATURES_CODE])
    done = False
    try:
        for n, c in enumerate(cards, 1):
            ws, fs = known.of(card_text(c))
            if len(ws) >= MIN_STEMS:
                words[c.id], keys[c.id] = ws, (_scope(c), fs)
            if n % 500 == 0:
                progress("comparing cards", n // 2, total)
        done = True
    finally:  # also when cut off: a budgeted daily pass gets further the next day
        known.save(complete=done)
    vec = _Vectors(words)
    apart = distinct.apart(survey.store.root, {c.id: digest(c.text) for c in cards})
    parent: dict[str, str] = {}
    best: dict[str, float] = {}

    def root(x: str) -> str:
        while parent.get(x, x) != x:
            parent[x] = x = parent.get(parent[x], parent[x])
        return x

    def join(a: str, b: str, score: float) -> None:
        ra, rb = root(a), root(b)
        parent[max(ra, rb)] = min(ra, rb)
        for x in (a, b):
            best[x] = max(best.get(x, 0.0), score)

    # Cards with the very same features are one candidate (a thousand copies are not a
    # million pairs); the copies join their first at once.
    same: dict[tuple, list[str]] = defaultdict(list)
    alike: dict[tuple, list[str]] = defaultdict(list)  # may be copies: key and size agree
    for cid in sorted(words):
        alike[(keys[cid], len(words[cid]))].append(cid)
    for key, ids in alike.items():
        for cid in ids:  # a frozen copy of the features only where another may match them
            same[(key, frozenset(words[cid])) if len(ids) > 1 else (key, cid)].append(cid)
    for ids in same.values():
        for b in ids[1:]:
            if (ids[0], b) not in apart:
                join(ids[0], b, _score(vec[ids[0]], vec[b]))
    firsts = {ids[0]: words[ids[0]] for ids in same.values()}
    candidates = lsh.buckets(firsts, keys)
    seen: set[tuple[str, str]] = set()
    for n, ids in enumerate(candidates, 1):
        for i, a in enumerate(ids):
            # a large bucket (near-copies that are no duplicates of each other): each card
            # meets its next WINDOW neighbours only, so it stays linear
            for b in ids[i + 1:] if len(ids) <= WIDE else ids[i + 1:i + 1 + WINDOW]:
                if (a, b) in seen or (a, b) in apart or root(a) == root(b):
                    continue
                seen.add((a, b))
                if (score := _score(vec[a], vec[b])) >= DUPLICATE:
                    join(a, b, score)
        if n % 200 == 0:
            progress("comparing cards", total // 2 + total * n // (2 * len(candidates)), total)
    members: dict[str, list[str]] = defaultdict(list)
    for cid in best:  # every card of a scoring pair
        members[root(cid)].append(cid)
    protected = set(survey.store.config["extract"]["protected_types"])
    out = []
    for ids in members.values():
        ids = sorted(set(ids), key=lambda x: _rank(survey, x, protected))
        taken = [ids[0]]
        for x in ids[1:]:
            if not any((min(x, y), max(x, y)) in apart for y in taken):
                taken.append(x)
        if len(taken) > 1:
            out.append(Group(taken[0], taken[1:], [best[x] for x in taken[1:]]))
    progress("comparing cards", total, total)
    return sorted(out, key=lambda g: (-max(g.scores), g.keep))


def _rank(survey: Survey, cid: str, protected: set[str]) -> tuple:
    """Which card of a group is kept: a rule over any other type, then the one that says
    more, then the older, then by id."""
    c = survey.cards[cid]
    return (c.type not in protected, -len(card_text(c)), survey.last_changed(cid), cid)


def finding_key(survey: Survey, ids: list[str]) -> str:
    """A finding's name a person can reject: its cards as they are now (a change to any
    of them makes a new name)."""
    said = "\n".join(f"{cid} {digest(survey.cards[cid].text)}" for cid in sorted(ids))
    return "dup-" + hashlib.sha256(said.encode()).hexdigest()[:10]


def _numbers(s: str) -> set[str]:
    return set(re.findall(r"\d+(?:\.\d+)*", s))


def same_line(a: str, b: str) -> bool:
    """Two History lines that say the same: nearly the same words (compound's test), or
    the same stems in another order, with the same numbers."""
    la, lb = entry_line(a), entry_line(b)
    return _same_said(la, lb, _said(la), _said(lb))


def _said(line: str) -> tuple[set[str], set[str]]:
    """(stems, numbers) of a History line's `Kind: text`."""
    return stems(line), _numbers(line)


def _same_said(la: str, lb: str, a: tuple[set[str], set[str]],
               b: tuple[set[str], set[str]]) -> bool:
    if is_duplicate(la, [lb]):
        return True
    (sa, na), (sb, nb) = a, b
    if len(sa) < MIN_STEMS or len(sb) < MIN_STEMS or na != nb:
        return False
    return len(sa & sb) / len(sa | sb) >= LINE_SAME


def line_pairs(c: cardlib.Card) -> list[tuple[str, str]]:
    """(earlier, later) History lines of one card that say the same thing (same_line's
    test; each line's stems and numbers read once)."""
    lines = cardlib.history(c.text)
    if len(lines) < 2:
        return []
    said = [entry_line(x) for x in lines]
    what = [_said(x) for x in said]
    out, dup = [], set()
    for i, j in combinations(range(len(lines)), 2):
        if j not in dup and i not in dup and _same_said(said[i], said[j], what[i], what[j]):
            out.append((lines[i], lines[j]))
            dup.add(j)
    return out


def find(survey: Survey, progress: Progress = quiet) -> list[Finding]:
    out = []
    for g in groups(survey, progress):
        ids = [g.keep, *g.others]
        low = min(g.scores)
        said = (f"{g.others[0]} says what {g.keep} says (similarity {low:.2f})"
                if len(g.others) == 1 else
                f"{', '.join(g.others)} say what {g.keep} says (similarity {low:.2f} or more)")
        out.append(Finding("duplicate", ids, said,
                           f"merge into {g.keep}: every sentence it lacks moves over, the "
                           f"rest become superseded (--apply does; `cardmem maintain --reject "
                           f"{finding_key(survey, ids)}` if they differ)",
                           fix={"keep": g.keep, "others": list(g.others)},
                           key=finding_key(survey, ids)))
    for cid in sorted(survey.cards):
        c = survey.cards[cid]
        if repeats := line_pairs(c):
            first, later = repeats[0]
            more = f" (and {len(repeats) - 1} more)" if len(repeats) > 1 else ""
            out.append(Finding("duplicate", [cid],
                               f"History line repeats an earlier one: {later!r} ~ {first!r}{more}",
                               "drop the later line by hand (a long History is folded by --apply)"))
    return out
