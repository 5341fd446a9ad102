"""The house's shape: imports run hosts -> tools -> store, and no module imports itself back.

hooks/ (the 0.1.0 paths kept for users' settings) sits above hosts/: it only runs it.

Every module's imports are read with ast, including those inside functions (lazy imports
run too, just later) and the "module:attribute" strings of a lazy command table (the CLI's
LAZY), which import as surely as an import statement does. Only imports under
`if TYPE_CHECKING:` are left out: they never run.
"""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LAYERS = ("store", "tools", "hosts", "hooks")  # each may import only those before it


def modules() -> dict[str, Path]:
    """Dotted name -> file, for every module of cardmem (packages by their __init__)."""
    found = {}
    for top in LAYERS:
        for path in sorted((REPO / top).rglob("*.py")):
            parts = ["cardmem", top, *path.relative_to(REPO / top).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _nodes(tree: ast.AST, types: bool = False):
    """Every node, but not the bodies of `if TYPE_CHECKING:` (unless types)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not types and _type_checking(child):
                stack.extend(child.orelse)
            else:
                stack.append(child)


def imports(name: str, path: Path, known: dict[str, Path], types: bool = False) -> set[str]:
    """The cardmem modules `name` imports, anywhere in its file (types: also under
    `if TYPE_CHECKING:`)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()

    def add(target: str) -> None:
        # the longest known module the dotted name starts with
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            out.add(target)

    for node in _nodes(ast.parse(path.read_text(), str(path)), types):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                full = f"{module}.{alias.name}"
                add(full if full in known else module)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            module, colon, attr = node.value.partition(":")
            if colon and attr.isidentifier() and module in known:
                add(module)
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def layer(name: str) -> int:
    return LAYERS.index(name.split(".")[1])


def test_no_import_cycles() -> None:
    g = graph()
    assert "cardmem.store.index.db" in g and len(g) > 50  # the checks below see the real code
    assert cycles(g) == []


def test_imports_run_hosts_to_tools_to_store() -> None:
    against = sorted(f"{a} imports {b}" for a, targets in graph().items()
                     for b in targets if layer(b) > layer(a))
    assert against == []


def test_the_checks_can_fail(tmp_path: Path) -> None:
    """A lazy import back (inside a function) and a LAZY-table string both count."""
    a = tmp_path / "a.py"
    a.write_text("def f():\n    from cardmem.store import b\n")
    b = tmp_path / "b.py"
    b.write_text('TABLE = {"x": "cardmem.store.a:f"}\n'
                 "if TYPE_CHECKING:\n    from cardmem.tools import t\n")
    known = {"cardmem.store.a": a, "cardmem.store.b": b, "cardmem.tools.t": b}
    edges = {n: imports(n, p, known) for n, p in list(known.items())[:2]}
    assert edges == {"cardmem.store.a": {"cardmem.store.b"}, "cardmem.store.b": {"cardmem.store.a"}}
    assert cycles(edges) == [["cardmem.store.a", "cardmem.store.b"]]
    assert layer("cardmem.hooks.x") > layer("cardmem.hosts.x") > layer("cardmem.tools.x") > layer("cardmem.store.x")


def test_every_package_is_listed_in_pyproject() -> None:
    import tomllib

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    packages = {n for n, p in modules().items() if p.name == "__init__.py"}
    assert packages - listed == set()


def graph_with_types() -> dict[str, set[str]]:
    """The graph with `if TYPE_CHECKING:` imports counted too (annotations name a module
    as surely as an import does, for a reader following the layers)."""
    known = modules()
    return {name: imports(name, path, known, types=True) for name, path in known.items()}


def test_the_writer_knows_nothing_of_rules() -> None:
    """git (the write door among it) never imports rules, not even for a type: the store
    composes them (store/derived.py runs after each commit), so the writer refreshing the
    rules' tables itself, the cycle writer -> rules -> pile_view -> store -> writer, is
    not coming back."""
    g = graph_with_types()
    assert "cardmem.store.git.writer" in g and "cardmem.store.derived" in g
    back = sorted(f"{a} imports {b}" for a, targets in g.items() for b in targets
                  if a.startswith("cardmem.store.git.") and b.startswith("cardmem.store.rules"))
    assert back == []
    assert [c for c in cycles(g) if "cardmem.store.store" in c] == []


def test_every_writer_goes_through_store_commit() -> None:
    """One door: only Store.commit calls the writer (it sets the lock's wait and runs the
    derived-state step after each commit); a second caller would skip both."""
    callers = sorted(str(path.relative_to(REPO)) for path in modules().values()
                     if "commit_changes(" in path.read_text()
                     and path.relative_to(REPO).as_posix() not in ("store/git/writer.py",
                                                                   "store/store.py"))
    assert callers == []


# store's rooms in one order, lowest first: a room imports only rooms before it (and its
# own modules), type-only imports counted. store/'s own modules are rooms of their own,
# placed by what they import: the base (errors, config, progress, where, wording) first;
# the root (a store opened for reading) on git's `.git` check; the maintain passes' record
# below search, which reads its stale marks; the Store itself (store.py, and derived.py:
# what every write brings up to date) above the rooms it composes, and the Store's own
# operations (reads by address, rm and mv) right above it.
STORE_ORDER = ("errors", "config", "progress", "where", "wording", "cards", "git", "root",
               "maintain_record", "index", "search", "rules", "derived", "store",
               "by_address", "moves", "learning", "maintain", "context", "watch", "sharing")


def store_room(name: str) -> str | None:
    """`cardmem.store.index.db` -> "index"; `cardmem.store.errors` -> "errors"; None
    outside store/ (the package `cardmem.store` itself included)."""
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "store" else None


def back_edges(edges: dict[str, set[str]], order: tuple[str, ...] = STORE_ORDER) -> set[str]:
    out = set()
    for a, targets in edges.items():
        ra = store_room(a)
        for b in targets:
            rb = store_room(b)
            if ra and rb and ra != rb and order.index(rb) > order.index(ra):
                out.add(f"{a.split('.', 2)[2]} -> {b.split('.', 2)[2]}")
    return out


def test_store_rooms_are_all_in_the_order() -> None:
    rooms = {store_room(n) for n in modules()} - {None}
    assert rooms - set(STORE_ORDER) == set() and set(STORE_ORDER) - rooms == set()


def test_store_rooms_import_only_rooms_before_them() -> None:
    g = graph_with_types()
    assert "cardmem.store.search.search" in g  # the check sees the real rooms
    assert sorted(back_edges(g)) == []


def test_no_import_cycles_even_through_types() -> None:
    assert cycles(graph_with_types()) == []


def test_the_order_check_can_fail(tmp_path: Path) -> None:
    """A back edge made only of a type-only import is found, and so is its cycle."""
    low = tmp_path / "low.py"
    low.write_text("TYPE_CHECKING = False\nif TYPE_CHECKING:\n"
                   "    from cardmem.store.search.high import Thing\n")
    high = tmp_path / "high.py"
    high.write_text("from ..index import low\n")
    known = {"cardmem.store.index.low": low, "cardmem.store.search.high": high}
    edges = {n: imports(n, p, known, types=True) for n, p in known.items()}
    assert back_edges(edges) == {"index.low -> search.high"}
    assert cycles(edges) == [["cardmem.store.index.low", "cardmem.store.search.high"]]
    untyped = {n: imports(n, p, known) for n, p in known.items()}
    assert back_edges(untyped) == set()  # without types it would have been missed
