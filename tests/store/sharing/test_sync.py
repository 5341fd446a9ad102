"""`cardmem sync`: several writers through one bare remote; a clash in a card keeps both
sides, one in a file that is no card aborts cleanly."""
from __future__ import annotations

import json
import subprocess
from datetime import date
from pathlib import Path

import pytest

from cardmem.store.index.db import Index
from cardmem.store.git.writer import AS_IS, Message
from cardmem.store.store import Store
from gitremote import cli, clone, git, head, make_remote, snapshot, state, tree

RUNBOOK = "".join(f"Step {i}: do thing {i}.\n" for i in range(1, 13))


@pytest.fixture
def team(tmp_path: Path) -> tuple[Path, Store, Store]:
    bare, _ = make_remote(tmp_path, {"reference/runbook": RUNBOOK,
                                     "entities/billing": "Billing service.\n",
                                     "people/sam": "Sam, on call.\n"})
    return bare, clone(bare, tmp_path / "alice"), clone(bare, tmp_path / "bob")


def edit_line(store: Store, cid: str, n: int, text: str, agent: bool = False) -> None:
    def change(t: str) -> str:
        return t.replace(f"Step {n}: do thing {n}.", text)

    store.update_text(cid, change, f"edit: {cid} step {n}", agent=agent)


def sync(store: Store) -> tuple[int, str, str]:
    return cli("sync", "--store", str(store.root))


def subjects(store: Store) -> list[str]:
    return git(store.root, "log", "--format=%s").splitlines()


def test_interleaved_edits_end_identical_with_nothing_lost(team):
    bare, alice, bob = team
    alice.new("reference/alice-one", body="Alice's first card.\n")
    edit_line(alice, "reference/runbook", 2, "Step 2: alice rewrote this.")
    bob.new("reference/bob-one", body="Bob's first card.\n")
    edit_line(bob, "reference/runbook", 10, "Step 10: bob rewrote this.", agent=True)

    code, out, err = sync(alice)
    assert code == 0 and "pushed 2" in out, err
    code, out, err = sync(bob)  # diverged: bob's two commits replay on alice's
    assert code == 0 and "replayed and pushed 2" in out, err

    bob.update_text("people/sam", lambda t: t + "Prefers Slack.\n", "edit: sam")
    alice.update_text("entities/billing", lambda t: t + "Owned by ops.\n", "edit: billing")
    edit_line(alice, "reference/runbook", 6, "Step 6: alice again.")
    for s in (alice, bob, alice):  # alice's second sync takes bob's card
        code, _, err = sync(s)
        assert code == 0, err

    assert head(alice.root) == head(bob.root) == git(bare, "rev-parse", "main").strip()
    assert tree(alice.root) == tree(bob.root)
    assert snapshot(alice.root) == snapshot(bob.root)
    runbook = (alice.root / "reference/runbook.md").read_text()
    for line in ("Step 2: alice rewrote this.", "Step 10: bob rewrote this.",
                 "Step 6: alice again.", "Step 12: do thing 12."):
        assert line in runbook
    assert "Prefers Slack." in (alice.root / "people/sam.md").read_text()
    assert "Owned by ops." in (bob.root / "entities/billing.md").read_text()
    assert (alice.root / "reference/bob-one.md").is_file()
    assert (bob.root / "reference/alice-one.md").is_file()
    # Every commit of both writers is in the shared history, once.
    log = subjects(alice)
    for s in ("new: reference/alice-one", "new: reference/bob-one", "edit: sam",
              "edit: billing", "edit: reference/runbook step 2",
              "edit: reference/runbook step 10", "edit: reference/runbook step 6"):
        assert log.count(s) == 1, (s, log)
    # A replayed agent commit is still the agent's.
    authors = git(alice.root, "log", "--format=%an|%s").splitlines()
    assert "cardmem-agent|edit: reference/runbook step 10" in authors
    # Both indexes were refreshed by sync: each finds the other's card.
    with Index(alice) as idx:
        assert "reference/bob-one" in idx.ids()
    with Index(bob) as idx:
        assert "reference/alice-one" in idx.ids()
    assert git(bob.root, "status", "--porcelain") == ""


