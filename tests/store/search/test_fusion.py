"""The fusion's labels with similarities given (no model): hybrid.fuse on a small store's
lexical result, each card's similarity to the query set by the test, so the rule under
test is what decides."""
from __future__ import annotations

import numpy as np

from cardmem.store.index.db import Index
from cardmem.store.search import confidence, hybrid
from cardmem.store.search.search import run as lexical
from cardmem.store.search.semantic import Similarities
from cardmem.store.store import init
from semantickit import write

NOTES = [("notes/deploys", "Deploys", "Deploys go out from the main branch after the checks pass."),
         ("notes/backups", "Backups", "Backups are taken nightly and kept for thirty days."),
         ("notes/oncall", "On-call", "On-call engineers hand over every Monday at ten."),
         ("notes/flags", "Feature flags", "Flags are removed a month after a full rollout.")]
# One word of a longer question that only one card holds, in passing (its body), where the
# question asks about something no card answers.
QUESTION = "how should the reporting replicas behind pgbouncer be sized for quarterly billing"


def fused(tmp_path, title: str, body: str, sim: float) -> dict:
    root = tmp_path / "store"
    for cid, t, b in NOTES:
        write(root, cid, t, b)
    write(root, "notes/infra", title, body)
    store = init(root)[0]
    with Index(store) as idx:
        idx.refresh()
        res = lexical(idx, QUESTION, hybrid.POOL)
        n = res.rowids["notes/infra"]
        assert res.results[0]["id"] == "notes/infra" and "notes/infra" in res.unique
        assert res.cover["notes/infra"] < confidence.COVER_UNIQUE
        hybrid.fuse(idx, res, Similarities(np.array([n]), np.array([sim])), 5, None, None)
        return res.results[0] | {"none_confident": res.no_confident_results}


def test_a_rare_word_met_in_passing_is_not_vouched_for_by_a_faint_similarity(tmp_path) -> None:
    # The vectors see some relation (over SIM_UNRELATED), not what a card both sides found
    # needs to be medium (SIM_BOTH): first still, but not sure.
    sim = (confidence.SIM_UNRELATED + confidence.SIM_BOTH) / 2
    top = fused(tmp_path, "Infra notes", "We run pgbouncer in transaction mode.", sim)
    assert top["id"] == "notes/infra" and top["matched"] == ["body"]
    assert top["confidence"] == "low" and top["none_confident"], top


def test_a_rare_word_the_vectors_vouch_for_is_medium(tmp_path) -> None:
    top = fused(tmp_path, "Infra notes", "We run pgbouncer in transaction mode.",
                confidence.SIM_BOTH)
    assert top["confidence"] == "medium", top


def test_a_rare_word_naming_the_card_is_medium_when_the_vectors_see_a_relation(tmp_path) -> None:
    sim = (confidence.SIM_UNRELATED + confidence.SIM_BOTH) / 2
    top = fused(tmp_path, "pgbouncer", "We run it in transaction mode.", sim)
    assert "title" in top["matched"] and top["confidence"] == "medium", top
    unrelated = fused(tmp_path / "2", "pgbouncer", "We run it in transaction mode.",
                      confidence.SIM_UNRELATED / 2)
    assert unrelated["confidence"] == "low", unrelated


# A conversation kept a card a turn: the question's words are in one turn, its answer in
# the next, which shares no word with the question.
TURNS = ["Melanie: I started a new painting class last week.",
         "Caroline: Nice! How was the camping trip with the kids?",
         "Melanie: We roasted marshmallows and watched the stars all night.",
         "Caroline: That sounds lovely, I need a weekend like that."]


def conversation(tmp_path, *extra: tuple[str, str, str]):
    root = tmp_path / "store"
    for i, text in enumerate(TURNS, 1):
        write(root, f"turns/d1-{i}", f"{text.split(':')[0]}, turn {i}", text)
    for cid, t, b in NOTES + list(extra):
        write(root, cid, t, b)
    return init(root)[0]


def fused_results(store, q: str, limit: int = 5) -> list[dict]:
    with Index(store) as idx:
        idx.refresh()
        res = lexical(idx, q, hybrid.POOL)
        hybrid.fuse(idx, res, Similarities(np.array([], dtype=int), np.array([])), limit, None,
                    None)
        return res.results


def test_the_turn_after_the_one_holding_the_words_is_shown_as_its_neighbour(tmp_path) -> None:
    results = fused_results(conversation(tmp_path), "camping trip with the kids")
    ids = [r["id"] for r in results]
    assert ids[0] == "turns/d1-2", results
    answer = next(r for r in results if r["id"] == "turns/d1-3")
    assert answer["match"] == "neighbour" and answer["confidence"] == "low", answer
    assert "marshmallows" in answer["snippet"]


def test_the_turn_after_a_strong_result_ranks_above_the_turn_before_it(tmp_path) -> None:
    # Both sit beside the turn holding the words; what answers it comes after it.
    results = fused_results(conversation(tmp_path), "camping trip with the kids")
    ids = [r["id"] for r in results]
    assert ids.index("turns/d1-3") < ids.index("turns/d1-1"), results


