"""The one frontmatter splitter (store/cards/frontmatter.py, plain string searches) gives
the offsets of the regular expressions it replaced, on any text and on every corpus card."""
from __future__ import annotations

import pytest

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from cardmem.store.cards.frontmatter import split

# The regex splitter of store/card.py before the one splitter (f30c843), as the reference.
_OPEN = re.compile(r"\A(?:\ufeff)?---[ \t]*\r?\n")
_CLOSE = re.compile(r"\n(?:---|\.\.\.)[ \t]*\r?$", re.M)


def by_regex(text: str) -> tuple[int, int, int] | None:
    m = _OPEN.match(text)
    if not m:
        return None
    close = _CLOSE.search(text, m.end() - 1)
    if not close:
        return None
    body = close.end()
    if text.startswith("\r\n", body):
        body += 2
    elif text.startswith("\n", body):
        body += 1
    return m.end(), close.start() + 1, body


PIECES = ["---", "...", "\n", "\r", "\r\n", " ", "\t", "\ufeff", "-", ".", "a: b", "x", "--", "----"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=24).map("".join))
def test_split_gives_the_regex_offsets(text: str) -> None:
    assert split(text) == by_regex(text)


LINES = ["a: b", "---", "...", "--- ", "...\t", "---\r", "--- \t\r", "---x", "", " ---", "----",
         "\ufeff---", "x"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(LINES), max_size=8), st.sampled_from(["\n", "\r\n"]),
       st.booleans())
def test_split_gives_the_regex_offsets_line_by_line(lines, nl, last_nl) -> None:
    text = nl.join(lines) + (nl if last_nl else "")
    assert split(text) == by_regex(text)


@pytest.mark.corpus
def test_split_gives_the_regex_offsets_on_the_corpus() -> None:
    from corpora import need_corpus

    files = sorted(need_corpus().rglob("*.md"))
    assert len(files) > 300
    for p in files:
        text = p.read_text(encoding="utf-8")
        assert split(text) == by_regex(text), p
