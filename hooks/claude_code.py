"""Claude Code's hook protocol: JSON on stdin, JSON on stdout (DESIGN §5, §6).

    python -m cardmem.hooks.claude_code [--store PATH] [--rules-file PATH] session-start
    cardmem hook claude-code [--store PATH] [--rules-file PATH] session-start   (the same)

session-start  prints {"hookSpecificOutput": {"hookEventName": "SessionStart",
               "additionalContext": <the rung-1 pile>}, "systemMessage": <for the user>}.
               The context never exceeds what Claude Code shows whole (10,000 UTF-16
               units; longer is replaced by a 2 KB preview). Every rule travels whole in
               the rules file (--rules-file, which Claude Code loads at start-up from
               ~/.claude/rules/); the context names it and shows what changed since.
               It never breaks the session: no store, a broken card, a failing git ->
               exit 0 with what it could assemble, and the person is told in one line.
stop, session-end
               hand the session to a detached background process and return at once;
               that process reads the transcript, redacts it, extracts signals (one model
               call) and files them (one commit), or spools them if the store is busy.
               A failed extraction keeps the redacted excerpt in .cardmem/retry/; each
               later run re-extracts the due ones first, into the same commit.

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

from cardmem.store.wording import plural

from . import hooklog

EVENTS = ("session-start", "stop", "session-end")
FOREGROUND_ENV = "CARDMEM_HOOK_FOREGROUND"  # "1": learn in the hook process (tests, debugging)
# "1" inside cardmem's own `claude -p` model call (tools/model.py CHILD_ENV): hooks idle there.
CHILD_ENV = "CARDMEM_HOOK_CHILD"
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
    from cardmem.store.cards.paths import default_store

    return Path(store_path).expanduser().absolute() if store_path else default_store().absolute()


# --- session start -----------------------------------------------------------------

def host_len(text: str) -> int:
    """Characters as Claude Code counts them: UTF-16 code units (an emoji is two)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def fit_host(text: str, cap: int = MAX_CONTEXT) -> tuple[str, int]:
    """text cut at a line end to at most cap host characters, with a closing line saying
    so; and how many characters were cut (0: it fit). Past the cap the host would show a
    2 KB preview instead of the whole, so nothing longer is ever handed over."""
    if host_len(text) <= cap:
        return text, 0
    note = "\n(cardmem: context cut at {} of {} characters to fit the host; " \
           "`cardmem context` shows it whole)\n"
    room = cap - host_len(note.format(cap, host_len(text)))
    lines, kept, used = text.split("\n"), [], 0
    for line in lines:
        n = host_len(line) + 1
        if used + n > room:
            break
        kept.append(line)
        used += n
    return "\n".join(kept) + note.format(used, host_len(text)), host_len(text) - used


