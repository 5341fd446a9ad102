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


# --- one finder for every reader (store/cards/sections.py) ------------------------------

MARKDOWN = st.lists(st.one_of(st.sampled_from([
    "## History", "## history", "##\tHistory", "##  History ##", "  ## History", "    ## History",
    "## History #", "## History#", "## HISTORY \t", "## \u00a0History", "####### History",
    "# History", "### History", "## Other", "# Title", "##", "## ##", "## # #", "#\tx #",
    "```", "````", "```py", "~~~", "~~~~", "   ```", "    ```", "``` x", "`` x", "---",
    "title: x", "- 2026-11-30 · entry", "- b", "-c", "text", "", "   ", "\r"]),
    st.text(alphabet=" #`~\t\rHhistory-x", max_size=12)), max_size=14)


@settings(max_examples=500, deadline=None)
@given(MARKDOWN, st.sampled_from(["\n", "\r\n"]))
def test_the_plain_finder_is_the_heading_walks(lines, nl) -> None:
    """sections.history_span (no `re`, for the PreToolUse hook) finds what the card
    parser's regular-expression walk of headings and fences finds."""
    from cardmem.store.cards import sections

    text = nl.join(lines)
    assert sections.history_span(text) == cardlib.section_span(text, "History")


def test_every_reader_takes_the_first_history_outside_code_in_any_case(tmp_path) -> None:
    """Where the readers disagreed: the rule's text cut at the first `\\n## History` (case,
    code fences and a second section aside), the session's lessons read the LAST one;
    the learner appends to the first, outside code, in any case (card.history's)."""
    from cardmem.store.context.session import _lessons
    from cardmem.store.rules.triggers import rule_text

    fenced = "```md\n## History\n- 2026-01-01 · an example, in code\n```\n"
    cases = {  # body -> (the rule's text, the lessons' entries)
        "Never force-push.\n\n" + fenced + "Ask first.\n\n## History\n- 2026-11-30 · a\n":
            ("Never force-push.\n\n" + fenced + "Ask first.", ["a"]),
        "Never force-push.\n\n## history\n- 2026-11-30 · a\n":
            ("Never force-push.", ["a"]),
        "Never force-push.\n\n## History\n- 2026-11-30 · a\n\n## Notes\nKeep.\n\n"
        "## History\n- 2026-12-01 · b\n":
            ("Never force-push.", ["a"]),
    }
    (tmp_path / "feedback").mkdir()
    for body, (rule, lessons) in cases.items():
        text = f"---\ntitle: Never force-push\ntype: feedback\n---\n{body}"
        (tmp_path / "feedback" / "r.md").write_text(text)
        assert rule_text(str(tmp_path), "feedback/r") == rule
        card = cardlib.parse(text, "projects/p/signals")
        card.text = ""  # the session start's cards come from the index: a body, no text
        shown = _lessons(card).splitlines()[1:]
        assert shown == [f"- 2026-{e}" for e in
                         (["11-30 · a"] if lessons == ["a"] else [])], body
        assert [e.rsplit("· ", 1)[1] for e in cardlib.history(text)] == lessons
