"""A card's `## History` section has one finder (card.history_span): the History lines,
and the text the duplicate pass compares (History aside), agree on where it is."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cardmem.store.cards import card as cardlib
from cardmem.store.cards import sections
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


# The finder as a regular expression (card.py's before it moved to cards/sections.py, which
# the PreToolUse hook may import: no `re`): the plain-string one finds the same headings.
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _headings_by_re(text: str) -> list[tuple[int, int, str, int]]:
    out, fence, offset = [], "", 0
    for i, ln in enumerate(sections.lines_of(text)):
        line = ln.rstrip("\r\n")
        f = _FENCE.match(line)
        if fence:
            if f and f.group(1)[0] == fence[0] and len(f.group(1)) >= len(fence) \
                    and not line.strip()[len(f.group(1)):].strip():
                fence = ""
        elif f:
            fence = f.group(1)
        elif (m := _HEADING.match(line)) and m.group(2):
            out.append((i, len(m.group(1)), m.group(2), offset))
        offset += len(ln)
    return out


PIECES = st.lists(st.sampled_from(
    [" ", "  ", "    ", "\t", "#", "##", "#######", "History", "history", "a b", "`", "```",
     "````", "~~~", "~", "x", "\r", "- item"]), max_size=6).map("".join)


@settings(max_examples=500, deadline=None)
@given(st.lists(PIECES, max_size=10))
def test_the_heading_finder_needs_no_regular_expressions(lines) -> None:
    text = "\n".join(lines) + "\n"
    assert sections.headings(text) == _headings_by_re(text)


RULE = ("---\ntitle: No force push\ntype: feedback\napplies_to: ['git push --force*']\n"
        "enforce: deny\n---\nNever force-push a shared branch.\n\n```md\n## History\nin code\n"
        "```\n\nAsk first.\n\n{heading}\n- 2026-01-01 · session a · Rule: never force\n")


@pytest.mark.parametrize("heading", ["## History", "## history", "##  History ##"])
def test_a_rule_fires_with_its_text_and_never_its_history(tmp_path, heading) -> None:
    """The PreToolUse hook's rule text stops where card.history_span says the History
    starts (once it cut at the first `\\n## History`, in code too, and missed `## history`)."""
    from cardmem.store.rules.triggers import rule_text

    (tmp_path / "feedback").mkdir()
    (tmp_path / "feedback" / "push.md").write_text(RULE.format(heading=heading))
    assert rule_text(str(tmp_path), "feedback/push") == (
        "Never force-push a shared branch.\n\n```md\n## History\nin code\n```\n\nAsk first.")


def test_a_projects_lessons_are_its_history_lines_only() -> None:
    from cardmem.store.context.session import _lessons

    c = cardlib.parse("---\ntitle: Signals\ntype: signal\nproject: acme\n---\n"
                      "- a list in the body\n\n## history\n- 2026-01-01 · a lesson\n",
                      "projects/acme/signals")
    assert "a lesson" in _lessons(c) and "a list in the body" not in _lessons(c)
