"""`claude-md`: a hand-written CLAUDE.md (or AGENTS.md) split at its headings.

The file divides at its section headings (the level under a lone `# Title`, else the
top level). A section that is a list of rules (a rules-like heading, or items that read
as instructions: "Always …", "Never …", "Use …") becomes one `feedback` card per rule,
titled by the rule, the item's text as its body. Any other section becomes one card
(`project` when the file belongs to a project, else `reference`), titled by its heading,
its text verbatim. Text before the first section is a card titled by the `# Title`.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

from cardmem.store.cards import card as cardlib
from cardmem.store.cards.paths import slugify
from cardmem.store.learning.proposals import rule_title
from cardmem.store.rules.host_file import MARK

from .model import Draft, Parsed, Skipped, read_text, shown

RULE_HEADING = re.compile(
    r"\b(rules?|conventions?|guidelines?|style|do'?s|don'?ts|always|never|must|preferences?|"
    r"instructions?|etiquette|polic(?:y|ies)|standards?|practices|gotchas|important|"
    r"requirements?|constraints?)\b", re.I)
IMPERATIVE = re.compile(
    r"^(?:\*\*)?(always|never|use|don'?t|do not|do|prefer|avoid|run|keep|make|write|put|add|"
    r"ask|check|follow|ensure|must|should|no|only|before|after|when|leave|pin|name|test|"
    r"commit|push|open|read|update|remove|let|stop|start|mark|document|wrap|return|raise|"
    r"import|include|place|give|treat|call|be)\b", re.I)
ITEM = re.compile(r"^([-*+]|\d{1,3}[.)])[ \t]+(.*)$")


def guess_project(path: Path) -> Path | None:
    """The folder of the project a CLAUDE.md belongs to (the repository it sits in, else
    its own folder; the caller names it as session start does); none for the user's own
    ~/.claude/CLAUDE.md."""
    folder = (path if path.is_dir() else path.parent).absolute()
    if folder.name == ".claude":
        folder = folder.parent
    home = Path(os.path.expanduser("~")).absolute()
    return None if folder in (home, Path(folder.anchor)) else folder


def parse(path: Path, project: str | None) -> Parsed:
    out = Parsed()
    if path.is_dir():
        found = [path / n for n in ("CLAUDE.md", "AGENTS.md", ".claude/CLAUDE.md")
                 if (path / n).is_file()]
        if not found:
            out.skipped.append(Skipped(shown(path), "is a folder with no CLAUDE.md or AGENTS.md"))
            return out
        path = found[0]
        # One file a run (its cards' identity is the file's): the others are said, not
        # passed over in silence, so their rules are not taken for imported.
        out.skipped += [Skipped(shown(other), f"not imported: {shown(path)} was (one file a "
                                              f"run); import {shown(other)} on its own")
                        for other in found[1:]]
    out.origin = path
    text = read_text(path, out.skipped)
    if text is None:
        return out
    if text.split("\n", 1)[0].rstrip("\r") == MARK:
        out.skipped.append(Skipped(shown(path), "is cardmem's own rules file, written from a "
                                                "store; its rules are cards already"))
        return out
    if _looks_like_json(text):
        out.skipped.append(Skipped(shown(path), "is JSON, not a CLAUDE.md (an MCP memory "
                                                "file? `cardmem import mcp-memory PATH`)"))
        return out
    try:  # a frontmatter (a YAML mapping) is the file's settings, not its text
        body = cardlib.parse(text, "claude-md").body
    except cardlib.CardProblem:  # `---` lines around prose, or a broken block: all text
        body = text
    heads = cardlib.headings(body)
    keys: set[str] = set()
    if not heads:
        if body.strip():
            out.drafts.append(_section_card(f"{path.name} of {project}" if project else path.name,
                                            body, project, "all", keys))
        return out
    levels = [h[1] for h in heads]
    top = min(levels)
    title_head = None
    split_at = top
    if levels.count(top) == 1 and heads[0][1] == top and any(lv > top for lv in levels):
        title_head = heads[0]
        split_at = min(lv for lv in levels if lv > top)
    starts = [h for h in heads if h[1] == split_at]
    first = starts[0][3] if starts else len(body)
    intro = body[:first]
    if title_head is not None:  # the text around the `# Title` line, not the line
        after = body.find("\n", title_head[3]) + 1 or len(body)
        intro = body[:title_head[3]] + body[after:first]
    if intro.strip():
        title = title_head[2].strip() if title_head else path.stem
        out.drafts.append(_section_card(title, intro, project, "_intro", keys))
    for _, _, name, off in starts:
        end = next((h[3] for h in heads if h[3] > off and h[1] <= split_at), len(body))
        section = body[body.find("\n", off) + 1 if "\n" in body[off:] else len(body):end]
        heading = _plain(name)
        if not section.strip():
            continue
        rules = _rules(heading, section)
        if rules is None:
            out.drafts.append(_section_card(heading, section, project, heading, keys))
            continue
        group = slugify(heading)
        for rule in rules:
            title = rule_title(_plain(rule.split("\n", 1)[0]))
            key = _unique(f"{group}/{slugify(title)}", keys)
            out.drafts.append(Draft(key, title, "feedback", rule + "\n", description=heading,
                                    tags=[group], project=project, group=group))
    return out


def _section_card(title: str, text: str, project: str | None, key: str,
                  keys: set[str]) -> Draft:
    return Draft(_unique(slugify(key), keys), title, "project" if project else "reference",
                 text.strip("\n") + "\n", project=project)


def _unique(key: str, keys: set[str]) -> str:
    k, n = key, 1
    while k in keys:
        n += 1
        k = f"{key}-{n}"
    keys.add(k)
    return k


def _plain(text: str) -> str:
    """Heading or rule text without Markdown emphasis, for a title."""
    return re.sub(r"\*\*|__", "", text).strip().rstrip(":").strip()


def _rules(heading: str, section: str) -> list[str] | None:
    """The rules of a section that is nothing but a list of rules, else None. Each rule
    is an item's text (continuation lines kept, the bullet taken off)."""
    items: list[list[str]] = []
    fence = False
    for line in section.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
            if not items:
                return None
            items[-1].append(line)  # a code block inside an item
            continue
        m = ITEM.match(line) if not fence else None
        if m:
            items.append([m.group(2)])
        elif not line.strip():
            if items:
                items[-1].append("")
        elif items and (line[:1] in (" ", "\t") or fence):
            items[-1].append(line)
        else:
            return None  # prose, a sub-heading or a table: the section is one card
    if len(items) < 2:
        return None
    texts = ["\n".join(it).strip("\n") for it in items]
    imperative = sum(bool(IMPERATIVE.match(t)) for t in texts)
    if not RULE_HEADING.search(heading) and imperative * 2 < len(texts):
        return None
    return texts


def _looks_like_json(text: str) -> bool:
    first = text.lstrip()[:1]
    if first not in ("{", "["):
        return False
    try:
        json.loads(text.lstrip().split("\n", 1)[0])
        return True
    except ValueError:
        try:
            json.loads(text)
            return True
        except ValueError:
            return False
