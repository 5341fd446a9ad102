"""Cards: parse Markdown with YAML frontmatter, and edit them byte-preservingly.

Reading uses python-frontmatter with a C YAML loader that keeps `yes`/`no`/`on` and
dates as the strings the person typed. Writing never re-serialises an existing card:
edits are text surgery on the lines they change, so every other byte stays put.
"""
from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from datetime import date, datetime
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from . import markdown
from .frontmatter import split  # noqa: F401 - re-exported: the one splitter
from .paths import project_key, project_of_id, type_from_id
from .sections import history_entries, history_span as _find_history

MAX_CARD_BYTES = 1024 * 1024
BOOL_TAG = "tag:yaml.org,2002:bool"
TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


@cache
def _loader() -> type:
    """The YAML loader, built on first use: `cardmem new` and other writes of simple
    cards never import yaml (its import is a large share of a CLI call or a hook:
    bench/RESULTS.md, "Figures from comments")."""
    import yaml

    class _Loader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
        """YAML 1.2-ish scalars: only true/false are booleans; dates stay text."""

    _Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in (BOOL_TAG, TIMESTAMP_TAG)]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    _Loader.add_implicit_resolver(
        BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
    )
    return _Loader


def __getattr__(name: str) -> Any:  # `from .card import _Loader` still works
    if name == "_Loader":
        return _loader()
    raise AttributeError(name)


class CardProblem(Exception):
    """Why a file cannot be read as a card (it is then skipped and never touched)."""


@dataclass
class Card:
    id: str
    meta: dict[str, Any]
    body: str
    title: str
    type: str | None
    path: Path | None = None
    text: str = ""

    @property
    def description(self) -> str:
        return _as_text(self.meta.get("description"))

    @property
    def aliases(self) -> list[str]:
        return _as_list(self.meta.get("aliases"))

    @property
    def tags(self) -> list[str]:
        return _as_list(self.meta.get("tags"))

    @property
    def project(self) -> str | None:
        """The project key (paths.project_key): the frontmatter's, else the folder's."""
        return project_key(self.meta.get("project")) or project_of_id(self.id)

    @property
    def status(self) -> str:
        return _as_text(self.meta.get("status")) or "active"

    def brief(self) -> dict[str, str]:
        return {"id": self.id, "type": self.type or "", "title": self.title,
                "description": self.description}


def _as_text(value: Any) -> str:
    return "" if value is None else str(value)


def _as_list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if v is not None]
    return [str(value)]


def decode(raw: bytes) -> str:
    """Card bytes to text, or CardProblem naming why they are not a card."""
    if len(raw) > MAX_CARD_BYTES:
        raise CardProblem(f"too large ({len(raw)} bytes; the limit is {MAX_CARD_BYTES})")
    if b"\x00" in raw:
        raise CardProblem("binary content (NUL byte)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CardProblem(f"not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})") from None


def parse(text: str, card_id: str, path: Path | None = None) -> Card:
    """A card from its text. Raises CardProblem on frontmatter that is not a YAML mapping."""
    import frontmatter  # lazy: only reading cards needs it
    import yaml

    meta: dict[str, Any] = {}
    body_start = 0
    span = split(text)
    if span is None and _opens_unclosed(text):
        raise CardProblem("frontmatter never closes: its opening --- line has no closing "
                          "--- line")
    if span:
        try:
            loaded = frontmatter.YAMLHandler().load(text[span[0]:span[1]], Loader=_loader())
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 2}: " if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise CardProblem(f"bad YAML frontmatter: {where}{problem}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise CardProblem("frontmatter is not a mapping of keys to values")
        meta = {str(k): v for k, v in loaded.items()}
        body_start = span[2]
    return from_meta(card_id, meta, text, body_start, path)


def _opens_unclosed(text: str) -> bool:
    """A `---` line followed by a `key:` line, and no block split() could close: a
    frontmatter whose closing line is missing (a rule at the very top of a note, `---`
    then prose, is not one; nor is `---` then "Note to self: ...": a YAML key has no
    spaces)."""
    lines = text.lstrip("\ufeff").split("\n", 2)
    if len(lines) < 2 or lines[0].rstrip() != "---":
        return False
    key, colon, _ = lines[1].partition(":")
    return bool(colon) and bool(key.strip()) and all(c.isalnum() or c in "_-" for c in key.strip())


def from_meta(card_id: str, meta: dict[str, Any], text: str, body_start: int,
              path: Path | None = None) -> Card:
    """A card from its parsed frontmatter, with the defaults for a missing title and type
    (shared with fastmeta, so both paths name a card alike)."""
    title = _as_text(meta.get("title")).strip()
    if not title:
        # The first `# ` heading outside code fences (a `# comment` in a shell block is none).
        heading = next((name for _, level, name, _ in _headings(text) if level == 1), None)
        title = heading or card_id.rsplit("/", 1)[-1]
    card_type = _as_text(meta.get("type")).strip() or type_from_id(card_id)
    return Card(id=card_id, meta=meta, body=text[body_start:], title=title, type=card_type,
                path=path, text=text)


