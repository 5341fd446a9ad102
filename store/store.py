"""A store: a git work tree of cards. Reading, listing and the plain writes on cards."""
from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import date
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from .cards import card as cardlib
from . import config
from .git import runner as git
from .cards import paths
from .cards import scan as cardscan
from .cards.scan import Problem
from .errors import CardmemError, NotFound
from .root import StoreRoot
from .git.head_file import dot_git, require_store
from .git.make import make
from .git.writer import Message, check_writable, commit_changes, write_lock

if TYPE_CHECKING:
    from .progress import Progress

# The derived-state step and the index are imported where used: a command that only reads
# (show, map, log) loads neither.

class Store(StoreRoot):
    """StoreRoot (where it is, how it is opened, its state folder and card paths) with
    the card parser, the writer and git. Store.open(root) refuses what is no store."""

    # store/progress.py's callback for waits inside a write (the write lock held by
    # another); the CLI sets its drawer here, library callers leave it quiet.
    progress: "Progress | None" = None

    @cached_property
    def config(self) -> dict[str, dict[str, Any]]:
        return config.load(self.root)  # no settings cache: a write reads the file itself

    # --- reading -------------------------------------------------------------------

    def card_files(self, skipped: list[Problem] | None = None) -> Iterator[tuple[str, Path]]:
        """(id, path) of every card file, in a stable order (cards/scan.py)."""
        return cardscan.card_files(self.root, skipped)

    def exists(self, card_id: str) -> bool:
        return self.path(card_id).is_file()

    def read(self, card_id: str) -> cardlib.Card:
        """One card, whole. Raises BadId, NotFound, or CardmemError for a broken card."""
        path = self.path(card_id)
        cid = paths.normalize_id(card_id)
        try:
            return cardlib.load(path, cid)
        except (FileNotFoundError, NotADirectoryError):
            raise NotFound(f"card {cid}", "no such card") from None
        except cardlib.CardProblem as exc:
            raise CardmemError(str(path), str(exc)) from None
        except OSError as exc:
            raise CardmemError(str(path), f"unreadable: {exc.strerror or exc}") from None

    def read_raw(self, card_id: str) -> tuple[str, str | None]:
        """A card file's text whether or not it parses, and the parse problem (or None):
        what `show` and `edit` need to let a person see and fix a broken card."""
        try:
            return self.read(card_id).text, None
        except NotFound:
            raise
        except CardmemError as exc:
            path = self.path(card_id)
            try:
                return path.read_bytes().decode(errors="replace"), exc.why
            except OSError:
                raise exc from None

    def log(self, card_id: str | None = None, limit: int | None = None) -> list[git.Commit]:
        return git.log(self.root, None if card_id is None else [self.rel(card_id)], limit=limit)

    # --- writing -------------------------------------------------------------------

    def commit(self, changes, message: Message, *, agent: bool,
               wait_s: float | None = None) -> str | None:
        """Commit changes (a dict, or a function computing one under the write lock): the
        one door every writer goes through (store/git/writer.py writes; store/derived.py
        then brings the rules' tables up to date, under the same lock)."""
        return commit_changes(self.root, changes, message, agent=agent,
                              lock_timeout_s=self.lock_timeout(wait_s),
                              after=self.after_commit, progress=self.progress)

    def lock_timeout(self, wait_s: float | None = None) -> float:
        """How long a writer waits for the write lock: `[store] lock_timeout_s`, or less
        for a writer with somewhere to keep its work when the store is busy (the watcher
        retries, a learner spools): wait_s caps it, never raises it."""
        timeout = float(self.config["store"]["lock_timeout_s"])
        return timeout if wait_s is None else min(timeout, float(wait_s))

    def after_commit(self, rels: list[str]) -> None:
        """Derived state after a commit of these paths (call holding the write lock)."""
        from . import derived

        derived.after_commit(self, rels)

    def after_move(self) -> None:
        """Derived state after the branch moved (update, rollback, sync); the index's
        failure raises, the move standing (call holding the write lock)."""
        from . import derived

        derived.after_move(self)

    def rel(self, card_id: str) -> str:
        return self.path(card_id).relative_to(self.root).as_posix()

    def new(self, card_id: str, *, title: str | None = None, card_type: str | None = None,
            project: str | None = None, body: str = "", description: str | None = None,
            meta: dict[str, Any] | None = None, source: str = "cli", agent: bool = False,
            session: str | None = None) -> str:
        """Create a card; refuse if one exists at that id. Returns the id."""
        cid = paths.normalize_id(card_id)
        for what, value in (("title", title), ("body", body), ("description", description),
                            ("project", project)):
            utf8(value or "", what)
        path = self.path(cid)
        fields: dict[str, Any] = {"title": title or cid.rsplit("/", 1)[-1].replace("-", " ")}
        card_type = card_type or paths.type_from_id(cid)
        if card_type:
            fields["type"] = card_type
        if description:
            fields["description"] = description
        if project:
            fields["project"] = paths.project_key(project)
        fields["created"] = date.today()  # a date object dumps unquoted
        fields.update(meta or {})
        if agent and card_type in self.config["extract"]["protected_types"] \
                and fields.get("status") != "proposed":
            # The one door agents share: a live rule or user card is a person's to make.
            raise CardmemError(f"card {cid}", f"an agent may not make a live {card_type} card; "
                                              "it must be a proposal (store/learning/proposals.py)")
        text = cardlib.render(fields, body)

        def create() -> dict[str, bytes | None]:
            if path.exists():
                raise CardmemError(f"card {cid}", "already exists; use `cardmem edit` or `remember`")
            return {self.rel(cid): utf8(text, f"card {cid}")}

        self.commit(create, Message(f"new: {cid}", [f"{cid}  {fields['title']}"], source, session),
                    agent=agent)
        return cid

    def update_text(self, card_id: str, edit, subject: str, *, source: str = "cli",
                    agent: bool = False, session: str | None = None,
                    lines: list[str] | None = None) -> str | None:
        """Apply edit(old_text) -> new_text to one card under the write lock, and commit it."""
        cid = paths.normalize_id(card_id)
        rel = self.rel(cid)

        def compute() -> dict[str, bytes | None]:
            return {rel: utf8(edit(self.read(cid).text), f"card {cid}")}

        return self.commit(compute, Message(subject, lines or [], source, session), agent=agent)

    def titled(self, title: str) -> list[tuple[str, str | None]]:
        """(id, type) of every card whose title or an alias is this title, compared without
        case or repeated spaces, through the index (kept fresh first): a lookup across
        the store, so `remember` appends to the card a person means wherever it lives."""
        from .index.db import Index

        key = _title_key(title)
        with Index.open(self) as idx:
            idx.refresh()
            rows = idx.heads()
        found = [(cid, kind, status in ("superseded", "archived"))
                 for cid, kind, t, aliases, status in rows
                 if key == _title_key(t) or key in map(_title_key, aliases.splitlines())]
        # A card merged into another (maintain) keeps its title, which the kept card now
        # has as an alias: a card not retired is the one meant.
        if not all(retired for *_, retired in found):
            found = [f for f in found if not f[2]]
        return sorted((cid, kind) for cid, kind, _ in found)

    def remember(self, title: str, body: str, *, card_type: str | None = None,
                 project: str | None = None, source: str = "cli", agent: bool = False,
                 session: str | None = None,
                 meta: dict[str, list[str]] | None = None) -> tuple[str, bool]:
        """Append a dated section to the card of this title (or alias), anywhere in the
        store, or create one. Returns (id, created). meta: tags and aliases the card gets
        (added to an existing card's own, the rest of its frontmatter untouched).

        Several cards of that title: refused, naming them. An agent never appends to a
        protected card (callers make a proposal instead: store/learning/proposals.py); a
        person may.
        """
        utf8(title, "title"), utf8(body, "body")
        protected = set(self.config["extract"]["protected_types"])
        if card_type in (None, "reference"):  # a card in a project's folder is a project card
            card_type = "project" if project else "reference"
        for attempt in range(5):
            found = self.titled(title)
            if len(found) > 1:
                raise CardmemError(f"title {title!r}", f"{len(found)} cards have this title or "
                                   f"alias ({', '.join(c for c, _ in found[:5])}); add to one "
                                   "with `cardmem edit ID`, or choose another title")
            if found:
                cid, kind = found[0]
                if agent and (kind in protected or card_type in protected):
                    raise CardmemError(f"card {cid}", f"is a {kind or card_type} card an agent "
                                       "may not change; it must be a proposal")
                today = date.today().isoformat()

                def append(text: str) -> str:
                    text = cardlib.append_section(text, today, body)
                    for key, more in (meta or {}).items():
                        had = cardlib.parse(text, cid).meta.get(key) or []
                        had = had if isinstance(had, list) else [had]
                        if new := [m for m in more if m not in had]:
                            text = cardlib.set_key(text, key, [*had, *new])
                    return text

                self.update_text(cid, append,
                                 f"remember: {cid}", source=source, agent=agent,
                                 session=session, lines=[f"{cid}  appended a {today} section"])
                return cid, False
            cid = base = paths.id_for(title, card_type, project)
            if self.exists(base):
                # A broken card there: refused (read names the problem). One of this title,
                # made by another writer since our lookup: look again, and append to it.
                if _title_key(self.read(base).title) == _title_key(title):
                    continue
            n = 2
            while self.exists(cid):  # that id holds a card of another title
                cid, n = f"{base}-{n}", n + 1
            try:
                self.new(cid, title=title, card_type=card_type, project=project, body=body,
                         source=source, agent=agent, session=session, meta=meta)
                return cid, True
            except CardmemError as exc:
                # Another writer made this card between our look and our lock: decide again.
                if not exc.why.startswith("already exists") or attempt == 4:
                    raise
        raise AssertionError("unreachable")

    def revert(self, commit: str) -> str:
        """Undo one commit with a new commit (git revert)."""
        require_store(self.root)
        sha = git.run(self.root, "rev-parse", "--verify", "-q", f"{commit}^{{commit}}",
                      check=False).strip()
        if not sha:
            raise CardmemError(f"commit {commit}", "no such commit in this store")
        with write_lock(self.root, self.lock_timeout()):
            check_writable(self.root)
            try:
                git.run(self.root, "revert", "--no-edit", sha,
                        env=git.identity_env(self.root))
            except CardmemError as exc:
                # A conflict leaves git mid-revert with markers in the cards: undo all that.
                if os.path.exists(dot_git(self.root, "REVERT_HEAD")):
                    git.run(self.root, "revert", "--abort", check=False)
                raise CardmemError(f"commit {commit}",
                                   f"cannot be reverted cleanly ({exc.why}); nothing changed") from None
            # git's own message, with the trailer every cardmem commit carries
            said = git.run(self.root, "log", "-1", "--format=%B").strip().split("\n", 1)
            msg = Message(said[0], [said[1].strip()] if len(said) > 1 else [], source="revert")
            git.run(self.root, "commit", "-q", "--amend", "--no-verify", "-F", "-",
                    input=msg.text(), env=git.identity_env(self.root))
            self.after_commit([p for p in git.run(
                self.root, "diff-tree", "--no-commit-id", "--name-only", "--no-renames", "-r",
                "-z", "HEAD").split("\0") if p])
        return git.head(self.root) or ""