def test_a_card_borrows_more_from_the_card_before_it_than_from_the_one_after() -> None:
    from cardmem.store.search.neighbours import spread

    mixed, new = spread({"turns/d2-5": 1.0, "notes/x": 0.2})
    assert new["turns/d2-6"] > new["turns/d2-4"] > 0.0, new
    assert new["turns/d2-7"] > new["turns/d2-3"], new
    assert mixed == {"turns/d2-5": 1.0, "notes/x": 0.2}  # no neighbour of theirs matched


def test_only_short_cards_in_a_numbered_sequence_lend(tmp_path) -> None:
    long = " ".join(["The camping trip notes, day by day."] * 60)
    store = conversation(tmp_path, ("logs/trip-1", "Trip log one", long),
                         ("logs/trip-2", "Packing list", "A tent, a stove, two lamps."),
                         ("notes/camping", "Camping", "The camping trip is in June."))
    ids = [r["id"] for r in fused_results(store, "camping trip", limit=10)]
    assert "logs/trip-1" in ids and "logs/trip-2" not in ids, ids  # a long card lends nothing


def test_a_sequence_is_ids_that_differ_in_their_last_number() -> None:
    from cardmem.store.search.neighbours import around

    assert around("turns/d3-5") == ["turns/d3-4", "turns/d3-6", "turns/d3-3", "turns/d3-7"]
    assert around("sessions/session-09")[:2] == ["sessions/session-08", "sessions/session-10"]
    assert around("notes/part-0") == ["notes/part-1", "notes/part-2"]
    assert around("notes/camping") == []


def test_the_tenth_card_of_a_padded_sequence_borrows_from_the_ninth() -> None:
    """`part-09` and `part-10` are neighbours both ways: from 10, whose number shows no
    padding, 9 is looked for as `9` and as `09` (found by review: `part-10` looked only
    for `part-9`, so it borrowed nothing from `part-09`, which borrowed from it)."""
    import pytest

    from cardmem.store.search.neighbours import AFTER, MIX, around, spread

    assert "sessions/session-09" in around("sessions/session-10")
    assert around("turns/d3-10")[0] == "turns/d3-9"  # an unpadded sequence first
    mixed, _ = spread({"notes/part-09": 1.0, "notes/part-10": 0.5})
    assert mixed["notes/part-10"] == pytest.approx(max(0.5 + MIX * 1.0, AFTER * 1.0))


def test_a_card_deleted_between_the_fusions_two_reads_is_skipped(tmp_path, monkeypatch) -> None:
    """A card the vectors found that another process deletes (its refresh) after the fusion
    checked the filters and before it reads the card's row: left out, no KeyError (found
    by review)."""
    import sqlite3

    root = tmp_path / "store"
    for cid, t, b in NOTES:
        write(root, cid, t, b)
    write(root, "notes/gone", "Lighthouse", "The keeper climbs the stairs at dusk.")
    store = init(root)[0]
    rows_sql = hybrid._rows_sql

    with Index(store) as idx:
        idx.refresh()
        res = lexical(idx, "deploys main branch", hybrid.POOL)
        gone = idx.conn.execute("SELECT n FROM cards WHERE id = 'notes/gone'").fetchone()[0]

        def deleted_first(key: str = "n") -> str:  # the other process, between the reads
            other = sqlite3.connect(str(idx.db_path), isolation_level=None)
            other.execute("DELETE FROM cards WHERE n = ?", (gone,))
            other.close()
            return rows_sql(key)

        monkeypatch.setattr(hybrid, "_rows_sql", deleted_first)
        hybrid.fuse(idx, res, Similarities(np.array([gone]), np.array([0.9])), 5, None, None)
        ids = [r["id"] for r in res.results]
    assert ids and ids[0] == "notes/deploys" and "notes/gone" not in ids, ids


def test_the_card_holding_a_rare_word_is_unique_whichever_word_of_the_query_it_is(tmp_path
                                                                                   ) -> None:
    """confidence.coverage marks the only holder of the rare word, not the holders of the
    query's first word (a mutant took `holders[0]`: every card holding the common word
    was pinned as the only holder of a query word)."""
    root = tmp_path / "store"
    for cid, t, b in NOTES:
        write(root, cid, t, b + " Each rollout is announced.")
    write(root, "notes/infra", "Infra notes", "We run pgbouncer in transaction mode.")
    store = init(root)[0]
    with Index(store) as idx:
        idx.refresh()
        for q in ("rollout pgbouncer", "pgbouncer rollout"):
            res = lexical(idx, q, hybrid.POOL)
            assert {"notes/infra", "notes/deploys"} <= set(res.rowids), res.results
            assert res.unique == {"notes/infra"}, (q, res.unique)


def test_only_the_first_results_lend_to_cards_not_found(tmp_path) -> None:
    """The neighbours added are those of the FROM best cards, never of the weakest ones
    (a mutant sorted the scores upwards: the weakest results' neighbours came in)."""
    from cardmem.store.search.neighbours import FROM, spread

    scores = {f"notes/topic-{c}-1": 1.0 - i / 10 for i, c in enumerate("abcdefg")}
    assert len(scores) > FROM
    _, new = spread(scores)
    assert "notes/topic-a-2" in new and "notes/topic-a-0" in new, new
    assert not {"notes/topic-g-2", "notes/topic-f-2"} & set(new), new
