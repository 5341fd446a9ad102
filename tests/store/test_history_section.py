"""A card's `## History` section has one finder (card.history_span): the History lines,
and the text the duplicate pass compares (History aside), agree on where it is."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cardmem.store.cards import card as cardlib
from cardmem.store.maintain.duplicates import card_text


def parsed(body: str) -> cardlib.Card:
    return cardlib.parse(f"---\ntitle: T\ntype: reference\n---\n{body}", "reference/t")


def test_a_history_heading_in_code_is_no_history_section() -> None:
    c = parsed("Run the tests.\n\n```md\n## History\n- 2026-01-01 · example\n```\n\n"
               "Then deploy with uv lock --frozen.\n")
    assert cardlib.history(c.text) == []
    assert "deploy with uv lock" in card_text(c)  # the duplicate pass read up to the fence


def test_a_history_heading_with_extra_spaces_or_closing_marks_is_one() -> None:
    for heading in ("##  History", "## History ##", "  ## History", "## history"):
        c = parsed(f"Run the tests.\n\n{heading}\n- 2026-01-01 · session a · Rule: never skip CI\n")
        assert cardlib.history(c.text) == ["2026-01-01 · session a · Rule: never skip CI"]
        assert "skip" not in card_text(c), heading  # History is not what the card says


LINES = st.lists(st.sampled_from([
    "## History", "## history", "##\tHistory", "##  History ##", "  ## History", "# History",
    "### History", "## Other", "```", "~~~", "- 2026-11-30 · entry", "text", ""]), max_size=12)


@settings(max_examples=300, deadline=None)
@given(LINES)
def test_the_compared_text_stops_where_the_history_lines_start(lines) -> None:
    c = parsed("Body.\n" + "\n".join(lines) + "\n")
    span = cardlib.history_span(c.text)
    body_start = len(c.text) - len(c.body)
    expected = c.text[body_start:span[0]] if span else c.body
    assert card_text(c) == " ".join([c.title, *c.aliases, c.description, expected])
    assert bool(span) or cardlib.history(c.text) == []
