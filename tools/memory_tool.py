"""A backend for the Messages API's client-side memory tool (`memory_20250818`) on a store.

The model's `/memories` directory is the store's `memories/` folder (another folder can
be chosen with `folder=`): `/memories/coffee.md` is the card `memories/coffee`,
`/memories/projects/acme.md` the card `memories/projects/acme`. A folder of its own keeps
the model's notes apart from the cards people curate (feedback rules, the user card),
which this tool can therefore never overwrite, while they stay ordinary cards: indexed,
searchable, in `cardmem map`, and every change is an agent commit (`git log
--author=cardmem-agent`, `cardmem revert`). The files hold exactly the text the model
wrote; no frontmatter is added (but a proposal's two keys, below), so `view` shows the
model its own bytes.

Results and error texts follow the SDK's own local-filesystem memory tool, so a model
sees the same answers. What differs is what a store needs:
- memory files are cards, so they must be named `*.md`; listings show only cards and
  folders (hidden and non-card files are not shown);
- paths are confined to the folder: `..`, `.`, empty and hidden segments, backslashes,
  control characters and NUL, URL-encoded forms of those (`%2e%2e`, `%2f`), absolute
  paths outside `/memories`, and symbolic links anywhere on the path are refused;
- a file may hold at most `max_file_bytes` (100 KB by default) after any edit;
- text the model writes is passed through secret redaction first;
- a card of a protected type (a file whose frontmatter says `type: feedback` or `user`)
  is never made or changed live: a new one is saved as a proposal (`status: proposed`),
  an edit of a live one becomes a proposal card beside it (`<name>-proposed.md`), a
  rename leaves it and proposes the copy in its place, and a delete is refused
  (store/learning/proposals.py; a person decides with `cardmem review`).

`CardMemory` holds the logic and imports nothing heavy; `memory_tool(store)` wraps it in
the SDK's `BetaAbstractMemoryTool` (anthropic is imported only then), ready for
`client.beta.messages.tool_runner(tools=[...])` or for your own loop (`.call(input)`).
"""
from __future__ import annotations

import functools
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import unquote

from cardmem.store.git import runner as git
from cardmem.store.cards.card import CardProblem, decode
from cardmem.store.errors import BadId, CardmemError
from cardmem.store.cards.paths import is_card_name, normalize_id
from cardmem.store.git.writer import Message

if TYPE_CHECKING:
    from cardmem.store.store import Store

ROOT = "/memories"
FOLDER = "memories"
MAX_FILE_BYTES = 100_000
MAX_LISTED = 500  # entries in one folder view
SOURCE = "memory-tool"
LINE_NUMBER_WIDTH = 6  # as the SDK: numbers right-aligned to len("999999")


class MemoryToolError(Exception):
    """A refused command; the message is for the model to read (a tool_result error)."""


