"""Property tests of `import claude-md`'s split (tools/importers/claude_md.parse): whatever
the file (sections of rules and of prose, nested headings, fenced code holding `#` lines
and list items, tables, quotes, unicode, a `---` line at the top), every line of it lands
in a card: a rule's text with its bullet taken off, a heading as a card's title or a
rule's description, anything else word for word.

The corpus test (test_import.py) checks this on real files; this one on shapes they may
not hold.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cardmem.tools.importers import claude_md

WORDS = ("deploy cache branch tests queue worker schema café 日本語 naïve Straße 🚀 "
         "v2.3 `make` **bold** src/app.py --force 429").split()
words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
verb = st.sampled_from(["Always", "Never", "Use", "Prefer", "Run", "Keep", "Note that"])
rule = st.tuples(verb, words).map(" ".join)
bullet = st.sampled_from(["- ", "* ", "1. ", "2) "])
rules = st.tuples(bullet, st.lists(rule, min_size=2, max_size=4)).map(
    lambda t: "\n".join(t[0] + r for r in t[1]))
prose = st.lists(words.map(lambda w: w + "."), min_size=1, max_size=3).map(" ".join)
code = st.tuples(st.sampled_from(["```", "~~~", "```sh"]),
                 st.lists(st.sampled_from(["# a comment", "- an item", "make test", "",
                                           "## not a heading"]), min_size=1, max_size=4)).map(
    lambda t: "\n".join([t[0], *t[1], t[0][:3]]))
table = st.just("| a | b |\n|---|---|\n| 1 | 2 |")
quote = prose.map(lambda p: "> " + p)
block = st.one_of(rules, prose, code, table, quote)
heading_name = st.one_of(words, st.sampled_from(["Rules", "Code style", "Testing rules",
                                                 "Commands", "Gotchas", "Don'ts"]))


@st.composite
def files(draw) -> tuple[str, set[str]]:
    """(a CLAUDE.md, its lines that are markup alone): maybe a `---` line, prose and
    another `---` at the top, maybe a `# Title`, maybe text before the first section,
    sections at one or two levels, each some blocks."""
    out, markup = [], set()
    if draw(st.booleans()):
        out.append("---\n" + draw(prose) + "\n---")  # rule lines around prose: no YAML
        markup.add("---")
    titled = draw(st.booleans())
    if titled:
        out.append("# " + draw(heading_name))
        markup.add(out[-1])  # the lone `# Title`: the file's name, a title only with text
    out += draw(st.lists(block, max_size=2))
    for _ in range(draw(st.integers(0, 4))):
        # `###` under a `# Title` only: a lone first `##` over `###`s is a title too
        level = draw(st.integers(2, 3)) if titled else 2
        out.append("#" * level + " " + draw(heading_name))
        out += draw(st.lists(block, min_size=1, max_size=3))
    return "\n\n".join(out) + "\n", markup


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(files())
def test_every_line_of_a_claude_md_lands_in_a_card(drawn) -> None:
    text, markup = drawn
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "CLAUDE.md"
        f.write_text(text, encoding="utf-8")
        parsed = claude_md.parse(f, "acme")
    assert parsed.skipped == []
    bodies = "\n".join(d.body for d in parsed.drafts)
    names = {d.title for d in parsed.drafts} | {d.description for d in parsed.drafts}
    for line in text.splitlines():
        if not line.strip() or line in markup:
            continue
        bare = claude_md.ITEM.sub(r"\2", line)
        heading = line.lstrip("#").strip()
        assert line in bodies or bare in bodies or heading in names \
            or claude_md._plain(heading) in names, (line, parsed.drafts)  # a title: no **
