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
- paths are confined to the folder (tools/agents/memory_folder.py): `..`, `.`, empty and
  hidden segments, backslashes, control characters and NUL, URL-encoded forms of those
  (`%2e%2e`, `%2f`), absolute paths outside `/memories`, and symbolic links anywhere on
  the path are refused;
- a file may hold at most `max_file_bytes` (100 KB by default) after any edit;
- text the model writes is passed through secret redaction first;
- a card of a protected type (a file whose frontmatter says `type: feedback` or `user`)
  is never made or changed live: a new one is saved as a proposal (`status: proposed`),
  an edit of a live one becomes a proposal card beside it (`<name>-proposed.md`), a
  rename leaves it and proposes the copy in its place, and a delete is refused
  (store/learning/proposals.py; a person decides with `cardmem review`).

`CardMemory` holds the logic and never imports anthropic; `memory_tool(store)` wraps it in
the SDK's `BetaAbstractMemoryTool` (anthropic is imported only then), ready for
`client.beta.messages.tool_runner(tools=[...])` or for your own loop (`.call(input)`).
"""
from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any, Callable

from cardmem.store.errors import CardmemError
from cardmem.store.git.writer import Message

from .memory_folder import FOLDER, LINE_NUMBER_WIDTH, ROOT, MemoryFolder, MemoryToolError
from cardmem.tools.secrets.redact import screen
from cardmem.store.learning.proposals import guard, live_rule_text, mark_proposed
from cardmem.store.cards import card as cardlib

if TYPE_CHECKING:
    from cardmem.store.store import Store

MAX_FILE_BYTES = 100_000
SOURCE = "memory-tool"


def _split_lines_keeping_cr(content: str) -> list[str]:
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


class CardMemory(MemoryFolder):
    """The six memory-tool commands on one folder of a store's cards."""

    def __init__(self, store: Store, *, folder: str = FOLDER,
                 max_file_bytes: int = MAX_FILE_BYTES, session: str | None = None) -> None:
        super().__init__(store, folder=folder)
        self.max_file_bytes = max_file_bytes
        self.session = session

    # --- writing -----------------------------------------------------------------

    def _check_size(self, path: str, text: str) -> bytes:
        data = text.encode("utf-8")
        if len(data) > self.max_file_bytes:
            raise MemoryToolError(f"File {path} would be too large ({len(data)} bytes; the "
                                  f"limit is {self.max_file_bytes}); keep memories short")
        return data

    def _redact(self, text: str) -> tuple[str, int]:
        out, counts = screen([text])
        return out[0] or "", sum(counts.values())

    @staticmethod
    def _said(result: str, redacted: int) -> str:
        return result if not redacted else (
            f"{result}\n(Note: {redacted} secret(s) in the text were replaced by "
            "[REDACTED:...] before saving.)")

    def _commit(self, changes: Callable[[], dict[str, bytes | None]], subject: str,
                lines: list[str]) -> None:
        self.store.commit(changes, Message(subject, lines, SOURCE, self.session), agent=True)

    def create(self, path: str, file_text: str) -> str:
        cid, rel, full = self._file(path)
        self._check_parents(self._segments(path), path)
        text, redacted = self._redact(file_text)
        data = self._check_size(path, text)


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