def test_a_clash_in_a_card_keeps_both_sides_and_a_conflict_card_says_so(team):
    bare, alice, bob = team
    edit_line(alice, "reference/runbook", 4, "Step 4: alice's way.")
    edit_line(alice, "reference/runbook", 9, "Step 9: alice, clean.")
    assert sync(alice)[0] == 0
    bob.new("reference/bob-clean", body="This one replays cleanly.\n")
    edit_line(bob, "reference/runbook", 4, "Step 4: bob's way.")
    edit_line(bob, "reference/runbook", 1, "Step 1: bob, clean.")
    # Uncommitted work of every kind rides along untouched.
    (bob.root / "people/sam.md").write_text("Sam, edited, not committed.\n")
    (bob.root / "reference/scratch.md").write_text("untracked\n")
    git(bob.root, "add", "reference/scratch.md")
    (bob.root / "notes.txt").write_text("untracked too\n")

    code, out, err = sync(bob)

    assert code == 0, err
    assert head(bob.root) == git(bare, "rev-parse", "main").strip()
    runbook = (bob.root / "reference/runbook.md").read_text()
    # The card: the remote's line where both changed it, every clean change of both.
    for line in ("Step 4: alice's way.", "Step 9: alice, clean.", "Step 1: bob, clean."):
        assert line in runbook
    assert "bob's way" not in runbook and "<<<<<<<" not in runbook
    conflict = [c for c in bob.card_files() if c[0].startswith("conflicts/")]
    assert len(conflict) == 1, conflict
    cid, path = conflict[0]
    card = bob.read(cid)
    assert card.type == "conflict" and card.meta["conflict_of"] == "reference/runbook"
    assert "Step 4: bob's way." in card.body and "[[reference/runbook]]" in card.body
    assert "<<<<<<<" not in path.read_text()
    assert "conflict: reference/runbook was changed on both sides" in out
    assert cid in out
    # The replayed commit keeps its author and says, in a trailer, how it changed.
    message = git(bob.root, "log", "-1", "--format=%an|%B", "--", f"{cid}.md")
    assert message.startswith("cardmem|edit: reference/runbook step 4\n")  # bob's, as before
    assert f"Cardmem-Conflict: reference/runbook kept both sides; this commit's version in {cid}" \
        in message.splitlines()
    assert (bob.root / "reference/bob-clean.md").is_file()
    assert (bob.root / "people/sam.md").read_text() == "Sam, edited, not committed.\n"
    scratch = git(bob.root, "status", "--porcelain", "--", "reference/scratch.md")
    assert scratch == "A  reference/scratch.md\n"
    assert (bob.root / "notes.txt").read_text() == "untracked too\n"
    # Alice's next sync takes both; the two stores agree.
    assert sync(alice)[0] == 0
    assert snapshot(alice.root) == {k: v for k, v in snapshot(bob.root).items()
                                    if k not in ("people/sam.md", "reference/scratch.md",
                                                 "notes.txt")} | {
        "people/sam.md": (alice.root / "people/sam.md").read_bytes()}


def test_a_card_deleted_on_one_side_and_edited_on_the_other_stays_edited(team):
    from cardmem.store.moves import remove

    bare, alice, bob = team
    remove(alice, "people/sam")
    assert sync(alice)[0] == 0
    bob.update_text("people/sam", lambda t: t + "Prefers Slack.\n", "edit: sam")
    remove(bob, "entities/billing")
    alice.update_text("entities/billing", lambda t: t + "Owned by ops.\n", "edit: billing")

    code, out, err = sync(bob)
    assert code == 0, err
    assert "kept: people/sam, deleted on one side and changed on the other" in out
    code, out, err = sync(alice)
    assert code == 0, err
    assert "kept: entities/billing" in out
    assert sync(bob)[0] == 0

    for s in (alice, bob):
        assert "Prefers Slack." in (s.root / "people/sam.md").read_text()
        assert "Owned by ops." in (s.root / "entities/billing.md").read_text()
    assert head(alice.root) == head(bob.root)


