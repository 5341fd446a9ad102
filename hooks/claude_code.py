"""Claude Code's hook protocol: JSON on stdin, JSON on stdout (DESIGN §5, §6).

    python -m cardmem.hooks.claude_code [--store PATH] session-start   (what the installer registers)
    cardmem hook claude-code [--store PATH] session-start              (the same, through the CLI)

session-start  prints {"hookSpecificOutput": {"hookEventName": "SessionStart",
               "additionalContext": <the rung-1 pile>}}. It never breaks the session: no
               store, a broken card, a failing git -> exit 0 with what it could assemble
               and a one-line notice.
stop, session-end
               hand the session to a detached background process and return at once;
               that process reads the transcript, redacts it, extracts signals (one model
               call) and files them (one commit), or spools them if the store is busy.

Start-up is kept lean: this module imports neither click nor anthropic; the learning
path imports what it needs inside the background process.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from . import hooklog

EVENTS = ("session-start", "stop", "session-end")
FOREGROUND_ENV = "CARDMEM_HOOK_FOREGROUND"  # "1": learn in the hook process (tests, debugging)
# A Stop hook fires after every reply; learn again only once the transcript grew this much.
STOP_MIN_GROWTH = 4_000
MAX_CONTEXT = 9_500  # Claude Code shows the model at most 10,000 characters


def read_payload(stream=None) -> dict[str, Any]:
    """The host's JSON from stdin; anything unreadable is an empty payload, not an error."""
    stream = stream or sys.stdin
    try:
        if stream.isatty():
            return {}
        data = json.loads(stream.read() or "{}")
    except (ValueError, OSError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _store_root(store_path: str | None) -> Path:
    from cardmem.store.paths import default_store

    return Path(store_path).expanduser().absolute() if store_path else default_store().absolute()


# --- session start -----------------------------------------------------------------

def session_start_context(payload: dict[str, Any], root: Path) -> tuple[str, str]:
    """(additionalContext, outcome for the log) for the store at root. Never raises."""
    try:
        from cardmem.store.errors import CardmemError
        from cardmem.store.lean import StoreRoot  # no YAML, writer or git to import

        store = StoreRoot.open(root)
    except Exception as exc:  # noqa: BLE001 - the session must start whatever happens
        why = getattr(exc, "why", None) or str(exc) or type(exc).__name__
        return (f"(cardmem: no memory loaded this session: store {root}: {why})",
                f"no store: {why}")
    cwd = payload.get("cwd") or os.getcwd()
    try:
        from cardmem.store.context import session_context

        note = ""
        try:
            budget = min(int(store.config["context"]["budget_chars"]), MAX_CONTEXT)
        except CardmemError as exc:  # a malformed cardmem.toml: go on with the defaults
            import copy

            from cardmem.store import config

            store.__dict__["config"] = copy.deepcopy(config.DEFAULTS)
            budget, note = config.DEFAULTS["context"]["budget_chars"], exc.why
        pile = session_context(store, cwd=cwd, budget=budget)
        text = pile.text
        if note:
            text += f"\n(cardmem: cardmem.toml ignored, defaults used: {note})\n"
        if pile.notices:
            text += (f"\n(cardmem: {len(pile.notices)} card file(s) could not be read; "
                     "run `cardmem doctor`)\n")
        return text, f"ok: {len(pile.addresses)} cards, {len(text)} chars" + (
            f", {len(pile.notices)} unreadable" if pile.notices else "")
    except Exception as exc:  # noqa: BLE001
        why = " ".join(str(exc).split()) or type(exc).__name__
        return _rule_titles(root) + f"\n(cardmem: memory only partly loaded: {why})\n", \
            f"degraded: {why}"


def _rule_titles(root: Path) -> str:
    """The last resort: the rule files' names, so no rule is invisible."""
    folder = root / "feedback"
    try:
        names = sorted(p.stem for p in folder.glob("*.md"))
    except OSError:
        names = []
    if not names:
        return "# Memory (cardmem)\n"
    return "# Memory (cardmem)\n## Rules (titles only)\n" + "".join(
        f"- `feedback/{n}`\n" for n in names)


def session_start(payload: dict[str, Any], store_path: str | None = None) -> dict[str, Any]:
    started = time.monotonic()
    root = _store_root(store_path)
    text, outcome = session_start_context(payload, root)
    hooklog.write(root, "session-start", started, outcome, payload.get("session_id"))
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}


# --- learning at the end -----------------------------------------------------------

def detach(event: str, payload: dict[str, Any], store_path: str | None) -> None:
    """Start the learning in a new session, stdio closed, and return at once."""
    import subprocess

    args = [sys.executable, "-m", "cardmem.hooks.claude_code"]
    if store_path:
        args += ["--store", store_path]
    args += ["_learn", event, json.dumps(payload)]
    subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True,
                     cwd=payload.get("cwd") if os.path.isdir(str(payload.get("cwd") or "")) else None)


def _mark_path(store: Any, session: str) -> Path:
    import re

    d = store.state_dir / "sessions"
    d.mkdir(exist_ok=True)
    return d / (re.sub(r"[^A-Za-z0-9_-]", "", session)[:64] or "nosession")