def load(path: Path, card_id: str) -> Card:
    """Read and parse one card file. Raises CardProblem, or OSError if unreadable."""
    return parse(decode(read_regular(path)), card_id, path)


def read_regular(path: Path | str) -> bytes:
    """A file's bytes; CardProblem for what is no regular file. Opened without blocking,
    so a named pipe where a card should be is reported rather than waited on forever."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a named pipe" if stat.S_ISFIFO(st.st_mode) else "a special file"
            raise CardProblem(f"not a regular file ({kind})")
        chunks = []
        while chunk := os.read(fd, max(st.st_size + 1, 1 << 16)):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


# --- writing ---------------------------------------------------------------------

def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _lines(text: str) -> list[str]:
    """Lines with their endings, split at \\n only: str.splitlines also splits at form
    feeds, U+2028 and the like, which are ordinary characters inside a card's lines."""
    out = text.split("\n")
    last = out.pop()
    return [ln + "\n" for ln in out] + ([last] if last else [])


def _dump(value: Any, **style: Any) -> str:
    import yaml

    out = yaml.safe_dump(value, default_flow_style=True, width=10**9, sort_keys=False, **style)
    out = out.removesuffix("\n")
    return out.removesuffix("\n...")  # a bare top-level scalar ends its document so


def _yaml_value(value: Any) -> str:
    """One YAML line's value: flow style, no line wrapping, no document markers.

    Readable plain or quoted YAML when that stays on one line and reads back as the
    value; else double-quoted with every awkward character escaped.
    """
    if isinstance(value, (date, datetime)):
        return value.isoformat()  # unquoted, as people write dates; read back as text
    if isinstance(value, str) and _is_plain(value):
        return value
    import yaml

    out = _dump(value, allow_unicode=True)
    if "\n" in out or "\r" in out or yaml.load(out, Loader=_loader()) != value:
        out = _dump(value, allow_unicode=False, default_style='"')
    return out


# Text YAML reads back as the same string written plain, with no quoting: a letter first,
# then letters, digits, spaces and harmless punctuation; no YAML words.
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9 _.,()/'-]*(?<! )")
_YAML_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}


def _is_plain(text: str) -> bool:
    return bool(_PLAIN.fullmatch(text)) and text.lower() not in _YAML_WORDS


def render(meta: dict[str, Any], body: str) -> str:
    """The text of a new card: frontmatter in the given key order, then the body."""
    if all(isinstance(k, str) and _is_plain(k) and (
            (isinstance(v, str) and _is_plain(v)) or type(v) in (date, int))
           for k, v in meta.items()):
        # What python-frontmatter writes for such values, without importing YAML.
        lines = "".join(f"{k}: {v.isoformat() if isinstance(v, date) else v}\n"
                        for k, v in meta.items())
        return f"---\n{lines}---\n\n{body.rstrip(chr(10))}\n" if meta else body.rstrip("\n") + "\n"
    import frontmatter
    import yaml

    post = frontmatter.Post(body.rstrip("\n") + "\n", **meta)
    # The pure-Python dumper: libyaml's escapes emoji and other non-BMP text as \U0001F680.
    text = frontmatter.dumps(post, Dumper=yaml.SafeDumper, sort_keys=False,
                             allow_unicode=True, width=10**9)
    return text if text.endswith("\n") else text + "\n"


def _key_lines(text: str, key: str) -> tuple[int, int, str] | None:
    """(start, end, line ending) of a top-level frontmatter key's lines, or None."""
    span = split(text)
    if span is None:
        return None
    start, end, _ = span
    lines = _lines(text[start:end])
    key_re = re.compile(rf"^{re.escape(key)}[ \t]*:(?:[ \t]|\r?$)")
    offset = start
    for i, ln in enumerate(lines):
        if key_re.match(ln):
            # The value runs on over indented, list-item, comment and blank lines up to the
            # next key; blank and comment lines after its last value line are not its own.
            j = i + 1
            while j < len(lines) and (lines[j][:1] in (" ", "\t", "-", "#")
                                      or not lines[j].strip(" \t\r\n")):
                j += 1
            while j > i + 1 and (not lines[j - 1].strip(" \t\r\n")
                                 or lines[j - 1].startswith("#")):
                j -= 1
            ending = lines[j - 1][len(lines[j - 1].rstrip("\r\n")):]
            return offset, offset + len("".join(lines[i:j])), ending
        offset += len(ln)
    return None


