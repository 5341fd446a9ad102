"""The duplicate pass's features kept between runs (store/maintain/kept.py): computed once
per text, again when the text or the code changes, and a bad file only costs the computing."""
from __future__ import annotations

import marshal

from cardmem.store.maintain import kept


def counting(calls: list[str]):
    def compute(text: str):
        calls.append(text)
        words = set(text.split())
        return words | {"#1"}, frozenset({"#1"})
    return compute


def test_a_text_seen_by_an_earlier_run_is_not_computed_again(tmp_path) -> None:
    calls: list[str] = []
    first = kept.Kept(tmp_path, counting(calls), [__file__])
    a = first.of("run the tests")
    first.save(complete=True)
    second = kept.Kept(tmp_path, counting(calls), [__file__])
    assert second.of("run the tests") == a == ({"run", "the", "tests", "#1"}, frozenset({"#1"}))
    assert calls == ["run the tests"]
    second.of("run the tests again")  # an edited card: its new text is computed
    assert calls == ["run the tests", "run the tests again"]


def test_a_complete_run_drops_the_texts_it_did_not_see(tmp_path) -> None:
    calls: list[str] = []
    run = kept.Kept(tmp_path, counting(calls), [__file__])
    run.of("one")
    run.of("two")
    run.save(complete=True)
    run = kept.Kept(tmp_path, counting(calls), [__file__])
    run.of("one")
    run.save(complete=False)  # cut off: "two" may be asked next time
    assert len(kept.Kept(tmp_path, counting(calls), [__file__]).old) == 2
    run.save(complete=True)
    assert len(kept.Kept(tmp_path, counting(calls), [__file__]).old) == 1


def kept_one(tmp_path, calls: list[str]):
    """The kept file after a run that saw the text "one": (path, its parts)."""
    run = kept.Kept(tmp_path, counting(calls), [__file__])
    run.of("one")
    run.save(complete=True)
    path = tmp_path / ".cardmem" / kept.FILE
    return path, marshal.loads(path.read_bytes())


def test_other_code_or_a_broken_file_is_not_read(tmp_path) -> None:
    calls: list[str] = []
    path, (code, rows) = kept_one(tmp_path, calls)
    path.write_bytes(marshal.dumps((b"other code", rows)))
    assert kept.Kept(tmp_path, counting(calls), [__file__]).of("one") and calls == ["one", "one"]
    for junk in (b"", b"\x00garbage", marshal.dumps([1, 2, 3]), marshal.dumps((1, 2)),
                 marshal.dumps((code, [], rows))):  # the earlier format's three parts
        path.write_bytes(junk)
        assert kept.Kept(tmp_path, counting(calls), [__file__]).of("one")
    assert len(calls) == 7


def test_a_damaged_entry_is_computed_anew(tmp_path) -> None:
    calls: list[str] = []
    path, (code, rows) = kept_one(tmp_path, calls)
    for damaged in (((99,), 1), ("#1",), (None, "one"), "#1\none"):
        path.write_bytes(marshal.dumps((code, {k: damaged for k in rows})))
        assert kept.Kept(tmp_path, counting(calls), [__file__]).of("one") == \
            ({"one", "#1"}, frozenset({"#1"}))
    assert calls == ["one"] * 5


def test_features_that_would_not_read_back_are_not_kept(tmp_path) -> None:
    """Features are kept joined by newlines: one with a newline in it (or an empty one)
    is computed again next time rather than read back wrong."""
    odd = {"line\nbreak": ({"line\nbreak", "#1"}, frozenset({"#1"})),
           "empty": ({""}, frozenset()), "none": (set(), frozenset()),
           "fine": ({"a", "b", "#1", "#2"}, frozenset({"#1", "#2"}))}
    calls: list[str] = []

    def compute(text: str):
        calls.append(text)
        return odd[text]

    run = kept.Kept(tmp_path, compute, [__file__])
    for text in odd:
        assert run.of(text) == odd[text]
    run.save(complete=True)
    again = kept.Kept(tmp_path, compute, [__file__])
    for text in odd:
        assert again.of(text) == odd[text]
    assert calls == [*odd, "line\nbreak", "empty"]
