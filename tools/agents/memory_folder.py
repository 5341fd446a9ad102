"""The memory tool's folder as the model sees it: the path gate, reading and listing.

`/memories/...` paths are confined to one folder of the store: `..`, `.`, empty and
hidden segments, backslashes, control characters and NUL, URL-encoded forms of those
(`%2e%2e`, `%2f`), absolute paths outside `/memories`, and symbolic links anywhere on the
path are refused. `view` shows a card with line numbers, or a folder's cards and
subfolders two levels deep, in the SDK's own words. The commands that change the folder
are in tools/agents/memory_tool.py (`CardMemory`, built on `MemoryFolder`).
"""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

from cardmem.store.git import runner as git
from cardmem.store.cards.card import CardProblem, decode
from cardmem.store.errors import BadId
from cardmem.store.cards.paths import is_card_name, normalize_id

if TYPE_CHECKING:
    from cardmem.store.store import Store

ROOT = "/memories"
FOLDER = "memories"
MAX_LISTED = 500  # entries in one folder view
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


_ENCODED = re.compile(r"%[0-9A-Fa-f]{2}")


class MemoryFolder:
    """One folder of a store's cards under its `/memories` paths: resolve, read, list."""

    def __init__(self, store: Store, *, folder: str = FOLDER) -> None:
        self.store = store
        self.folder = normalize_id(folder)  # a safe, relative, non-hidden folder name

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

    # --- files of the folder -----------------------------------------------------

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

    def prepare(self) -> None:
        """Make the folder, so the first `view /memories` shows an empty directory."""
        self._resolve(ROOT)
        self.base.mkdir(parents=True, exist_ok=True)
