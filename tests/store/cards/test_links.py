"""Wikilinks (store/cards/links.py): every reader of a link target keys it the same way,
so what the broken-link finder takes for a link to a card is what `mv` rewrites and `rm`
names, and the reverse."""
from __future__ import annotations

from cardmem.store.cards.links import key, links
from cardmem.store.maintain import findings
from cardmem.store.moves import remove, rename

BODY = "see [[/reference/b]], [[Reference/B.md|bee]] and [[ reference/b/ ]]"


def test_a_leading_slash_case_and_md_name_the_same_card() -> None:
    assert {key(t) for t, _ in links(BODY)} == {"reference/b"}


def test_what_mv_rewrites_the_finder_takes_for_a_link_and_rm_names(store) -> None:
    store.new("reference/b", title="Bee", body="b\n")
    store.new("reference/a", title="A", body=BODY + "\n")
    assert findings(store, {"broken-link"}) == []  # each names reference/b
    moved = rename(store, "reference/b", "reference/bee")
    assert moved.relinked == ["reference/a"]
    text = (store.root / "reference" / "a.md").read_text()
    assert text.count("[[reference/bee") == 3 and "[[/reference/b" not in text
    assert findings(store, {"broken-link"}) == []


def test_rm_names_every_card_still_linking_by_any_spelling(store) -> None:
    store.new("reference/b", title="Bee", body="b\n")
    store.new("reference/a", title="A", body=BODY + "\n")
    assert remove(store, "reference/b").linked_from == ["reference/a"]
    assert [f.ids for f in findings(store, {"broken-link"})] == [["reference/a"]] * 3
