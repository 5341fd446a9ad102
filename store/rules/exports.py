"""The live rules in the files of hosts that read files, not hooks (`cardmem export`).

    result = export(store, "agents-md", Path("~/src/acme"), project="acme")
    result.files      # [(path, "written" | "unchanged" | "removed" | BROKEN_LEFT)]
    result.left_out   # rule ids that did not fit the host's cap

Each host reads its own instruction file into every session, within its own cap:

    agents-md             AGENTS.md; Codex reads at most 32 KiB of AGENTS.md in all
    gemini-md             GEMINI.md; Gemini CLI sends it with every prompt and documents
                          no cap, so it gets AGENTS.md's 32 KiB
    cursor-rules          .cursor/rules/cardmem.mdc (alwaysApply), and a rule with path
                          globs in `applies_to` as .cursor/rules/cardmem-ID.mdc with `globs`,
                          which Cursor attaches when a matching file is touched; Cursor's
                          docs ask for rules under 500 lines, each file held to that
    copilot-instructions  .github/copilot-instructions.md, and a path rule as
                          .github/instructions/cardmem-ID.instructions.md with `applyTo`;
                          Copilot's code review reads the first 4,000 characters of an
                          instructions file, each file held to that

The rules are the ones the Claude Code rules file shows (host_file: active feedback cards,
the store's rules then the project's), each whole (host_file.block) or not at all: what
does not fit is named as left out. They go inside a marked block (marked_block.py); the
person's text around it is kept byte for byte, and a file is rewritten only when its
bytes change, so a second run changes nothing. A path glob is what `applies_to` says is a
path (triggers.py's table: the one reading of `applies_to`).

An export is kept current: `export_and_keep` notes it in the store's
`.cardmem/exports.json`, and `refresh` (run by store/derived.py after every write that
changes a rule, and by doctor) writes each again. The list stays on this machine,
uncommitted: its folders are this machine's, and a store shared by git must not make a
teammate's cardmem write into paths that are someone else's there. An export is kept while its block is there: a person who
takes the block out (or deletes the file, or the folder) has ended it, and it is forgotten.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import CardmemError
from .host_file import block, current_rules, rule_project
from .triggers import ensure
from ..root import write_cache
from .marked_block import (BEGIN, BEGIN_LINE, BROKEN_LEFT, END, parts, read, splice, take_out,
                           write)

PREFIX = "cardmem-"  # of the per-rule files an export owns


def _bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogateescape"))


def _lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


@dataclass(frozen=True)
class Host:
    name: str
    main: str  # the file every session reads, relative to the project's folder
    cap: int
    measure: Callable[[str], int]
    cap_said: str  # the cap, as the left-out line says it
    scoped: str | None = None  # folder of the per-rule files with globs, or None
    suffix: str = ""

    def frontmatter(self, rule: "Rule | None") -> str:
        """The per-file header Cursor and Copilot read (empty for the Markdown hosts)."""
        if self.name == "cursor-rules":
            if rule is None:
                return ('---\ndescription: "Standing rules from the cardmem store"\n'
                        "globs:\nalwaysApply: true\n---\n")
            return (f"---\ndescription: {json.dumps(rule.summary, ensure_ascii=False)}\n"
                    f"globs: {','.join(rule.globs)}\nalwaysApply: false\n---\n")
        if self.name == "copilot-instructions" and rule is not None:
            return f"---\napplyTo: {json.dumps(','.join(rule.globs), ensure_ascii=False)}\n---\n"
        return ""


HOSTS = {h.name: h for h in (
    Host("agents-md", "AGENTS.md", 32 * 1024, _bytes, "Codex's 32 KiB for AGENTS.md"),
    Host("gemini-md", "GEMINI.md", 32 * 1024, _bytes, "32 KiB"),
    Host("cursor-rules", ".cursor/rules/cardmem.mdc", 500, _lines,
         "Cursor's 500 lines a rule file", ".cursor/rules", ".mdc"),
    Host("copilot-instructions", ".github/copilot-instructions.md", 4000, len,
         "the 4,000 characters Copilot reads of an instructions file",
         ".github/instructions", ".instructions.md"),
)}


@dataclass
class Rule:
    id: str
    text: str  # host_file.block: title, id, description, body
    summary: str  # title, and description
    globs: list[str] = field(default_factory=list)  # the path globs of its applies_to


@dataclass
class Result:
    host: str
    total: int = 0  # live rules for this project
    shown: list[str] = field(default_factory=list)  # in the main file
    scoped: list[str] = field(default_factory=list)  # in files of their own, with globs
    left_out: list[str] = field(default_factory=list)
    files: list[tuple[Path, str]] = field(default_factory=list)


def live_rules(store: Any, project: str | None) -> list[Rule]:
    """The store's active rules, then the project's, each with its path globs."""
    table, _ = ensure(str(store.root))
    globs = {e["id"]: [g for p in e.get("paths", []) for g in _unbrace(p)]
             for e in table["rules"]}
    rules = [c for c in current_rules(store) if rule_project(c) in (None, project)]
    rules.sort(key=lambda c: (rule_project(c) is not None, c.id))
    return [Rule(c.id, block(c), " ".join(f"{c.title} — {c.description}".split())
                 if c.description else " ".join(str(c.title).split()), globs.get(c.id, []))
            for c in rules]


def _unbrace(glob: str) -> list[str]:
    """`src/*.{js,ts}` as `src/*.js` and `src/*.ts`: both hosts split globs on commas."""
    m = re.search(r"\{([^{}]*,[^{}]*)\}", glob)
    if not m:
        return [glob]
    return [g for alt in m.group(1).split(",")
            for g in _unbrace(glob[:m.start()] + alt + glob[m.end():])]


def export(store: Any, host_name: str, folder: Path, project: str | None = None) -> Result:
    """Write (or bring up to date) the host's files under folder for the rules now."""
    host = HOSTS[host_name]
    rules = live_rules(store, project)
    res = Result(host.name, total=len(rules))
    scoped = [r for r in rules if r.globs] if host.scoped else []
    main = [r for r in rules if r not in scoped]
    wanted: dict[Path, str] = {}
    for r in scoped:
        path = folder / host.scoped / f"{PREFIX}{r.id.replace('/', '--')}{host.suffix}"
        text = splice(read(path), _block(host, [r.text], [], ""), host.frontmatter(r), path)
        if host.measure(text) <= host.cap:
            wanted[path] = text
            res.scoped.append(r.id)
        else:
            res.left_out.append(r.id)
    main_path, existing = folder / host.main, read(folder / host.main)
    where = (f"{len(res.scoped)} of them apply only to the files their globs match, from "
             f"{host.scoped}/{PREFIX}*{host.suffix}. " if res.scoped else "")
    head = _head(store.root, len(rules), where)
    shown, res.left_out, names = _fit(host, existing, main, res.left_out, head)
    res.shown = [r.id for r in shown]
    wanted[main_path] = splice(existing, _block(host, [r.text for r in shown], res.left_out,
                                                head, names), host.frontmatter(None))
    for path, text in wanted.items():
        res.files.append((path, write(path, text)))
    if host.scoped:
        res.files += _remove_stale(folder / host.scoped, host.suffix, set(wanted))
    return res


