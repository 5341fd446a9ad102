"""The one hook program: every host's hook calls land here (DESIGN §5, §6).

    cardmem hook EVENT --host claude|codex|gemini|cursor|copilot [--store PATH] [--rules-file PATH]
    python -m cardmem.hosts.hook --host HOST [--store PATH] [--rules-file PATH] EVENT
    python -m cardmem.hosts.claude_code [--store PATH] [--rules-file PATH] EVENT   (as 0.1.0 installed)

EVENT is ours (session-start, prompt, pre-tool-use, stop, session-end) or the host's own
name for it (SessionStart, BeforeAgent, preToolUse, ...). The payload is read once into an
Event (hosts/event.py); the shared step runs; the host's adapter (hosts/<host>/protocol.py)
answers in the host's fields and within its cap:

session-start  the rung-1 pile (rules, a short digest) as context (hosts/session_start.py)
prompt         the cards this prompt is about, not yet shown this session (hosts/prompt.py)
pre-tool-use   the rules that govern the call (hosts/pretool.py)
stop, session-end
               hand the session to a detached learner and return at once: learning never
               runs inside a host's short end-of-session budget (hosts/learn.py, tools/learning/)

It never breaks the host's session: a payload that is not JSON, not an object, or has a
field of the wrong type gets one line on stderr, nothing on stdout the host could misread
(Gemini CLI gets `{}`), and exit 0; so does any failure inside a step.

Start-up is kept lean: neither click nor anthropic; the learner imports what it needs in
the background process.
"""
from __future__ import annotations

import os
import sys
import time

from . import hooklog

FOREGROUND_ENV = "CARDMEM_HOOK_FOREGROUND"  # "1": learn in the hook process (tests, debugging)
# "1" inside cardmem's own `claude -p` model call (tools/model.py CHILD_ENV): hooks idle there.
CHILD_ENV = "CARDMEM_HOOK_CHILD"
USAGE = ("usage: [--host HOST] [--store PATH] [--rules-file PATH] "
         "{session-start|prompt|pre-tool-use|stop|session-end} (JSON on stdin)")


def _say(host: str, event: str, why: str) -> None:
    sys.stderr.write(f"cardmem: hook {host} {event}: {why}\n")


def read_payload(stream) -> object:
    """The host's JSON from stdin ({} when there is none); ValueError if it is not JSON."""
    from . import hookjson

    try:
        if stream.isatty():
            return {}
        text = stream.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"stdin unreadable ({exc})") from None
    return hookjson.loads(text) if text.strip() else {}


def run(event: str, store_path: str | None = None, stdin=None, stdout=None,
        rules_file: str | None = None, host: str = "claude") -> int:
    """One hook call; always exit 0 (a hook must not break the host's session)."""
    from .adapters import load
    from .event import KINDS

    stdout = stdout or sys.stdout
    try:
        adapter = load(host)
    except KeyError as exc:
        _say(host, event, exc.args[0])
        return 0
    kind = adapter.EVENTS.get(event, event)
    if os.environ.get(CHILD_ENV) == "1":  # never learn from, or feed, our own model call
        if kind == "session-start":
            stdout.write("{}\n")
        return 0
    if kind not in KINDS:
        _say(adapter.NAME, event, f"unknown event; expected one of {', '.join(KINDS)}")
        if adapter.EMPTY:
            stdout.write(adapter.EMPTY + "\n")
        return 0
    if kind == "pre-tool-use":
        from .pretool import run as pretool

        return pretool(store_path, stdin, stdout, host=adapter.NAME)
    started = time.monotonic()
    from .which_store import store_root

    root, session, out = None, "", None
    try:
        root = store_root(store_path)
        from .event import Event, normalise

        try:
            ev = normalise(adapter.NAME, kind, read_payload(stdin or sys.stdin), adapter.TOOLS)
        except ValueError as exc:  # not JSON, not an object, a field of the wrong type
            why = " ".join(str(exc).split())[:300]
            if kind != "session-start":
                raise
            # The session still gets its memory, only without the payload's cwd and session.
            _say(adapter.NAME, event, f"payload ignored: {why}")
            ev = Event(adapter.NAME, kind)
        session = ev.session
        reply, outcome = _step(kind, ev, root, store_path, rules_file, adapter)
        out = adapter.answer(kind, reply) if reply is not None else None
    except Exception as exc:  # noqa: BLE001 - logged and said once, never raised into the host
        why = " ".join(str(exc).split())[:300] or type(exc).__name__
        outcome = f"error: {type(exc).__name__}: {why}"
        _say(adapter.NAME, event, why + "; nothing done")
    if out:
        from . import hookjson

        stdout.write(hookjson.dumps(out) + "\n")
    elif adapter.EMPTY:
        stdout.write(adapter.EMPTY + "\n")
    stdout.flush()
    if root is not None and outcome:
        hooklog.write(root, kind if adapter.NAME == "claude" else f"{kind}/{adapter.NAME}",
                      started, outcome, session)
    return 0


