"""The trigger table: every active rule's `applies_to`, `enforce` and keywords, compiled
into `.cardmem/triggers.bin`, so the PreToolUse hook reads one file and opens nothing
else (no index, no YAML, no git).

A rule's frontmatter may say what it governs and how:

    applies_to: ["git push --force*", "git push -f*", "path: migrations/**"]
    enforce: deny        # remind (default) | ask | deny

The table is rebuilt after every commit that touches a rule (store/derived.py, which
every write goes through) and whenever `load` finds it stale: it records each rule file's
(mtime_ns, size), the mtimes of the folders holding rules and cardmem.toml's stamp, and
a stat of each is all a hook pays to know the table is current.

The file is built for the hook, which runs before every tool call (the JSON table it
replaced cost 32.5 M instructions to decode, the hot blob ~7 M; bench/RESULTS.md): two
marshal blobs (the interpreter's own format, read without importing anything), the hot
part first (what every call needs: stamps, the governed rules' patterns, the keyword
index) and the rest (titles, problems) read only when a rule fires or a command lists
rules. A file from another layout or another Python is rebuilt, never misread.

Safety: only a person's rule may `ask` or `deny`: its last change must be a person's.
A rule whose last commit is the cardmem agent's (file unchanged since), or that carries
`proposed_by` and was never committed by a person, is kept as a reminder (its
`downgraded` says why). A person's commit (`cardmem review accept`, or their own) makes a
proposal theirs; a person's uncommitted edit counts as theirs: agents write only through
commits (store/git/writer.py). Proposals (`status: proposed`) are not in force at all.
"""
from __future__ import annotations

import marshal
import os
import sys

from .match import THRESHOLD  # noqa: F401 - the relevance threshold's one home
from .match import classify, words

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

# The PreToolUse hook reads the table with os and marshal only: what building it needs
# (the card parser, git, the index's view) is imported inside the functions that build.

NAME = "triggers.bin"  # in .cardmem/
VERSION = 3  # of the layout: another one is rebuilt, never misread
# The file starts with this line, then the hot blob's length (4 bytes), then the blobs.
MAGIC = b"cardmem-triggers %d py%d.%d\n" % (VERSION, *sys.version_info[:2])
COLD = ("rules", "problems")  # read only when asked for
ENFORCE = ("remind", "ask", "deny")
MAX_RULE_CHARS = 1500  # of a rule's text handed to the agent at a call


def path_of(root: str | os.PathLike[str]) -> str:
    return os.path.join(os.fspath(root), ".cardmem", NAME)


class Table(dict):
    """The table; its cold part (COLD keys) is unmarshalled on first use."""

    _cold: Any = None

    def __missing__(self, key: str) -> Any:
        if key in COLD and self._cold is not None:
            cold, self._cold = self._cold, None
            self.update(marshal.loads(cold))
            return self[key]
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default


# --- hook time: load and check, nothing else ---------------------------------------

