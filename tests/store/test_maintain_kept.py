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
    """The kept file after a run that saw the text "one": (path, its three parts)."""
    run = kept.Kept(tmp_path, counting(calls), [__file__])
    run.of("one")
    run.save(complete=True)
    path = tmp_path / ".cardmem" / kept.FILE
    return path, marshal.loads(path.read_bytes())


def test_other_code_or_a_broken_file_is_not_read(tmp_path) -> None:
    calls: list[str] = []
    path, (code, vocab, rows) = kept_one(tmp_path, calls)
    path.write_bytes(marshal.dumps((b"other code", vocab, rows)))
    assert kept.Kept(tmp_path, counting(calls), [__file__]).of("one") and calls == ["one", "one"]
    for junk in (b"", b"\x00garbage", marshal.dumps([1, 2, 3]), marshal.dumps((1, 2))):
        path.write_bytes(junk)
        assert kept.Kept(tmp_path, counting(calls), [__file__]).of("one")
    assert len(calls) == 6


def test_a_damaged_entry_is_computed_anew(tmp_path) -> None:
    calls: list[str] = []
    path, (code, vocab, rows) = kept_one(tmp_path, calls)
    path.write_bytes(marshal.dumps((code, vocab, {k: ((99,), 1) for k in rows})))
    assert kept.Kept(tmp_path, counting(calls), [__file__]).of("one")[1] == frozenset({"#1"})
    assert calls == ["one", "one"]
