"""Which words matched where, and snippets: found in Python on the few candidates'
text, for labels and display only (never for what matches).
"""
from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right

from ..index.schema import COLUMNS
from .terms import Plan
TYPE_CHECKING = False  # typing costs a search to import (bench/RESULTS.md); annotations only
if TYPE_CHECKING:
    from typing import Any, Iterable

    from ..index.db import Index

SNIPPET_CHARS = 4000

# --- which words matched where, and snippets: on the few candidates only ---------------
#
# FTS5 said which cards match; which field each word sits in, and where to cut a snippet,
# is found in Python on the candidates' text, with a pattern per term that accepts the
# forms porter folds into its stem (deploy/deploys/deployed -> "deploi"), scanned once per
# term over all the candidates' texts joined. This is for labels and display only, never
# for what matches. (Re-running FTS5 per candidate, or loading candidates into a scratch
# FTS table, cost more than the search itself.)

_WORD = r"[^\W_]"


_RUN = re.compile(f"{_WORD}*")  # the rest of a word
_RUN6 = re.compile(f"{_WORD}{{0,6}}")  # enough of it to tell whether it is over 5 long


def _matches(low: str, stem: str, prefix: bool) -> list[tuple[int, int]]:
    """(start, end) of each place in lowercased text where the stem, with an ending porter
    folds into it, ends a word: the stem (a final "i" also as "y": deploy, deploying ->
    "deploi"), then up to 5 more letters, or any number for a prefix. After a match the
    scan goes on from its end, after a failed start from the next place; word starts are
    the caller's to check. What a regex per stem would find (tests/store/search/test_search.py
    holds that regex), without one: sre's compiler, in Python, cost more than the search
    itself for a query's new words."""
    lit, iy = (stem[:-1], True) if len(stem) > 2 and stem[-1] == "i" else (stem, False)
    out: list[tuple[int, int]] = []
    if not lit:
        return out
    size, pos, find = len(lit), 0, low.find
    run = _RUN.match if prefix else _RUN6.match
    while (s := find(lit, pos)) >= 0:
        e = s + size
        if iy:
            if low[e:e + 1] not in ("i", "y"):
                pos = s + 1
                continue
            e += 1
        end = run(low, e).end()  # type: ignore[union-attr]
        if not prefix and end - e > 5:
            pos = s + 1
            continue
        out.append((s, end))
        pos = end
    return out


def _fold_table() -> dict[int, str]:
    table = {}
    for cp in range(0xC0, 0x250):
        d = unicodedata.normalize("NFD", chr(cp))
        if len(d) > 1 and d[0].isascii():
            table[cp] = d[0]
    return table


_FOLD = _fold_table()
_ACCENTED = re.compile("[\u00c0-\u024f]")


class Terms:
    """Finds the query's terms in text (lowercased and diacritics-folded first)."""

    def __init__(self, p: Plan) -> None:
        self.stems = list(p.stems)
        self.ascii = all(stem.isascii() for stem, _ in p.stems)

    @staticmethod
    def prepare(text: str) -> str:
        if not text.isascii() and _ACCENTED.search(text):
            text = text.translate(_FOLD)  # as FTS5's remove_diacritics; offsets kept
        low = text.lower()
        return low if len(low) == len(text) else text  # offsets must stay put

    def hits_each(self, texts: list[str], cap: int | None = None
                  ) -> list[list[tuple[int, int, int]]]:
        """(start, end, term index) of the words of each text that are query terms, in
        text order, the first `cap` of them (no cap: all), text prepared as prepare()
        does. One scan per term over all the texts joined by newlines (offsets mapped
        back): a call costs more than scanning a card's short text, and a match never
        crosses a newline (terms are word characters) nor sees past one (a newline is
        neither a letter nor a digit)."""
        low = _prepare_joined(texts, self.ascii)
        starts, at = [], 0
        for text in texts:
            starts.append(at)
            at += len(text) + 1
        per: list[list[tuple[int, int, int]]] = [[] for _ in texts]
        for i, (stem, prefix) in enumerate(self.stems):
            for s, e in _matches(low, stem, prefix):
                if s and low[s - 1].isalnum():
                    continue  # inside a word, not at its start
                j = bisect_right(starts, s) - 1
                at = starts[j]
                per[j].append((s - at, e - at, i))
        for hits in per:
            if hits:
                hits.sort()
                if cap is not None:
                    del hits[cap:]
        return per


