"""Rules at the point of action, for every host: the rule that governs a call reaches the
agent as it acts.

    python -S …/hosts/pretool_start.py [--host HOST] [--store PATH]   (as installed)
    python -m cardmem.hosts.pretool [--host HOST] [--store PATH]      (JSON on stdin and out)

The host runs it after the model has built a tool call and before the tool runs (the
shell, edits and writes, and MCP tools that write; each adapter's install says which).
It reads one file, the store's compiled trigger table (store/rules/triggers.py), and
decides, in common terms (`respond`) that the host's adapter puts in its own fields:

- a `deny` rule matched: refused, the reason naming the rule, the pattern, the command it
  matched and the rule's text (the host hands the reason to the model; the tool does not
  run);
- an `ask` rule matched: a question with the rule as the reason (a host that does not
  honour `ask`, Codex, gets a refusal with the reason instead);
- `remind` rules, and at most one rule without `applies_to` whose words the call clearly
  shares (not the same one twice in a row in a session): text for the model, where the
  host takes it; the call runs;
- nothing matched: no output at all.

It never breaks a session: any failure, an unreadable payload included, lets the call
through, and is logged in `.cardmem/hooks.log` (`cardmem doctor` shows it). Every firing
is counted (hosts/firings.py). Imports are kept to os, marshal and the matcher (no json,
re or pathlib; fnmatch only for a pattern with `?` or `[` that may match): the hook runs
before every such tool call, started without `site` (hosts/pretool_start.py).
"""
from __future__ import annotations

import os
import sys
import time

from . import hookjson

TYPE_CHECKING = False  # typing's own constant would cost the hook the typing module
if TYPE_CHECKING:
    from .event import Event

CHILD_ENV = "CARDMEM_HOOK_CHILD"  # as hosts/hook.py: idle inside our own claude -p
SESSIONS = "pretool-sessions.json"  # in .cardmem/: session -> last relevance reminder
MAX_TEXT = 8000  # the host shows 10,000 characters of a hook's text whole


def _root(store_path: str | None) -> str:
    if store_path:
        return os.path.abspath(os.path.expanduser(store_path))
    from cardmem.store.where import default_store

    return os.path.abspath(default_store())


def _last(root: str, session: str) -> str | None:
    from . import session_notes

    note = session_notes.load(os.path.join(root, ".cardmem", SESSIONS)).get(session)
    return note[0] if isinstance(note, list) and note and isinstance(note[0], str) else None


def _remember_last(root: str, session: str, rule: str) -> None:
    from . import session_notes

    path = os.path.join(root, ".cardmem", SESSIONS)
    data = session_notes.load(path)
    data[session] = [rule, time.time()]
    session_notes.save(path, data, lambda note: note[1])


def _block(root: str, f: dict) -> str:
    from cardmem.store.rules.triggers import rule_text

    body = rule_text(root, f["id"])
    return f"### {f['title']} (`{f['id']}`)\n" + (body + "\n" if body else "")


def respond(root: str, fired: list[dict]) -> dict:
    """What fired, in the hosts' common terms ({} for nothing): `decision` ("deny", "ask"
    or ""), `reason` (for the model, with the rule's text), `context` (reminders for the
    model, when nothing is refused), `user` (a line for the person). The adapter puts
    them in its host's fields (hosts/<host>)."""
    if not fired:
        return {}
    deny = [f for f in fired if f["action"] == "deny"]
    ask = [f for f in fired if f["action"] == "ask"]
    remind = [f for f in fired if f["action"] == "remind"]
    out: dict = {"decision": "", "reason": "", "context": "", "user": ""}
    if deny:
        out["decision"] = "deny"
        out["reason"] = _decided(root, deny, lambda names, why: (
            f"refused by the user's rule {names} ({why}). The command did not run, not even "
            "the parts before the match. Do not work around the rule: if this step is needed, "
            f"tell the user and let them run it or change the rule (`cardmem edit "
            f"{deny[0]['id']}`)."))
        out["user"] = "cardmem: refused by rule " + ", ".join(f["id"] for f in deny)
    elif ask:
        out["decision"] = "ask"
        out["reason"] = _decided(root, ask, lambda names, why: (
            f"the user's rule {names} asks for confirmation before this call ({why})."))
    if remind and not deny:
        lines = []
        for f in remind:
            what = ("a rule that may bear on it" if f["kind"] == "relevance"
                    else "the user's rule that governs it")
            lines.append(f"cardmem memory, for the call you are about to make: {what} "
                         f"(`{f['id']}`; {f['why']}):\n" + _block(root, f))
        out["context"] = _fit("\n".join(lines))
    return out