def test_a_clash_in_a_file_that_is_no_card_aborts_and_leaves_the_store_as_before(team):
    bare, alice, bob = team
    toml = "cardmem.toml"

    def set_budget(store: Store, n: int) -> None:
        path = store.root / toml
        path.write_text(path.read_text().replace("budget_chars = 9000", f"budget_chars = {n}"))
        git(store.root, "commit", "-q", "-m", f"budget {n}", "--", toml)

    assert "budget_chars = 9000" in (alice.root / toml).read_text()
    set_budget(alice, 8000)
    assert sync(alice)[0] == 0
    remote_head = git(bare, "rev-parse", "main").strip()
    bob.new("reference/bob-clean", body="This one would replay cleanly.\n")
    edit_line(bob, "reference/runbook", 4, "Step 4: bob's way.")
    set_budget(bob, 7000)
    (bob.root / "people/sam.md").write_text("Sam, edited, not committed.\n")
    (bob.root / "reference/scratch.md").write_text("untracked\n")
    git(bob.root, "add", "reference/scratch.md")
    before = state(bob.root)
    index_before = git(bob.root, "ls-files", "--stage")

    code, out, err = sync(bob)

    assert code == 3 and out == ""
    assert err.startswith("cardmem: sync ") and err.count("\n") == 1
    assert "conflict in cardmem.toml:" in err
    assert "reference/" not in err  # only the files that really conflict
    assert state(bob.root) == before
    assert git(bob.root, "ls-files", "--stage") == index_before
    assert git(bare, "rev-parse", "main").strip() == remote_head
    assert len(git(bob.root, "worktree", "list").splitlines()) == 1
    assert not (bob.root / ".git/rebase-merge").exists()
    assert not (bob.root / ".cardmem/updates.jsonl").exists()


def test_uncommitted_edit_to_a_remote_changed_card_refuses_before_pushing(team):
    bare, alice, bob = team
    alice.update_text("people/sam", lambda t: t + "Alice's line.\n", "edit: sam")
    assert sync(alice)[0] == 0
    remote_head = git(bare, "rev-parse", "main").strip()
    bob.new("reference/bob-two", body="x\n")
    (bob.root / "people/sam.md").write_text("bob typing here\n")
    before = state(bob.root)

    code, _, err = sync(bob)

    assert code == 1 and "people/sam.md" in err
    assert state(bob.root) == before
    assert git(bare, "rev-parse", "main").strip() == remote_head  # nothing pushed


def test_first_sync_to_an_empty_remote_and_a_fast_forward(tmp_path: Path):
    from cardmem.store.store import init

    bare = tmp_path / "empty.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    alice = init(tmp_path / "alice")[0]
    alice.new("reference/first", body="first\n")
    code, out, err = cli("sync", str(bare), "--store", str(alice.root))
    assert code == 0 and "pushed 2" in out, err
    assert git(bare, "rev-parse", "main").strip() == head(alice.root)

    bob = clone(bare, tmp_path / "bob")
    alice.new("reference/second", body="second\n")
    assert cli("sync", str(bare), "--store", str(alice.root))[0] == 0
    code, out, err = sync(bob)  # only remote commits: a plain fast-forward
    assert code == 0 and "1 commit(s) from origin main" in out, err
    assert head(bob.root) == head(alice.root)
    code, out, _ = sync(bob)
    assert code == 0 and "already at" in out


def test_a_rejected_push_changes_nothing_here(team):
    bare, alice, bob = team
    alice.new("reference/alice-x", body="x\n")
    assert sync(alice)[0] == 0
    bob.new("reference/bob-x", body="y\n")
    hook = bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'pushes are closed today' >&2\nexit 1\n")
    hook.chmod(0o755)
    before = state(bob.root)

    code, _, err = sync(bob)

    assert code == 1 and "git push" in err and "pre-receive hook declined" in err, err
    assert state(bob.root) == before