def _head(root: Any, total: int, where: str) -> str:
    return (f"## Standing rules (cardmem memory)\n\n"
            f"These are the user's standing instructions ({total} rules), kept as cards in "
            f"the cardmem store at {root}; follow them in every session. {where}"
            "For more of the user's memory, use the cardmem MCP server (`cardmem mcp`: "
            "`search`, `read_card`, `memory_map`) or, in a shell, `cardmem search QUERY` "
            "and `cardmem show ID`.\n\n")


def _block(host: Host, texts: list[str], left: list[str], head: str, names: int | None = None
           ) -> str:
    body = "\n".join(t.rstrip("\n") + "\n" for t in texts)
    if left:
        k = len(left) if names is None else names
        named = ", ".join(f"`{i}`" for i in left[:k])
        more = (f"{', ' if k else ''}and {len(left) - k} more (`cardmem list --type feedback`)"
                if k < len(left) else "")
        gap = "\n" if texts else ""
        body += (f"{gap}{len(left)} rules are left out to keep this file within "
                 f"{host.cap_said}: {named}{more}. They are in force all the same: read one "
                 "with `cardmem show ID` (or the MCP tool `read_card`).\n")
    return f"{BEGIN.format(host=host.name)}\n{head}{body}{END}"


def _fit(host: Host, existing: str, rules: list[Rule], left_already: list[str], head: str
         ) -> tuple[list[Rule], list[str], int]:
    """(rules shown whole, ids left out, how many of those the left-out line names): whole
    rules in order while the file keeps within the host's cap, the left-out line counted."""
    # The person's text around the block, found once (a broken block is said here, before
    # anything else): each trial below only joins the block between them.
    before, after = parts(existing, host.frontmatter(None), host.main)

    def fits(shown: list[Rule], left: list[str], names: int) -> bool:
        text = before + _block(host, [r.text for r in shown], left, head, names) + after
        return host.measure(text) <= host.cap

    if not fits([], [r.id for r in rules] + left_already, 0):
        raise CardmemError(host.main, f"its own text leaves no room within {host.cap_said} "
                                      "for the rules' block; nothing was written")
    shown: list[Rule] = []
    for r in rules:  # whole rules, first fit: a short rule after a long one may fit
        if fits([*shown, r], [], 0):
            shown.append(r)
    order = {r.id: n for n, r in enumerate(rules)}

    def left_out() -> list[str]:
        ids = {r.id for r in shown}
        return sorted((r.id for r in rules if r.id not in ids), key=order.get) + left_already

    while left_out() and shown and not fits(shown, left_out(), 0):
        shown.pop()  # room for the left-out line itself
    left = left_out()
    names = len(left)
    while names and not fits(shown, left, names):
        names -= 1
    return shown, left, names


