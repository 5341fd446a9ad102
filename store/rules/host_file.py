"""The rules file: every active rule, whole, in one Markdown file a host loads at start-up.

A host that cuts long context (Claude Code shows at most 10,000 characters of a hook's
context) would hide most rules of a large store. Hosts load their own rules files whole
(Claude Code: `~/.claude/rules/*.md`, as the user's instructions), so the rules travel
there, and the session's context only says how many there are and what changed.

A host reads its rules files before the session-start hook runs, so the file the host
loaded is the one written last time. `sync` compares it with the rules as they are now:
what changed since (new, edited, removed rules) is returned for the session's context, and
the file is rewritten for the next session. What each file holds (per rule: stamp and
digest) is kept in the store's `.cardmem/rules-files.json`, keyed by the file's path, so
the comparison reads no rule body unless its file changed. The file is ours only while
its first line is MARK: anything else at that path is never overwritten or removed.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable

MARK = "<!-- cardmem rules file: generated from your cardmem store; edit the cards, not this file -->"
STATE = "rules-files.json"  # in .cardmem/
VERSION = 1  # of the state's layout and the file's rendering: another version rewrites
LIMIT = 100_000  # characters of a rules file ([context] rules_file_chars): ~25k tokens


class Delivery:
    """What a sync found: the rules the host did not load as they are now, and the file."""

    __slots__ = ("path", "total", "changed", "removed", "wrote", "error", "by_project",
                 "listed")

    def __init__(self, path: Path) -> None:
        self.path = path
        self.total = 0
        self.changed: list[Any] = []  # rules new or edited since the host loaded the file
        self.removed: list[str] = []  # ids the loaded file holds that are no longer rules
        self.wrote = False  # the file was rewritten (for the next session)
        self.error: str | None = None  # set: the file could not be used; rules go inline
        self.by_project: dict[str, int] = {}  # project -> its own rules' count
        self.listed = 0  # rules the file shows by title and description only (its limit)

    @property
    def ok(self) -> bool:
        return self.error is None


def rule_project(card: Any) -> str | None:
    """The project a rule is scoped to (its `project`, or its folder under projects/)."""
    if card.project:
        return str(card.project)
    parts = card.id.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "projects" else None


def _one_line(s: str) -> str:
    return " ".join(s.split())


def block(card: Any) -> str:
    """A rule, whole: its title and id, its description, its body."""
    desc = f"\n_{_one_line(card.description)}_" if card.description else ""
    return f"### {_one_line(card.title)} (`{card.id}`){desc}\n{card.body.strip()}\n"


def _digest(card: Any) -> str:
    key = f"{rule_project(card) or ''}\0{block(card)}"
    return hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _described(card: Any) -> str:
    desc = f" — {_one_line(card.description)}" if card.description else ""
    return f"- {_one_line(card.title)} (`{card.id}`){desc}"


def _titled(card: Any) -> str:
    return f"- {_one_line(card.title)} (`{card.id}`)"


def render(root: Path, rules: Iterable[Any], limit: int = LIMIT) -> tuple[str, int]:
    """The file's text, and how many rules it lists by title and description only.

    Global rules first, then each project's, each group by id. Every rule is at least
    listed; rules are shown whole, in that order, while the file stays within limit
    characters (a host loads it into every session), the rest by title and description.
    """
    groups: dict[str, list[Any]] = {}
    for c in sorted(rules, key=lambda c: c.id):
        groups.setdefault(rule_project(c) or "", []).append(c)
    ordered = [c for p in sorted(groups) for c in groups[p]]
    # Every rule costs at least its title line; what is left of the limit upgrades rules,
    # in order, to their whole text, then (once one no longer fits) to title and
    # description. The steps only go down, as in the session's pile.
    shown = {c.id: _titled(c) for c in ordered}
    room = limit - sum(len(x) + 1 for x in shown.values()) - 2000  # headings and preamble
    step, whole = 0, set()
    for c in ordered:
        for render_as in (block, _described)[step:]:
            extra = len(render_as(c)) - len(shown[c.id])
            if extra <= room:
                room -= extra
                shown[c.id] = render_as(c)
                whole.update([c.id] if render_as is block else [])
                break
            step += 1
    total, listed = len(ordered), len(ordered) - len(whole)
    out = [MARK, "# Standing rules (cardmem memory)", "",
           f"The rules below ({total} in all) are the user's standing instructions, kept as "
           f"cards in the cardmem store at {root}. Follow them in every session; a rule "
           "listed under a project applies only in sessions "
           "of that project (the session's cardmem context names its project). To change a "
           "rule, the user edits its card (`cardmem edit ID`); this file is rewritten from "
           "the cards.", ""]
    if listed:
        out += [f"{listed} rules are listed by title (and description) only, to keep this file "
                f"within {limit:,} characters: they are in force all the same; read one whole "
                "with `cardmem show ID` (or the MCP tool `read_card`) before acting on it.", ""]
    for project in sorted(groups):
        g = groups[project]
        out.append(f"## Rules for project `{project}` only ({len(g)})" if project
                   else f"## Rules for every session ({len(g)})")
        out.append("")
        out += [shown[c.id] for c in g]
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n", listed


def _stamp(root: str, card_id: str) -> list[int] | None:
    try:
        st = os.stat(f"{root}/{card_id}.md")
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


def _state_path(root: Path) -> Path:
    return root / ".cardmem" / STATE


def _load_state(root: Path) -> dict[str, Any]:
    try:
        data = json.loads(_state_path(root).read_text())
        return data if isinstance(data, dict) and data.get("v") == VERSION else {"v": VERSION}
    except (OSError, ValueError):
        return {"v": VERSION}


def _save_state(root: Path, state: dict[str, Any]) -> None:
    from ..root import write_cache

    write_cache(_state_path(root), json.dumps(state).encode())


def _file_sha(path: Path) -> str | None:
    try:
        return hashlib.sha1(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _is_ours(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.readline().rstrip(b"\r\n") == MARK.encode()
    except OSError:
        return False


def sync(root: Path, rules: list[Any], path: Path, *, dry_run: bool = False,
         limit: int = LIMIT) -> Delivery:
    """Compare the rules file at path (as the host loaded it) with the rules now; rewrite
    it if they differ (unless dry_run: then only report). Never raises: a failure is
    Delivery.error, and then every rule is reported changed (the caller shows them inline)."""
    d = Delivery(path)
    d.total = len(rules)
    for c in rules:
        if p := rule_project(c):
            d.by_project[p] = d.by_project.get(p, 0) + 1
    try:
        return _sync(Path(root), rules, Path(path), d, dry_run, limit)
    except Exception as exc:  # noqa: BLE001 - a session must start whatever happens
        d.error = " ".join(str(exc).split()) or type(exc).__name__
        d.changed, d.removed = list(rules), []
        return d


def _sync(root: Path, rules: list[Any], path: Path, d: Delivery, dry_run: bool,
          limit: int) -> Delivery:
    key = str(path)
    state = _load_state(root)
    rec = state.get(key) if isinstance(state.get(key), dict) else None
    on_disk = _file_sha(path)
    if on_disk is not None and not _is_ours(path):
        d.error = f"{path} exists and was not written by cardmem; left as it is"
        d.changed = list(rules)
        return d
    # What the host loaded this session: the file as recorded, if it is still that file.
    loaded: dict[str, list[Any]] = rec["rules"] if rec and rec.get("sha") == on_disk \
        and rec.get("limit", LIMIT) == limit else {}
    d.listed = int(rec.get("listed", 0)) if loaded else 0
    root_s = str(root)
    now: dict[str, list[Any]] = {}
    for c in rules:
        st = _stamp(root_s, c.id)
        old = loaded.get(c.id)
        if old and st and old[:2] == st:
            now[c.id] = old
            continue
        dig = _digest(c)
        now[c.id] = [*(st or [0, 0]), dig]
        if not old or old[2] != dig:
            d.changed.append(c)
    d.removed = sorted(set(loaded) - set(now))
    if (on_disk is not None and now == loaded) or dry_run:
        return d  # the host loaded exactly these rules, or only a report was asked for
    if on_disk is not None and loaded and not d.changed and not d.removed:
        state[key]["rules"] = now  # files touched, none changed: new stamps, same text
        _save_state(root, state)
        return d
    rendered, d.listed = render(root, rules, limit)
    text = rendered.encode("utf-8", "surrogatepass")
    path.parent.mkdir(parents=True, exist_ok=True)
    from ..root import write_cache  # its temp file is a dot file: no host loads it

    write_cache(path, text)
    d.wrote = True
    state[key] = {"sha": hashlib.sha1(text).hexdigest(), "rules": now, "limit": limit,
                  "listed": d.listed}
    _save_state(root, state)
    return d


def current_rules(store: Any) -> list[Any]:
    """The rules in force: active feedback cards, by id (this file's, and exports.py's)."""
    from ..index.pile_view import active_rules, holdings

    return active_rules(holdings(store, None).rules)


def limit_of(store: Any) -> int:
    """[context] rules_file_chars of the store's settings (LIMIT if unreadable)."""
    try:
        return int(store.config["context"].get("rules_file_chars", LIMIT))
    except Exception:  # noqa: BLE001 - a broken cardmem.toml is reported elsewhere
        return LIMIT


def deliver(store: Any, path: Path, *, dry_run: bool = False) -> Delivery:
    """Write (or bring up to date) the rules file at path for this store's rules now."""
    return sync(store.root, current_rules(store), Path(path), dry_run=dry_run,
                limit=limit_of(store))


def refresh(store: Any) -> list[Delivery]:
    """Bring every rules file this store delivers to up to date (after its rules changed),
    so the next session loads them current. A store with none costs one file read."""
    paths = [Path(k) for k in _load_state(Path(store.root)) if k != "v"]
    if not paths:
        return []
    rules = current_rules(store)
    return [sync(store.root, rules, p, limit=limit_of(store)) for p in paths]


def remove(root: Path | None, path: Path) -> bool:
    """Delete the rules file at path if it is ours (uninstall); forget it in the store."""
    gone = False
    if _is_ours(path):
        path.unlink(missing_ok=True)
        gone = True
        try:
            path.parent.rmdir()  # only if empty: the rules folder we may have made
        except OSError:
            pass
    if root is not None:
        state = _load_state(Path(root))
        if state.pop(str(path), None) is not None:
            try:
                _save_state(Path(root), state)
            except OSError:
                pass
    return gone