def test_the_remote_moving_during_sync_is_fetched_and_replayed_again(team, tmp_path: Path):
    """A third writer's push lands between our fetch and our push: we replay once more."""
    bare, alice, bob = team
    carol = clone(bare, tmp_path / "carol")
    carol.new("reference/carol-card", body="carol\n")
    git(carol.root, "push", "-q", "origin", "main:refs/heads/carol-side")
    carol_head = head(carol.root)
    alice.new("reference/alice-y", body="a\n")
    assert sync(alice)[0] == 0
    git(carol.root, "fetch", "-q", "origin")
    git(carol.root, "rebase", "-q", "origin/main")
    git(carol.root, "push", "-q", "-f", "origin", "HEAD:refs/heads/carol-side")
    carol_head = head(carol.root)
    # The first push bob tries is refused, and main moves to carol's commit meanwhile.
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(f"""#!/bin/sh
if [ ! -e "$GIT_DIR/raced" ]; then
  touch "$GIT_DIR/raced"
  env -u GIT_QUARANTINE_PATH git update-ref refs/heads/main {carol_head}
  exit 1
fi
""")
    hook.chmod(0o755)
    bob.new("reference/bob-y", body="b\n")

    code, out, err = sync(bob)

    assert code == 0, err
    assert (bare / "raced").exists()
    assert head(bob.root) == git(bare, "rev-parse", "main").strip()
    for cid in ("alice-y", "carol-card", "bob-y"):
        assert (bob.root / f"reference/{cid}.md").is_file()
    assert git(bob.root, "merge-base", "--is-ancestor", carol_head, "HEAD") == ""


def test_rollback_undoes_a_sync(team):
    _, alice, bob = team
    alice.new("reference/alice-z", body="a\n")
    assert sync(alice)[0] == 0
    bob.new("reference/bob-z", body="b\n")
    before_head, before_files = head(bob.root), snapshot(bob.root)

    assert sync(bob)[0] == 0
    assert (bob.root / "reference/alice-z.md").is_file()
    code, _, err = cli("rollback", "--store", str(bob.root))

    assert code == 0, err
    assert head(bob.root) == before_head and snapshot(bob.root) == before_files
    # The next sync replays nothing twice: bob's card is upstream already.
    assert sync(bob)[0] == 0
    assert subjects(bob).count("new: reference/bob-z") == 1


def test_what_was_staged_stays_staged_across_a_replayed_sync(team):
    """git reset --keep keeps uncommitted files but unstages them: put back after."""
    _, alice, bob = team
    alice.new("reference/alice-s", body="a\n")
    assert sync(alice)[0] == 0
    bob.new("reference/bob-s", body="b\n")
    (bob.root / "people/sam.md").write_text("Sam, staged edit.\n")
    (bob.root / "reference/fresh.md").write_text("staged new card\n")
    git(bob.root, "rm", "-q", "entities/billing.md")
    git(bob.root, "add", "people/sam.md", "reference/fresh.md")
    (bob.root / "people/sam.md").write_text("Sam, staged edit, then typed on.\n")
    staged_before = git(bob.root, "diff", "--cached", "HEAD")
    status_before = git(bob.root, "status", "--porcelain")

    code, out, err = sync(bob)

    assert code == 0 and "replayed and pushed 1" in out, err
    assert git(bob.root, "diff", "--cached", "HEAD") == staged_before
    assert git(bob.root, "status", "--porcelain") == status_before
    assert (bob.root / "people/sam.md").read_text() == "Sam, staged edit, then typed on.\n"


HALF_MERGED = ("<<<<<<< HEAD\nStep 4: ours.\n=======\nStep 4: theirs.\n"
               ">>>>>>> 1a2b3c4 (edit)\n")


