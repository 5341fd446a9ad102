"""Property tests of one merge (tools/maintain/consolidate.merged): whatever the two cards'
bodies (fenced code holding other fences and `#` lines, lists, headings, quotes, unicode,
frontmatter whose names need quoting), merging a duplicate into the kept card loses
nothing of either, or is refused and changes nothing.

The store-wide property (test_maintain_properties.py) runs `maintain --apply` on cards of
plain sentences; this one runs the merge itself, fast, on bodies of every block kind, and
checks the result by its lines, not by the merge's own sentence rule.
"""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cardmem.store.cards import card as cardlib
from cardmem.store.cards import markdown
from cardmem.store.errors import CardmemError
from cardmem.store.maintain import history as hist
from cardmem.store.maintain.facts import sentences
from cardmem.tools.maintain.consolidate import merged, superseded

WORDS = ("deploy cache branch token queue worker schema índice café 日本語 naïve ünïcode "
         "Straße 🚀 v2.3 py311 src/app.py --force FOO_BAR 429 0.5").split()
words = st.lists(st.sampled_from(WORDS), min_size=2, max_size=6).map(" ".join)
sentence = words.map(lambda w: w[:1].upper() + w[1:] + ".")
prose = st.lists(sentence, min_size=1, max_size=3).map(" ".join)
items = st.lists(sentence, min_size=1, max_size=4)
bullets = st.tuples(st.sampled_from(["- ", "* ", "1. ", "- [ ] "]), items).map(
    lambda t: "\n".join(t[0] + s for s in t[1]))
heading = st.tuples(st.integers(1, 4), words).map(lambda t: "#" * t[0] + " " + t[1])
quote = sentence.map(lambda s: "> " + s)
code_line = st.sampled_from(["# install first", "npm ci", "", "```", "echo 'a: b'",
                             "    indented", "~~~", "## not a heading", "- not an item"])


@st.composite
def fenced(draw) -> str:
    """A fenced block whose run is longer than any fence line inside it (or of the other
    character), so that it closes where it was meant to."""
    char = draw(st.sampled_from("`~"))
    run = char * draw(st.integers(4, 5))
    info = draw(st.sampled_from(["", "sh", "python"]))
    lines = draw(st.lists(code_line, min_size=1, max_size=5))
    while lines and not lines[-1].strip():
        lines.pop()  # a blank last line would end the paragraph the test compares
    return "\n".join([run + info, *(lines or ["true"]), run])


paragraph = st.one_of(prose, bullets, heading, quote, fenced())
title = st.one_of(words, st.sampled_from(["Deploys: how", "#hashtag card", "'quoted'",
                                          "yes", "null", "a - b", "ﬁxtures", "Ｄｅｐｌｏｙ"]))
history_line = st.tuples(st.integers(1, 28), sentence).map(
    lambda t: f"2026-11-{t[0]:02d} · session s{t[0]} · Worked: {t[1]}")


def card(t: str, aliases: list[str], description: str, paras: list[str],
         history: list[str]) -> str:
    meta: dict = {"title": t, "type": "reference"}
    if aliases:
        meta["aliases"] = aliases
    if description:
        meta["description"] = description
    text = cardlib.render(meta, "\n\n".join(paras))
    for line in history:
        text = cardlib.append_history(text, line)
    return text


@st.composite
def pairs(draw) -> tuple[str, str]:
    """(kept card, duplicate): the duplicate shares some of the kept card's paragraphs,
    in another order, and has its own."""
    shared = draw(st.lists(paragraph, max_size=3))
    own = [draw(st.lists(paragraph, max_size=3)) for _ in range(2)]
    mine, theirs = shared + own[0], draw(st.permutations(shared)) + own[1]
    return tuple(card(draw(title), draw(st.lists(title, max_size=2)),
                      draw(st.one_of(st.just(""), sentence)), paras,
                      draw(st.lists(history_line, max_size=2)))
                 for paras in (mine, theirs))


def blocks(body: str) -> list[str]:
    """The body's paragraphs as written: blank lines divide, except inside a fence."""
    out, cur, run = [], [], ""
    for ln in body.splitlines():
        if run:
            cur.append(ln)
            run = "" if markdown.closes(ln, run) else run
        elif not ln.strip():
            out, cur = out + (["\n".join(cur)] if cur else []), []
        else:
            run = markdown.fence(ln)
            cur.append(ln)
    return out + (["\n".join(cur)] if cur else [])


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(pairs())
def test_a_merge_keeps_every_paragraph_of_both_cards_or_is_refused(pair) -> None:
    keep, other = pair
    try:
        kept, gone = merged(keep, other, "reference/keep", "reference/other", "2026-12-03")
    except CardmemError:
        return  # refused: nothing is written (the caller commits only a returned text)
    k, o = cardlib.parse(keep, "reference/keep"), cardlib.parse(other, "reference/other")
    new = cardlib.parse(kept, "reference/keep")
    assert gone == superseded(other, "reference/keep")
    assert new.title == k.title and new.description == k.description
    names = {a.casefold() for a in (new.title, *new.aliases)}
    assert {a.casefold() for a in (o.title, *o.aliases, *k.aliases)} <= names
    body = hist.parts(kept)[1]
    assert hist.parts(keep)[1].strip() in body  # the kept card's own text, as it was
    # What the kept card said before, with the other's names (they become its aliases).
    before = sentences("\n\n".join([hist.parts(keep)[1], k.title, *k.aliases, k.description,
                                     o.title, *o.aliases]))
    for block in blocks(hist.parts(other)[1]) + [o.description]:
        head = markdown.heading(block) if "\n" not in block else None
        if head and not sentences(head[1]) <= before:
            assert f"**{head[1]}**" in body, block  # a heading moves as a bold line
        elif not head and not sentences(block) <= before:
            assert block in body, block  # it alone said something: moved word for word
    assert cardlib.history(kept)[:-1] == cardlib.history(keep) + cardlib.history(other)
    assert cardlib.history(kept)[-1].startswith("2026-12-03 · maintain · Merged reference/other")


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(pairs())
def test_a_duplicate_of_plain_blocks_is_merged_not_refused(pair) -> None:
    """Bodies of these blocks are all movable: the merge is made, never refused (a merge
    refused for every card would pass the property above)."""
    keep, other = pair
    merged(keep, other, "reference/keep", "reference/other", "2026-12-03")