def _stat(p: str) -> list[int] | None:
    try:
        st = os.stat(p)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def fresh(table: dict[str, Any], root: str) -> bool:
    """Whether the files the table was built from are as they were (stat only)."""
    s = table.get("stamps") or {}
    base = root.rstrip("/") + "/"
    for d, m in s.get("dirs", {}).items():
        st = _stat(base + d if d else root)
        if (st[0] if st else None) != m:  # None: the folder was missing, and still is
            return False
    if _stat(base + "cardmem.toml") != s.get("config"):
        return False
    # Every rule file (and any skipped as unreadable) with its (mtime_ns, size), flat;
    # stat relative to the store's folder, opened once.
    stamps = iter(s.get("stat", ()))
    stat = os.stat
    try:
        fd = os.open(base, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return False
    try:
        for p in s.get("paths", ()):
            st = stat(p, dir_fd=fd)
            if st.st_mtime_ns != next(stamps) or st.st_size != next(stamps):
                return False
    except (OSError, StopIteration):
        return False
    finally:
        os.close(fd)
    return next(stamps, None) is None


def load(root: str) -> Table | None:
    """The table if it exists, has this layout and is current; else None."""
    try:
        with open(path_of(root), "rb") as f:
            data = f.read()
        if not data.startswith(MAGIC):
            return None
        at = len(MAGIC) + 4
        hot = int.from_bytes(data[len(MAGIC):at], "little")
        table = Table(marshal.loads(memoryview(data)[at:at + hot]))
        table._cold = memoryview(data)[at + hot:]
    except (OSError, ValueError, EOFError, TypeError):
        return None
    return table if table.get("v") == VERSION and fresh(table, root) else None


def dump(table: dict[str, Any]) -> bytes:
    """The file's bytes for a table (see load)."""
    hot = marshal.dumps({k: v for k, v in table.items() if k not in COLD})
    cold = marshal.dumps({k: table.get(k) for k in COLD if table.get(k) is not None})
    return MAGIC + len(hot).to_bytes(4, "little") + hot + cold


def rule_text(root: str, card_id: str) -> str:
    """A rule's body (after its frontmatter), capped: read at the moment it fires."""
    try:
        with open(os.path.join(root, card_id + ".md"), encoding="utf-8") as f:
            text = f.read(MAX_RULE_CHARS * 4)
    except (OSError, UnicodeDecodeError):
        return ""
    from ..cards.frontmatter import body_of  # only when a rule fires: not on every call
    from ..cards.sections import history_span

    if "##" in text and (span := history_span(text)):
        text = text[:span[0]]
    text = body_of(text).strip()
    return text if len(text) <= MAX_RULE_CHARS else text[:MAX_RULE_CHARS - 1] + "…"


# --- build time -------------------------------------------------------------------

def _as_list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if v is not None and str(v).strip()]
    return [str(value)]


def _meta(root: Path, card_id: str) -> dict[str, Any]:
    """A rule's frontmatter (fast path first, YAML when it is not flat)."""
    from ..cards.card import decode, parse
    from ..cards.frontmatter import split
    from ..index.fastmeta import quick_meta

    text = decode((root / f"{card_id}.md").read_bytes())
    span = split(text)
    if not span:
        return {}
    meta = quick_meta(text[span[0]:span[1]])
    return meta if meta is not None else parse(text, card_id).meta


def _agent_written(root: Path, ids: list[str], proposed: set[str]) -> dict[str, str]:
    """Of these rules, those that may not ask or deny, and why: ask and deny need the
    rule's last change to be a person's. Its last commit is the cardmem agent's and the
    file is unchanged since; or it carries `proposed_by` and no one has committed it yet.
    (A person's commit of a proposal, `cardmem review accept` or their own, makes it
    theirs; so does a person's uncommitted edit of a rule without `proposed_by`: agents
    write through commits.)"""
    if not ids:
        return {}
    from ..git import runner as git

    from ..git import status as git_status

    dirty = {p.removesuffix(".md") for p in git_status.changes(root, [f"{i}.md" for i in ids])}
    found = {}
    for cid in ids:
        if cid in dirty:
            if cid in proposed:
                found[cid] = "an agent's proposal (proposed_by) not yet committed by a person"
            continue
        who = git.run(root, "log", "-1", "--format=%an%x00%ae", "--", f"{cid}.md").strip()
        name, _, email = who.partition("\0")
        if email == git.AGENT_EMAIL or name == git.AGENT_NAME:
            found[cid] = "last written by the cardmem agent; a person's commit makes it enforce"
    return found


def _governs(e: dict[str, Any]) -> bool:
    return any(k in e for k in ("bash", "paths", "tools"))