def test_a_card_committed_with_conflict_markers_is_not_shared(team):
    bare, alice, bob = team
    alice.new("reference/alice-m", body="a\n")
    assert sync(alice)[0] == 0
    remote_head = git(bare, "rev-parse", "main").strip()
    path = bob.root / "reference/runbook.md"
    path.write_text(path.read_text().replace("Step 4: do thing 4.\n", HALF_MERGED))
    git(bob.root, "commit", "-q", "-am", "merged by hand, not quite")
    before = state(bob.root)

    code, out, err = sync(bob)

    assert code == 3 and out == "" and err.count("\n") == 1, err
    assert "reference/runbook hold(s) git conflict markers" in err
    assert state(bob.root) == before
    assert git(bare, "rev-parse", "main").strip() == remote_head


def test_conflict_markers_shown_in_a_code_block_are_a_card_like_any_other(team):
    bare, alice, _ = team
    alice.new("reference/git-howto",
              body=f"What a conflict looks like:\n\n```\n{HALF_MERGED}```\n")
    code, out, err = sync(alice)
    assert code == 0 and "pushed 1" in out, err
    assert git(bare, "rev-parse", "main").strip() == head(alice.root)


def test_a_sync_that_pushed_but_could_not_move_is_finished_by_the_next(team):
    """A person saves a card the sync is about to change while it pushes: the store stays
    as it was, says the push happened, and the next sync moves it without replaying the
    pushed commits again (no second conflict card, no commit twice)."""
    bare, alice, bob = team
    alice.update_text("people/sam", lambda t: t + "Alice's line.\n", "edit: sam")
    edit_line(alice, "reference/runbook", 4, "Step 4: alice's way.")
    assert sync(alice)[0] == 0
    edit_line(bob, "reference/runbook", 4, "Step 4: bob's way.")
    hook = bare / "hooks" / "post-receive"
    hook.write_text(f"#!/bin/sh\necho 'Typed during the push.' >> '{bob.root}/people/sam.md'\n")
    hook.chmod(0o755)
    old = head(bob.root)

    code, out, err = sync(bob)

    assert code == 1 and out == "" and err.count("\n") == 1, err
    assert "pushed to origin main" in err and "could not move there" in err
    assert "`cardmem sync` again finishes the move" in err
    assert head(bob.root) == old
    pushed = git(bare, "rev-parse", "main").strip()
    last = git(bare, "log", "-1", "--format=%s", "main").strip()
    assert last == "edit: reference/runbook step 4"
    hook.unlink()
    bob.commit({"people/sam.md": AS_IS}, Message("watch: 1 card edited by hand", [], "watch"),
               agent=False)  # what the watcher does next

    code, out, err = sync(bob)

    assert code == 0 and "replayed and pushed 1" in out, err
    assert git(bare, "rev-parse", "main~1").strip() == pushed
    assert subjects(bob).count("edit: reference/runbook step 4") == 2  # alice's, bob's once
    conflicts = [c for c, _ in bob.card_files() if c.startswith("conflicts/")]
    assert len(conflicts) == 1 and conflicts[0].startswith("conflicts/reference/runbook-")
    # The typed line and Alice's were both added at the card's end: both kept.
    assert (bob.root / "people/sam.md").read_text().endswith(
        "Alice's line.\nTyped during the push.\n")
    assert sync(alice)[0] == 0 and head(alice.root) == head(bob.root)


def test_the_network_gone_mid_push_changes_nothing_here(team):
    """The remote vanishes while receiving (its pre-receive moves it away, then fails):
    one error line, the store exactly as it was, and the next sync, with the remote
    back, shares everything once."""
    bare, alice, bob = team
    alice.new("reference/alice-n", body="a\n")
    assert sync(alice)[0] == 0
    edit_line(bob, "reference/runbook", 3, "Step 3: bob, offline.")
    bob.new("reference/bob-n", body="b\n")
    hook = bare / "hooks" / "pre-receive"
    away = bare.with_name("away.git")
    hook.write_text(f"#!/bin/sh\nmv '{bare}' '{away}'\nexit 1\n")
    hook.chmod(0o755)
    before = state(bob.root)

    code, out, err = sync(bob)

    assert code == 1 and out == "" and err.count("\n") == 1, err
    assert err.startswith("cardmem: git ")
    assert state(bob.root) == before
    assert len(git(bob.root, "worktree", "list").splitlines()) == 1
    away.rename(bare)
    hook.unlink()
    code, out, err = sync(bob)
    assert code == 0 and "replayed and pushed 2" in out, err
    assert subjects(bob).count("new: reference/bob-n") == 1


