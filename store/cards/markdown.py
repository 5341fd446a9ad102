"""Markdown's block rules as every reader of a card applies them: code fences and ATX headings.

One home, so the card parser (title, History), the History finder, the link reader and
maintain's sentences agree on what is code: a fence opens on 3+ backticks or tildes (at
most 3 spaces in) and closes only on the same character, at least as long, with nothing
after it; a fence never closed runs to the end (CommonMark). No `re`: the PreToolUse hook
reads a rule's History through sections.py and imports none (tests/hosts/test_pretool.py).
"""
from __future__ import annotations


def indent(line: str) -> int:
    """Leading spaces, when at most 3 (a fence or heading may start there); else -1."""
    n = len(line) - len(line.lstrip(" "))
    return n if n <= 3 else -1


def fence(line: str) -> str:
    """The run of 3+ backticks or tildes a fence line opens with, or "" (a backtick fence's
    info string holds no backtick: "``` a`b" is inline code, not a fence)."""
    n = indent(line)
    if n < 0 or n == len(line) or line[n] not in "`~":
        return ""
    rest = line[n:]
    info = rest.lstrip(rest[0])
    run = rest[:len(rest) - len(info)]
    if len(run) < 3 or (run[0] == "`" and "`" in info):
        return ""
    return run


def closes(line: str, run: str) -> bool:
    """Whether line ends the block `run` opened: the same character, at least as long,
    nothing but blanks after it."""
    end = fence(line)
    return bool(end) and end[0] == run[0] and len(end) >= len(run) \
        and not line.strip()[len(end):].strip()


def code_spans(text: str) -> list[tuple[int, int]]:
    """(start, stop) in text of each fenced block, its fence lines included; a block never
    closed runs to the end."""
    out: list[tuple[int, int]] = []
    run, offset, start = "", 0, 0
    for ln in text.split("\n"):
        at, offset = offset, offset + len(ln) + 1
        line = ln.rstrip("\r")
        if run:
            if closes(line, run):
                out.append((start, min(offset - 1, len(text))))
                run = ""
        elif run := fence(line):
            start = at
    if run:
        out.append((start, len(text)))
    return out


def heading(line: str) -> tuple[int, str] | None:
    """(level, text) of an ATX heading line (`## Name ##`), or None (an empty one too: it
    names nothing)."""
    n = indent(line)
    if n < 0:
        return None
    rest = line[n:].lstrip("#")
    level = len(line) - n - len(rest)
    name = rest.lstrip(" \t")
    if not 1 <= level <= 6 or name == rest:  # 7+ #s, or no blank after them: no heading
        return None
    name = name.rstrip(" \t")
    bare = name.rstrip("#")
    if bare != name and bare[-1:] in (" ", "\t"):  # closing #s after a blank
        name = bare.rstrip(" \t")
    return (level, name) if name else None
