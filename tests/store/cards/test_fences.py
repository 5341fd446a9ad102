"""Every reader of a card agrees on what is code: one fence rule (store/cards/markdown.py).

A line inside a fenced block is no link, no heading and no sentence of its own. The link
reader, the History finder (the hook's and the card parser's) and maintain's sentences
each had a rule of their own, and they disagreed on the inputs below: a block closed by a
longer run, a ``` line inside a ~~~ block, a fence never closed, a fence indented 4 spaces
(indented text, no fence), a closing line with an info string, a backtick fence whose info
string holds a backtick (inline code, no fence).
"""
from __future__ import annotations

import pytest

from cardmem.store.cards import card as cardlib
from cardmem.store.cards import sections
from cardmem.store.cards.links import links
from cardmem.store.maintain.facts import units

# Each case: its lines, X and Y where a probe goes, and whether the probe there is code.
CASES = {
    "closed by a longer run": (["```", "X", "````", "Y"], {"X": True, "Y": False}),
    "``` inside ~~~": (["~~~", "X", "```", "Y", "~~~", "Z"], {"X": True, "Y": True, "Z": False}),
    "never closed": (["text", "```", "X"], {"X": True}),
    "indented 4 spaces": (["    ~~~", "X", "    ~~~", "Y"], {"X": False, "Y": False}),
    "a closing line with an info string": (["```py", "X", "```py", "Y", "```", "Z"],
                                           {"X": True, "Y": True, "Z": False}),
    "a backtick in a backtick fence's info": (["``` a`b", "X", "```", "Y"],
                                              {"X": False, "Y": True}),
}

PROBES = {
    "link": ("[[probe]]", lambda text: "probe" in [t for t, _ in links(text)]),
    "History (hook)": ("## History", lambda text: sections.history_span(text, body=True)
                       is not None),
    "History (card parser)": ("## History", lambda text: cardlib.section_span(text, "History")
                              is not None),
    "title": ("# Probe", lambda text: any(lv == 1 and name == "Probe"
                                          for _, lv, name, _ in cardlib.headings(text))),
    "sentence": ("Probe sentence.", lambda text: "Probe sentence." in units(text)),
}


@pytest.mark.parametrize("reader", PROBES)
@pytest.mark.parametrize("case,where", [(c, w) for c, (_, at) in CASES.items() for w in at])
def test_every_reader_takes_the_same_lines_for_code(case, where, reader) -> None:
    lines, at = CASES[case]
    probe, outside = PROBES[reader]
    # blank lines apart, so that the probe is a paragraph of its own where it is no code
    text = "\n\n".join(probe if ln == where else "Filler." if ln in at else ln for ln in lines)
    assert outside(text) is not at[where], f"{reader} in {case!r}:\n{text}"