def test_lines_both_sides_added_at_the_same_place_are_both_kept_without_a_conflict(team):
    """Two History lines, two notes appended at a card's end: no clash worth a person's
    time; the card holds both, the remote's first."""
    from cardmem.store.cards.card import append_history

    _, alice, bob = team
    for store, who in ((alice, "alice"), (bob, "bob")):
        store.update_text("people/sam", lambda t, w=who: append_history(
            t, f"2026-12-03 · {w} · Knowledge: {w} saw Sam fix the pager"), f"history: {who}")
        store.update_text("reference/runbook", lambda t, w=who: t + f"Note from {w}.\n",
                          f"note: {who}")
    assert sync(alice)[0] == 0

    code, out, err = sync(bob)

    assert code == 0 and "conflict" not in out, (out, err)
    assert not [c for c, _ in bob.card_files() if c.startswith("conflicts/")]
    sam = (bob.root / "people/sam.md").read_text()
    assert sam.index("alice saw Sam") < sam.index("bob saw Sam")
    assert sam.count("## History") == 1
    runbook = (bob.root / "reference/runbook.md").read_text()
    assert runbook.endswith("Note from alice.\nNote from bob.\n")
    assert bob.read("people/sam").title == "sam"


def test_a_card_renamed_on_one_side_takes_the_edits_made_on_the_other(team):
    from cardmem.store.cards.card import set_key
    from cardmem.store.moves import rename

    _, alice, bob = team
    rename(alice, "reference/runbook", "reference/deploy-runbook")
    assert sync(alice)[0] == 0
    edit_line(bob, "reference/runbook", 5, "Step 5: bob, on the old name.")
    bob.update_text("reference/runbook", lambda t: set_key(t, "description", "How we deploy"),
                    "describe: reference/runbook")

    code, out, err = sync(bob)

    assert code == 0 and "conflict" not in out and "kept" not in out, (out, err)
    assert not (bob.root / "reference/runbook.md").exists()
    card = bob.read("reference/deploy-runbook")
    assert "Step 5: bob, on the old name." in card.body and card.description == "How we deploy"
    assert sync(alice)[0] == 0 and head(alice.root) == head(bob.root)


def test_a_frontmatter_edit_and_a_body_edit_of_one_card_both_land(team):
    from cardmem.store.cards.card import set_key

    _, alice, bob = team
    alice.update_text("people/sam", lambda t: set_key(t, "aliases", ["@sam"]), "alias: sam")
    assert sync(alice)[0] == 0
    bob.update_text("people/sam", lambda t: t.replace("Sam, on call.", "Sam, on call this week."),
                    "edit: sam")

    code, out, err = sync(bob)

    assert code == 0 and "conflict" not in out, (out, err)
    card = bob.read("people/sam")
    assert card.aliases == ["@sam"] and "on call this week." in card.body
    assert not [c for c, _ in bob.card_files() if c.startswith("conflicts/")]


def test_sync_names_the_cards_whose_uncommitted_edits_it_did_not_share(team):
    _, alice, _ = team
    (alice.root / "people/sam.md").write_text("Sam, typed, not saved to git.\n")
    (alice.root / "notes.txt").write_text("not a card\n")

    code, out, err = sync(alice)

    assert code == 0, err
    assert out.splitlines() == [
        "sync: already at " + head(alice.root)[:10] + " (origin main)",
        "  not shared: uncommitted edits in people/sam (commit them, or keep `cardmem watch` "
        "running, then sync)"]
    code, out, _ = cli("sync", "--json", "--store", str(alice.root))
    assert json.loads(out)["unshared"] == ["people/sam"]


