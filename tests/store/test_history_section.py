"""A card's `## History` section has one finder (store/cards/sections.py): the History
lines, the text the duplicate pass compares (History aside), a rule's text as the hook
shows it and a project's lessons in the session pile agree on where it is."""
from __future__ import annotations

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


# --- one finder for every reader: the pile's lessons and a rule's text too ----------------

def regex_headings(text: str) -> list[tuple[int, int, str, int]]:
    """card.py's heading walk as it was with regular expressions (sections.py has none)."""
    import re

    heading = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
    fence_re = re.compile(r"^ {0,3}(`{3,}|~{3,})")
    out, fence, offset = [], "", 0
    span = cardlib.split(text)
    body_start = span[2] if span else 0
    for i, ln in enumerate(sections.lines(text)):
        if offset >= body_start:
            line = ln.rstrip("\r\n")
            f = fence_re.match(line)
            if fence:
                if f and f.group(1)[0] == fence[0] and len(f.group(1)) >= len(fence) \
                        and not line.strip()[len(f.group(1)):].strip():
                    fence = ""
            elif f:
                fence = f.group(1)
            elif (m := heading.match(line)) and m.group(2):
                out.append((i, len(m.group(1)), m.group(2), offset))
        offset += len(ln)
    return out


PIECES = st.sampled_from(["#", "##", "#######", " ", "   ", "    ", "\t", "`", "```", "````",
                          "~~~", "History", "history", "x", "-", "\r", "\n", "\n\n", "---",
                          "\u00a0", "\x0c", "é"])


@settings(max_examples=2000, deadline=None)
@given(st.lists(PIECES, max_size=30).map("".join))
def test_the_string_walk_finds_the_headings_the_regular_expressions_did(text) -> None:
    assert sections.headings(text) == regex_headings(text)


RULE = "---\ntitle: Never force-push\ntype: feedback\napplies_to: [\"git push -f*\"]\n---\n"


def test_a_rules_text_is_cut_at_its_history_by_the_one_finder(store) -> None:
    from cardmem.store.rules.triggers import rule_text

    def text_of(body: str) -> str:
        (store.root / "feedback").mkdir(exist_ok=True)
        (store.root / "feedback" / "f.md").write_text(RULE + body)
        return rule_text(str(store.root), "feedback/f")

    example = "Log it as:\n\n```md\n## History\n- 2026-01-01 · why\n```\n\nThen push."
    assert text_of(example + "\n\n## History\n- 2026-11-30 · added\n") == example
    assert text_of("Ask first.\n\n## history\n- 2026-11-30 · added\n") == "Ask first."


def test_a_projects_lessons_are_its_history_lines_and_only_those() -> None:
    from cardmem.store.context.session import _lessons

    def lessons(body: str) -> list[str]:
        card = cardlib.parse("---\ntitle: Signals\ntype: signal\nproject: widgets\n---\n"
                             + body, "projects/widgets/signals")
        return _lessons(card).splitlines()[1:]

    body = "Signals.\n- not a lesson\n\n## history\n- 2026-11-01 · one\n- 2026-11-02 · two\n"
    assert lessons(body) == ["- 2026-11-02 · two", "- 2026-11-01 · one"]
    assert lessons("## History\n- 2026-11-01 · one\n\n## Notes\n- a note\n") == \
        ["- 2026-11-01 · one"]
