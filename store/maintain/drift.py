"""`drift`: a card names a path or a command its project's checkout no longer has.

What a card names is read from its `inline code` only (prose is too loose to check):
- a path: a token with a `/` or a file extension and none of `* { } < > $ ~ :` or
  spaces; it holds if the checkout has it, or has a tracked file or folder ending in it
  (cards often name paths from a sub-package's point of view);
- a command: `make TARGET` (the Makefile names the target) and `npm|pnpm|yarn run
  SCRIPT` (package.json has the script).
Symbols (functions, classes) are not checked yet. Cards of projects with no known
checkout (checkouts.py) are not checked, and the output does not pretend they were.
"""
from __future__ import annotations

import json
import os
import re
from functools import cached_property
from pathlib import Path

from ..git import runner as git
from .checkouts import checkouts
from .survey import Finding, Survey

_CODE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_EXT = re.compile(r"\.(?:py|pyi|js|mjs|cjs|ts|tsx|jsx|rs|go|rb|java|kt|swift|c|h|cc|cpp|hpp|"
                  r"md|json|toml|ya?ml|ini|cfg|lock|sh|sql|txt|html|css|zig|lua)$")
_NOT_PATH = re.compile(r"[*{}<>$~:\s\\|=\"'()\[\],;@#!?]")
_MAKE = re.compile(r"^make\s+([A-Za-z0-9_.-]+)$")
_SCRIPT = re.compile(r"^(?:npm|pnpm|yarn)\s+run\s+([A-Za-z0-9:_.-]+)$")


def named_paths(text: str) -> list[str]:
    out = []
    for m in _CODE.finditer(text):
        tok = m.group(1).strip()
        if _NOT_PATH.search(tok) or tok.startswith(("/", "-", "http")) or "//" in tok:
            continue
        if ("/" in tok and re.search(r"[A-Za-z]", tok)) or _EXT.search(tok):
            if not re.fullmatch(r"[\w./-]+", tok) or tok.count(".") > 3 and "/" not in tok:
                continue
            out.append(tok)
    return list(dict.fromkeys(out))


def named_commands(text: str) -> list[tuple[str, str]]:
    out = []
    for m in _CODE.finditer(text):
        tok = " ".join(m.group(1).split())
        if mm := _MAKE.match(tok):
            out.append(("make", mm.group(1)))
        elif mm := _SCRIPT.match(tok):
            out.append(("script", mm.group(1)))
    return list(dict.fromkeys(out))


class Checkout:
    """A project's folder: its files and folders, its make targets and npm scripts."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @cached_property
    def entries(self) -> set[str]:
        files: list[str] = []
        if (self.root / ".git").exists():
            files = git.run(self.root, "ls-files", "-z", check=False).split("\0")
        if not files or files == [""]:
            for dirpath, dirnames, names in os.walk(self.root):
                dirnames[:] = [d for d in dirnames if not d.startswith(".")
                               and d != "node_modules"]
                rel = os.path.relpath(dirpath, self.root)
                files += [os.path.normpath(os.path.join(rel, n)) for n in names]
        out: set[str] = set()
        for f in filter(None, files):
            parts = f.split("/")
            out.update("/".join(parts[i:]) for i in range(len(parts)))  # every suffix
            for j in range(1, len(parts)):  # and each folder, with its suffixes
                out.update("/".join(parts[i:j]) for i in range(j))
        return out

    def has_path(self, tok: str) -> bool:
        tok = tok.removeprefix("./").rstrip("/")
        return (self.root / tok).exists() or tok in self.entries

    def has_command(self, kind: str, name: str) -> bool | None:
        """Whether the command exists; None when there is nothing to check against."""
        if kind == "make":
            mk = self.root / "Makefile"
            if not mk.is_file():
                return None
            return bool(re.search(rf"^{re.escape(name)}\s*:", mk.read_text(errors="replace"), re.M))
        pj = self.root / "package.json"
        try:
            scripts = json.loads(pj.read_text()).get("scripts") or {}
        except (OSError, ValueError, AttributeError):
            return None
        return name in scripts


def find(survey: Survey) -> list[Finding]:
    known = {p: Checkout(root) for p, root in checkouts(survey.store).items()}
    out: list[Finding] = []
    for c in sorted(survey.active(), key=lambda c: c.id):
        co = known.get(c.project or "")
        if co is None:
            continue
        gone = [f"path `{p}`" for p in named_paths(c.body) if not co.has_path(p)]
        gone += [f"`{'make ' if k == 'make' else 'npm run '}{n}`"
                 for k, n in named_commands(c.body) if co.has_command(k, n) is False]
        if gone:
            out.append(Finding("drift", [c.id],
                               f"names what {co.root} no longer has: {', '.join(gone)}",
                               "update the card to what the project does now, or archive it"))
    return out