def test_a_sync_rolled_back_and_synced_again_settles_no_clash_twice(team):
    bare, alice, bob = team
    edit_line(alice, "reference/runbook", 4, "Step 4: alice's way.")
    assert sync(alice)[0] == 0
    edit_line(bob, "reference/runbook", 4, "Step 4: bob's way.")
    before = head(bob.root)
    assert sync(bob)[0] == 0
    remote = git(bare, "rev-parse", "main").strip()
    assert cli("rollback", "--store", str(bob.root))[0] == 0
    assert head(bob.root) == before
    bob.new("reference/bob-after", body="made after the rollback\n")

    code, out, err = sync(bob)

    assert code == 0 and "conflict" not in out, (out, err)
    assert git(bob.root, "rev-parse", "HEAD~1").strip() == remote  # only the new card
    assert len([c for c, _ in bob.card_files() if c.startswith("conflicts/")]) == 1


def test_rollback_refuses_to_drop_commits_made_after_the_sync(team):
    bare, alice, bob = team
    bob.new("reference/bob-r", body="b\n")
    assert sync(bob)[0] == 0
    assert sync(alice)[0] == 0
    alice.new("reference/alice-after", body="written after the sync\n")
    before = state(alice.root)

    code, out, err = cli("rollback", "--store", str(alice.root))

    assert code == 3 and out == "" and err.count("\n") == 1, err
    assert "1 commit(s) made since the last update" in err and "new: reference/alice-after" in err
    assert state(alice.root) == before
    code, _, err = cli("rollback", "--to", "HEAD~2", "--store", str(alice.root))
    assert code == 0, err  # named by the person: done, as asked


def test_doctor_names_the_conflict_cards_a_sync_left_until_they_are_removed(team):
    _, alice, bob = team
    edit_line(alice, "reference/runbook", 4, "Step 4: alice's way.")
    assert sync(alice)[0] == 0
    edit_line(bob, "reference/runbook", 4, "Step 4: bob's way.")
    assert sync(bob)[0] == 0
    [cid] = [c for c, _ in bob.card_files() if c.startswith("conflicts/")]

    code, out, _ = cli("doctor", "--store", str(bob.root), "--json")
    lines = [c["message"] for c in json.loads(out) if "conflict card" in c["message"]]
    assert lines == [f"sync: 1 conflict card to merge by hand: {cid} (each names its card; "
                     "merge what is missing, then `cardmem rm` it)"], out

    assert cli("rm", cid, "--store", str(bob.root))[0] == 0
    _, out, _ = cli("doctor", "--store", str(bob.root), "--json")
    assert "conflict card" not in out


def test_a_clash_in_a_crlf_card_keeps_its_line_endings_and_lone_carriage_returns(team):
    """git's output read as text turns CRLF into LF and a lone CR into a line break: the
    settled card would change on every line no one touched."""
    _, alice, bob = team
    path = "reference/runbook.md"

    def commit_bytes(store: Store, change, subject: str) -> None:
        f = store.root / path
        f.write_bytes(change(f.read_bytes()))
        git(store.root, "commit", "-q", "-am", subject)

    commit_bytes(alice, lambda b: b.replace(b"\n", b"\r\n").replace(
        b"Step 7: do thing 7.", b"Step 7: valve A\rvalve B."), "crlf")
    assert sync(alice)[0] == 0 and sync(bob)[0] == 0
    shared = (bob.root / path).read_bytes()
    commit_bytes(alice, lambda b: b.replace(b"Step 4: do thing 4.", b"Step 4: alice's way."),
                 "alice step 4")
    assert sync(alice)[0] == 0
    commit_bytes(bob, lambda b: b.replace(b"Step 4: do thing 4.", b"Step 4: bob's way.")
                 .replace(b"Step 1: do thing 1.", b"Step 1: bob, clean."), "bob steps 1, 4")

    code, out, err = sync(bob)

    assert code == 0 and "conflict" in out, (out, err)
    expected = shared.replace(b"Step 4: do thing 4.", b"Step 4: alice's way.").replace(
        b"Step 1: do thing 1.", b"Step 1: bob, clean.")
    assert (bob.root / path).read_bytes() == expected
    conflict = [p for c, p in bob.card_files() if c.startswith("conflicts/")]
    assert len(conflict) == 1 and b"Step 4: bob's way.\r\n" in conflict[0].read_bytes()
    assert b"valve A\rvalve B." in conflict[0].read_bytes()