def _format_size(n: int) -> str:
    """Sizes as the SDK's local tool prints them: 0B, 512B, 4.0K -> 4K, 1.5K, 2M."""
    if n == 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    i = min((n.bit_length() - 1) // 10, len(units) - 1)
    size = n / (1024**i)
    return f"{int(size)}{units[i]}" if size == int(size) else f"{size:.1f}{units[i]}"


def _numbered(lines: list[str], start: int) -> str:
    return "\n".join(f"{str(i + start).rjust(LINE_NUMBER_WIDTH)}\t{ln}"
                     for i, ln in enumerate(lines))


def _split_lines_keeping_cr(content: str) -> list[str]:
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


_ENCODED = re.compile(r"%[0-9A-Fa-f]{2}")


class CardMemory:
    """The six memory-tool commands on one folder of a store's cards."""

    def __init__(self, store: Store, *, folder: str = FOLDER,
                 max_file_bytes: int = MAX_FILE_BYTES, session: str | None = None) -> None:
        self.store = store
        self.folder = normalize_id(folder)  # a safe, relative, non-hidden folder name
        self.max_file_bytes = max_file_bytes
        self.session = session

    # --- paths -------------------------------------------------------------------

    @property
    def base(self) -> Path:
        return self.store.root / self.folder

    def _segments(self, path: str) -> list[str]:
        """The segments under /memories of a model-given path, or MemoryToolError."""
        if not isinstance(path, str) or not path:
            raise MemoryToolError("Path must start with /memories, got: (empty)")
        shown = path if len(path) <= 120 else path[:117] + "..."
        if "\x00" in path or any(ord(c) < 32 or ord(c) == 127 for c in path):
            raise MemoryToolError(f"Path {shown!r} contains a NUL or control character")
        if path != ROOT and not path.startswith(ROOT + "/"):
            raise MemoryToolError(f"Path must start with /memories, got: {shown}")
        # Check the text as given and every URL-decoded form of it: a path that
        # decodes to `..` or `/` is refused rather than guessed at.
        forms, text = [path], path
        for _ in range(3):
            if not _ENCODED.search(text):
                break
            text = unquote(text)
            forms.append(text)
        if len(forms) > 1:
            decoded = forms[-1]
            if any(c in decoded for c in "\\\x00") or any(
                    seg in ("..", ".") for seg in decoded.split("/")) or decoded.count(
                    "/") != path.count("/"):
                raise MemoryToolError(f"Path {shown} would escape /memories directory "
                                      "(URL-encoded separators or dots are refused)")
        rel = path[len(ROOT):]
        rel = rel[1:] if rel.startswith("/") else rel
        rel = rel[:-1] if rel.endswith("/") else rel
        if not rel:
            return []
        parts = rel.split("/")
        if any(p in ("..", ".") for p in parts):  # the SDK's own words for this refusal
            raise MemoryToolError(f"Path {shown} would escape /memories directory")
        try:  # the rest is the store's id rules: empty, hidden, backslash, length
            normalize_id(f"{self.folder}/{rel}")
        except BadId as exc:
            raise MemoryToolError(f"Path {shown}: {exc.why}") from None
        return parts

    def _resolve(self, path: str) -> tuple[list[str], Path]:
        """(segments, absolute path) inside the folder; no symlink on the way."""
        parts = self._segments(path)
        real_root = os.path.realpath(self.store.root)
        # The folder itself must be a real folder inside the store.
        here = self.base
        if os.path.islink(here) or os.path.commonpath(
                [real_root, os.path.realpath(here)]) != real_root:
            raise MemoryToolError(f"The {ROOT} folder ({self.folder}/) is a symbolic link; "
                                  "refusing to follow it")
        for p in parts:
            here = here / p
            if os.path.islink(here):
                raise MemoryToolError(f"Path {path} goes through a symbolic link; "
                                      "the memory tool does not follow links")
        return parts, here

    def _file(self, path: str) -> tuple[str, str, Path]:
        """(card id, store-relative path, absolute path) of a memory file path."""
        parts, full = self._resolve(path)
        if not parts:
            raise MemoryToolError(f"The path {path} is a directory, not a file")
        # In the memory tool's words first; normalize_id below applies the store's rule.
        if not parts[-1].endswith(".md") or parts[-1] == ".md":
            raise MemoryToolError(f"Memory files are Markdown cards: name it with .md "
                                  f"(e.g. {ROOT}/notes.md), got: {path}")
        rel = "/".join([self.folder, *parts])
        cid = normalize_id(rel)  # the store's own id check, as a second guard
        self._check_parents(parts, path)  # said in memory paths, before the store says it
        self.store.path(cid)  # and its symlink / .md check
        return cid, rel, full

    # --- reading -----------------------------------------------------------------

    def _read(self, path: str, full: Path) -> str:
        try:
            st = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            raise MemoryToolError(
                f"The path {path} does not exist. Please provide a valid path.") from None
        if not stat.S_ISREG(st.st_mode):
            raise MemoryToolError(f"The path {path} is not a file.")
        try:
            return decode(full.read_bytes())
        except CardProblem as exc:
            raise MemoryToolError(f"File {path} cannot be read: {exc}") from None

    def view(self, path: str, view_range: list[int] | None = None) -> str:
        parts, full = self._resolve(path)
        try:
            st = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            raise MemoryToolError(
                f"The path {path} does not exist. Please provide a valid path.") from None
        if stat.S_ISDIR(st.st_mode):
            return self._listing(path, full, st)
        self._file(path)
        content = self._read(path, full)
        lines = content.split("\n")
        start = 1
        if view_range and len(view_range) == 2:
            first = max(1, view_range[0]) - 1
            last = len(lines) if view_range[1] == -1 else view_range[1]
            lines, start = lines[first:last], first + 1
        return f"Here's the content of {path} with line numbers:\n" + _numbered(lines, start)

    def _listing(self, path: str, full: Path, st: os.stat_result) -> str:
        """Cards and folders up to 2 levels deep, as the SDK lists files."""
        items: list[tuple[str, str]] = []
        more = 0

        def walk(folder: Path, rel: str, depth: int) -> None:
            nonlocal more
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                return
            for e in entries:
                if e.name.startswith(".") or e.is_symlink():
                    continue
                sub = f"{rel}/{e.name}" if rel else e.name
                is_dir = e.is_dir(follow_symlinks=False)
                if not is_dir and not (is_card_name(e.name) and e.is_file(follow_symlinks=False)):
                    continue  # not a card
                if len(items) >= MAX_LISTED:
                    more += 1
                    continue
                size = e.stat(follow_symlinks=False).st_size
                items.append((_format_size(size), f"{sub}/" if is_dir else sub))
                if is_dir and depth < 2:
                    walk(Path(e.path), sub, depth + 1)

        walk(full, "", 1)
        header = (f"Here're the files and directories up to 2 levels deep in {path}, "
                  "excluding hidden items:")
        lines = [f"{_format_size(st.st_size)}\t{path}"]
        lines += [f"{size}\t{path}/{sub}" for size, sub in items]
        if more:
            lines.append(f"... and {more} more not shown; view a subfolder to see them")
        return f"{header}\n" + "\n".join(lines)

    # --- writing -----------------------------------------------------------------

    def _check_size(self, path: str, text: str) -> bytes:
        data = text.encode("utf-8")
        if len(data) > self.max_file_bytes:
            raise MemoryToolError(f"File {path} would be too large ({len(data)} bytes; the "
                                  f"limit is {self.max_file_bytes}); keep memories short")
        return data

    def _redact(self, text: str) -> tuple[str, int]:
        from cardmem.tools.redact import redact_with_counts

        out, counts = redact_with_counts(text)
        return out, sum(counts.values())

    @staticmethod
    def _said(result: str, redacted: int) -> str:
        return result if not redacted else (
            f"{result}\n(Note: {redacted} secret(s) in the text were replaced by "
            "[REDACTED:...] before saving.)")

    def _commit(self, changes: Callable[[], dict[str, bytes | None]], subject: str,
                lines: list[str]) -> None:
        self.store.commit(changes, Message(subject, lines, SOURCE, self.session), agent=True)

    def _tracked(self, rels: list[str]) -> set[str]:
        if not rels:
            return set()
        out = git.run(self.store.root, "ls-files", "-z", "--", *rels)
        return {p for p in out.split("\0") if p}

    def _check_parents(self, parts: list[str], path: str) -> None:
        for i in range(1, len(parts)):  # a parent that is a file cannot hold it
            if os.path.lexists(p := self.base.joinpath(*parts[:i])) and not os.path.isdir(p):
                raise MemoryToolError(f"The path {path} is inside a file "
                                      f"({ROOT}/{'/'.join(parts[:i])}), not a folder")

    def create(self, path: str, file_text: str) -> str:
        cid, rel, full = self._file(path)
        self._check_parents(self._segments(path), path)
        text, redacted = self._redact(file_text)
        data = self._check_size(path, text)

        from cardmem.store.learning.proposals import guard

        write = guard(self.store, cid, None, data.decode("utf-8"), self.proposed_by)

        def changes() -> dict[str, bytes | None]:
            if os.path.lexists(full):
                raise MemoryToolError(f"File {path} already exists")
            return {rel: write.text.encode("utf-8")}

        first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")[:80]
        self._commit(changes, f"memory: {self._verb(write, 'create')} {cid}",
                     [f"{cid}  {first}".rstrip()])
        return self._said(f"File created successfully at: {path}", redacted) + \
            self._proposal_note(path, write)

    def _edit(self, path: str, edit: Callable[[str], str], subject: str, line: str) -> Any:
        """Apply edit to a file; a protected card's edit becomes a proposal (returned)."""
        from cardmem.store.learning.proposals import guard

        cid, rel, full = self._file(path)
        done: list[Any] = []
        message = Message(f"memory: {subject} {cid}", [f"{cid}  {line}"], SOURCE, self.session)

        def changes() -> dict[str, bytes | None]:
            if os.path.isdir(full):
                raise MemoryToolError(f"The path {path} is not a file.")
            old = self._read(path, full)
            new = edit(old)
            self._check_size(path, new)
            write = guard(self.store, cid, old, new, self.proposed_by)
            done[:] = [write]
            if write.kind == "change":
                message.subject = f"memory: propose a change to {cid}"
                message.lines = [f"{write.id}  proposes a change to {cid} ({line})"]
            return {self.store.rel(write.id): write.text.encode("utf-8")}

        self.store.commit(changes, message, agent=True)
        return done[0]

    @property
    def proposed_by(self) -> str:
        return SOURCE + (f" session {self.session}" if self.session else "")

    @staticmethod
    def _verb(write: Any, verb: str) -> str:
        return "propose" if write.kind != "plain" else verb

    def _model_path(self, cid: str) -> str:
        return f"{ROOT}/{cid[len(self.folder) + 1:]}.md"

    def _proposal_note(self, path: str, write: Any) -> str:
        """What the model is told when its write became a proposal (none otherwise)."""
        if write.kind == "plain":
            return ""
        if write.kind == "change":
            return (f"\n(Note: {path} is a protected card (a rule or the user card) and was "
                    f"not changed: your edit was saved as a proposal at "
                    f"{self._model_path(write.id)}, which a person reviews with `cardmem "
                    "review`.)")
        return (f"\n(Note: {path} is a protected card: it is saved as a proposal "
                "(status: proposed) and is not in force until a person accepts it with "
                "`cardmem review`.)")

    def str_replace(self, path: str, old_str: str, new_str: str) -> str:
        new_str, redacted = self._redact(new_str)
        snippet: list[str] = []

        def edit(content: str) -> str:
            count = content.count(old_str)
            if count == 0:
                raise MemoryToolError(f"No replacement was performed, old_str `{old_str}` did "
                                      f"not appear verbatim in {path}.")
            if count > 1:
                at, lines_at = 0, []
                while (pos := content.find(old_str, at)) != -1:
                    lines_at.append(content[:pos].count("\n") + 1)
                    at = pos + 1
                raise MemoryToolError(
                    f"No replacement was performed. Multiple occurrences of old_str "
                    f"`{old_str}` in lines: {', '.join(map(str, lines_at))}. "
                    "Please ensure it is unique")
            changed = content[:content.find(old_str)].count("\n")
            new = content.replace(old_str, new_str)
            new_lines = new.split("\n")
            lo, hi = max(0, changed - 2), min(len(new_lines), changed + 3)
            snippet[:] = [f"{str(n).rjust(LINE_NUMBER_WIDTH)}\t{new_lines[n - 1]}"
                          for n in range(lo + 1, hi + 1)]
            return new

        write = self._edit(path, edit, "edit", "replaced one passage")
        if write.kind == "change":
            return self._said(f"No change was made to {path}." + self._proposal_note(
                path, write), redacted)
        return self._said("The memory file has been edited. Here is the snippet showing the "
                          "change (with line numbers):\n" + "\n".join(snippet), redacted) + \
            self._proposal_note(path, write)

    def insert(self, path: str, insert_line: int, insert_text: str) -> str:
        insert_text, redacted = self._redact(insert_text)

        def edit(content: str) -> str:
            lines = _split_lines_keeping_cr(content)
            if insert_line < 0 or insert_line > len(lines):
                raise MemoryToolError(f"Invalid `insert_line` parameter: {insert_line}. It "
                                      f"should be within the range [0, {len(lines)}].")
            lines.insert(insert_line, insert_text.rstrip("\n"))
            new = "\n".join(lines)
            return new if new.endswith("\n") else new + "\n"

        write = self._edit(path, edit, "insert into", f"inserted text at line {insert_line}")
        if write.kind == "change":
            return self._said(f"No change was made to {path}." + self._proposal_note(
                path, write), redacted)
        return self._said(f"The file {path} has been edited.", redacted) + \
            self._proposal_note(path, write)

    def _files_under(self, folder: Path) -> list[str]:
        """Store-relative paths of every file below a folder (links not followed)."""
        out = []
        for dirpath, dirnames, filenames in os.walk(folder):
            for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
                out.append(Path(dirpath, name).relative_to(self.store.root).as_posix())
        return sorted(out)

    def _prune(self, folder: Path) -> None:
        """Remove a folder that a delete or rename emptied, with its empty subfolders.

        Like the SDK's tool (rmtree, rename), a folder goes as a whole; the parents of
        a deleted file are left as they are.
        """
        if folder == self.base or not folder.is_dir() or folder.is_symlink():
            return
        for dirpath, _dirs, _files in os.walk(folder, topdown=False):
            p = Path(dirpath)
            if not any(p.iterdir()):
                p.rmdir()

    def _drop_untracked(self, rels: list[str]) -> list[str]:
        """Unlink files git does not track (no commit can record them); return the rest."""
        tracked = self._tracked(rels)
        for rel in rels:
            if rel not in tracked:
                (self.store.root / rel).unlink(missing_ok=True)
        return [r for r in rels if r in tracked]

    def delete(self, path: str) -> str:
        parts, full = self._resolve(path)
        if not parts:
            raise MemoryToolError("Cannot delete the /memories directory itself")
        if not os.path.lexists(full):
            raise MemoryToolError(f"The path {path} does not exist")
        is_dir = os.path.isdir(full)
        if not is_dir:
            cid, _rel, _ = self._file(path)

        def changes() -> dict[str, bytes | None]:
            if not os.path.lexists(full):
                raise MemoryToolError(f"The path {path} does not exist")
            rels = self._files_under(full) if is_dir else [full.relative_to(
                self.store.root).as_posix()]
            self._refuse_rules(rels, "delete")
            return {r: None for r in self._drop_untracked(rels)}

        what = "/".join([self.folder, *parts]) + ("/" if is_dir else "")
        self._commit(changes, f"memory: delete {what if is_dir else cid}",
                     [f"{what}  deleted by the model"])
        if is_dir:
            self._prune(full)
        return f"Successfully deleted {path}"

    def rename(self, old_path: str, new_path: str) -> str:
        old_parts, old_full = self._resolve(old_path)
        new_parts, new_full = self._resolve(new_path)
        if not old_parts:
            raise MemoryToolError("Cannot rename the /memories directory itself")
        if not new_parts:
            raise MemoryToolError(f"The destination {new_path} already exists")
        if not os.path.lexists(old_full):
            raise MemoryToolError(f"The path {old_path} does not exist")
        is_dir = os.path.isdir(old_full)
        if not is_dir:
            self._file(old_path)
            self._file(new_path)
        elif new_parts[:len(old_parts)] == old_parts:
            raise MemoryToolError(f"Cannot move {old_path} into itself ({new_path})")
        if os.path.lexists(new_full):
            raise MemoryToolError(f"The destination {new_path} already exists")
        self._check_parents(new_parts, new_path)
        root = self.store.root
        old_rel = old_full.relative_to(root).as_posix()
        new_rel = new_full.relative_to(root).as_posix()

        proposed: list[str] = []
        message = Message(f"memory: rename {old_rel} -> {new_rel}",
                          [f"{old_rel}  moved to {new_rel}"], SOURCE, self.session)

        def changes() -> dict[str, bytes | None]:
            if os.path.lexists(new_full):
                raise MemoryToolError(f"The destination {new_path} already exists")
            if not os.path.lexists(old_full):
                raise MemoryToolError(f"The path {old_path} does not exist")
            rels = self._files_under(old_full) if is_dir else [old_rel]
            if not is_dir and (text := self._rule_text(old_rel)) is not None:
                # A rule stays where it is; its copy at the new path proposes to replace it.
                from cardmem.store.cards import card as cardlib
                from cardmem.store.learning.proposals import mark_proposed

                proposed[:] = [new_rel[:-3]]
                message.subject = f"memory: propose {new_rel[:-3]} in place of {old_rel[:-3]}"
                message.lines = [f"{new_rel[:-3]}  proposed to supersede {old_rel[:-3]}"]
                copy = cardlib.set_key(mark_proposed(text, self.proposed_by), "supersedes",
                                       old_rel[:-3])
                return {new_rel: self._check_size(new_path, copy)}
            if is_dir:
                self._refuse_rules(rels, "move")
            out: dict[str, bytes | None] = {}
            for r in rels:
                moved = new_rel + r[len(old_rel):]
                p = root / r
                if not p.is_symlink():
                    out[moved] = p.read_bytes()
            tracked = self._tracked(rels)
            for r in rels:
                if r in tracked:
                    out[r] = None
                else:
                    (root / r).unlink(missing_ok=True)
            return out

        self.store.commit(changes, message, agent=True)
        if proposed:
            return (f"{old_path} is a protected card (a rule or the user card) and was not "
                    f"moved: {new_path} was saved as a proposal to replace it, which a person "
                    "reviews with `cardmem review`.")
        if is_dir:
            self._prune(old_full)
            new_full.mkdir(parents=True, exist_ok=True)  # an empty folder moves too
        return f"Successfully renamed {old_path} to {new_path}"

    def _rule_text(self, rel: str) -> str | None:
        from cardmem.store.learning.proposals import live_rule_text

        return live_rule_text(self.store, rel[:-3]) if rel.endswith(".md") else None

    def _refuse_rules(self, rels: list[str], verb: str) -> None:
        rules = [r for r in rels if self._rule_text(r) is not None]
        if rules:
            shown = ", ".join(f"{ROOT}/{r[len(self.folder) + 1:]}" for r in rules[:3])
            raise MemoryToolError(f"Cannot {verb} {shown}: protected cards (rules or the user "
                                  "card) are changed by a person, not by the memory tool")

    def clear_all_memory(self) -> str:
        """Delete every file of the folder in one commit."""
        if self.base.is_dir() and not self.base.is_symlink():
            self._commit(lambda: {r: None for r in self._drop_untracked(
                self._files_under(self.base))}, f"memory: clear {self.folder}/",
                [f"{self.folder}/  cleared by the application"])
            for entry in list(self.base.iterdir()):
                self._prune(entry)
        return "All memory cleared"

    # --- the SDK's command shape -------------------------------------------------

    def execute(self, command: Any) -> str:
        """Run one command: an SDK command model or the tool_use input dict."""
        get = command.get if isinstance(command, dict) else (
            lambda k, d=None: getattr(command, k, d))
        name = get("command")
        try:
            if name == "view":
                return self.view(get("path"), get("view_range"))
            if name == "create":
                return self.create(get("path"), get("file_text") or "")
            if name == "str_replace":
                return self.str_replace(get("path"), get("old_str"), get("new_str") or "")
            if name == "insert":
                return self.insert(get("path"), int(get("insert_line")), get("insert_text") or "")
            if name == "delete":
                return self.delete(get("path"))
            if name == "rename":
                return self.rename(get("old_path"), get("new_path"))
        except CardmemError as exc:  # store busy, a bad id, a stale git lock
            raise MemoryToolError(str(exc)) from None
        except (TypeError, ValueError) as exc:
            raise MemoryToolError(f"Invalid input for {name}: {exc}") from None
        except OSError as exc:  # e.g. a path whose parent is a file
            where = get("path") or get("new_path") or ROOT
            raise MemoryToolError(f"{name} {where} failed: {exc.strerror or exc}") from None
        raise MemoryToolError(f"Unknown command: {name}")

    def prepare(self) -> None:
        """Make the folder, so the first `view /memories` shows an empty directory."""
        self._resolve(ROOT)
        self.base.mkdir(parents=True, exist_ok=True)


@functools.cache
def _tool_class() -> type:
    """The SDK subclass, built on first use so that importing this module stays cheap."""
    from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError

    class CardmemMemoryTool(BetaAbstractMemoryTool):
        """`memory_20250818` on a cardmem store: pass it in `tools=[...]`."""

        def __init__(self, backend: CardMemory, **kw: Any) -> None:
            super().__init__(**kw)
            self.backend = backend

        def execute(self, command: Any) -> str:
            try:
                return self.backend.execute(command)
            except MemoryToolError as exc:
                raise ToolError(str(exc)) from None

        # The backend dispatches on the command itself; the SDK's six abstract methods
        # all lead there.
        view = create = str_replace = insert = delete = rename = execute

        def clear_all_memory(self) -> str:
            return self.backend.clear_all_memory()

    return CardmemMemoryTool


def memory_tool(store: Store, *, folder: str = FOLDER, max_file_bytes: int = MAX_FILE_BYTES,
                session: str | None = None, **kw: Any) -> Any:
    """An SDK memory tool (BetaAbstractMemoryTool) whose /memories is `folder/` of store.

    Extra keywords (e.g. cache_control) go to the SDK class.
    """
    backend = CardMemory(store, folder=folder, max_file_bytes=max_file_bytes, session=session)
    backend.prepare()
    return _tool_class()(backend, **kw)
