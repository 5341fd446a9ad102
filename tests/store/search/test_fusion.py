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
