"""`maintain` reports its progress and stops cleanly at a CPU budget (issue 28)."""
from __future__ import annotations

import pytest
from maintainkit import corpus_store

from cardmem.store.maintain import MODEL_FREE, within
from cardmem.store import maintain_record as record
from cardmem.tools.maintain import run


@pytest.mark.corpus
def test_progress_is_reported_and_ends_whole(tmp_path) -> None:
    store = corpus_store(tmp_path / "store", ("oxc", "ruff"))
    seen: list[tuple[str, int, int | None]] = []
    run(store, set(MODEL_FREE), progress=lambda *a: seen.append(a))
    compared = [s for s in seen if s[0] == "comparing cards"]
    assert compared[0][1] == 0 and compared[-1][1] == compared[-1][2] > 0
    assert all(a[1] <= b[1] for a, b in zip(compared, compared[1:]))


@pytest.mark.corpus
def test_a_pass_out_of_budget_records_only_the_kinds_it_finished(tmp_path, monkeypatch) -> None:
    store = corpus_store(tmp_path / "store", ("oxc",))
    calls = []

    def clock(what, done, total):  # out of time once the duplicate pass reports
        calls.append(what)
        if what == "comparing cards":
            raise __import__("cardmem.store.maintain", fromlist=["x"]).OutOfTime("spent")

    report = run(store, set(MODEL_FREE), progress=clock)
    assert report.notes == ["cut off: spent; not checked: duplicate, drift, stale, long-history"]
    assert sorted(record.load(store.root)) == ["broken-link"]


def test_within_raises_only_past_its_budget() -> None:
    from cardmem.store.maintain import OutOfTime

    seen = []
    within(60.0, lambda *a: seen.append(a))("x", 1, 2)
    assert seen == [("x", 1, 2)]
    with pytest.raises(OutOfTime):
        within(-1.0)("x", 1, 2)
    within(-1.0)("x", 2, 2)  # a phase done is let finish


@pytest.mark.corpus
def test_a_daily_pass_cut_off_keeps_what_it_computed_for_the_next(tmp_path, monkeypatch) -> None:
    """The duplicate pass's features of the cards it read before the cut-off are kept
    (store/maintain/kept.py): the next pass computes only the others'."""
    from maintainkit import card_text, small_store

    from cardmem.store.maintain import OutOfTime, duplicates

    store = small_store(tmp_path / "s", {
        f"reference/c{n}": card_text(f"Card {n}", f"Service {n} answers on port {9000 + n}.")
        for n in range(600)}, corpus=("oxc",))
    computed: list[str] = []
    real = duplicates.text_features
    monkeypatch.setattr(duplicates, "text_features", lambda t: computed.append(t) or real(t))

    def clock(what, done, total):  # out of time at the report after the 500th card
        if what == "comparing cards" and done > 0:
            raise OutOfTime("spent")

    report = run(store, {"duplicate"}, progress=clock)
    assert report.notes[0].startswith("cut off: spent")
    assert len(computed) == 500
    run(store, {"duplicate"})
    assert len(computed) > 600 and len(set(computed)) == len(computed)  # none twice