def learn(event: str, payload: dict[str, Any], store_path: str | None = None) -> str:
    """Transcript -> redacted excerpt -> signals -> one commit. Returns the log outcome."""
    from cardmem.store.errors import CardmemError
    from cardmem.store.store import Store

    try:
        store = Store.open(_store_root(store_path))
    except CardmemError as exc:
        return f"no store: {exc.why}"
    session = str(payload.get("session_id") or "")
    transcript = payload.get("transcript_path")
    from cardmem.store.compound import spool_dir

    pending = any(spool_dir(store).glob("*.json"))
    if not transcript:
        return _file(store, [], session) if pending else "skipped: no transcript_path"
    from cardmem.hooks.transcript import read_excerpt, should_skip

    if should_skip(transcript):
        return _file(store, [], session) if pending else \
            "skipped: no transcript or under 1,000 bytes"
    from filelock import FileLock

    mark = _mark_path(store, session)
    # One learner per session at a time: Stop and SessionEnd often fire together.
    with FileLock(str(mark) + ".lock", timeout=300):
        size = os.stat(transcript).st_size
        try:
            done = int(json.loads(mark.read_text()).get("size", 0))
        except (OSError, ValueError, AttributeError):
            done = 0
        growth = size - done
        if growth <= 0 or (event == "stop" and done and growth < STOP_MIN_GROWTH):
            return _file(store, [], session) if pending else \
                "skipped: nothing new since the last run"
        cfg = store.config
        from cardmem.tools.redact import redact

        # redact, then cut: half a token is no longer recognised
        turns = read_excerpt(transcript, max_turns=int(cfg["extract"]["max_turns"]),
                             turn_chars=int(cfg["extract"]["turn_chars"]), redact=redact)
        from cardmem.tools.extract import extract
        from cardmem.tools.model import ModelError, ModelUnavailable

        turns = [{"role": t.role, "text": t.text} for t in turns]
        try:
            signals = extract(turns, cfg=cfg["model"])
        except ModelError as exc:
            what = "no model" if isinstance(exc, ModelUnavailable) else "extraction failed"
            spooled = f"; spool: {_file(store, [], session)}" if pending else ""
            return f"{what}: {exc.why}; nothing extracted{spooled}"
        lines = [redact(s.line) for s in signals]
        outcome = _file(store, lines, session)
        _write_mark(mark, size)  # filed or spooled, they are safe: never extract them twice
        return outcome


def _write_mark(mark: Path, size: int) -> None:
    from cardmem.store.writer import atomic_write

    atomic_write(mark, json.dumps({"size": size, "at": time.time()}).encode())


def _file(store: Any, lines: list[str], session: str) -> str:
    from cardmem.store.compound import file_signals

    r = file_signals(store, lines, session, source="stop-hook")
    if r.spooled:
        return f"spooled {len(lines)} signal(s): {r.error}"
    if not r.filed and not r.duplicates and not lines and not r.from_spool:
        return "ok: EMPTY (nothing worth remembering)"
    cards = sorted({f.card for f in r.filed if f.card})
    return (f"ok: filed {len(r.filed)} signal(s) into {', '.join(cards) or 'no card'}"
            f"{f', {len(r.duplicates)} duplicate(s) skipped' if r.duplicates else ''}"
            f"{f', {r.from_spool} from the spool' if r.from_spool else ''}"
            f"{f', commit {r.commit[:10]}' if r.commit else ''}")


# --- entry points ----------------------------------------------------------------

def run(event: str, store_path: str | None = None, stdin=None, stdout=None) -> int:
    """One hook event; always exit 0 (a hook must not break the host's session)."""
    stdout = stdout or sys.stdout
    payload = read_payload(stdin)
    if event == "session-start":
        stdout.write(json.dumps(session_start(payload, store_path), ensure_ascii=False) + "\n")
        stdout.flush()
        return 0
    if event in ("stop", "session-end"):
        if os.environ.get(FOREGROUND_ENV) == "1":
            return _learn_logged(event, payload, store_path)
        started = time.monotonic()
        try:
            detach(event, payload, store_path)
            outcome = "detached"
        except OSError as exc:
            outcome = f"could not detach: {exc.strerror}"
        hooklog.write(_store_root(store_path), event, started, outcome, payload.get("session_id"))
        return 0
    sys.stderr.write(f"cardmem: hook claude-code {event}: unknown event; "
                     f"expected one of {', '.join(EVENTS)}\n")
    return 0


def _learn_logged(event: str, payload: dict[str, Any], store_path: str | None) -> int:
    started = time.monotonic()
    try:
        outcome = learn(event, payload, store_path)
    except Exception as exc:  # noqa: BLE001 - logged, never raised into the host
        outcome = f"error: {type(exc).__name__}: {' '.join(str(exc).split())}"
    hooklog.write(_store_root(store_path), f"{event}/learn", started, outcome,
                  payload.get("session_id"))
    return 0


def main(argv: list[str] | None = None) -> int:
    # The caller is an agent: cardmem run from here (the learner, a shelled-out
    # `cardmem remember`) redacts what it writes (cardmem.tools.cli.AGENT_ENV).
    os.environ["CARDMEM_AGENT"] = "1"
    args = list(sys.argv[1:] if argv is None else argv)
    store_path = None
    if len(args) >= 2 and args[0] == "--store":
        store_path, args = args[1], args[2:]
    if args[:1] == ["_learn"] and len(args) == 3:  # the detached background process
        try:
            payload = json.loads(args[2])
        except ValueError:
            payload = {}
        return _learn_logged(args[1], payload if isinstance(payload, dict) else {}, store_path)
    if len(args) != 1:
        sys.stderr.write("cardmem: hook claude-code: usage: [--store PATH] "
                         f"{{{'|'.join(EVENTS)}}} (JSON on stdin)\n")
        return 2
    return run(args[0], store_path)


if __name__ == "__main__":
    sys.exit(main())