def _step(kind: str, ev, root, store_path, rules_file, adapter) -> tuple[dict | None, str]:
    """(the common reply or None, the log outcome; "" when the step logged itself)."""
    if kind == "session-start":
        from pathlib import Path

        from .session_start import session_start_context

        text, outcome, user = session_start_context(
            {"cwd": ev.cwd, "session_id": ev.session}, root,
            Path(rules_file).expanduser() if rules_file else None,
            cap=adapter.CAP, host=adapter.LABEL, unit=getattr(adapter, "UNIT", "utf-16"))
        return {"context": text, "user": "cardmem: " + "; ".join(user) if user else ""}, outcome
    if kind == "prompt":
        from .prompt import prompt_context

        text, outcome = prompt_context(root, ev.session, ev.prompt)
        return {"context": text}, outcome
    # stop, session-end: the learner, detached
    try:
        _say_if_no_transcript(root, kind, ev, adapter)
    except OSError:  # a note for the person; never a reason not to learn
        pass
    if os.environ.get(FOREGROUND_ENV) == "1":
        from .learn import learn_logged

        learn_logged(kind, ev.learner_payload(), store_path)  # its own log line: {kind}/learn
        return None, ""
    try:
        detach(kind, ev.learner_payload(), store_path)
        return None, "detached"
    except OSError as exc:
        return None, f"could not detach: {exc.strerror}"


NO_TRANSCRIPT = "no-transcript-{}"  # in the store's .cardmem/: said once; doctor reads it


def _say_if_no_transcript(root, kind: str, ev, adapter) -> None:
    """A host that names no transcript (Cursor with transcripts off, a host version that
    leaves the field out) teaches nothing: say so once per store, not at every turn."""
    mark = os.path.join(str(root), ".cardmem", NO_TRANSCRIPT.format(adapter.NAME))
    finder = getattr(adapter, "transcript_of", None)
    if ev.transcript or (finder is not None and finder(ev.session)):
        if os.path.exists(mark):
            os.unlink(mark)  # transcripts came back: doctor stops saying so
        return
    if os.path.exists(mark):
        return
    _say(adapter.NAME, kind, f"{adapter.LABEL} sent no transcript path, so nothing is learned "
         "from its sessions (said once; `cardmem doctor` keeps saying it)")
    if os.path.isdir(os.path.dirname(mark)):
        with open(mark, "w") as f:
            f.write(ev.session + "\n")


def detach(event: str, payload: dict, store_path: str | None) -> None:
    """Start the learning in a new session, stdio closed, and return at once."""
    import json
    import subprocess

    args = [sys.executable, "-m", "cardmem.hosts.hook"]
    if store_path:
        args += ["--store", store_path]
    args += ["_learn", event, json.dumps(payload)]
    cwd = payload.get("cwd")
    subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True,
                     cwd=cwd if isinstance(cwd, str) and os.path.isdir(cwd) else None)


def main(argv: list[str] | None = None) -> int:
    # The caller is an agent: cardmem run from here (the learner, a shelled-out
    # `cardmem remember`) redacts what it writes (cardmem.tools.cli.options.AGENT_ENV).
    os.environ["CARDMEM_AGENT"] = "1"
    args = list(sys.argv[1:] if argv is None else argv)
    store_path = rules_file = None
    host = "claude"
    while len(args) >= 2 and args[0] in ("--store", "--rules-file", "--host"):
        if args[0] == "--store":
            store_path = args[1]
        elif args[0] == "--host":
            host = args[1]
        else:
            rules_file = args[1]
        args = args[2:]
    if args[:1] == ["_learn"] and len(args) == 3:  # the detached background process
        import json

        try:
            payload = json.loads(args[2])
        except ValueError:
            payload = {}
        from .learn import learn_logged

        return learn_logged(args[1], payload if isinstance(payload, dict) else {}, store_path)
    if len(args) != 1:
        _say(host, " ".join(args) or "(no event)", USAGE)
        return 2
    return run(args[0], store_path, rules_file=rules_file, host=host)


if __name__ == "__main__":
    sys.exit(main())