_LEADS = tuple(bytes([b]) for b in range(0xC3, 0xCA))  # UTF-8 lead bytes of U+00C0..U+024F


def _fold_one(m: re.Match[str]) -> str:
    return _FOLD.get(ord(m.group()), m.group())


def _prepare_joined(texts: list[str], ascii_terms: bool = False) -> str:
    """Terms.prepare of each text, joined by newlines, for offsets into the texts.

    Folding is per character, and so is lowercasing once folded (U+0130, the one letter
    whose lowercase is longer, folds to I; Greek final sigma, the one rule with context,
    stops at a newline as at the end of a text), so it is done on the whole. When every
    term is ASCII only ASCII letters need lowering (no other letter lowercases to ASCII but
    the Kelvin sign, and case changes no letter's class, so the words and word starts the
    term regexes see are the same): bytes.lower() does that at memcpy speed, far below what
    str.lower() and the accent scan cost a character (bench/RESULTS.md, "Figures from
    comments").
    """
    joined = "\n".join(texts)
    if joined.isascii():
        return joined.lower()
    raw: bytes | None = joined.encode("utf-8", "surrogatepass")
    if any(lead in raw for lead in _LEADS) and _ACCENTED.search(joined):
        joined = _ACCENTED.sub(_fold_one, joined)  # as str.translate(_FOLD), much faster
        raw = None
    if ascii_terms and "\u212a" not in joined:
        if raw is None:
            raw = joined.encode("utf-8", "surrogatepass")
        return raw.lower().decode("utf-8", "surrogatepass")
    low = joined.lower()
    if len(low) == len(joined):
        return low
    return "\n".join(Terms.prepare(t) for t in texts)


SHORT = [c for c in COLUMNS if c != "body"]
_AT = 7  # a _texts row: n, id, title, type, status, project, description, then SHORT, body
# A candidate's text, read once: its card row, its short FTS columns (for the fields its
# words are in) and the start of its body (for a snippet). They come from FTS5's content
# table (fts_content: id, then c0, c1... in COLUMNS order), the values the fts table
# returns, without FTS5 fetching each row through its own cursor (measurably slower).
# This leans on FTS5's shadow-table layout: tests/store/search/test_search.py checks they agree.
_TEXT_SQL = ("SELECT c.n, c.id, c.title, c.type, c.status, c.project, c.description, {fts},"
             " substr(f.c{body}, 1, {chars}) FROM cards c JOIN fts_content f ON f.id = c.n"
             " WHERE c.n IN (SELECT value FROM json_each(?))").format(
    fts=", ".join(f"f.c{COLUMNS.index(col)}" for col in SHORT),
    body=COLUMNS.index("body"), chars=SNIPPET_CHARS)


def _json_ids(rowids: Iterable[int]) -> str:
    """Rowids as one JSON parameter for `IN (SELECT value FROM json_each(?))`: the same
    SQL for any number of them, prepared once per connection."""
    return "[" + ",".join(str(int(n)) for n in rowids) + "]"


def _texts(idx: Index, rowids: Iterable[int]) -> dict[int, tuple[Any, ...]]:
    return {row[0]: row for row in idx.conn.execute(_TEXT_SQL, (_json_ids(rowids),))}


Hits = list[list[tuple[int, int, int]]]  # of a candidate's SHORT fields, in that order


def _hits(p: Plan, texts: dict[int, tuple[Any, ...]]) -> dict[int, Hits]:
    """rowid -> every hit of the query's terms in each of its short fields
    (Terms.hits_each): one scan serves the fields it matched in and, for the description
    and title, its snippet. Bodies are scanned for the results shown only."""
    terms = Terms(p)
    width = len(SHORT)
    pieces = [text or "" for row in texts.values() for text in row[_AT:_AT + width]]
    each = iter(terms.hits_each(pieces))
    return {n: [next(each) for _ in range(width)] for n in texts}


