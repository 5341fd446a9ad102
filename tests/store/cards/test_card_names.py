"""One rule for which files are cards (store/cards/paths.py): every place that lists cards
-- from the tree, from git's history or status -- names the same ones."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cardmem.store.cards import paths
from cardmem.store.cards.scan import card_files

CARDS = ["a", "feedback/ok", "feedback/README", "signals/s"]
NOT_CARDS = ["README.md", "notes/.trash/x.md", "notes/y.md.md", "feedback/.old/r.md",
             "feedback/z.md.md", ".hidden.md", "signals/.s.md", "signals/t.md.md"]
CARD_TEXT = ("---\ntype: feedback\ntitle: {0}\ndescription: {0}\n---\n\nbody of {0}\n\n"
             "## History\n\n- 2026-11-30: written as {0}\n")


@pytest.fixture
def tricky(store):
    for cid in CARDS:
        (store.root / (cid + ".md")).parent.mkdir(parents=True, exist_ok=True)
        (store.root / (cid + ".md")).write_text(CARD_TEXT.format(cid))
    for rel in NOT_CARDS:
        (store.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (store.root / rel).write_text(CARD_TEXT.format(rel))
    subprocess.run(["git", "-C", str(store.root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(store.root), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-qm", "tricky names"], check=True)
    return store


def test_the_rule_itself(tricky) -> None:
    assert sorted(cid for cid, _ in card_files(tricky.root)) == sorted(CARDS)
    assert [paths.id_of_path(r) for r in NOT_CARDS] == [None] * len(NOT_CARDS)


def test_recent_lists_only_cards(tricky) -> None:
    from cardmem.store.by_address import list_recent

    assert sorted(e["id"] for e in list_recent(tricky, since="1d")) == sorted(CARDS)


def test_the_piles_recent_changes_name_only_cards(tricky) -> None:
    from cardmem.store.context.recent import _git_recent

    commit = _git_recent(tricky)[0]
    assert sorted(commit["ids"]) == sorted(CARDS) and commit["n_ids"] == len(CARDS)


def test_the_piles_folder_listing_names_only_cards(tricky) -> None:
    from cardmem.store.index.pile_view import _ids_under

    assert sorted(_ids_under(tricky.root, "feedback", True)) == ["feedback/README", "feedback/ok"]


def test_rules_a_proposal_may_repeat_are_cards(tricky) -> None:
    from cardmem.store.learning.proposals import rule_lines

    assert sorted(rule_lines(tricky)) == ["feedback/README", "feedback/ok"]


def test_signal_lines_come_from_signal_cards_only(tricky) -> None:
    from cardmem.store.learning.compound import _recent_signal_lines

    assert _recent_signal_lines(tricky) == ["2026-11-30: written as signals/s"]


def test_doctor_counts_uncommitted_cards_only(tricky) -> None:
    from cardmem.tools.cli.doctor import check_repo

    for rel in NOT_CARDS:
        (tricky.root / rel).write_text("changed\n")
    assert not [line for _, line in check_repo(tricky) if "uncommitted" in line]
    (tricky.root / "a.md").write_text(CARD_TEXT.format("changed"))
    assert [line for _, line in check_repo(tricky) if "uncommitted" in line] == [
        "1 card with uncommitted edits (e.g. a.md); `cardmem watch` or git commits them"]


def test_sync_names_conflicting_cards_by_id_and_other_files_by_path() -> None:
    from cardmem.store.sharing.sync import card_names

    assert card_names(["a.md", "README.md", "notes/y.md.md", "cardmem.toml"]) == [
        "a", "README.md", "notes/y.md.md", "cardmem.toml"]


def test_watcher_takes_the_same_files_for_cards(tricky) -> None:
    from cardmem.store.watch.names import card_id

    root = str(tricky.root)
    assert [card_id(root, f"{root}/{c}.md") for c in CARDS] == CARDS
    assert [card_id(root, f"{root}/{r}") for r in NOT_CARDS] == [None] * len(NOT_CARDS)


def test_doctor_counts_renamed_and_non_ascii_cards_by_their_paths(tricky) -> None:
    """git status without -z quotes non-ASCII names and writes a rename as 'old -> new':
    doctor once read those as paths no card has, and counted nothing."""
    from cardmem.store.git import runner as git
    from cardmem.tools.cli.doctor import check_repo

    (tricky.root / "café.md").write_text(CARD_TEXT.format("new"))
    git.run(tricky.root, "mv", "a.md", "b.md")
    lines = [line for _, line in check_repo(tricky) if "uncommitted" in line]
    assert lines == ["3 cards with uncommitted edits (e.g. a.md); "
                     "`cardmem watch` or git commits them"]
