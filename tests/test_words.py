"""Words that stay true: every module says what it is, and comments hold no timing figures.

A figure measured once goes stale in a comment while the code around it changes; it lives
in bench/RESULTS.md (dated, with its load and its command), and the comment says why in
words or points there.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOPS = ("store", "tools", "hosts", "hooks")

# A measured duration (`~5 ms`, `0.12 ms`, `3.5-8 ms`, `2.6 s`, `15-23 us`), a speed-up
# (`30x slower`), or the day something was measured (`measured Dec 1`, `(Nov 30, 10k cards`).
_NUMBER = r"~?\d+(?:[.,]\d+)?(?:\s?[-–]\s?\d+(?:[.,]\d+)?)?"
TIMING = re.compile(
    rf"(?<![\w.]){_NUMBER} ?(?:ns|us|µs|ms|s|secs?|seconds|milliseconds)\b"
    rf"|(?<![\w.]){_NUMBER} ?x (?:faster|slower)\b"
    r"|\b[Mm]easured (?:on )?(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* \d"
    r"|\((?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]* \d{1,2}, ")

# Durations that are no measurement: a limit a host documents, or what a constant sets.
# (path, words of the line): each says why it may keep its number.
NOT_MEASURED = {
    ("hosts/codex/install.py", "SessionEnd is capped at 3 s"),  # SPEC's own timeout below
    ("hosts/codex/protocol.py", "SessionEnd has a 1 s budget"),  # Codex's documented limit
    ("tools/ask/walk_retry.py", "else 0.25 s doubling per attempt"),  # what backoff returns
    ("tools/ask/receipt_stats.py", "`  0.5–1.0 s ███▌ 12`"),  # an example of the output
    ("store/watch/intake.py", "within 1 s of git finishing"),  # issue 27's target
    ("store/watch/watcher.py", "for up to 0.5 s, to pair it"),  # watchdog's own delay
}


def modules() -> list[Path]:
    return [p for top in TOPS for p in sorted((REPO / top).rglob("*.py"))]


def texts(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and every docstring line (module, class, function)."""
    out = [(tok.start[0], tok.string)
           for tok in tokenize.generate_tokens(io.StringIO(source).readline)
           if tok.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                first = node.body[0].lineno
                out += [(first + i, line) for i, line in enumerate(doc.splitlines())]
    return out


def timing_figures(path: str, source: str) -> list[str]:
    return [f"{path}:{line}: {text.strip()}" for line, text in texts(source)
            if TIMING.search(text)
            and not any(path == p and words in text for p, words in NOT_MEASURED)]


def test_every_module_opens_with_a_docstring() -> None:
    bare = [str(p.relative_to(REPO)) for p in modules()
            if not ast.get_docstring(ast.parse(p.read_text()))]
    assert len(modules()) > 100  # the check sees the real tree
    assert bare == []


def test_no_comment_or_docstring_holds_a_timing_figure() -> None:
    """Figures go to bench/RESULTS.md; the comment says why without one, or points there."""
    found = [f for p in modules() for f in timing_figures(str(p.relative_to(REPO)), p.read_text())]
    assert found == []


def test_every_allowed_duration_is_still_there() -> None:
    """An allowance whose line is gone is taken off the list, so the list only shrinks."""
    gone = [(p, words) for p, words in NOT_MEASURED if words not in (REPO / p).read_text()]
    assert gone == []


def test_the_timing_check_can_fail() -> None:
    source = ('"""Fast: ~0.1 ms against 3.5-8 ms for git (measured Dec 1)."""\n'
              "X = 1  # typing costs a search ~5 ms to import\n"
              "def f():\n    \"\"\"30x slower on 2 MB.\"\"\"\n"
              "Y = 2  # parsed 0.12 ms (Nov 30, 10k cards)\n"
              "Z = 3  # 10k cards, 2 CPUs, 32 KiB, v2.5 s3, a 5-step walk; TIMEOUT_S: seconds\n")
    assert [f.split(": ", 1)[0] for f in timing_figures("m.py", source)] == [
        "m.py:2", "m.py:5", "m.py:1", "m.py:4"]
    assert timing_figures("hosts/codex/install.py", "# SessionEnd is capped at 3 s\n") == []


# Aliases that name a module by something else it is not: allowed with their reason.
ALIASES_ALLOWED = {("cardmem.store.git.runner", "git")}  # git's runner: `git.run(...)` reads as git


def _subsequence(short: str, long: str) -> bool:
    it = iter(long)
    return all(ch in it for ch in short)


def module_aliases(path: Path) -> list[tuple[str, str]]:
    """(module, alias) for every cardmem module this file imports under another name."""
    package = ".".join(["cardmem", *path.relative_to(REPO).parent.parts])
    if path.name != "__init__.py" and path.parent == REPO:
        package = "cardmem"
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - (node.level - 1)] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            for a in node.names:
                full = f"{module}.{a.name}"
                folder = REPO.joinpath(*full.split(".")[1:])
                if a.asname and (folder.with_suffix(".py").exists() or folder.is_dir()):
                    out.append((full, a.asname))
        elif isinstance(node, ast.Import):
            out += [(a.name, a.asname) for a in node.names
                    if a.asname and a.name.startswith("cardmem.")]
    return out