def _decided(root: str, rules: list[dict], said) -> str:
    """A refusal's or a question's reason: what `said(names, why)` says of the rules,
    then each rule's text."""
    names = ", ".join(f"`{f['id']}`" for f in rules)
    why = "; ".join(f"{f['id']}: {f['why']}" for f in rules)
    return _fit(f"cardmem memory: {said(names, why)}\n\n"
                + "\n".join(_block(root, f) for f in rules))


def _fit(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 40] + "\n(cut: `cardmem show ID`)\n"


def handle(ev: "Event", root: str) -> tuple[dict, str]:
    """(what fired in common terms, {} for nothing; the log outcome, "" when nothing is
    worth a log line)."""
    from cardmem.store.rules import triggers
    from cardmem.store.rules.match import decide

    table = triggers.load(root)
    rebuilt = table is None
    if rebuilt:  # a rule changed by hand: read the cards, with the installed packages
        if sys.flags.no_site and "site" not in sys.modules:  # by hosts/pretool_start.py
            import site

            site.main()
        table = triggers.ensure(root)[0]
    tool, session = ev.tool, ev.session
    last = _last(root, session) if session else None
    fired = decide(table, tool, ev.tool_input, ev.cwd or None, last)
    note = f"; trigger table rebuilt ({len(table['rules'])} rules)" if rebuilt else ""
    if not fired:
        return {}, ("ok: nothing fired" + note) if note else ""
    from . import firings

    firings.record(root, session, tool, fired)
    rel = [f for f in fired if f["kind"] == "relevance"]
    if rel and session:
        _remember_last(root, session, rel[0]["id"])
    outcome = "ok: " + ", ".join(f"{f['action']} {f['id']}" for f in fired) + f" ({tool})" + note
    return respond(root, fired), outcome


def run(store_path: str | None = None, stdin=None, stdout=None, host: str = "claude") -> int:
    """One call before a tool runs, from any host; always exit 0, and any failure lets
    the call through (a refusal is only ever a rule's)."""
    started = time.monotonic()
    if os.environ.get(CHILD_ENV) == "1":
        return 0
    root, session, adapter = None, "", None
    try:
        from .adapters import load
        from .event import normalise

        adapter = load(host)
        root = _root(store_path)
        try:
            payload = hookjson.loads((stdin or sys.stdin).read() or "{}")
        except ValueError as exc:
            raise BadInput(f"the payload is not JSON ({exc})") from None
        ev = normalise(adapter.NAME, "pre-tool-use", payload, adapter.TOOLS)
        session = ev.session
        covered = getattr(adapter, "covered", None)  # the host's other hook answers it
        reply, outcome = ({}, "") if covered and covered(payload) else handle(ev, root)
        out = adapter.answer("pre-tool-use", reply) if reply else None
        if out:
            (stdout or sys.stdout).write(hookjson.dumps(out) + "\n")
    except Exception as exc:  # noqa: BLE001 - the hook must never stop a tool call by failing
        why = " ".join(str(exc).split())[:300]
        outcome = f"error: {type(exc).__name__}: {why}; call let through"
        if isinstance(exc, ValueError):  # a payload this hook cannot read: said, once
            sys.stderr.write(f"cardmem: hook {host} pre-tool-use: {why}; call let through\n")
        out = None
    if not out and adapter is not None and adapter.EMPTY:  # a host that wants JSON always
        (stdout or sys.stdout).write(adapter.EMPTY + "\n")
    if outcome:
        from . import hooklog  # only when there is something to log

        hooklog.write(root, f"pre-tool-use/{host}" if host != "claude" else "pre-tool-use",
                      started, outcome, session)
    return 0


class BadInput(ValueError):
    pass


def main(argv: list[str] | None = None) -> int:
    """[--host HOST] [--store PATH] (JSON on stdin)."""
    args = list(sys.argv[1:] if argv is None else argv)
    store_path, host = None, "claude"
    while len(args) >= 2 and args[0] in ("--store", "--host"):
        if args[0] == "--store":
            store_path = args[1]
        else:
            host = args[1]
        args = args[2:]
    return run(store_path, host=host)


if __name__ == "__main__":
    sys.exit(main())
