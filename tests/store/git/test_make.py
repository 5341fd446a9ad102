"""store/git/make.py: a folder made a store all or nothing. Whatever step fails (any git
call, a file that cannot be written), the folder is left byte for byte as it was: a
person's notes, their .gitignore, a repository of theirs and what it had staged (but for
objects in .git/objects no commit or index holds, which git's gc removes)."""
from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cardmem.store.errors import CardmemError
from cardmem.store.git import make as maker
from cardmem.store.git import runner

NAMES = st.sampled_from(["a.md", "b.md", "notes.txt", ".env", ".gitignore", "cardmem.toml",
                         "sub/c.md", "sub/deep/d.md", "img.png"])
TREES = st.dictionaries(NAMES, st.binary(max_size=40), max_size=6)
_folders = itertools.count()


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every path under folder, .git included, with its bytes (None for a folder)."""
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): None if p.is_dir() else p.read_bytes()
            for p in sorted(folder.rglob("*")) if "/.git/objects/" not in f"/{p}/"}


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), "-c", "user.name=T", "-c",
                           "user.email=t@example.com", *args], check=True, text=True,
                          capture_output=True).stdout


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=TREES, repo=st.sampled_from(["none", "empty", "committed", "staged"]),
       fail_at=st.integers(min_value=1, max_value=8), missing=st.booleans())
def test_a_failure_at_any_step_leaves_the_folder_as_it_was(tmp_path, monkeypatch, tree, repo,
                                                           fail_at, missing):
    root = tmp_path / f"f{next(_folders)}" / "store"
    if not missing or repo != "none":
        root.mkdir(parents=True)
        for name, data in tree.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(data)
        if repo != "none":
            git(root, "init", "-q")
        if repo == "committed" and tree:
            git(root, "add", "-f", "--", *tree)
            git(root, "commit", "-q", "-m", "theirs")
        if repo == "staged" and tree:
            git(root, "add", "-f", "--", *tree)
    before = snapshot(root.parent)
    status = git(root, "status", "--porcelain", "--ignored") if repo != "none" else None
    calls = itertools.count(1)
    real = runner.run

    def failing(*args, **kw):
        if next(calls) == fail_at:
            raise CardmemError("git commit", "refused by a hook")
        return real(*args, **kw)

    monkeypatch.setattr(runner, "run", failing)
    try:
        made = maker.make(root)
    except CardmemError as exc:
        assert snapshot(root.parent) == before
        if status is not None:
            assert git(root, "status", "--porcelain", "--ignored") == status
        assert exc.why.endswith("the folder is left as it was (fix that, then run "
                                "`cardmem init` again)")
        return
    finally:
        monkeypatch.setattr(runner, "run", real)
    # no step failed (fail_at past the last git call): a store, its files committed
    tracked = git(root, "ls-files").split()
    assert {".gitignore", "cardmem.toml"} <= set(tracked) and made.created == (repo == "none")
    if made.created and not missing:  # an adopted folder: its notes committed
        assert {p for p in tree if p.endswith(".md")} <= set(made.adopted) <= set(tracked)


def test_an_unwritable_file_is_taken_back_too(tmp_path, monkeypatch):
    """cardmem.toml cannot be written (a full disk): the .gitignore init wrote and the
    repository it began go again."""
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# A\n")
    real = Path.write_text

    def full(self, *args, **kw):
        if self.name == "cardmem.toml":
            raise OSError(28, "No space left on device", str(self))
        return real(self, *args, **kw)

    monkeypatch.setattr(Path, "write_text", full)
    with pytest.raises(CardmemError, match="cannot write .*cardmem.toml: No space left on "
                                           "device; the folder is left as it was"):
        maker.make(root)
    assert snapshot(root) == {"a.md": b"# A\n"}


def test_a_gitignore_that_is_not_utf8_is_kept_byte_for_byte(tmp_path):
    """A person's .gitignore in Latin-1 (found by the property test above: init stopped
    with a UnicodeDecodeError traceback)."""
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# A\n")
    (root / ".gitignore").write_bytes(b"caf\xe9.tmp\n")
    made = maker.make(root)
    assert made.created and made.adopted == [".gitignore", "a.md", "cardmem.toml"]
    assert (root / ".gitignore").read_bytes().endswith(b"\n\ncaf\xe9.tmp\n")



def init_refused_over_a_linked_gitignore(tmp_path: Path, monkeypatch, shared: bytes | None
                                         ) -> tuple[Path, Path, dict[str, bytes | None]]:
    """A committed repository whose .gitignore links to dotfiles/gitignore (holding shared,
    or not there when None), and init run over it with its commit refused: (root, the
    linked file, the folder before)."""
    target = tmp_path / "dotfiles" / "gitignore"
    target.parent.mkdir()
    if shared is not None:
        target.write_bytes(shared)
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# A\n")
    (root / ".gitignore").symlink_to(target)
    git(root, "init", "-q")
    git(root, "add", "--", "a.md", ".gitignore")
    git(root, "commit", "-q", "-m", "theirs")
    before = snapshot(root) if shared is not None else {}  # (a dangling link reads as none)
    real = runner.run

    def refuse_commit(root_, *args, **kw):
        if args and args[0] == "commit":
            raise CardmemError("git commit", "refused by a hook")
        return real(root_, *args, **kw)

    monkeypatch.setattr(runner, "run", refuse_commit)
    with pytest.raises(CardmemError, match="the folder is left as it was"):
        maker.make(root)
    return root, target, before


def test_a_symlinked_gitignore_stays_a_link_to_bytes_as_they_were(tmp_path, monkeypatch):
    """A repository whose .gitignore links to a shared file (dotfiles): init writes through
    the link; the undo wrote its copy over the link itself, which left the shared file
    changed and the link gone."""
    root, shared, before = init_refused_over_a_linked_gitignore(tmp_path, monkeypatch,
                                                                b"*.log\n")
    assert (root / ".gitignore").is_symlink() and shared.read_bytes() == b"*.log\n"
    assert snapshot(root) == before


def test_a_gitignore_linking_to_a_file_not_made_yet_stays_a_link(tmp_path, monkeypatch):
    """A .gitignore that links to a file not there yet: init writes through the link (so
    makes that file); the undo removed the person's link and left the file it made."""
    root, shared, _ = init_refused_over_a_linked_gitignore(tmp_path, monkeypatch, None)
    assert (root / ".gitignore").is_symlink() and not shared.exists()
