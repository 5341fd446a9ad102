"""`drift`: a card names a path or a command its project's checkout no longer has.

What a card names is read from its `inline code` only (prose is too loose to check):
- a path: a token with a `/` or a file extension and none of `* { } < > $ ~ :` or
  spaces; it holds if the checkout has it, or has a tracked file or folder ending in it
  (cards often name paths from a sub-package's point of view);
- a command: `make TARGET` (the Makefile names the target) and `npm|pnpm|yarn run
  SCRIPT` (package.json has the script);
- a symbol: a call `parse_config()` / `Store.open(root)` (its last name), a CamelCase
  `FooBar` or a snake_case `load_all` (lowercase, with an underscore); it holds if any
  file of the checkout has it as a whole word. Generic names (builtins, brand words,
  ALL_CAPS settings that live outside the code) are not checked. One `git grep -E -w -o
  '(a|b|…)'` per checkout answers for every symbol of every card: one alternation, as
  `-F -f` with a pattern per name runs a matcher per name (far slower: bench/RESULTS.md,
  "Figures from comments").
Cards of projects with no known checkout (checkouts.py) are not checked, and the output
does not pretend they were.
"""
from __future__ import annotations

import json
import os
import re
from functools import cached_property
from pathlib import Path

from ..git import runner as git
from ..git.head_file import is_repo
from .checkouts import checkouts
from .survey import Finding, Survey

_CODE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_EXT = re.compile(r"\.(?:py|pyi|js|mjs|cjs|ts|tsx|jsx|rs|go|rb|java|kt|swift|c|h|cc|cpp|hpp|"
                  r"md|json|toml|ya?ml|ini|cfg|lock|sh|sql|txt|html|css|zig|lua)$")
_NOT_PATH = re.compile(r"[*{}<>$~:\s\\|=\"'()\[\],;@#!?]")
_MAKE = re.compile(r"^make\s+([A-Za-z0-9_.-]+)$")
_SCRIPT = re.compile(r"^(?:npm|pnpm|yarn)\s+run\s+([A-Za-z0-9:_.-]+)$")
_CALL = re.compile(r"^(?:[A-Za-z_]\w*(?:\.|::))*([A-Za-z_]\w*)\((?:[^()]*)\)$", re.A)
_DOTTED = re.compile(r"^(?:[A-Za-z_]\w*(?:\.|::))*([A-Za-z_]\w*)$", re.A)
_CAMEL = re.compile(r"^_?[A-Z][a-z0-9]+[A-Z]\w*$|^_?[a-z][a-z0-9]*[A-Z]\w*$")
_SNAKE = re.compile(r"^_*[a-z][a-z0-9]*(?:_[a-z0-9]+)+_*$")
GREP_CHARS = 30_000  # names per git grep, in characters (one argument stays < 128 KB)
# Names a card may give without the code having them: builtins, brands, everyday calls.
GENERIC = frozenset("""
print open range float bool dict list tuple type super isinstance getattr setattr hasattr
repr format sorted reversed enumerate filter input exit main init test setup call apply
require import fetch then catch resolve reject assert expect describe unwrap clone collect
into iter_mut to_string as_ref is_some is_none is_ok is_err node_modules site_packages
JavaScript TypeScript GitHub GitLab PostgreSQL MySQL SQLite GraphQL OpenAI LaTeX YouTube
PowerShell FastAPI PyTorch NumPy NodeJS macOS iPadOS tvOS watchOS DevTools VSCode WebSocket
snake_case camelCase PascalCase kebab_case dry_run iter next post delete PyPI
""".split())


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


def named_symbols(text: str) -> list[str]:
    """The code names a card gives in backticks, generic ones left out."""
    out = []
    for m in _CODE.finditer(text):
        tok = m.group(1).strip()
        mm = _CALL.match(tok)
        if mm:
            name = mm.group(1)
        elif (mm := _DOTTED.match(tok)) and not _EXT.search(tok):
            name = mm.group(1)
        else:
            continue
        if name in GENERIC or len(name) < 4:
            continue
        if (mm.re is _CALL and not name.isupper()) or _CAMEL.match(name) or _SNAKE.match(name):
            out.append(name)
    return list(dict.fromkeys(out))


class Checkout:
    """A project's folder: its files and folders, its make targets and npm scripts,
    which of some symbols its files name."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @cached_property
    def entries(self) -> set[str]:
        files: list[str] = []
        if is_repo(self.root):
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

    def symbols_found(self, names: set[str]) -> set[str]:
        """Those of `names` some file of the checkout has as a whole word: one git grep
        for all of them (tracked files of a repository, every file of a plain folder)."""
        if not names:
            return set()
        where = ["--no-index"] if not is_repo(self.root) else []
        found: set[str] = set()
        chunks: list[list[str]] = [[]]
        size = 0
        for name in sorted(names):  # ASCII \w+ names: nothing to escape
            if size > GREP_CHARS:
                chunks.append([])
                size = 0
            chunks[-1].append(name)
            size += len(name) + 1
        for chunk in chunks:
            # -o -h: only the matched names come back, not the lines (no -m: it would
            # cut a file's other names).
            proc = git.call(self.root, ["--literal-pathspecs", "grep", *where, "-I", "-h",
                                        "-o", "-E", "-w", "--no-color",
                                        "-e", "(" + "|".join(chunk) + ")"])
            if proc.returncode > 1:  # 1: nothing matched
                return set(names)  # cannot tell: report nothing rather than everything
            found.update(proc.stdout.split())
        return names & found

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
    shared: dict[Path, Checkout] = {}  # projects in one folder share its listing and grep
    known = {p: shared.setdefault(root, Checkout(root))
             for p, root in checkouts(survey.store).items()}
    cards = sorted((c for c in survey.active() if (c.project or "") in known),
                   key=lambda c: c.id)
    symbols = {c.id: named_symbols(c.body) for c in cards}
    wanted: dict[Path, set[str]] = {}
    for c in cards:
        wanted.setdefault(known[c.project or ""].root, set()).update(symbols[c.id])
    found = {root: shared[root].symbols_found(names) for root, names in wanted.items()}
    out: list[Finding] = []
    for c in cards:
        co = known[c.project or ""]
        gone = [f"path `{p}`" for p in named_paths(c.body) if not co.has_path(p)]
        gone += [f"`{'make ' if k == 'make' else 'npm run '}{n}`"
                 for k, n in named_commands(c.body) if co.has_command(k, n) is False]
        gone += [f"symbol `{s}`" for s in symbols[c.id] if s not in found[co.root]]
        if gone:
            out.append(Finding("drift", [c.id],
                               f"names what {co.root} no longer has: {', '.join(gone)}",
                               "update the card to what the project does now, or archive it"))
    return out