def test_a_clash_in_the_frontmatter_after_lines_added_above_it_is_a_clash(team):
    """Whether a clash is in the body was told by counting the remote's frontmatter lines
    against the merged lines before it: lines the local side added higher up made a
    frontmatter clash look like two added body lines, and the card took both values of
    one key (the local's read), no conflict card."""
    _, alice, bob = team
    created = f"created: {date.today().isoformat()}\n---\n"  # the fixture's cards: today

    def before_end(line: str):
        return lambda t: t.replace(created, created[:-4] + line + "\n---\n", 1)

    alice.update_text("reference/runbook", before_end("status: done"), "alice: done")
    assert sync(alice)[0] == 0
    bob.update_text("reference/runbook", lambda t: before_end("status: open")(t.replace(
        "title: runbook\n", "title: runbook\naliases:\n- deploy\n- release\n", 1)),
        "bob: aliases, open")

    code, out, err = sync(bob)

    assert code == 0, (out, err)
    text = (bob.root / "reference/runbook.md").read_text()
    assert text.count("status:") == 1, text
    card = bob.read("reference/runbook")
    assert card.meta["status"] == "done" and card.aliases == ["deploy", "release"]
    conflict = [c for c, _ in bob.card_files() if c.startswith("conflicts/")]
    assert len(conflict) == 1 and "status: open" in bob.read(conflict[0]).body


@pytest.mark.parametrize("raw", [b"caf\xe9 ", b"nul\x00 "], ids=["latin1", "binary"])
def test_a_clash_in_a_card_that_is_not_utf8_text_stops_the_sync_and_changes_nothing(team, raw):
    _, alice, bob = team
    path = "reference/runbook.md"

    def commit_bytes(store: Store, old: bytes, new: bytes) -> None:
        f = store.root / path
        f.write_bytes(f.read_bytes().replace(old, new))
        git(store.root, "commit", "-q", "-am", "raw")

    commit_bytes(alice, b"Step 2: ", b"Step 2: " + raw)
    assert sync(alice)[0] == 0 and sync(bob)[0] == 0
    commit_bytes(alice, b"Step 4: do", b"Step 4: alice, do")
    assert sync(alice)[0] == 0
    commit_bytes(bob, b"Step 4: do", b"Step 4: bob, do")
    before = state(bob.root)

    code, out, err = sync(bob)

    assert code == 3 and "reference/runbook" in err and "Traceback" not in err, (out, err)
    assert state(bob.root) == before


def test_a_conflict_card_holds_a_version_with_its_own_fences_whole_in_one_code_block():
    """The version kept in a conflict card is one code block however its own code is fenced:
    a ```` block holding ``` lines, a tilde fence, a fence never closed."""
    from cardmem.store.cards.markdown import code_spans
    from cardmem.store.sharing.conflicts import conflict_text

    version = ("---\ntitle: Deploy\n---\nRun it:\n\n````sh\n```\nmake deploy\n```\n````\n\n"
               "~~~~~\nraw\n~~~~~\n\n```\nnever closed\n")
    text = conflict_text("reference/deploy", "0" * 40, "edit", "Bo", "1" * 40, version)
    start = text.index(version.rstrip("\n"))
    spans = code_spans(text)
    assert any(a <= start and start + len(version.rstrip("\n")) <= b for a, b in spans), spans
    assert len(spans) == 1, spans
