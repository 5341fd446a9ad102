"""Claude Code's hook protocol: the common reply in Claude Code's fields.

https://code.claude.com/docs/en/hooks: `hookSpecificOutput.additionalContext` for
SessionStart and UserPromptSubmit (shown whole up to 10,000 characters), and for
PreToolUse `permissionDecision` allow/deny/ask with `permissionDecisionReason`;
`systemMessage` is shown to the person.
"""
from __future__ import annotations

NAME, LABEL = "claude", "Claude Code"
EVENTS = {"SessionStart": "session-start", "UserPromptSubmit": "prompt",
          "PreToolUse": "pre-tool-use", "Stop": "stop", "SessionEnd": "session-end"}
TOOLS: dict[str, tuple[str, str]] = {}  # the matcher speaks Claude Code's tool names already
CAP = 9_500  # of the 10,000 characters Claude Code shows whole
EMPTY = ""
HOOK_NAMES = {"session-start": "SessionStart", "prompt": "UserPromptSubmit",
              "pre-tool-use": "PreToolUse"}


def answer(kind: str, reply: dict) -> dict | None:
    out: dict = {"hookEventName": HOOK_NAMES.get(kind, kind)}
    if kind == "pre-tool-use":
        if reply.get("decision"):
            out["permissionDecision"] = reply["decision"]
            out["permissionDecisionReason"] = reply["reason"]
        if reply.get("context"):
            out["additionalContext"] = reply["context"]
    elif kind in ("session-start", "prompt"):
        if not reply.get("context") and kind == "prompt":
            return None
        out["additionalContext"] = reply.get("context", "")
    else:
        return None
    result: dict = {"hookSpecificOutput": out}
    if reply.get("user"):
        result["systemMessage"] = reply["user"]
    return result