def session_start_context(payload: dict[str, Any], root: Path,
                          rules_file: Path | None = None) -> tuple[str, str, list[str]]:
    """(additionalContext, outcome for the log, lines for the user) for the store at root.

    The user lines become the hook's systemMessage: memory that is degraded is said to the
    person, not only to the model. Never raises.
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
            budget = min(int(store.config["context"]["budget_chars"]), MAX_CONTEXT)
        except CardmemError as exc:  # a malformed cardmem.toml: go on with the defaults
            import copy

            from cardmem.store import config

            store.__dict__["config"] = copy.deepcopy(config.DEFAULTS)
            budget, note = config.DEFAULTS["context"]["budget_chars"], exc.why
            user.append(f"cardmem.toml ignored ({note})")
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
                        + ("" if d is not None and d.ok else
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
        text, cut = fit_host(text)
        if cut:
            user.append(f"session context cut by {cut} characters to fit Claude Code")
        delivery = ""
        if d is not None:
            delivery = (f", rules file {'error' if not d.ok else 'rewritten' if d.wrote else 'current'}"
                        f" ({plural(d.total, 'rule')}, {len(d.changed)} changed)")
        return text, f"ok: {plural(len(pile.addresses), 'card')}, {host_len(text)} chars{delivery}" + (
            f", {len(pile.notices)} unreadable" if pile.notices else "") + (
            f", cut {cut}" if cut else ""), user
    except Exception as exc:  # noqa: BLE001
        why = " ".join(str(exc).split()) or type(exc).__name__
        text, _ = fit_host(_rule_titles(root) + f"\n(cardmem: memory only partly loaded: {why})\n")
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


def session_start(payload: dict[str, Any], store_path: str | None = None,
                  rules_file: str | None = None) -> dict[str, Any]:
    started = time.monotonic()
    root = _store_root(store_path)
    text, outcome, user = session_start_context(
        payload, root, Path(rules_file).expanduser() if rules_file else None)
    hooklog.write(root, "session-start", started, outcome, payload.get("session_id"))
    out: dict[str, Any] = {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                                  "additionalContext": text}}
    if user:
        out["systemMessage"] = "cardmem: " + "; ".join(user)
    return out


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
    """Transcript -> redacted excerpt -> signals -> one commit. Returns the log outcome.

    The retry backlog's due sessions go first, into the same commit. A failed
    extraction keeps the excerpt in the retry queue (store/learning/retry.py): nothing is lost.
    """
    from cardmem.store.errors import CardmemError
    from cardmem.store.store import Store

    try:
        store = Store.open(_store_root(store_path))
    except CardmemError as exc:
        return f"no store: {exc.why}"
    session = str(payload.get("session_id") or "")
    source = f"{event}-hook"  # the commit's Cardmem-Source: stop-hook, session-end-hook
    transcript = payload.get("transcript_path")
    from cardmem.hooks import backlog

    retried = backlog.retry_due(store, lambda s: str(_mark_path(store, s)) + ".lock")
    if not transcript:
        return _file_pending(store, session, source, "skipped: no transcript_path", retried)
    from cardmem.hooks.transcript import read_excerpt, should_skip

    if should_skip(transcript):
        return _file_pending(store, session, source, "skipped: no transcript or under 1,000 bytes",
                             retried)
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
            return _file_pending(store, session, source, "skipped: nothing new since the last run",
                                 retried)
        from cardmem.hooks.transcript import talk_since

        if done and not talk_since(transcript, done):  # grown, but not by conversation
            _write_mark(mark, size)
            return _file_pending(store, session, source,
                                 "skipped: nothing new said since the last run", retried)
        cfg = store.config
        from cardmem.store.learning import retry
        from cardmem.tools.redact import redact

        # redact, then cut: half a token is no longer recognised
        turns = read_excerpt(transcript, max_turns=int(cfg["extract"]["max_turns"]),
                             turn_chars=int(cfg["extract"]["turn_chars"]), redact=redact)
        turns = [{"role": t.role, "text": t.text} for t in turns]
        project = _project(store, payload)
        waiting = retry.load(store.root, session)
        if waiting:  # this session failed before: one call for the old excerpt and the new
            turns = backlog.merge_turns(waiting["turns"], turns,
                                        2 * int(cfg["extract"]["max_turns"]))
        signals, why, counts = backlog.extract_or_why(turns, cfg)
        if signals is None:
            gone = retry.fail(store.root, session, turns, why, counts=counts, project=project,
                              cwd=payload.get("cwd"), size=size)
            _write_mark(mark, size)  # queued: the backlog retries it, the next run does not
            backlog.log_given_up(store, gone)
            what = "extraction failed" if counts else "no model"
            return _file_pending(store, session, source, f"{what}: {why}; kept for retry", retried)
        lines = [redact(s.line) for s in signals]
        outcome = _file(store, lines, session, project, source)
        if waiting:
            retry.remove(store.root, session)  # filed or spooled with this run's signals
        _write_mark(mark, size)  # filed or spooled, they are safe: never extract them twice
        return outcome + retried


def _project(store: Any, payload: dict[str, Any]) -> str | None:
    """The session's project, from the payload's cwd (as session start finds it)."""
    cwd = payload.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        return None
    from cardmem.store.context import project_for

    try:
        project = project_for(store, cwd)
    except Exception:  # noqa: BLE001 - no project is no reason to lose the signals
        return None
    from cardmem.store.maintain.checkouts import record

    record(store, project, cwd)  # where `cardmem maintain` looks for drift
    return project


def _write_mark(mark: Path, size: int) -> None:
    from cardmem.store.git.writer import atomic_write

    atomic_write(mark, json.dumps({"size": size, "at": time.time()}).encode())


def _file_pending(store: Any, session: str, source: str, skipped: str, retried: str) -> str:
    """File what waits in the spool (a busy store's signals, the backlog's), if anything."""
    from cardmem.store.learning.compound import spool_dir

    if any(spool_dir(store).glob("*.json")):
        return f"{skipped}; spool: {_file(store, [], session, source=source)}{retried}"
    return skipped + retried


def _file(store: Any, lines: list[str], session: str, project: str | None = None,
          source: str = "stop-hook") -> str:
    from cardmem.store.learning.compound import file_signals

    r = file_signals(store, lines, session, source=source, project=project)
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

def run(event: str, store_path: str | None = None, stdin=None, stdout=None,
        rules_file: str | None = None) -> int:
    """One hook event; always exit 0 (a hook must not break the host's session)."""
    stdout = stdout or sys.stdout
    if os.environ.get(CHILD_ENV) == "1":  # never learn from, or feed, our own model call
        if event == "session-start":
            stdout.write("{}\n")
        return 0
    payload = read_payload(stdin)
    if event == "session-start":
        out = session_start(payload, store_path, rules_file)
        stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
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
    from .daily import maybe_maintain  # at most once a day, after the learning

    outcome += maybe_maintain(_store_root(store_path))
    hooklog.write(_store_root(store_path), f"{event}/learn", started, outcome,
                  payload.get("session_id"))
    return 0


def main(argv: list[str] | None = None) -> int:
    # The caller is an agent: cardmem run from here (the learner, a shelled-out
    # `cardmem remember`) redacts what it writes (cardmem.tools.cli.options.AGENT_ENV).
    os.environ["CARDMEM_AGENT"] = "1"
    args = list(sys.argv[1:] if argv is None else argv)
    store_path = rules_file = None
    while len(args) >= 2 and args[0] in ("--store", "--rules-file"):
        if args[0] == "--store":
            store_path = args[1]
        else:
            rules_file = args[1]
        args = args[2:]
    if args[:1] == ["_learn"] and len(args) == 3:  # the detached background process
        try:
            payload = json.loads(args[2])
        except ValueError:
            payload = {}
        return _learn_logged(args[1], payload if isinstance(payload, dict) else {}, store_path)
    if len(args) != 1:
        sys.stderr.write("cardmem: hook claude-code: usage: [--store PATH] [--rules-file PATH] "
                         f"{{{'|'.join(EVENTS)}}} (JSON on stdin)\n")
        return 2
    return run(args[0], store_path, rules_file=rules_file)


if __name__ == "__main__":
    sys.exit(main())