def compile_rules(root: Path, rules: list[Any], projects: dict[str, str]) -> dict[str, Any]:
    """The table for these active rules (cards with id, title, aliases, tags, project)."""
    problems: list[str] = []
    pairs: list[tuple[dict[str, Any], Any]] = []  # (entry, card)
    enforcing: list[str] = []
    for c in rules:
        try:
            meta = _meta(root, c.id)
        except Exception as exc:  # noqa: BLE001 - one broken rule must not cost the table
            problems.append(f"{c.id}: skipped: {' '.join(str(exc).split())}")
            continue
        e: dict[str, Any] = {"id": c.id, "title": " ".join(str(c.title).split())}
        if c.project:
            e["project"] = str(c.project)
        elif c.id.startswith("projects/") and c.id.count("/") >= 2:
            e["project"] = c.id.split("/")[1]
        for item in _as_list(meta.get("applies_to")):
            kind, glob = classify(item)
            if glob:
                e.setdefault({"bash": "bash", "path": "paths", "tool": "tools"}[kind], []).append(glob)
        enforce = str(meta.get("enforce") or "remind").strip().lower()
        if enforce not in ENFORCE:
            problems.append(f"{c.id}: enforce {enforce!r} is not remind, ask or deny; reminding")
            enforce = "remind"
        if enforce != "remind" and not _governs(e):
            problems.append(f"{c.id}: enforce {enforce} without applies_to; reminding")
            enforce = "remind"
        if enforce != "remind":
            enforcing.append(c.id)
            if meta.get("proposed_by"):
                e["proposed_by"] = str(meta["proposed_by"])
        if _governs(e):
            e["enforce"] = enforce  # a rule without applies_to only ever reminds
        pairs.append((e, c))
    by_id = {e["id"]: e for e, _ in pairs}
    proposed = {e["id"] for e, _ in pairs if e.pop("proposed_by", None)}
    for cid, why in _agent_written(root, enforcing, proposed).items():
        by_id[cid]["downgraded"], by_id[cid]["enforce"] = why, "remind"
    # Keywords of rules without applies_to, weighted by how rare they are among rules.
    import math

    kws = [set() if _governs(e) else
           set(words(" ".join([str(c.title), *map(str, c.aliases), *map(str, c.tags)])))
           for e, c in pairs]
    df: dict[str, int] = {}
    for k in kws:
        for w in k:
            df[w] = df.get(w, 0) + 1
    n = max(len(pairs), 1)
    weight = {w: round(math.log(1 + n / d), 3) for w, d in df.items()}
    hits: dict[str, list[str]] = {w: [] for w in df}
    aliases: dict[str, list[str]] = {}  # first word -> ["alias\trule index", ...]
    kw = [""] * len(pairs)  # rule index -> "kw_total kw_n", for relevance
    for i, ((e, c), k) in enumerate(zip(pairs, kws)):
        if not k:
            continue
        e["kw_total"] = round(sum(weight[w] for w in k), 3)
        e["kw_n"] = len(k)
        kw[i] = f"{e['kw_total']} {e['kw_n']}"
        for w in k:
            hits[w].append(str(i))
        for a in {" ".join(str(x).lower().split()) for x in c.aliases}:
            if len(a) >= 4:
                aliases.setdefault(a.split(" ", 1)[0], []).append(f"{a}\t{i}")
    entries = [e for e, _ in pairs]
    # Strings, not nested lists: the hook unmarshals every entry at every call, and
    # parses only those the call's words look up.
    return Table({"v": VERSION, "rules": entries, "governed": _candidates(entries),
                  "keywords": {w: f"{weight[w]} {' '.join(hits[w])}" for w in df},
                  "kw": kw, "aliases": {a: "\n".join(v) for a, v in aliases.items()},
                  "projects": projects, "problems": problems})


