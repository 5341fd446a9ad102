"""OpenAI Codex CLI's hook protocol (https://developers.openai.com/codex/hooks).

Codex took Claude Code's contract nearly field for field: `hookSpecificOutput.
additionalContext` for SessionStart, UserPromptSubmit and PreToolUse, and
`permissionDecision` + `permissionDecisionReason` for PreToolUse (input: `tool_name`
"Bash" with `tool_input.command`, or "apply_patch"). Three differences matter here:
- `ask` is reported not to be honoured, so a rule that asks refuses, with its reason
  telling the model to ask the person;
- Stop cannot inject (and SessionEnd has a 1 s budget): both only hand off to the learner;
- hook context is cut near 2,500 tokens: CAP keeps session start under that.
"""
from __future__ import annotations

NAME, LABEL = "codex", "Codex"
EVENTS = {"SessionStart": "session-start", "UserPromptSubmit": "prompt",
          "PreToolUse": "pre-tool-use", "Stop": "stop", "SessionEnd": "session-end"}
TOOLS = {"Bash": ("Bash", "command"), "shell": ("Bash", "command"),
         "exec_command": ("Bash", "cmd"), "apply_patch": ("Edit", "patch")}
CAP = 7_500  # characters: 2,500 tokens at three characters a token, with room to spare
EMPTY = ""
HOOK_NAMES = {"session-start": "SessionStart", "prompt": "UserPromptSubmit",
              "pre-tool-use": "PreToolUse"}


def answer(kind: str, reply: dict) -> dict | None:
    out: dict = {"hookEventName": HOOK_NAMES.get(kind, kind)}
    if kind == "pre-tool-use":
        if reply.get("decision"):
            out["permissionDecision"] = "deny"
            out["permissionDecisionReason"] = reply["reason"] if reply["decision"] == "deny" else (
                reply["reason"] + "\nCodex cannot ask the person from a hook, so the call was "
                "refused: ask the user whether to run it, and let them run it.")
        elif reply.get("context"):
            out["additionalContext"] = reply["context"]
        else:
            return None
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
