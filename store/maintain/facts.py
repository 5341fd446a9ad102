"""What a card states that a near-copy can get wrong: its facts, and its sentences.

Two cards whose words are nearly the same are still not duplicates when they disagree on
a number, a version, a date, an identifier, a path or a negation ("API v2 allows 100
requests/min" is not "API v3 allows 500 requests/min"; "always squash" is not "never
squash"). `facts(text)` is that set; duplicates.py merges only cards whose sets are equal.

`sentences(text)` are the units a merge must not lose: the loser's sentences the survivor
lacks move over, or the merge is not applied (tools/maintain/consolidate.py), and the
property tests check every one of them survives `maintain --apply`.
"""
from __future__ import annotations

import re
from typing import Callable, Iterator, TypeVar

from ..cards import markdown
from ..index.porter import stem

K, V = TypeVar("K"), TypeVar("V")

# a token with a digit (numbers, versions, dates, `py311`), a path or an identifier's
# marks (`/`, `\`, `_`, `::`, a dotted name such as `setup.py`), or a flag (`--force`)
_FACTY = re.compile(r"\d|[/\\_]|::|\w\.\w|^--?\w")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]")
# a token that may be a fact once its quotes and brackets are stripped: one search each
_MAYBE = re.compile(r"\d|[/\\_]|::|\w\.\w|(?<![\w-])--?\w|[a-z][A-Z]|[A-Z]{2,}[a-z]")
_EDGE = "\"'()[]{}<>,;:!?.*"
_NEGATION = {"not", "never", "no", "none", "nothing", "nobody", "nowhere", "neither",
             "nor", "without", "cannot", "dont", "doesnt", "avoid", "forbid", "forbidden",
             "disable", "disabled", "stop"}
# A negation: a word of _NEGATION, or one that ends in n't, each a whole word. In a whole
# text, two searches, not one regex of both with \b around: a regex that starts with its
# words (the word's start checked after) and a search for the literal n't skip ahead in C.
_NEGATED = re.compile(r"\b(?:" + "|".join(sorted(_NEGATION)) + r"|[a-z]+n't)\b")  # one token
_NEGATION_END = re.compile(r"(?:" + "|".join(sorted(_NEGATION)) + r")\b")
_CONTRACTED = re.compile(r"n't\b")
_WORD_CHAR = re.compile(r"\w")
_FILLER = {"a", "an", "the", "to", "be", "been", "being", "do", "does", "did", "ever", "any",
           "at", "all", "use", "it", "this", "that", "we", "you", "they", "is", "are", "was",
           "so", "yet", "too", "also", "just", "longer", "more", "of", "in", "on", "for"}
_WORD = re.compile(r"[a-z][a-z']*")


def looked_up(memo: dict[K, V], keys: set[K], compute: Callable[[K], V]) -> Iterator[V]:
    """compute(k) for each of keys, each computed once per process (a store repeats its
    words and tokens): the lookups run in C, the computing of new keys only in Python."""
    if new := keys.difference(memo):  # by lookups in memo, not a walk of it
        if len(memo) > 500_000:  # a long-lived process: bounded
            memo.clear()
            new = keys
        for k in new:
            memo[k] = compute(k)
    return map(memo.__getitem__, keys)


_TOKEN_FACT: dict[str, str | None] = {}  # token -> its fact or None


def token_fact(raw: str) -> str | None:
    """The fact one token states ("#..."), or None."""
    if _MAYBE.search(raw):
        tok = raw.strip(_EDGE)
        if tok and (_FACTY.search(tok) or _CAMEL.search(tok)):
            return "#" + tok.lower().removeprefix("./").rstrip("/\\")
    return None


def tokens(text: str) -> set[str]:
    """The text's tokens (runs of neither space nor `), each once."""
    return set(text.replace("`", " ").split())


def facts(text: str, toks: set[str] | None = None) -> frozenset[str]:
    """The card's numbers, versions, dates, identifiers and paths ("#..." tokens, lower
    case, however quoted: `x/y/` is x/y) and negations ("!stem": the word one applies to).
    toks: tokens(text), when the caller has them."""
    out = set(looked_up(_TOKEN_FACT, tokens(text) if toks is None else toks, token_fact))
    out.discard(None)
    return frozenset(out | negated(text))


def negates(token: str) -> bool:
    """Whether a token (tokens()'s) holds a negation: a text holds one if and only if one
    of its tokens does (a negation is a word, or a word and n't, bounded by non-word
    characters, as a token is)."""
    return _NEGATED.search(token.lower()) is not None


def negated(text: str) -> set[str]:
    """The text's negations as facts: "!stem" of the word each applies to ("!" alone
    when none follows)."""
    out: set[str] = set()
    lower = text.lower()
    for end in _negations(lower):
        for w in _WORD.finditer(lower, end):
            word = w.group().strip("'")
            if word in _NEGATION or word.endswith("n't"):
                continue  # "not never X": X is what is negated
            if word not in _FILLER and len(word) >= 3:
                out.add("!" + stem(word))
                break
        else:
            out.add("!")  # a trailing "no", "not": still a negation the other may lack
    return out


def _negations(lower: str) -> Iterator[int]:
    """Where each negation of the lower-case text ends: each match of
    `\\b(?:<a word of _NEGATION>|[a-z]+n't)\\b`, found faster."""
    for m in _NEGATION_END.finditer(lower):  # ends at a word's end; its start must be one
        if not (i := m.start()) or not _WORD_CHAR.match(lower, i - 1):
            yield m.end()
    for m in _CONTRACTED.finditer(lower):
        i = start = m.start()
        while start and "a" <= lower[start - 1] <= "z":
            start -= 1
        if start < i and (not start or not _WORD_CHAR.match(lower, start - 1)) \
                and lower[start:i + 1] not in _NEGATION:  # "forbidden't": the word's
            yield m.end()


_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_END = re.compile(r"(?<=[.!?])\s+")


def units(body: str) -> list[str]:
    """The body's sentences as written (list items, headings and fenced blocks each
    whole), in order. Fences and headings by the cards room's rules (markdown.py)."""
    out: list[str] = []
    para: list[str] = []
    block: list[str] = []  # the fenced block being read, its opening line first
    run = ""  # the fence it opened with

    def flush() -> None:
        if para:
            out.extend(s for s in _END.split(" ".join(para)) if s.strip())
            para.clear()

    for line in body.splitlines():
        if run:
            block.append(line)
            if markdown.closes(line, run):
                out.append("\n".join(block))
                run = ""
            continue
        if run := markdown.fence(line):
            flush()
            block = [line]
        elif not line.strip(" \t#"):  # blank, or an empty heading: either divides
            flush()
        elif head := markdown.heading(line):
            flush()
            out.append(head[1])
        elif _ITEM.match(line):
            flush()
            para.append(_ITEM.sub("", line, count=1))
        else:
            para.append(line.strip())
    flush()
    if run:
        out.append("\n".join(block))
    return out


def norm(sentence: str) -> str:
    """A sentence as compared: case, spacing, the end mark and emphasis around it do not
    count (a heading moved by a merge becomes a bold line)."""
    return " ".join(sentence.split()).casefold().strip("*_ ").rstrip(".!?;: ")


def sentences(body: str) -> set[str]:
    """The body's sentences, as compared (norm)."""
    return {n for s in units(body) if (n := norm(s))}
