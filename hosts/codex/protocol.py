"""OpenAI Codex CLI's hook protocol (https://developers.openai.com/codex/hooks).

Codex took Claude Code's contract nearly field for field: `hookSpecificOutput.
additionalContext` for SessionStart, UserPromptSubmit and PreToolUse, and
`permissionDecision` + `permissionDecisionReason` for PreToolUse (input: `tool_name`
"Bash" with `tool_input.command`, or "apply_patch"). Three differences matter here:
- `ask` is reported not to be honoured, so a rule that asks refuses, with its reason
  telling the model to ask the person;
- Stop cannot inject (and SessionEnd has a 1 s budget): both only hand off to the learner;
- hook context past 2,500 tokens is spilled to a file and only a preview reaches the
  model; Codex counts a token as four UTF-8 bytes, so CAP is in bytes (UNIT): Cyrillic
  or CJK text costs two or three times its characters.
"""
from __future__ import annotations

NAME, LABEL = "codex", "Codex"
EVENTS = {"SessionStart": "session-start", "UserPromptSubmit": "prompt",
          "PreToolUse": "pre-tool-use", "Stop": "stop", "SessionEnd": "session-end"}
TOOLS = {"Bash": ("Bash", "command"), "shell": ("Bash", "command"),
         "exec_command": ("Bash", "cmd"), "apply_patch": ("Edit", "patch")}
CAP, UNIT = 7_500, "utf-8"  # bytes: 2,500 tokens are 10,000 bytes; the rest is room to spare
EMPTY = ""


def answer(kind: str, reply: dict) -> dict | None:
    """Claude Code's fields, but `ask` refuses, saying why (Codex does not honour it)."""
    from ..claude_code.protocol import answer as claude

    if kind == "pre-tool-use" and reply.get("decision") == "ask":
        reply = {**reply, "decision": "deny", "reason": reply["reason"] + (
            "\nCodex cannot ask the person from a hook, so the call was refused: ask the "
            "user whether to run it, and let them run it.")}
    return claude(kind, reply)
