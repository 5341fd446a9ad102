"""Where a signal belongs, and whether it is already said (DESIGN §6).

A signal belongs to the one existing card its rarest keywords overlap, when no other card
comes close: Matcher reads the cards, IndexMatcher asks the lexical index (FTS5) the same
question without reading them. A signal equal or nearly equal (rapidfuzz, same numbers)
to a line already filed is a duplicate. store/learning/compound.py files by these answers.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any, Iterable

from ..cards import card as cardlib
from ..cards.status import INACTIVE, is_active
from ..store import Store


RAREST = 4  # keywords of a signal that decide where it belongs
CLEAR_MARGIN = 1.5  # the best card must outscore the runner-up by this factor
NEAR_DUPLICATE = 90  # rapidfuzz token_set_ratio at or above: the same signal

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*[A-Za-z0-9]|[A-Za-z0-9]")
_STOP = set("""a an and are as at be been but by can did do does for from had has have how
i if in into is it its it's let me more most my no not of on once only or our out over same
should so some such than that the their them then there these they this those through to
too up use used using very was we were what when where which while who why will with would
you your after again also before between both each few further here just new now other
own via""".split())



# --- where a signal belongs --------------------------------------------------------

def keywords(text: str) -> set[str]:
    """Lower-case words of 3+ characters, hyphenated compounds also split into parts."""
    out: set[str] = set()
    for w in set(_WORD.findall(text.lower())):  # each word once: a card repeats its words
        w = w.strip(".-_")
        for p in (w, *_SEPARATORS.split(w)) if _SEPARATORS.search(w) else (w,):
            if len(p) >= 3 and p not in _STOP and not p.isdigit():
                out.add(p)
    return out


_SEPARATORS = re.compile(r"[.\-_]+")


def _card_words(c: cardlib.Card) -> set[str]:
    return keywords(" ".join([c.id.replace("/", " "), c.title, *c.aliases, *c.tags,
                              c.description, c.body]))


def _name_words(c: cardlib.Card) -> set[str]:
    """Words a card is called by: a signal naming them points at it twice as hard."""
    return keywords(" ".join([c.id.rsplit("/", 1)[-1], c.title, *c.aliases]))


_KIND = re.compile(r"^(?:Decision|Rule|Worked|Failed|Knowledge):\s*")


def signal_subject(line: str) -> str:
    """A signal line without its `Kind:` label (the label says nothing about the card)."""
    return _KIND.sub("", line.strip())


class Matcher:
    """Document frequencies over the store's cards, and the card a text clearly names."""

    def __init__(self, cards: Iterable[cardlib.Card]) -> None:
        self.cards = {c.id: c for c in cards}
        self.words = {cid: _card_words(c) for cid, c in self.cards.items()}
        self.names = {cid: _name_words(c) for cid, c in self.cards.items()}
        self.df: Counter[str] = Counter()
        for ws in self.words.values():
            self.df.update(ws)
        self.n = max(1, len(self.cards))

    def rarest(self, text: str, k: int = RAREST) -> list[str]:
        """The k keywords of text that the fewest cards contain (but at least one does)."""
        known = [w for w in keywords(signal_subject(text)) if self.df[w] > 0]
        return sorted(known, key=lambda w: (self.df[w], w))[:k]

    def best(self, text: str) -> tuple[str | None, list[str]]:
        """The one card the text clearly belongs to, or None; and the keywords used."""
        rare = self.rarest(text)
        if not rare:
            return None, rare
        idf = {w: math.log(1 + self.n / self.df[w]) for w in rare}
        scores: list[tuple[float, int, str]] = []
        for cid, ws in self.words.items():
            c = self.cards[cid]
            if c.type == "signal" or not is_active(c):
                continue
            hit = [w for w in rare if w in ws]
            if hit:
                names = self.names[cid]
                score = sum(idf[w] * (2 if w in names else 1) for w in hit)
                scores.append((score, len(hit), cid))
        return _choose(scores, rare)

    def type_of(self, cid: str) -> str | None:
        c = self.cards.get(cid)
        return c.type if c else None


