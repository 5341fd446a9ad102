"""Gemini CLI's hook protocol (https://geminicli.com/docs/hooks/reference).

SessionStart and BeforeAgent (each prompt) add `hookSpecificOutput.additionalContext`;
BeforeTool refuses with `decision: "deny"` and a `reason` the model reads as the tool's
error (no `ask`: a rule that asks refuses, saying so); AfterAgent (each turn) and
SessionEnd (not awaited) only hand off to the learner. stdout must be JSON and nothing
else, so an empty answer is `{}`. Tools: `run_shell_command` (`command`), `replace` and
`write_file` (`file_path`).
"""
from __future__ import annotations

NAME, LABEL = "gemini", "Gemini CLI"
EVENTS = {"SessionStart": "session-start", "BeforeAgent": "prompt", "BeforeTool": "pre-tool-use",
          "AfterAgent": "stop", "SessionEnd": "session-end"}
TOOLS = {"run_shell_command": ("Bash", "command"), "replace": ("Edit", "file_path"),
         "write_file": ("Write", "file_path")}
CAP = 9_500
EMPTY = "{}"
HOOK_NAMES = {"session-start": "SessionStart", "prompt": "BeforeAgent"}


def answer(kind: str, reply: dict) -> dict | None:
    result: dict = {}
    if kind == "pre-tool-use":
        if not reply.get("decision"):
            return None  # BeforeTool has no field for a reminder the model would read
        result = {"decision": "deny", "reason": reply["reason"] if reply["decision"] == "deny"
                  else reply["reason"] + "\nGemini CLI cannot ask the person from a hook, so the "
                  "call was refused: ask the user whether to run it."}
    elif kind in ("session-start", "prompt"):
        if not reply.get("context"):
            return None
        result = {"hookSpecificOutput": {"hookEventName": HOOK_NAMES[kind],
                                         "additionalContext": reply["context"]}}
    else:
        return None
    if reply.get("user"):
        result["systemMessage"] = reply["user"]
    return result
