"""Freshness from git (store/index/freshness.py): a refresh that stat-checks only what git says
may have changed must leave the index exactly as a full walk would."""
from __future__ import annotations

import json
import os
import random
import subprocess
import time
from pathlib import Path

import pytest

from cardmem.store.index import freshness as anchor
from conftest import GIT_ID
from cardmem.store.index.db import Index
from cardmem.store.search.query import search_index


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          text=True, env={**os.environ, **GIT_ID}).stdout


def write(root: Path, cid: str, body: str) -> Path:
    path = root / f"{cid}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\ntitle: {cid.rsplit('/', 1)[-1]}\n---\n{body}\n")
    return path


def walked(root: Path, tmp: Path) -> list[tuple]:
    """The rows a fresh index gets from a full walk, without stat columns."""
    db = tmp / f"walk-{random.random()}.sqlite"
    with Index(root=root, db_path=db) as fresh:
        fresh.refresh(walk=True)
        return [r[:8] + r[10:] for r in fresh.rows()]


def rows(idx: Index) -> list[tuple]:
    return [r[:8] + r[10:] for r in idx.rows()]


def held(idx: Index) -> anchor.Anchor | None:
    return anchor.Anchor.load(idx.conn)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text(".cardmem/\nprivate/\n")
    for i in range(12):
        write(root, f"notes/n{i}", f"note number {i}")
    write(root, "people/ada", "ada lovelace")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "start")
    age(root)
    return root


def age(root: Path, by: float = 3600) -> None:
    """Files and folders written an hour ago: neither a suspect nor a racy folder for
    having been written in the last seconds."""
    for p in [root, *root.rglob("*")]:
        if ".git" not in p.relative_to(root).parts and not p.is_symlink():
            os.utime(p, (p.stat().st_atime - by, p.stat().st_mtime - by))


def test_a_walk_anchors_and_the_next_refresh_uses_git(repo: Path) -> None:
    with Index(root=repo) as idx:
        idx.refresh()
        a = held(idx)
        assert a is not None and a.head == git(repo, "rev-parse", "HEAD").strip()
        assert a.suspects == set()  # all committed and clean
        (repo / "notes" / "n3.md").write_text("---\ntitle: n3\n---\nquokka time\n")
        counts = idx.refresh()
        assert counts["updated"] == 1 and counts["unchanged"] == 12
        assert [r["id"] for r in search_index(idx, "quokka").results] == ["notes/n3"]
        after = held(idx)
        assert after.at == a.at  # no walk: the anchor only gained a suspect
        assert after.suspects == {"notes/n3"}


def test_commits_checkouts_and_reverts_are_followed(repo: Path, tmp_path: Path) -> None:
    with Index(root=repo) as idx:
        idx.refresh()
        first = git(repo, "rev-parse", "HEAD").strip()
        write(repo, "notes/n1", "committed change wombat")
        git(repo, "commit", "-qam", "change")
        idx.refresh()
        assert held(idx).head != first and "notes/n1" in held(idx).suspects
        assert rows(idx) == walked(repo, tmp_path)
        git(repo, "checkout", "-q", first)  # back: n1 is clean again, with the old text
        idx.refresh()
        assert rows(idx) == walked(repo, tmp_path)
        assert search_index(idx, "wombat").results == []


def test_a_card_reindexed_by_the_watcher_then_reverted_is_still_checked(repo: Path,
                                                                        tmp_path: Path) -> None:
    """refresh_ids (the watcher) changes rows outside a walk; its ids become suspects, so
    a revert to the committed text (clean for git) is still seen."""
    with Index(root=repo) as idx:
        idx.refresh()
        write(repo, "notes/n5", "an edit the watcher saw")
        idx.refresh_ids(["notes/n5"])
        assert "notes/n5" in held(idx).suspects
        git(repo, "checkout", "--", "notes/n5.md")
        idx.refresh()
        assert rows(idx) == walked(repo, tmp_path)


