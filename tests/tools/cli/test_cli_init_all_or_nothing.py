"""`cardmem init` is all or nothing: when git refuses a step (the user's git config signs
commits with no key, a hook of theirs fails), the folder is left exactly as it was, the
error is one line saying so, and a second `init` after the fix does the whole work."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from clikit import run


def tree(folder: Path) -> dict[str, bytes | None]:
    """Every path under folder (.git included) with its bytes (None for a folder)."""
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): None if p.is_dir() else p.read_bytes()
            for p in sorted(folder.rglob("*"))}


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], check=True, text=True,
                          capture_output=True).stdout


@pytest.fixture(params=["signing", "hook"])
def refusing(request, tmp_path: Path) -> dict[str, str]:
    """A user's git config under which every commit fails: signing with a gpg that fails,
    or a prepare-commit-msg hook (which --no-verify does not skip) that refuses."""
    cfg = tmp_path / "gitconfig"
    if request.param == "signing":
        cfg.write_text("[commit]\n\tgpgsign = true\n[gpg]\n\tprogram = false\n")
    else:
        hooks = tmp_path / "hooks"
        hooks.mkdir()
        hook = hooks / "prepare-commit-msg"
        hook.write_text("#!/bin/sh\necho 'the message must name a ticket' >&2\nexit 1\n")
        hook.chmod(0o755)
        cfg.write_text(f"[core]\n\thooksPath = {hooks}\n")
    return {"GIT_CONFIG_GLOBAL": str(cfg)}


def test_a_refused_first_commit_leaves_a_folder_of_notes_as_it_was(tmp_path, refusing):
    notes = tmp_path / "notes"
    (notes / "sub").mkdir(parents=True)
    (notes / "a.md").write_text("# A\n")
    (notes / "sub" / "b.md").write_text("# B\n")
    (notes / ".gitignore").write_text("*.tmp\n")
    before = tree(notes)
    r = run("init", str(notes), env=refusing)
    assert tree(notes) == before  # no .git, .cardmem, cardmem.toml; .gitignore as it was
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith(f"cardmem: init {notes}: git commit: ")
    assert r.stderr.endswith("; the folder is left as it was (fix that, then run "
                             "`cardmem init` again)\n") and r.stderr.count("\n") == 1
    r = run("init", str(notes))  # the cause fixed: the second init does the whole work
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"initialized {notes}\nadopted 2 notes:")
    assert set(git(notes, "ls-files").split()) == {".gitignore", "a.md", "cardmem.toml",
                                                   "sub/b.md"}
    assert git(notes, "status", "--porcelain") == ""


def test_a_refused_commit_in_a_repository_leaves_it_as_it_was(tmp_path, refusing):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / ".gitignore").write_text("*.log")  # no newline at the end: init would add one
    git(repo, "add", ".gitignore")
    git(repo, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m", "1")
    head, before = git(repo, "rev-parse", "HEAD"), tree(repo)
    r = run("init", str(repo), env=refusing)
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "status", "--porcelain") == ""  # nothing staged, nothing new
    assert {p: b for p, b in tree(repo).items() if not p.startswith(".git/")} == \
        {p: b for p, b in before.items() if not p.startswith(".git/")}
    assert r.returncode == 1 and r.stderr.startswith(f"cardmem: init {repo}: git commit: ")


def test_a_refused_commit_in_a_new_folder_leaves_no_folder(tmp_path, refusing):
    r = run("init", str(tmp_path / "a" / "b" / "store"), env=refusing)
    assert r.returncode == 1 and "the folder is left as it was" in r.stderr
    assert not (tmp_path / "a").exists()
