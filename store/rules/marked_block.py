"""cardmem's marked block inside a file that is a person's (AGENTS.md, a Cursor rule):
found, replaced, taken out, with every byte around it kept (`cardmem export`, exports.py).

    text = splice(read(path), block_text, front)   # the block replaced, or appended
    write(path, text)                               # "written" | "unchanged"
    take_out(path, ours_front=True)                 # [(path, "removed" | BROKEN_LEFT)]

A block runs from a BEGIN line to the END line. Two blocks, or a begin line without its
end, are broken: refused when writing, left as they are when taking out (what follows may
be a person's words). `front` is the frontmatter Cursor and Copilot read at a file's top,
which is ours: it is set, or taken out with the block.
"""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import CardmemError
from ..git.writer import atomic_write

BEGIN = "<!-- cardmem:begin (written by `cardmem export {host}`: edit the rule cards, not this block) -->"
END = "<!-- cardmem:end -->"
BEGIN_LINE = re.compile(r"^<!-- cardmem:begin\b.*$", re.M)
END_LINE = re.compile(r"^<!-- cardmem:end -->[ \t]*\r?$", re.M)
BROKEN_LEFT = "left as it is: it holds a broken cardmem block"


def read(path: Path) -> str:
    """The file's text (bytes that are not UTF-8 kept as they are), "" when it is missing."""
    try:
        return path.read_bytes().decode("utf-8", "surrogateescape")
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise CardmemError(str(path), f"cannot read: {exc.strerror}") from None


def splice(existing: str, block_text: str, front: str, path: Path | str = "export") -> str:
    """existing with its block replaced by block_text (or block_text appended), and the
    frontmatter (Cursor's, Copilot's) set to front; the rest kept as it is."""
    before, after = parts(existing, front, path)
    return before + block_text + after


def parts(existing: str, front: str, path: Path | str) -> tuple[str, str]:
    """(what goes before the block, what after it), the frontmatter included."""
    if front and existing.startswith("---\n"):
        end = existing.find("\n---\n", 3)
        existing = existing[end + 5:] if end >= 0 else existing
    begins, ends = list(BEGIN_LINE.finditer(existing)), list(END_LINE.finditer(existing))
    if len(begins) == len(ends) == 1 and begins[0].start() < ends[0].start():
        return front + existing[:begins[0].start()], existing[ends[0].end():]
    if not begins and not ends:
        sep = "" if not existing else "\n" if existing.endswith("\n") else "\n\n"
        return f"{front}{existing}{sep}", "\n"
    raise CardmemError(str(path), "holds a broken cardmem block (a begin line without "
                                  "its end, or two blocks): mend it or delete it")


def write(path: Path, text: str) -> str:
    """text into path, atomically and keeping the file's mode: "written", or "unchanged"
    (the file untouched) when it already holds these bytes."""
    data = text.encode("utf-8", "surrogateescape")
    try:
        if path.read_bytes() == data:
            return "unchanged"
    except OSError:
        pass
    try:
        atomic_write(path, data)
    except OSError as exc:
        raise CardmemError(str(path), f"cannot write: {exc.strerror}") from None
    return "written"


def take_out(path: Path, ours_front: bool) -> list[tuple[Path, str]]:
    """The block out of a file (and the frontmatter, when ours_front: Cursor's, Copilot's),
    the file with it unless a person wrote something of their own in it. A broken block
    (no end line, or two blocks) is left as it is: what follows may be a person's."""
    begins, ends = list(BEGIN_LINE.finditer(text := read(path))), list(END_LINE.finditer(text))
    if not begins:
        return []
    if not (len(begins) == len(ends) == 1 and begins[0].start() < ends[0].start()):
        return [(path, BROKEN_LEFT)]
    begin, end = begins[0], ends[0]
    after = text[end.end():]
    after = after[after.startswith("\n"):]  # that newline is ours
    rest = text[:begin.start()] + after
    if ours_front and rest.startswith("---\n"):
        cut = rest.find("\n---\n", 3)
        rest = rest[cut + 5:] if cut >= 0 else rest
    if not after.strip():  # and the blank line export put before the block
        rest = rest.rstrip("\n") + "\n"
    if rest.strip():
        write(path, rest)
    else:
        path.unlink()
    return [(path, "removed")]