def _fields(p: Plan, hits: dict[int, Hits]) -> dict[int, list[set[str]]]:
    """rowid -> for each term, the short fields (not the body) it occurs in."""
    out: dict[int, list[set[str]]] = {}
    for n, per_text in hits.items():
        per_term: list[set[str]] = [set() for _ in p.stems]
        for name, found in zip(SHORT, per_text):
            for _, _, i in found:
                per_term[i].add(name)
        out[n] = per_term
    return out


_MARKUP = re.compile(r"(?:^|(?<=\n))[ \t]*#{1,6}[ \t]+|\*\*|__")


def _plain(text: str) -> str:
    """Text without the Markdown that reads as noise on one line (heading marks, bold
    marks): the snippet's own ** marks are then the only ones, and always in pairs."""
    return _MARKUP.sub("", text)


def _snippet(text: str, hits: list[tuple[int, int, int]], width: int = 160) -> str | None:
    """The window of text holding the most query words, the words in **bold**.
    text is cut to SNIPPET_CHARS and hits are Terms.hits_each's for it."""
    if not hits:
        return None
    lead = 24  # a few words of context before the first hit
    best, best_n = hits[0][0], 0
    every = len({i for _, _, i in hits})  # no window can hold more: the first with all wins
    for j, (start, _, _) in enumerate(hits):
        if best_n == every:
            break
        while j and hits[j - 1][0] == start:
            j -= 1  # hits sharing this start come before it: count them too
        stop = start - lead + width
        seen = set()
        for s, _, i in hits[j:]:
            if s >= stop:
                break
            seen.add(i)
        if len(seen) > best_n:
            best, best_n = start, len(seen)
    lo = max(0, best - lead)
    while lo > 0 and not text[lo - 1].isspace() and best - lo < lead * 2:
        lo -= 1
    hi = min(len(text), lo + width)
    while hi < len(text) and not text[hi].isspace() and hi - lo < width + 20:
        hi += 1
    parts, pos = [], lo
    for s, e, _ in hits:
        if s >= pos and e <= hi:
            parts += [_plain(text[pos:s]), "**", _plain(text[s:e]), "**"]
            pos = e
    parts.append(_plain(text[pos:hi]))
    snip = " ".join("".join(parts).split())
    return ("…" if lo > 0 else "") + snip + ("…" if hi < len(text) else "")


_SNIPPET_FROM = (SHORT.index("description"), SHORT.index("title"))  # after the body


def _snippets(idx: Index, p: Plan, results: list[dict[str, Any]],
              texts: dict[int, tuple[Any, ...]], hits: dict[int, Hits]) -> None:
    """Snippets of the results shown, from the body, else the description, else the title."""
    shown = {r["_n"] for r in results}
    texts = {n: texts[n] for n in shown if n in texts}
    if len(texts) < len(shown):  # found by name only (_fuzzy_names): not read yet
        more = _texts(idx, shown - set(texts))
        texts.update(more)
        hits = {**hits, **_hits(p, more)}
    bodies = [row[-1] or "" for row in texts.values()]  # their first SNIPPET_CHARS
    snips = {}
    for (n, row), body, found in zip(texts.items(), bodies, Terms(p).hits_each(bodies, 40)):
        if sn := _snippet(body, found):
            snips[n] = sn
            continue
        for which in _SNIPPET_FROM:  # a field's place in hits[n], and _AT later in row
            text = (row[_AT + which] or "")[:SNIPPET_CHARS]
            found = [h for h in hits[n][which] if h[1] <= len(text)][:40]
            if sn := _snippet(text, found):
                snips[n] = sn
                break
    for r in results:
        r["snippet"] = snips.get(r["_n"], "")
    # Show corrections as words of the cards ("fixtures"), not as index stems ("fixtur").
    desc_at, title_at = (_AT + SHORT.index(f) for f in ("description", "title"))
    for word, stem in list(p.corrected.items()):
        for n in sorted(texts):
            row = texts[n]
            body, desc, title = row[-1] or "", row[desc_at] or "", row[title_at] or ""
            low = Terms.prepare(f"{title}\n{desc}\n{body}")
            m = next(((s, e) for s, e in _matches(low, stem, False)
                      if not s or not low[s - 1].isalnum()), None)
            if m:
                p.corrected[word] = low[m[0]:m[1]]
                break