def test_untracked_ignored_symlinked_and_hidden_from_git_cards(repo: Path, tmp_path: Path) -> None:
    write(repo, "private/secret", "ignored folder card")
    target = write(repo, "notes/target", "linked text")
    git(repo, "add", "notes/target.md")
    git(repo, "commit", "-qm", "target")
    (repo / "notes" / "link.md").symlink_to(target)
    git(repo, "add", "notes/link.md")
    git(repo, "commit", "-qm", "link")
    git(repo, "update-index", "--assume-unchanged", "notes/n7.md")
    for p in (repo / "private" / "secret.md", target):
        os.utime(p, (p.stat().st_atime - 3600, p.stat().st_mtime - 3600))
    with Index(root=repo) as idx:
        idx.refresh()
        a = held(idx)
        assert {"private/secret", "notes/link", "notes/n7"} <= a.suspects
        write(repo, "private/secret", "ignored and changed")
        write(repo, "notes/target", "target changed through the link")  # dirty: listed
        git(repo, "commit", "-qam", "target")  # clean again; the link never changed
        write(repo, "notes/n7", "git was told not to look")
        write(repo, "fresh/untracked", "a new untracked card")
        (repo / "notes" / "n2.md").unlink()
        idx.refresh()
        assert rows(idx) == walked(repo, tmp_path)
        assert held(idx).at == a.at  # all of it without a walk


def test_walks_when_git_cannot_say(repo: Path, tmp_path: Path, monkeypatch) -> None:
    with Index(root=repo) as idx:
        idx.refresh()
        a = held(idx)
        # too many suspects: the next refresh walks and anchors again
        monkeypatch.setattr(anchor, "SUSPECTS_MIN", 2)
        for i in range(4):
            write(repo, f"notes/n{i}", f"edit {i}")
        idx.refresh()
        assert rows(idx) == walked(repo, tmp_path)
        monkeypatch.setattr(anchor, "SUSPECTS_MIN", 256)
        assert held(idx) is None or held(idx).at > a.at
        # an old anchor: walk
        idx.refresh()
        b = held(idx)
        idx.conn.execute("UPDATE meta SET value = ? WHERE key = 'anchor'",
                         (json.dumps({"head": b.head, "suspects": [], "at": b.at - 3600,
                                      "dirs": b.dirs}),))
        write(repo, "notes/n9", "touched under an old anchor")
        idx.refresh()
        assert held(idx).at > b.at - 3600 and rows(idx) == walked(repo, tmp_path)
        # the anchor's commit gone (a rewritten history): walk
        idx.conn.execute("UPDATE meta SET value = ? WHERE key = 'anchor'",
                         (json.dumps({"head": "0" * 40, "suspects": [], "at": b.at,
                                      "dirs": b.dirs}),))
        idx.refresh()
        assert held(idx).head == git(repo, "rev-parse", "HEAD").strip()


