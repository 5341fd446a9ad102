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


def answer(kind: str, reply: dict) -> dict | None:
    """Claude Code's fields, but `ask` refuses, saying why (Codex does not honour it)."""
    from ..claude_code.protocol import answer as claude

    if kind == "pre-tool-use" and reply.get("decision") == "ask":
        reply = {**reply, "decision": "deny", "reason": reply["reason"] + (
            "\nCodex cannot ask the person from a hook, so the call was refused: ask the "
            "user whether to run it, and let them run it.")}
    return claude(kind, reply)