def test_a_module_imported_under_another_name_keeps_its_name() -> None:
    """`freshness as anchor`, `by_address as reading`, `db as index`: a reader looks for a
    module that does not exist. An alias may shorten the name or add to it, not replace it."""
    renamed = [f"{p.relative_to(REPO)}: {m} as {alias}" for p in modules()
               for m, alias in module_aliases(p)
               if (m, alias) not in ALIASES_ALLOWED
               and not _subsequence(alias, m.rpartition(".")[2]) and m.rpartition(".")[2] not in alias]
    assert renamed == []


# A file of this repository named by its path: `store/index/db.py`, `docs/hosts.md`.
NAMED_FILE = re.compile(r"(?<![\w/.])((?:store|tools|hosts|hooks|tests|bench|docs)/[\w./-]*\w\.(?:py|md))")


def test_every_file_a_comment_names_is_there() -> None:
    """A module moved or renamed leaves no comment, docstring or doc page pointing at its\n    old path."""
    gone = [f"{p.relative_to(REPO)}:{line}: {name}" for p in modules()
            for line, text in texts(p.read_text()) for name in NAMED_FILE.findall(text)
            if not (REPO / name).exists()]
    pages = [REPO / "README.md", REPO / "tests" / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    gone += [f"{page.relative_to(REPO)}:{i}: {name}" for page in pages
             for i, line in enumerate(page.read_text().splitlines(), 1)
             for name in NAMED_FILE.findall(line)
             if not (REPO / name).exists() and not (page.parent / name).exists()]
    assert gone == []


def _map() -> str:
    return (REPO / "docs" / "architecture.md").read_text()


def test_every_package_is_on_the_map() -> None:
    """docs/architecture.md, the newcomer's map, has a row for every package pyproject ships."""
    import tomllib

    setup = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = setup["package-dir"]
    rows = re.findall(r"^\| ([\w/]+/)", _map(), re.M)
    missing = []
    for package in setup["packages"]:
        top = max((t for t in folders if package == t or package.startswith(t + ".")), key=len)
        folder = "/".join([folders[top], *package[len(top) + 1:].split(".")]).strip("/") + "/"
        if folder not in rows:
            missing.append(f"{package} ({folder})")
    assert missing == []


def test_the_maps_store_rooms_are_in_the_architecture_tests_order() -> None:
    """The store's table lists its rooms lowest first, as STORE_ORDER does."""
    tree = ast.parse((REPO / "tests" / "test_architecture.py").read_text())
    order = next(ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                 and any(getattr(t, "id", "") == "STORE_ORDER" for t in node.targets))
    section = _map().split("## store/", 1)[1].split("\n## ", 1)[0]
    rooms = [m.group(2) or m.group(1) for m in
             re.finditer(r"^\| store/(\w*)/?(?: (\w+)\.py)? \|", section, re.M)]
    assert rooms == list(order)