class IndexMatcher:
    """The same choice as Matcher, answered by the lexical index (FTS5) without reading
    every card: document frequencies and the cards holding each rare word are queries."""

    def __init__(self, idx: Any) -> None:
        self.idx = idx
        self.n = max(1, idx.count())
        self._df: dict[str, int] = {}
        self.types: dict[str, str | None] = {}

    def _match(self, expr: str) -> list[int]:
        try:
            return self.idx.matching_rowids(expr)
        except Exception:  # noqa: BLE001 - a word FTS cannot take is no evidence
            return []

    def df(self, word: str) -> int:
        if word not in self._df:
            self._df[word] = len(self._match(_phrase(word)))
        return self._df[word]

    def rarest(self, text: str, k: int = RAREST) -> list[str]:
        known = [w for w in keywords(signal_subject(text)) if self.df(w) > 0]
        return sorted(known, key=lambda w: (self.df(w), w))[:k]

    def best(self, text: str) -> tuple[str | None, list[str]]:
        rare = self.rarest(text)
        if not rare:
            return None, rare
        idf = {w: math.log(1 + self.n / self.df(w)) for w in rare}
        hits: dict[int, list[str]] = {}
        named: dict[int, set[str]] = {}
        for w in rare:
            for n in self._match(_phrase(w)):
                hits.setdefault(n, []).append(w)
            for n in self._match("{title aliases}: " + _phrase(w)):
                named.setdefault(n, set()).add(w)
        if not hits:
            return None, rare
        rows = self.idx.kinds(list(hits))
        scores = []
        for n, ws in hits.items():
            if n not in rows:
                continue
            cid, ctype, status = rows[n]
            self.types[cid] = ctype
            if ctype == "signal" or status in INACTIVE:
                continue
            score = sum(idf[w] * (2 if w in named.get(n, ()) else 1) for w in ws)
            scores.append((score, len(ws), cid))
        return _choose(scores, rare)

    def type_of(self, cid: str) -> str | None:
        return self.types.get(cid)


def _phrase(word: str) -> str:
    return '"' + word.replace('"', '""') + '"'


def _choose(scores: list[tuple[float, int, str]], rare: list[str]) -> tuple[str | None, list[str]]:
    """The best-scoring card if it holds enough rare words and clearly beats the next."""
    if not scores:
        return None, rare
    scores.sort(key=lambda s: (-s[0], s[2]))
    top, hits, cid = scores[0]
    runner = scores[1][0] if len(scores) > 1 else 0.0
    if hits >= min(2, len(rare)) and top >= CLEAR_MARGIN * runner:
        return cid, rare
    return None, rare


# --- duplicates --------------------------------------------------------------------

_ENTRY = re.compile(r"^\d{4}-\d{2}-\d{2}\s*·\s*session\s+\S+\s*·\s*(.*)$")


def entry_line(entry: str) -> str:
    """The `Kind: text` part of a History entry (after date and session)."""
    m = _ENTRY.match(entry.strip())
    return (m.group(1) if m else entry).strip()


def _norm(line: str) -> str:
    return " ".join(line.casefold().split())


def is_duplicate(line: str, existing: Iterable[str]) -> bool:
    """True if line equals or nearly equals (rapidfuzz) one of the existing lines."""
    from rapidfuzz import fuzz

    n = _norm(line)
    nums = _numbers(n)
    for e in existing:
        m = _norm(e)
        if n == m:
            return True
        # Other numbers make another fact ("max 12" -> "max 16"), however alike the words.
        if _numbers(m) == nums and fuzz.token_set_ratio(n, m) >= NEAR_DUPLICATE and \
                fuzz.ratio(n, m) >= NEAR_DUPLICATE - 10:
            return True
    return False


def _numbers(s: str) -> set[str]:
    return set(re.findall(r"\d+(?:\.\d+)*", s))



def open_matcher(store: Store) -> tuple[Any, Any]:
    """(matcher, open index or None): the index when it can answer, else a scan."""
    try:
        from ..index.db import Index

        idx = Index(store)
        idx.refresh()
        return IndexMatcher(idx), idx
    except Exception:  # noqa: BLE001 - no index (or a broken one): read the cards
        return Matcher(store.scan()[0]), None
