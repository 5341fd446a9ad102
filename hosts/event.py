"""One hook call, whatever host sent it: the payload read once into a frozen Event.

Every host names the same things differently (`session_id`, `sessionId`,
`conversation_id`; `tool_name`/`tool_input`, `toolName`/`toolArgs`, a bare `command`;
`run_shell_command`, `bash`, `Bash`). An adapter (hosts/<host>) says which of its names
mean what; `normalise` reads them here, defensively, so the shared steps (session start,
per-prompt cards, the point of action, the learner's hand-off) see one shape, with tools
in Claude Code's words, which the rule matcher speaks (store/rules/match.py): `Bash` with
a `command`, `Edit`/`Write` with a `file_path`.

Lean: the PreToolUse path imports this before every tool call, so no dataclasses, typing
or re (each brings modules the hook does not otherwise load).
"""
from __future__ import annotations

KINDS = ("session-start", "prompt", "pre-tool-use", "stop", "session-end")


class BadPayload(ValueError):
    """The payload is not what this host sends (not an object, a field of the wrong type)."""


class Event:
    """A hook call in the hosts' common terms. Frozen: the shared steps only read it."""

    __slots__ = ("host", "kind", "session", "cwd", "prompt", "tool", "tool_input",
                 "transcript", "payload")

    def __init__(self, host: str, kind: str, session: str = "", cwd: str = "",
                 prompt: str = "", tool: str = "", tool_input: dict | None = None,
                 transcript: str = "", payload: dict | None = None) -> None:
        for name, value in (("host", host), ("kind", kind), ("session", session), ("cwd", cwd),
                            ("prompt", prompt), ("tool", tool), ("tool_input", tool_input or {}),
                            ("transcript", transcript), ("payload", payload or {})):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("an Event is frozen")

    def learner_payload(self) -> dict:
        """What the detached learner reads (tools/learning/session_end.py speaks Claude Code's names)."""
        return {"session_id": self.session, "cwd": self.cwd,
                "transcript_path": self.transcript, "host": self.host}

    def __repr__(self) -> str:
        return f"Event({self.host}, {self.kind}, session={self.session!r}, tool={self.tool!r})"


def _first(payload: dict, names: tuple[str, ...]) -> object:
    for n in names:
        v = payload.get(n)
        if v is not None:
            return v
    return None


def _text(payload: dict, names: tuple[str, ...], what: str) -> str:
    v = _first(payload, names)
    if v is None:
        return ""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    if not isinstance(v, str):
        raise BadPayload(f"{what} is a {type(v).__name__}, not a string")
    return v


SESSION = ("session_id", "sessionId", "conversation_id")
CWD = ("cwd",)
PROMPT = ("prompt",)
TRANSCRIPT = ("transcript_path", "transcriptPath")
TOOL = ("tool_name", "toolName")
INPUT = ("tool_input", "toolArgs")


def normalise(host: str, kind: str, payload: object, tools: dict[str, tuple[str, str]]) -> Event:
    """payload (the host's JSON, parsed) -> Event. `tools`: the host's tool name -> (the
    matcher's tool name, the input field that holds the command or the file path).
    Raises BadPayload for a payload no host of this kind sends; a field that is only
    missing is taken as empty (a newer host may leave one out)."""
    if not isinstance(payload, dict):
        raise BadPayload(f"the payload is a JSON {type(payload).__name__}, not an object")
    cwd = _text(payload, CWD, "cwd")
    if not cwd:
        roots = payload.get("workspace_roots")  # Cursor names folders, not a cwd
        if isinstance(roots, list) and roots and isinstance(roots[0], str):
            cwd = roots[0]
    tool, tool_input = "", {}
    if kind == "pre-tool-use":
        tool, tool_input = _tool(payload, tools)
    return Event(host, kind, session=_text(payload, SESSION, "session id"), cwd=cwd,
                 prompt=_text(payload, PROMPT, "prompt") if kind == "prompt" else "",
                 tool=tool, tool_input=tool_input,
                 transcript=_text(payload, TRANSCRIPT, "transcript path"), payload=payload)


def _tool(payload: dict, tools: dict[str, tuple[str, str]]) -> tuple[str, dict]:
    name = _text(payload, TOOL, "tool name")
    raw = _first(payload, INPUT)
    if isinstance(raw, str):  # Copilot's toolArgs, Cursor's MCP tool_input: JSON in a string
        from . import hookjson

        try:
            raw = hookjson.loads(raw)
        except ValueError:
            raw = {"command": raw}
    if raw is None and isinstance(payload.get("command"), str):  # Cursor's beforeShellExecution
        name, raw = name or "beforeShellExecution", {"command": payload["command"]}
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise BadPayload(f"the tool input is a JSON {type(raw).__name__}, not an object")
    mapped = tools.get(name)
    if mapped is None:
        return name, raw  # an MCP tool or one the matcher does not know: as the host named it
    ours, field = mapped
    if ours == "Bash":
        return "Bash", {"command": _command_text(raw.get(field) or raw.get("command") or "")}
    path = raw.get(field) or raw.get("file_path") or raw.get("path") or ""
    if not path and field == "patch":  # Codex's apply_patch: the paths are in the patch text
        path = _patched_path(str(raw.get("command") or raw.get("input") or ""))
    return ours, {**raw, "file_path": str(path)}


def _command_text(command: object) -> str:
    """A shell command as text. Codex's `shell` sends an argv list (`["bash", "-lc",
    "git push --force"]`): the script after -c/-lc is the command a rule matches; any
    other list is its words joined (str() of a list would hide them from every rule)."""
    if isinstance(command, list):
        words = [str(w) for w in command]
        if len(words) >= 3 and words[-2] in ("-c", "-lc"):
            return words[-1]
        return " ".join(words)
    return str(command)


def _patched_path(patch: str) -> str:
    for line in patch.split("\n"):
        for mark in ("*** Update File: ", "*** Add File: ", "*** Delete File: "):
            if line.startswith(mark):
                return line[len(mark):].strip()
    return ""