def _remove_stale(folder: Path, suffix: str, keep: set[Path]) -> list[tuple[Path, str]]:
    """Per-rule files of ours whose rule is gone or no longer has globs: the block goes,
    and the file with it unless a person wrote something of their own in it."""
    out: list[tuple[Path, str]] = []
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob(f"{PREFIX}*{suffix}")):
        if path not in keep:
            out += take_out(path, ours_front=True)
    return out


TARGETS = "exports.json"  # in .cardmem/: the exports this machine keeps current


def _targets_path(root: Any) -> Path:
    return Path(root) / ".cardmem" / TARGETS


def targets(root: Any) -> list[dict[str, Any]]:
    """The exports kept current for the store at root: {host, folder, project}."""
    try:
        data = json.loads(_targets_path(root).read_text("utf-8"))
    except (OSError, ValueError):
        return []
    items = data.get("targets") if isinstance(data, dict) else None
    return [t for t in items or [] if isinstance(t, dict) and t.get("host") in HOSTS
            and isinstance(t.get("folder"), str)]


def _save(root: Any, items: list[dict[str, Any]]) -> None:
    path = _targets_path(root)
    path.parent.mkdir(exist_ok=True)
    write_cache(path, json.dumps({"v": 1, "targets": items}, indent=1).encode())


def locked(root: Any) -> Any:
    """The store's write lock, which a commit's `refresh` holds (store/derived.py): so a
    refresh that read the list before an export ended cannot write its block back."""
    from ..config import load
    from ..git.writer import write_lock

    return write_lock(Path(root), float(load(Path(root))["store"]["lock_timeout_s"]))


def export_and_keep(store: Any, host_name: str, folder: Path, project: str | None = None,
                    by: str | None = None) -> Result:
    """export, then keep it current from now on, both under the store's write lock: a
    commit's refresh or an `uninstall` cannot write or end it between the two (an old
    block written back after theirs, a withdrawn export noted again). `by`: what made it,
    when that can end it (`install codex`: `uninstall codex` does)."""
    with locked(store.root):
        res = export(store, host_name, folder, project)
        where = str(Path(folder).resolve())
        items = [t for t in targets(store.root)
                 if (t["host"], t["folder"]) != (host_name, where)]
        _save(store.root, [*items, {"host": host_name, "folder": where, "project": project,
                                    **({"by": by} if by else {})}])
    return res


def withdraw(root: Any, by: str) -> list[tuple[Path, str]]:
    """End the exports `by` made: forgotten, and their blocks taken out of the files (a
    file cardmem wrote alone goes). The files changed."""
    if not any(t.get("by") == by for t in targets(root)):
        return []  # nothing to end: no lock to wait for
    with locked(root):
        mine = [t for t in targets(root) if t.get("by") == by]
        _save(root, [t for t in targets(root) if t not in mine])
        out: list[tuple[Path, str]] = []
        for t in mine:
            host, folder = HOSTS[t["host"]], Path(t["folder"])
            out += take_out(folder / host.main, ours_front=bool(host.frontmatter(None)))
            if host.scoped:
                out += _remove_stale(folder / host.scoped, host.suffix, set())
    return out


def refresh(store: Any) -> list[tuple[dict[str, Any], str, str]]:
    """Every remembered export written again for the rules now: (target, "written" |
    "unchanged" | "forgotten" | "failed", why). One whose block is gone is forgotten; one
    that fails (a block broken by hand, a file its person filled to the cap) is left as
    it is, and said. Never raises; a store with none costs one file read. Call holding
    the store's write lock (`locked`)."""
    out: list[tuple[dict[str, Any], str, str]] = []
    gone: list[dict[str, Any]] = []
    for t in targets(store.root):
        folder = Path(t["folder"])
        main = folder / HOSTS[t["host"]].main
        try:
            ours = folder.is_dir() and bool(BEGIN_LINE.search(read(main)))
        except CardmemError:
            ours = True  # unreadable now: kept, and export says why
        if not ours:
            out.append((t, "forgotten", f"no cardmem block in {main} any more"))
            gone.append(t)
            continue
        try:
            res = export(store, t["host"], folder, t.get("project"))
            changed = any(a not in ("unchanged", BROKEN_LEFT) for _, a in res.files)
            out.append((t, "written" if changed else "unchanged", ""))
        except Exception as exc:  # noqa: BLE001 - a commit, a doctor run must go on
            out.append((t, "failed", " ".join(str(exc).split()) or type(exc).__name__))
    if gone:
        try:  # read again: an export remembered meanwhile stays
            _save(store.root, [t for t in targets(store.root) if t not in gone])
        except OSError:
            pass
    return out