def _candidates(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Which governed rules a call can concern, by cheap keys: a Bash pattern's program
    (its first word, when literal), a path pattern's extension (`*.tf`). A hook matches
    only those rules' globs; "rules" holds what matching needs (rule index -> patterns,
    enforce, project), so the titles stay unread until a rule fires."""
    out: dict[str, Any] = {"all": [], "bash": {}, "bash_any": [], "path": {}, "path_any": [],
                           "tool": [], "rules": {}}
    for i, e in enumerate(entries):
        if not _governs(e):
            continue
        out["all"].append(i)
        for g in e.get("bash", ()):
            first = g.split(" ", 1)[0].rsplit("/", 1)[-1]
            if any(ch in first for ch in "*?[") or not first:
                out["bash_any"].append(i)
            else:
                out["bash"].setdefault(first, []).append(i)
        for g in e.get("paths", ()):
            ext = g[1:] if g.startswith("*.") and not any(ch in g[2:] for ch in "*?[/") else ""
            if ext:
                out["path"].setdefault(ext, []).append(i)
            else:
                out["path_any"].append(i)
        if e.get("tools"):
            out["tool"].append(i)
        out["rules"][i] = {k: e[k] for k in ("bash", "paths", "tools", "enforce", "project")
                           if k in e}
    for k in ("bash", "path"):
        out[k] = {key: sorted(set(v)) for key, v in out[k].items()}
    for k in ("bash_any", "path_any"):
        out[k] = sorted(set(out[k]))
    return out


def _stamps(root: Path, entries: list[dict[str, Any]]) -> dict[str, Any]:
    base = str(root) + "/"
    dirs: dict[str, int] = {}
    folders = {"feedback"} | {e["id"].rsplit("/", 1)[0] for e in entries if "/" in e["id"]}
    for top in sorted(folders):
        if top == "feedback":
            dirs["feedback"] = None  # missing until a first rule is saved there
            for d, subdirs, _ in os.walk(base + "feedback"):
                subdirs[:] = [s for s in subdirs if not s.startswith(".")]
                rel = os.path.relpath(d, root).replace(os.sep, "/")
                dirs[rel] = os.stat(d).st_mtime_ns
        else:
            dirs[top] = (_stat(base + top) or [None])[0]
    files = {e["id"]: _stat(base + e["id"] + ".md") or [0, 0] for e in entries}
    return {"dirs": dirs, "files": files, "config": _stat(base + "cardmem.toml")}


def build(store: Any) -> Table:
    """Compile the store's active rules and write the table; returns it."""
    from ..index.pile_view import active_rules, holdings
    from ..root import write_cache

    root = store.root
    rules = active_rules(holdings(store, None).rules)
    # Stamps before the files are read: a rule saved meanwhile leaves the table stale
    # (rebuilt at the next call), never wrong.
    stamps = _stamps(root, [{"id": c.id} for c in rules])
    try:
        projects = {str(k): str(v) for k, v in (store.config.get("projects") or {}).items()}
    except Exception:  # noqa: BLE001 - a broken cardmem.toml is reported elsewhere
        projects = {}
    table = compile_rules(root, rules, projects)
    # The rules kept, in table order, then those skipped as unreadable: path, and a flat
    # list of (mtime_ns, size) for fresh() to walk.
    kept = [e["id"] for e in table["rules"]]
    skipped = set(stamps["files"]) - set(kept)
    order = kept + [cid for cid in stamps["files"] if cid in skipped]
    files = stamps.pop("files")
    stamps["paths"] = [f"{cid}.md" for cid in order]
    stamps["stat"] = [x for cid in order for x in files.get(cid, [0, 0])]
    table["stamps"] = stamps
    try:
        table["threshold"] = float(store.config["rules"]["relevance_threshold"])
    except Exception:  # noqa: BLE001 - a broken cardmem.toml is reported elsewhere
        table["threshold"] = THRESHOLD
    store.state_dir  # noqa: B018 - makes .cardmem/
    write_cache(root / ".cardmem" / NAME, dump(table))
    (root / ".cardmem" / "triggers.json").unlink(missing_ok=True)  # layout 2's file
    return table


def ensure(root: str) -> tuple[dict[str, Any], bool]:
    """(the current table, whether it was rebuilt now)."""
    table = load(root)
    if table is not None:
        return table, False
    from ..root import StoreRoot

    return build(StoreRoot.open(root)), True