def set_key(text: str, key: str, value: Any) -> str:
    """Set one top-level frontmatter key; every other byte of the card stays as it was."""
    nl = _newline(text)
    line = f"{key}: {_yaml_value(value)}"
    span = split(text)
    if span is None:
        return f"---{nl}{line}{nl}---{nl}{text}"
    found = _key_lines(text, key)
    if found:
        a, b, ending = found
        return text[:a] + line + (ending or nl) + text[b:]
    # A new key goes last, just before the closing fence.
    end = span[1]
    if text[span[0]:end] and not text[span[0]:end].endswith("\n"):
        return text[:end] + nl + line + nl + text[end:]
    return text[:end] + line + nl + text[end:]


def remove_key(text: str, key: str) -> str:
    """Remove one top-level frontmatter key and its value lines; every other byte stays."""
    found = _key_lines(text, key)
    if not found:
        return text
    a, b, _ = found
    return text[:a] + text[b:]


def _headings(text: str) -> list[tuple[int, int, str, int]]:
    """(line index, level, heading text, char offset) of body headings outside code fences
    (markdown.py's rules: a ``` inside a ```` block or a ~~~ block does not end it)."""
    out: list[tuple[int, int, str, int]] = []
    inside, offset = "", 0
    span = split(text)
    body_start = span[2] if span else 0
    for i, ln in enumerate(_lines(text)):
        if offset >= body_start:
            line = ln.rstrip("\r\n")
            if inside:
                if markdown.closes(line, inside):
                    inside = ""
            elif run := markdown.fence(line):
                inside = run
            elif head := markdown.heading(line):
                out.append((i, head[0], head[1], offset))
        offset += len(ln)
    return out


def headings(text: str) -> list[tuple[int, int, str, int]]:
    """(line index, level, heading text, char offset) of the body's headings outside code
    fences: where a Markdown document divides (an importer splits a CLAUDE.md there)."""
    return _headings(text)


def section_span(text: str, title: str) -> tuple[int, int] | None:
    """(start, stop) of the first `## <title>` section: its heading to the next level-1/2
    heading (or the end), blank lines included; None without one."""
    heads = _headings(text)
    for n, (_, level, name, off) in enumerate(heads):
        if level == 2 and name.strip().lower() == title.lower():
            return off, next((o for _, lv, _, o in heads[n + 1:] if lv <= 2), len(text))
    return None


def _section_end(text: str, title: str) -> int | None:
    """Offset just past the last non-blank line of the `## <title>` section, if present."""
    if (span := section_span(text, title)) is None:
        return None
    off, stop = span
    # Past the last line with something on it (the heading at least), newline kept.
    seg = _lines(text[off:stop])
    while len(seg) > 1 and not seg[-1].strip():
        seg.pop()
    return off + sum(map(len, seg))


def append_history(text: str, entry: str) -> str:
    """Add `- entry` as the last line of the `## History` section, creating it at the end."""
    nl = _newline(text)
    one_line = re.sub(r"\s*[\r\n]+\s*", " ", entry.strip())  # an entry is one line, always
    entry_line = f"- {one_line}{nl}"
    end = _section_end(text, "History")
    if end is not None:
        if end > 0 and not text[:end].endswith(("\n",)):
            return text[:end] + nl + entry_line + text[end:]
        # A section whose last line is the heading itself gets a blank line first.
        return text[:end] + entry_line + text[end:]
    sep = "" if text.endswith("\n") or not text else nl
    gap = "" if not text or text.endswith(nl + nl) else nl
    return f"{text}{sep}{gap}## History{nl}{entry_line}"


def append_section(text: str, heading: str, body: str) -> str:
    """Add a `## heading` section with body before `## History` (or at the end)."""
    nl = _newline(text)
    body = nl.join(ln.rstrip("\r") for ln in body.strip().split("\n"))  # the card's endings
    block = f"## {heading}{nl}{nl}{body}{nl}"
    for _, level, name, off in _headings(text):
        if level == 2 and name.strip().lower() == "history":
            before = text[:off]
            pad = "" if before.endswith(nl + nl) or not before else (nl if before.endswith("\n") else nl + nl)
            return before + pad + block + nl + text[off:]
    sep = "" if text.endswith("\n") or not text else nl
    gap = "" if not text or text.endswith(nl + nl) else nl
    return f"{text}{sep}{gap}{block}"


# A line that may be a `## History` heading (a superset of what _headings takes for one):
# most cards have none, and one search spares them the heading walk.
_MAY_HAVE_HISTORY = re.compile(r"^ {0,3}##[ \t]+\s*history", re.M | re.I)


def history_span(text: str) -> tuple[int, int] | None:
    """(start, stop) in a card's text of its `## History` section (sections.py's: the
    first level-2 heading named History, in any case, outside code), or None."""
    if "##" not in text or not _MAY_HAVE_HISTORY.search(text):  # a find in C spares most
        return None
    return _history_span(text)


@lru_cache(maxsize=8192)  # maintain asks three times per card: its text, lines, length
def _history_span(text: str) -> tuple[int, int] | None:
    return _find_history(text)


def history(text: str) -> list[str]:
    """The entries of a card text's History section, oldest first (no YAML needed)."""
    return history_entries(text, history_span(text))
