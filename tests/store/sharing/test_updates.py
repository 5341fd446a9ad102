"""`cardmem update` / `rollback` against real clones of one bare remote."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cardmem.store.index.db import Index
from cardmem.store.search.query import search_index
from cardmem.store.store import Store
from cardmem.store.git.writer import write_lock
from gitremote import cli, cli_process, clone, git, head, make_remote, snapshot, state, tree


def found(store: Store, query: str) -> list[str]:
    with Index(store) as idx:
        idx.refresh()
        return [r["id"] for r in search_index(idx, query).results]


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Store, Store]:
    """A remote with two cards; `mine` (the store updated) and `theirs` (the publisher)."""
    bare, _ = make_remote(tmp_path, {"reference/runbook": "Deploy with the blue button.\n",
                                     "entities/billing": "Billing service, owned by ops.\n"})
    return bare, clone(bare, tmp_path / "mine"), clone(bare, tmp_path / "theirs")


def publish(store: Store, cid: str, body: str) -> str:
    store.new(cid, body=body)
    git(store.root, "push", "-q", "origin", "main")
    return head(store.root)


def test_fast_forward_update_refreshes_index_and_records_old_head(pair):
    _, mine, theirs = pair
    old = head(mine.root)
    assert found(mine, "zanzibar") == []
    incoming = publish(theirs, "reference/zanzibar-ferry", "The zanzibar ferry leaves at 9.\n")

    code, out, err = cli("update", "--store", str(mine.root))

    assert (code, err) == (0, ""), err
    assert "1 commit(s)" in out and old[:10] in out
    assert head(mine.root) == incoming
    assert (mine.root / "reference/zanzibar-ferry.md").is_file()
    assert found(mine, "zanzibar") == ["reference/zanzibar-ferry"]
    assert git(mine.root, "rev-parse", "refs/cardmem/before-update").strip() == old
    line = json.loads((mine.root / ".cardmem/updates.jsonl").read_text().splitlines()[-1])
    assert (line["kind"], line["old"], line["new"], line["forced"]) == ("update", old, incoming,
                                                                         False)
    # The index was refreshed by the update itself, not just by the search above.
    with Index(mine) as idx:
        assert "reference/zanzibar-ferry" in idx.ids()


def test_update_json_and_up_to_date(pair):
    _, mine, _ = pair
    code, out, _ = cli("update", "--json", "--store", str(mine.root))
    assert code == 0
    doc = json.loads(out)
    assert doc["status"] == "up-to-date" and doc["old"] == doc["new"] == head(mine.root)
    assert not (mine.root / ".cardmem/updates.jsonl").exists()


def test_local_commits_only_is_nothing_to_take(pair):
    _, mine, _ = pair
    mine.new("reference/local-only", body="mine\n")
    before = state(mine.root)
    code, out, _ = cli("update", "--store", str(mine.root))
    assert code == 0 and "nothing to take" in out
    assert state(mine.root) == before


def diverge(mine: Store, theirs: Store) -> tuple[str, str]:
    mine.new("reference/local-note", body="Only here.\n")
    publish(theirs, "reference/upstream-note", "Only upstream.\n")
    theirs.new("reference/upstream-two", body="Second upstream.\n")
    git(theirs.root, "push", "-q", "origin", "main")
    return head(mine.root), head(theirs.root)


def test_non_fast_forward_is_refused_with_exit_3_and_nothing_changes(pair):
    _, mine, theirs = pair
    old, incoming = diverge(mine, theirs)
    before = state(mine.root)

    code, out, err = cli_process("update", "--store", str(mine.root))

    assert code == 3 and out == ""
    assert err.startswith("cardmem: update ") and err.count("\n") == 1
    assert old[:10] in err and incoming[:10] in err
    assert "1 local commit(s)" in err and "2 upstream commit(s)" in err
    assert state(mine.root) == before
    assert git(mine.root, "for-each-ref", "refs/cardmem/") == ""
    assert not (mine.root / ".cardmem/updates.jsonl").exists()


def test_force_then_rollback_restores_the_exact_previous_tree(pair):
    _, mine, theirs = pair
    old, incoming = diverge(mine, theirs)
    old_tree, old_files = tree(mine.root), snapshot(mine.root)
    assert "reference/local-note" in found(mine, "local note")

    code, out, err = cli("update", "--force", "--store", str(mine.root))
    assert code == 0, err
    assert head(mine.root) == incoming
    assert not (mine.root / "reference/local-note.md").exists()
    assert "reference/upstream-note" in found(mine, "upstream note")
    # The dropped local commit stays reachable under refs/cardmem/.
    assert git(mine.root, "rev-parse", f"refs/cardmem/forced/{old}").strip() == old

    code, out, err = cli("rollback", "--store", str(mine.root))
    assert code == 0, err
    assert head(mine.root) == old and tree(mine.root) == old_tree
    assert snapshot(mine.root) == old_files
    assert git(mine.root, "status", "--porcelain", "--untracked-files=all") == ""
    assert not any(r.startswith("reference/upstream") for r in found(mine, "upstream note"))
    assert "reference/local-note" in found(mine, "local note")
    kinds = [json.loads(ln)["kind"] for ln in
             (mine.root / ".cardmem/updates.jsonl").read_text().splitlines()]
    assert kinds == ["update", "rollback"]
    # A second rollback has nothing left to do.
    code, out, _ = cli("rollback", "--store", str(mine.root))
    assert code == 0 and "already at" in out and head(mine.root) == old


def test_rollback_to_a_given_ref_and_with_nothing_recorded(pair):
    _, mine, theirs = pair
    code, _, err = cli("rollback", "--store", str(mine.root))
    assert code == 1 and "no update recorded" in err
    first = head(mine.root)
    publish(theirs, "reference/a", "a\n")
    assert cli("update", "--store", str(mine.root))[0] == 0
    code, _, err = cli("rollback", "--to", first, "--store", str(mine.root))
    assert code == 0, err
    assert head(mine.root) == first
    code, _, err = cli("rollback", "--to", "no-such-ref", "--store", str(mine.root))
    assert code == 1 and "no commit 'no-such-ref'" in err and head(mine.root) == first


def test_uncommitted_edits_to_incoming_files_are_never_overwritten(pair):
    _, mine, theirs = pair
    theirs.update_text("reference/runbook", lambda t: t + "Upstream line.\n", "edit runbook")
    theirs.new("reference/new-upstream", body="new\n")
    git(theirs.root, "push", "-q", "origin", "main")
    (mine.root / "reference/runbook.md").write_text("my unsaved thoughts\n")
    (mine.root / "reference/new-upstream.md").write_text("my own file, never committed\n")
    before = state(mine.root)

    code, out, err = cli("update", "--store", str(mine.root))

    assert code == 1 and out == ""
    assert "reference/runbook.md" in err and "reference/new-upstream.md" in err
    assert "uncommitted edits" in err
    assert state(mine.root) == before


def test_unrelated_uncommitted_edits_ride_along_untouched(pair):
    _, mine, theirs = pair
    incoming = publish(theirs, "reference/other", "other\n")
    billing = mine.root / "entities/billing.md"
    billing.write_text(billing.read_text() + "A line I have not committed.\n")
    draft = mine.root / "reference/draft.md"
    draft.write_text("draft\n")
    edited = billing.read_bytes()

    assert cli("update", "--store", str(mine.root))[0] == 0
    assert head(mine.root) == incoming
    assert billing.read_bytes() == edited and draft.read_text() == "draft\n"
    status = git(mine.root, "status", "--porcelain").splitlines()
    assert sorted(status) == [" M entities/billing.md", "?? reference/draft.md"]


def test_rollback_refuses_over_uncommitted_edits(pair):
    _, mine, theirs = pair
    publish(theirs, "reference/brought", "brought by the update\n")
    assert cli("update", "--store", str(mine.root))[0] == 0
    (mine.root / "reference/brought.md").write_text("edited after the update\n")
    before = state(mine.root)
    code, _, err = cli("rollback", "--store", str(mine.root))
    assert code == 1 and "reference/brought.md" in err
    assert state(mine.root) == before


def test_index_refresh_failure_exits_2_and_the_update_stands(pair):
    _, mine, theirs = pair
    incoming = publish(theirs, "reference/after", "after\n")
    # A folder where the index file should be: refresh cannot open it, nor remove it.
    blocker = mine.root / ".cardmem" / "index.sqlite"
    blocker.mkdir(parents=True)
    (blocker / "keep").write_text("x")

    code, out, err = cli_process("update", "--store", str(mine.root))

    assert code == 2
    assert "-> " in out  # the update line is printed: it happened
    assert err.startswith("cardmem: index: ") and "the update stands" in err
    assert head(mine.root) == incoming and (mine.root / "reference/after.md").is_file()


def test_update_from_a_url_and_an_unknown_remote(pair):
    bare, mine, theirs = pair
    incoming = publish(theirs, "reference/by-url", "x\n")
    git(mine.root, "remote", "remove", "origin")
    code, _, err = cli("update", "--store", str(mine.root))
    assert code == 1 and "no remote 'origin'" in err
    code, out, err = cli("update", str(bare), "--store", str(mine.root))
    assert code == 0, err
    assert head(mine.root) == incoming


def test_update_waits_for_the_write_lock(pair):
    _, mine, theirs = pair
    publish(theirs, "reference/locked", "x\n")
    toml = mine.root / "cardmem.toml"
    toml.write_text(toml.read_text() + "\n[store]\nlock_timeout_s = 0.3\n")
    before = head(mine.root)
    with write_lock(mine.root):
        code, _, err = cli_process("update", "--store", str(mine.root))
    assert code == 4 and "store busy" in err
    assert head(mine.root) == before
    assert cli("update", "--store", str(mine.root))[0] == 0


def test_option_like_remote_and_ref_are_refused(pair, tmp_path: Path):
    _, mine, _ = pair
    marker = tmp_path / "ran"
    code, _, err = cli("update", "--store", str(mine.root), "--", f"--upload-pack=touch {marker}")
    assert code == 1 and "is not a remote name or a git URL" in err
    assert not marker.exists()
    code, _, err = cli("rollback", "--to=--all", "--store", str(mine.root))
    assert code == 1 and "is not a commit or ref" in err


def test_rollback_refuses_another_branch_than_the_one_updated(pair):
    _, mine, theirs = pair
    publish(theirs, "reference/b", "b\n")
    assert cli("update", "--store", str(mine.root))[0] == 0
    git(mine.root, "switch", "-q", "-c", "side")
    before = head(mine.root)
    code, _, err = cli("rollback", "--store", str(mine.root))
    assert code == 1 and "moved branch 'main', not 'side'" in err
    assert head(mine.root) == before
