"""Session start for every host: the store's rung-1 pile (rules, a digest), fitted to the
host's cap, and the lines the person should see when memory is degraded (DESIGN §5).

Shared by the adapters (hosts/<host>): each says how many characters its host shows whole
and in which field; the text is the same. Never raises: no store, a broken card, a failing
git -> what could be assembled, and the person is told in one line.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from cardmem.store.wording import plural
# Imports inside functions: the SessionStart hook loads only what this start needs (with no
# store, or an empty retry queue, less).

MAX_CONTEXT = 9_500  # Claude Code shows the model at most 10,000 characters


def host_len(text: str, unit: str = "utf-16") -> int:
    """Characters as the host counts them: UTF-16 code units (Claude Code: an emoji is
    two), or UTF-8 bytes (Codex: a token is four bytes, so Cyrillic costs twice ASCII)."""
    if unit == "utf-8":
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def fit_host(text: str, cap: int = MAX_CONTEXT, unit: str = "utf-16") -> tuple[str, int]:
    """text cut at a line end to at most cap host characters, with a closing line saying
    so; and how many characters were cut (0: it fit). Past the cap the host would show a
    2 KB preview instead of the whole, so nothing longer is ever handed over."""
    size = host_len(text, unit)
    if size <= cap:
        return text, 0
    note = "\n(cardmem: context cut at {} of {} characters to fit the host; " \
           "`cardmem context` shows it whole)\n"
    room = cap - host_len(note.format(cap, size), unit)
    lines, kept, used = text.split("\n"), [], 0
    for line in lines:
        n = host_len(line, unit) + 1
        if used + n > room:
            break
        kept.append(line)
        used += n
    return "\n".join(kept) + note.format(used, size), size - used


def session_start_context(payload: dict[str, Any], root: Path,
                          rules_file: Path | None = None, cap: int = MAX_CONTEXT,
                          host: str = "Claude Code", unit: str = "utf-16"
                          ) -> tuple[str, str, list[str]]:
    """(the context, outcome for the log, lines for the user) for the store at root, at
    most `cap` characters as the host counts them (`unit`, host_len's).

    The user lines become the hook's message to the person: memory that is degraded is
    said to the person, not only to the model. The cards shown are noted for the session,
    so per-prompt memory does not show them again (hosts/prompt.py). Never raises.
    """
    try:
        from cardmem.store.errors import CardmemError
        from cardmem.store.root import StoreRoot  # no YAML, writer or git to import

        store = StoreRoot.open(root)
    except Exception as exc:  # noqa: BLE001 - the session must start whatever happens
        why = getattr(exc, "why", None) or str(exc) or type(exc).__name__
        return (f"(cardmem: no memory loaded this session: store {root}: {why})",
                f"no store: {why}", [f"no memory loaded: store {root}: {why}"])
    cwd = payload.get("cwd") or os.getcwd()
    user: list[str] = []
    try:
        from cardmem.store.context import session_context

        note = ""
        try:
            budget = min(int(store.config["context"]["budget_chars"]), cap)
        except CardmemError as exc:  # a malformed cardmem.toml: go on with the defaults
            import copy

            from cardmem.store import config

            store.__dict__["config"] = copy.deepcopy(config.DEFAULTS)
            budget, note = config.DEFAULTS["context"]["budget_chars"], exc.why
            user.append(f"cardmem.toml ignored ({note})")
        pile = session_context(store, cwd=cwd, budget=budget, rules_file=rules_file)
        size = host_len(pile.text, unit)
        # A host that counts bytes (Codex), given text heavy in wide characters (a fifth
        # more bytes than characters): a smaller pile, once, so whole rules fit the bytes.
        if size > cap and size * 5 > host_len(pile.text) * 6:
            budget = max(budget * cap // size - 200, 0)
            pile = session_context(store, cwd=cwd, budget=budget, rules_file=rules_file)
        store.note_reads(pile.whole())  # one append: `stale` asks when a card was read
        text = pile.text
        if note:
            text += f"\n(cardmem: cardmem.toml ignored, defaults used: {note})\n"
        if pile.notices:
            text += (f"\n(cardmem: {len(pile.notices)} card file(s) could not be read; "
                     "run `cardmem doctor`)\n")
            user.append(f"{len(pile.notices)} card file(s) unreadable")
        d = pile.delivered
        if d is not None and not d.ok:
            user.append(f"rules file not used ({d.error})")
        titled = sum(1 for e in pile.left_out if "rule shown by title" in e["reason"]
                     or "changed rule not shown" in e["reason"])
        if titled:
            user.append(f"{titled} rule(s) reached the model by title only"
                        + ("" if d is not None and d.ok or host != "Claude Code" else
                           "; `cardmem install claude-code` loads every rule whole"))
        from cardmem.store.learning.retry import retry_backlog

        backlog = retry_backlog(store.root)  # one listdir
        if backlog["waiting"] or backlog["given_up"]:
            user.append(f"{backlog['waiting']} session(s) wait to be learned"
                        + (f", {backlog['given_up']} given up" if backlog["given_up"] else "")
                        + " (`cardmem doctor` says why)")
        if pile.proposals:
            user.append(f"{pile.proposals} proposed rule(s) await your review "
                        "(`cardmem review`)")
        text, cut = fit_host(text, cap, unit)
        if cut:
            user.append(f"session context cut by {cut} characters to fit {host}")
        from .prompt import note_shown

        note_shown(root, str(payload.get("session_id") or ""), pile.addresses)
        delivery = ""
        if d is not None:
            delivery = (f", rules file {'error' if not d.ok else 'rewritten' if d.wrote else 'current'}"
                        f" ({plural(d.total, 'rule')}, {len(d.changed)} changed)")
        return text, f"ok: {plural(len(pile.addresses), 'card')}, {host_len(text, unit)} chars{delivery}" + (
            f", {len(pile.notices)} unreadable" if pile.notices else "") + (
            f", cut {cut}" if cut else ""), user
    except Exception as exc:  # noqa: BLE001
        why = " ".join(str(exc).split()) or type(exc).__name__
        text, _ = fit_host(_rule_titles(root) + f"\n(cardmem: memory only partly loaded: {why})\n",
                           cap, unit)
        return text, f"degraded: {why}", [f"memory only partly loaded: {why}"]


def _rule_titles(root: Path) -> str:
    """The last resort: the rule files' names, so no rule is invisible."""
    from cardmem.store.cards.paths import id_of_path
    from cardmem.store.cards.status import says_proposed

    try:
        files = [p for p in sorted((root / "feedback").glob("*.md"))
                 if id_of_path(f"feedback/{p.name}")]
    except OSError:
        files = []
    names = []
    for p in files:
        try:
            with p.open(encoding="utf-8", errors="replace") as fh:
                if says_proposed(fh.read(4096)):  # an agent's proposal is no rule
                    continue
        except OSError:
            pass
        names.append(p.stem)
    if not names:
        return "# Memory (cardmem)\n"
    return "# Memory (cardmem)\n## Rules (titles only)\n" + "".join(
        f"- `feedback/{n}`\n" for n in names)
