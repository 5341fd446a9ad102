"""The cold index's fast paths read cards exactly as the general ones do: fastmeta's
frontmatter reader and split agree with YAML and card.split, the Card-free row equals
the row of the parsed Card, and the raw file read returns the whole file."""
from __future__ import annotations

import os
import re
from pathlib import Path

import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cardmem.store.cards import card as cardlib
from cardmem.store.index import fastmeta
from cardmem.store.index import rows as indexmod

# Characters YAML or str.splitlines treat specially (indicators, escapes, line breaks), and
# a no-break space (not YAML white space, but str.strip() removes it).
_chars = st.sampled_from(list("ab9XZ -_:#,'\"[]{}.@&*!|>%?~\\\t\r\n\xa0\u2028\x85\ufeffé🚀"))
_text = st.text(alphabet=_chars, max_size=14)
_value = st.one_of(_text, st.lists(_text, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"))
_key = st.sampled_from(["title", "type", "tags", "aliases", "status", "project", "on", "yes",
                        "true", "null", "x-y", "1a", "a b", "k", "#c", ""])
_line = st.one_of(st.tuples(_key, _value).map(lambda kv: f"{kv[0]}: {kv[1]}"),
                  st.sampled_from(["", "   ", "# note", "\xa0", "key:value", "k:"]))


def _yaml(block: str) -> object:
    try:
        loaded = yaml.load(block, Loader=cardlib._Loader)
    except yaml.YAMLError:
        return "error"
    return {str(k): v for k, v in loaded.items()} if isinstance(loaded, dict) else loaded


@settings(max_examples=600, deadline=None)
@given(st.lists(_line, max_size=6), st.sampled_from(["\n", "\r\n"]))
@example(["a: [\xa0x]"], "\n")
@example(["a: [x\xa0]"], "\n")
@example(["\xa0", "a: b"], "\n")
@example(["a: b\u2028c: d"], "\n")
@example(['title: "x"  ', "tags: [a, b,]", "k:   v  "], "\r\n")
def test_quick_meta_is_yaml_or_declines(lines: list[str], nl: str) -> None:
    block = "".join(line + nl for line in lines)
    fast = fastmeta.quick_meta(block)
    if fast is not None:
        assert fast == (_yaml(block) or {})


_doc_chars = st.sampled_from(list("-.ab \t\r\n\ufeff#:"))


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet=_doc_chars, max_size=40))
@example("---\n---\n")
@example("---\r\nx: y\r\n...\r\nbody")
@example("---\na: b\n----\n--- \t\nbody")
@example("\ufeff---\n---")
def test_split_finds_the_closing_line_as_the_plain_rule_does(text: str) -> None:
    """card.split matches the closing line with the newline before it (for speed): the
    same offsets as the plain multi-line rule `^(---|...)[ \t]*\r?$` after the opening."""
    def plain(text: str):
        m = re.match(r"\A(?:\ufeff)?---[ \t]*\r?\n", text)
        close = m and re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.M).search(text, m.end())
        if not close:
            return None
        body = close.end() + (2 if text.startswith("\r\n", close.end())
                              else 1 if text.startswith("\n", close.end()) else 0)
        return m.end(), close.start(), body

    assert cardlib.split(text) == plain(text)
    assert cardlib.split("---\n" + text) == plain("---\n" + text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_key, _value), max_size=6), _text)
@example([("title", "  "), ("type", "x")], "# Heading\nbody")
@example([("title", "[a, b]"), ("status", "  ")], "body")
@example([("type", "note"), ("project", '""'), ("aliases", "x")], "body")
def test_the_card_free_row_is_the_row_of_the_card(pairs: list[tuple[str, str]],
                                                  body: str) -> None:
    text = "---\n" + "".join(f"{k}: {v}\n" for k, v in pairs) + "---\n" + body
    try:
        slow = indexmod.card_row(cardlib.parse(text, "reference/x"))
    except cardlib.CardProblem:
        slow = None
    try:
        fast = indexmod.text_row(cardlib, fastmeta, text, "reference/x")
    except cardlib.CardProblem:
        fast = None
    assert fast == slow


def test_rows_agree_on_the_example_store(example_store) -> None:
    for cid, path in example_store.card_files():
        text = path.read_text(encoding="utf-8")
        assert indexmod.text_row(cardlib, fastmeta, text, cid) == indexmod.card_row(
            cardlib.parse(text, cid, path))


def test_a_file_is_read_whole_whatever_its_stat_said(tmp_path: Path) -> None:
    path = tmp_path / "c.md"
    data = os.urandom(300_000) + b"end"
    path.write_bytes(data)
    assert indexmod.read_bytes(str(path), len(data)) == data
    assert indexmod.read_bytes(str(path), 10) == data  # grew since the stat
    assert indexmod.read_bytes(str(path), len(data) + 50) == data  # shrank
    assert indexmod.read_bytes(str(path), 0) == data
