"""A person's no sticks (issue 28): a rejected duplicate finding, or any part of a merge
`maintain` proposed, is remembered in the store and not raised again until a card of it
changes."""
from __future__ import annotations

import json

import pytest
from gitremote import cli
from maintainkit import CORPUS, commit_as_person, corpus_store, git

from cardmem.store.cards import distinct
from cardmem.store.maintain import findings
from cardmem.tools.maintain import run

SNAPSHOTS = ("---\ntitle: Insta snapshots track failing tests\ntype: project\nproject: oxc\n---\n"
             "Snapshot tests use the insta crate; the snapshots record only the failing tests, "
             "not the passing ones. They live in tasks/coverage/snapshots and the conformance "
             "directories. After a change, review them with cargo insta review. The .snap files "
             "hold counts and .snap.md the detailed failures.\n")
PAIR = ["projects/oxc/snapshots", "projects/oxc/snapshot-testing"]

pytestmark = pytest.mark.corpus  # every test here reads the corpus


@pytest.fixture
def planted(tmp_path):
    store = corpus_store(tmp_path / "store", ("oxc",))
    (store.root / "projects/oxc/snapshots.md").write_text(SNAPSHOTS)
    commit_as_person(store)
    return store


def named(store) -> list[tuple[list[str], str]]:
    code, out, err = cli("maintain", "--json", "--only", "duplicate", "--store", str(store.root))
    assert code == 0, err
    return [(f["ids"], f.get("finding")) for f in json.loads(out)["findings"]]


def test_a_rejected_finding_is_not_raised_again_until_a_card_changes(planted) -> None:
    [(ids, name)] = named(planted)
    assert ids == PAIR and name.startswith("dup-")
    code, out, err = cli("maintain", "--reject", name, "--store", str(planted.root))
    assert code == 0, err
    assert out.startswith(f"rejected {name} in ")
    # one commit of the person's, the decision in a committed file of the store
    assert git(planted, "log", "-1", "--format=%ae").strip() != "agent@cardmem.invalid"
    assert git(planted, "show", "--name-only", "--format=", "HEAD").split() == [distinct.FILE]
    assert git(planted, "status", "--porcelain") == ""
    assert named(planted) == []
    assert run(planted, {"duplicate"}, apply=True).applied == []  # nothing merged either
    # a change to one of its cards: the pass may find them again, under a new name
    p = planted.root / "projects/oxc/snapshots.md"
    p.write_text(p.read_text() + "\nCI runs them on every pull request.\n")
    commit_as_person(planted)
    [(ids, again)] = named(planted)
    assert ids == PAIR and again != name


def test_an_unknown_finding_is_a_one_line_error_and_nothing_is_written(planted) -> None:
    head = git(planted, "rev-parse", "HEAD")
    code, out, err = cli("maintain", "--reject", "dup-0000000000", "--store", str(planted.root))
    assert code != 0 and out == ""
    assert err.startswith("cardmem: finding dup-0000000000: is no open duplicate finding")
    assert len(err.strip().splitlines()) == 1
    assert git(planted, "rev-parse", "HEAD") == head and git(planted, "status", "--porcelain") == ""


def test_rejecting_one_part_of_a_proposed_merge_rejects_the_merge(tmp_path) -> None:
    store = corpus_store(tmp_path / "store", ("ruff",))
    (store.root / "feedback").mkdir()
    (store.root / "feedback/snapshots.md").write_text(
        SNAPSHOTS.replace("type: project\nproject: oxc\n", "type: feedback\n"))
    (store.root / "feedback/snapshot-testing.md").write_text(
        (CORPUS / "oxc-project--oxc--snapshot-testing.md").read_text()
        .replace("type: project\nproject: oxc", "type: feedback"))
    commit_as_person(store)
    [done] = run(store, {"duplicate"}, apply=True).applied
    first, second = sorted(done["proposals"])
    code, out, err = cli("review", "reject", first, "--store", str(store.root))
    assert code == 0, err
    assert f"{second}  rejected with it" in out and "remembered as distinct" in out
    code, out, _ = cli("review", "--json", "--store", str(store.root))
    assert json.loads(out) == []  # the other half went with it
    assert [f for f in findings(store, {"duplicate"}) if len(f.ids) > 1] == []
    again = run(store, {"duplicate"}, apply=True)
    assert again.applied == [] and again.findings == []  # not proposed again


def test_a_rule_is_kept_over_any_other_card(tmp_path) -> None:
    store = corpus_store(tmp_path / "store", ("oxc",))
    (store.root / "feedback").mkdir()
    # the rule says less (shorter) and is newer: it is still the card kept
    short = SNAPSHOTS.replace("type: project\nproject: oxc\n", "type: feedback\nproject: oxc\n")
    (store.root / "feedback/snapshots.md").write_text(short)
    p = store.root / "projects/oxc/snapshot-testing.md"
    p.write_text(p.read_text() + "\nThey are checked in CI, on every pull request, twice.\n")
    commit_as_person(store)
    [f] = [f for f in findings(store, {"duplicate"}) if len(f.ids) > 1]
    assert f.ids == ["feedback/snapshots", "projects/oxc/snapshot-testing"]