def test_a_folder_without_git_always_walks(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write(root, "a", "alpha")
    with Index(root=root, db_path=tmp_path / "plain.sqlite") as idx:
        idx.refresh()
        assert held(idx) is None
        write(root, "a", "beta")
        idx.refresh()
        assert [r["id"] for r in search_index(idx, "beta").results] == ["a"]


OPS = ("edit", "edit", "new", "delete", "commit", "checkout-old", "checkout-main",
       "reset-hard", "stash", "rename", "touch", "watcher", "untracked-dir", "rmdir",
       "age", "age")


@pytest.mark.seed(20261130)
def test_random_histories_match_a_full_walk(repo: Path, tmp_path: Path, rng: random.Random) -> None:
    """Many seeded sequences of edits and git operations: after each, the git-anchored
    refresh leaves the same rows as a full walk of the tree."""
    first = git(repo, "rev-parse", "HEAD").strip()
    with Index(root=repo) as idx:
        idx.refresh()
        anchored = 0
        for step in range(120):
            cards = sorted(p.relative_to(repo).as_posix()[:-3] for p in repo.rglob("*.md")
                           if ".git" not in p.parts and ".cardmem" not in p.parts)
            op = rng.choice(OPS)
            pick = rng.choice(cards) if cards else None
            if op == "edit" and pick:
                write(repo, pick, f"step {step} text {rng.random()}")
            elif op == "new":
                write(repo, f"notes/new{step}", f"new at step {step}")
            elif op == "delete" and pick:
                (repo / f"{pick}.md").unlink()
            elif op == "commit":
                git(repo, "add", "-A")
                git(repo, "commit", "-qm", f"step {step}", "--allow-empty")
            elif op == "checkout-old":
                git(repo, "checkout", "-q", "-f", first)
            elif op == "checkout-main":
                git(repo, "checkout", "-q", "-f", "main")
            elif op == "reset-hard":
                git(repo, "reset", "-q", "--hard")
            elif op == "stash":
                git(repo, "stash", "-q", "-u")
            elif op == "rename" and pick:
                os.replace(repo / f"{pick}.md", repo / f"{pick}-moved.md")
            elif op == "touch" and pick:
                os.utime(repo / f"{pick}.md")
            elif op == "watcher" and pick:
                write(repo, pick, f"watcher saw step {step}")
                idx.refresh_ids([pick])
            elif op == "untracked-dir":
                write(repo, f"drafts/d{step}/card", f"draft {step}")
            elif op == "rmdir" and pick and "/" in pick:
                import shutil

                shutil.rmtree(repo / pick.rsplit("/", 1)[0])
            elif op == "age":  # folders old enough to trust their mtimes again
                age(repo, 3600 + step)
            before = held(idx)
            idx.refresh()
            after = held(idx)
            anchored += before is not None and after is not None and after.at == before.at
            assert rows(idx) == walked(repo, tmp_path), f"step {step}: {op}"
        assert anchored > 60  # most refreshes took the git path


def test_an_edit_racing_the_anchoring_walk_stays_suspect(repo: Path, tmp_path: Path) -> None:
    """A card written after the status was read but before the walk re-read it, then put
    back to its committed text, must not be taken for what the index holds."""
    with Index(root=repo) as idx:
        idx.refresh()
        status = anchor.Status(str(repo), full=True)
        status.paths()  # git has looked: n4 is clean
        write(repo, "notes/n4", "written while the walk ran")
        idx.refresh(walk=True, status=status)
        assert "notes/n4" in held(idx).suspects
        git(repo, "checkout", "--", "notes/n4.md")
        idx.refresh()
        assert rows(idx) == walked(repo, tmp_path)


def test_without_a_git_program_the_refresh_walks(repo: Path, tmp_path: Path,
                                                 monkeypatch) -> None:
    with Index(root=repo) as idx:
        idx.refresh()
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))
        write(repo, "notes/n8", "edited where git cannot run")
        idx.refresh()
        assert [r["id"] for r in search_index(idx, "cannot run").results] == ["notes/n8"]
        assert held(idx) is None  # nothing to anchor to without git


def test_suspects_another_process_added_meanwhile_are_kept(repo: Path, tmp_path: Path) -> None:
    """A check or walk that read the anchor before the watcher (another connection) added
    a suspect must not write that suspect away."""
    with Index(root=repo) as idx, Index(root=repo) as watcher:
        idx.refresh()
        base = held(idx)
        write(repo, "notes/n1", "seen by the watcher")
        watcher.refresh_ids(["notes/n1"])
        moved = anchor.Anchor(base.head, base.suspects | {"notes/n2"}, base.at, base.dirs)
        anchor.settle(idx.conn, base, moved, [], 13)
        assert {"notes/n1", "notes/n2"} <= held(idx).suspects
        fresh = anchor.Anchor(base.head, set(), base.at + 1, base.dirs)
        base = held(idx)
        write(repo, "notes/n3", "seen by the watcher during a walk")
        watcher.refresh_ids(["notes/n3"])
        anchor.settle(idx.conn, base, fresh, [], 13, since_ns=time.time_ns() + 10**10)
        assert "notes/n3" in held(idx).suspects


def test_a_folder_changed_twice_in_one_clock_tick_is_listed_again(repo: Path,
                                                                  tmp_path: Path) -> None:
    """Folder mtimes are only as fine as the kernel's clock (or the filesystem's): a
    folder whose mtime is recent when recorded is listed on every check."""
    with Index(root=repo) as idx:
        idx.refresh()
        write(repo, "notes/x", "first new card")
        tick = (repo / "notes").stat().st_mtime_ns
        idx.refresh()
        assert held(idx).dirs["notes"] == anchor.RACY
        write(repo, "notes/y", "second new card, same tick")
        os.utime(repo / "notes", ns=(tick, tick))  # as a coarse clock would leave it
        idx.refresh()
        assert rows(idx) == walked(repo, tmp_path)
