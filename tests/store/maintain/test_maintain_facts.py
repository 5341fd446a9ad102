"""Duplicates that are not: numbers, versions, paths and negations count (issue 28)."""
from __future__ import annotations

import pytest

from maintainkit import card_text, rate_limit_store, small_store

from cardmem.store.maintain import findings
from cardmem.store.maintain.facts import facts, sentences



def dup_findings(store):
    return [f for f in findings(store, {"duplicate"}) if len(f.ids) > 1]


@pytest.mark.corpus
def test_v2_and_v3_limits_are_not_duplicates(tmp_path) -> None:
    assert dup_findings(rate_limit_store(tmp_path / "s")) == []


@pytest.mark.corpus
def test_a_negation_one_card_lacks_is_no_duplicate(tmp_path) -> None:
    body = "merges into main for the release branch; CI checks each commit message and title."
    store = small_store(tmp_path / "s", {
        "reference/squash": card_text("Squash merges", f"Always squash {body}"),
        "reference/no-squash": card_text("Squash merges", f"Never squash {body}")})
    assert dup_findings(store) == []


@pytest.mark.corpus
def test_six_hundred_cards_differing_only_in_numbers_give_no_finding(tmp_path) -> None:
    cards = {f"reference/service-{n}": card_text(
        f"Service {n} port", f"Service {n} listens on port {8000 + n} behind the shared "
        f"proxy; its health check answers on /health every {n % 7 + 2} seconds.")
        for n in range(600)}
    store = small_store(tmp_path / "s", cards)
    assert dup_findings(store) == []


@pytest.mark.corpus
def test_a_real_duplicate_group_is_one_finding(tmp_path) -> None:
    base = ("Deploys go out from the main branch with make deploy; the release manager "
            "watches the dashboards for ten minutes and rolls back with make rollback.")
    words = ("manager", "captain", "engineer", "lead")
    cards = {f"reference/deploys-{w}": card_text("Deploying", base.replace("manager", w))
             for w in words}
    store = small_store(tmp_path / "s", cards)
    [f] = dup_findings(store)
    assert sorted(f.ids) == sorted(cards)


def test_facts_name_numbers_versions_paths_and_negations() -> None:
    assert facts("API v2 allows 100 requests/min") == {"#v2", "#100", "#requests/min"}
    assert facts("Do not use the cache in `src/app.py`.") == {"!cach", "#src/app.py"}
    assert facts("Snapshots live in `tasks/snapshots/`") == facts("Snapshots live in tasks/snapshots")
    assert facts("Run it twice.") == frozenset()


def test_sentences_are_items_headings_sentences_and_code_blocks() -> None:
    body = "# Step 2\n\nOne thing. Two things!\n- an item\n- [ ] a task.\n\n```\ncode. here\n```\n"
    assert sentences(body) == {"step 2", "one thing", "two things", "an item", "a task",
                               "``` code. here ```"}
    assert sentences("**Step 2**") == {"step 2"}  # how a merge carries a heading