def _title_key(title: str) -> str:
    return " ".join(title.split()).casefold()


def utf8(text: str, what: str) -> bytes:
    """A card's bytes; a refusal for text with undecodable bytes (a shell argument that was
    not UTF-8 arrives as lone surrogates, which no card file can hold) or a NUL byte (a
    card with one is binary, and git refuses it in a commit message)."""
    if "\x00" in text:
        raise CardmemError(what, "contains a NUL byte")
    try:
        return text.encode()
    except UnicodeEncodeError:
        raise CardmemError(what, "the text has bytes that are not UTF-8") from None


@dataclass
class Initialized:
    """What `init` did: the store, whether it made the repository, and, for a folder it
    adopted, the paths it committed and the ones its .gitignore keeps out."""

    store: Store
    created: bool
    adopted: list[str]
    left_out: list[str]


def init(root: Path | str) -> tuple[Store, bool]:
    """Make a store at root; (store, created). See init_store."""
    done = init_store(root)
    return done.store, done.created


def init_store(root: Path | str) -> Initialized:
    """Make a store at root (git init, .gitignore, cardmem.toml, first commit), all or
    nothing: store/git/make.py."""
    if not str(root).strip():
        raise CardmemError("store", "the path is empty; name a folder")
    store = Store(root)
    made = make(store.root)
    return Initialized(store, made.created, made.adopted, made.left_out)
