"""A folder made a store's repository (`cardmem init`), all or nothing.

    made = make(root)     # Made(created, adopted, left_out)

git init, a .gitignore, cardmem.toml, the first commit. A folder that is not yet a
repository is adopted: its notes (`*.md`) go into the first commit and a .gitignore keeps
everything else out. On an existing repository only what is missing is added, and nothing
else is committed.

All or nothing: when a step fails (a commit the user's git config refuses: signing with no
key, a hook that fails; a file that cannot be written), what this run made is taken back
(the repository it began, the files it wrote, what it staged) and the one error line says
the folder is as it was (but for objects no commit holds, which git's gc removes). Else a
second `init` would find a repository and adopt nothing.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from . import runner as git
from .. import config
from ..errors import CardmemError
from .head_file import is_repo, repos_inside
from .writer import Message, atomic_write, check_writable, write_lock

GITIGNORE = ".cardmem/\n"

# The .gitignore of a folder `init` adopts: its notes (*.md) and the store's own files go
# into git, everything else stays out (a .env, node_modules/, photos), also from `sync`.
ADOPT_GITIGNORE = """\
# Written by `cardmem init`: this store keeps notes (*.md) and its settings in git, and
# leaves everything else in the folder out (`git add -f PATH` keeps one anyway).
*
!*/
!*.md
.*
node_modules/
!/.gitignore
!/cardmem.toml
.cardmem/
"""


@dataclass
class Made:
    created: bool  # the repository is new
    adopted: list[str] = field(default_factory=list)  # paths committed from the folder
    left_out: list[str] = field(default_factory=list)  # what its .gitignore keeps out


def _literal(path: str) -> str:
    """A path as a .gitignore pattern matching it alone (its special characters escaped)."""
    return "".join("\\" + c if c in "*?[]!#\\ " else c for c in path)


def _write(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8", "surrogateescape"))


def make(r: Path) -> Made:
    """Make the folder r (a resolved path) a store; see the module's docstring."""
    if r.exists() and not r.is_dir():
        raise CardmemError(f"store {r}", "exists and is not a folder")
    undo = _Undo(r)
    try:
        r.mkdir(parents=True, exist_ok=True)
        return _make(r)
    except BaseException as exc:
        left = undo.run()
        if not isinstance(exc, (CardmemError, OSError)):
            raise
        why = (f"{exc.what}: {exc.why}" if isinstance(exc, CardmemError) else
               f"cannot write {exc.filename or r}: {exc.strerror}")
        said = ("; the folder is left as it was (fix that, then run `cardmem init` again)"
                if not left else f"; could not take back {', '.join(left)}")
        raise CardmemError(f"init {r}", why + said,
                           getattr(exc, "exit_code", None)) from None


def _make(r: Path) -> Made:
    created = not is_repo(r)
    adopting = created and any(r.iterdir())
    if created:
        git.run(r, "init", "-q", "-b", "main")
    gi = r / ".gitignore"
    # A person's bytes, kept as they are, UTF-8 or not.
    gi_text = gi.read_bytes().decode("utf-8", "surrogateescape") if gi.exists() else ""
    if adopting and ADOPT_GITIGNORE not in gi_text:
        # A clone among the notes is its own repository's: `git add -A` would commit it as
        # a gitlink, or fail on one with no commit yet. Named after ours (`!*/` would take it
        # back in); a line of the user's own (`!keep.pdf`) still has the last word.
        inside = "".join(f"/{_literal(p)}\n" for p in repos_inside(r))
        _write(gi, ADOPT_GITIGNORE + inside + ("\n" + gi_text if gi_text else ""))
    elif ".cardmem/" not in gi_text.split():
        sep = "" if not gi_text or gi_text.endswith("\n") else "\n"
        _write(gi, gi_text + sep + GITIGNORE)
    if not (r / config.FILE).exists():
        (r / config.FILE).write_text(config.default_text())
    adopt = ["."] if created else [".gitignore", config.FILE]
    made = Made(created)
    with write_lock(r):
        check_writable(r)  # under the lock, where another writer's git lock is no live one
        git.run(r, "add", "-A", "--", *adopt)
        adopted = [p for p in git.run(r, "diff", "--cached", "--name-only", "-z", "--",
                                      *adopt).split("\0") if p]
        if n := len(adopted):
            msg = Message("init: cardmem store", [f"{n} files"] if n > 2 else [], source="init")
            git.run(r, "commit", "-q", "--no-verify", "--only", "-F", "-", "--", *adopt,
                    input=msg.text(), env=git.identity_env(r))
        if adopting:
            made.adopted = adopted
            out = git.run(r, "ls-files", "-z", "--others", "--ignored", "--exclude-standard",
                          "--directory")
            made.left_out = sorted(p for p in out.split("\0") if p and p != ".cardmem/")
    return made


class _Undo:
    """What the folder was before init began, and how to give it back: the files init
    writes (and, in a repository of the person's, what its git index had staged and the
    commit message git keeps), byte for byte."""

    def __init__(self, r: Path) -> None:
        self.r = r
        top = r  # the highest folder this run will make, if any
        while not top.parent.exists() and top.parent != top:
            top = top.parent
        self.made_folder = None if r.exists() else top
        self.repo = is_repo(r) if r.exists() else False
        names = [".gitignore", config.FILE]
        # A worktree's .git is a file naming its git folder: there `git reset` unstages
        self.dot_git = self.repo and (r / ".git").is_dir()
        if self.dot_git:
            names += [".git/index", ".git/COMMIT_EDITMSG"]
        self.files = {name: self._bytes(r / name) for name in names}
        self.state = (r / ".cardmem").exists()

    @staticmethod
    def _bytes(path: Path) -> bytes | None:
        try:
            return path.read_bytes()
        except OSError:
            return None

    def run(self) -> list[str]:
        """Take back what this run made; what could not be, by name."""
        r, left = self.r, []
        if self.made_folder is not None:
            shutil.rmtree(self.made_folder, ignore_errors=True)
            return [str(self.made_folder)] if self.made_folder.exists() else []
        if not self.repo:
            shutil.rmtree(r / ".git", ignore_errors=True)
        elif not self.dot_git:
            git.run(r, "reset", "-q", "--", ".gitignore", config.FILE, check=False)
        for name, was in self.files.items():
            try:
                if was is None:  # a link there was one before init (it makes none)
                    (r / name).resolve().unlink(missing_ok=True)
                elif self._bytes(r / name) != was:
                    # Through a symlink (a shared .gitignore), as init wrote: not over it.
                    atomic_write((r / name).resolve(), was)
            except (OSError, RuntimeError):  # RuntimeError: resolve() met a symlink loop
                left.append(name)
        if not self.state:
            shutil.rmtree(r / ".cardmem", ignore_errors=True)
        return left + [name for name, was in ((".git", self.repo), (".cardmem", self.state))
                       if not was and (r / name).exists()]
