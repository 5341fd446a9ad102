"""Cursor's hook protocol (https://cursor.com/docs/agent/hooks; `.cursor/hooks.json`,
`version: 1`, camelCase events).

Only `sessionStart` injects, as `additional_context`; `preToolUse` (`tool_name`,
`tool_input`) and `beforeShellExecution` (`command`, `cwd`) answer `permission`
allow/deny/ask with `user_message` for the person and `agent_message` for the model.
No per-prompt injection (`beforeSubmitPrompt` can only block). Sessions are
`conversation_id`s; folders are `workspace_roots`.

Cursor fires `preToolUse` for a shell call as well as `beforeShellExecution` (both are
installed: older Cursors and the Cursor CLI know only the latter), so one command would
fire its rule twice: counted twice, and an `ask` shown twice. `covered` says which
`preToolUse` payloads the other hook answers; the point of action leaves them alone.
"""
from __future__ import annotations

NAME, LABEL = "cursor", "Cursor"
EVENTS = {"sessionStart": "session-start", "preToolUse": "pre-tool-use",
          "beforeShellExecution": "pre-tool-use", "stop": "stop", "sessionEnd": "session-end"}
TOOLS = {"beforeShellExecution": ("Bash", "command"), "Shell": ("Bash", "command"),
         "run_terminal_cmd": ("Bash", "command"), "Write": ("Write", "file_path"),
         "Edit": ("Edit", "file_path"), "edit_file": ("Edit", "target_file"),
         "search_replace": ("Edit", "file_path")}
CAP = 9_500
EMPTY = ""
SHELL = ("Shell", "run_terminal_cmd")  # preToolUse's names for the shell tool


def covered(payload: dict) -> bool:
    """A preToolUse call of the shell: beforeShellExecution answers the same call."""
    return payload.get("tool_name") in SHELL and payload.get("hook_event_name") != \
        "beforeShellExecution"


def answer(kind: str, reply: dict) -> dict | None:
    if kind == "session-start":
        return {"additional_context": reply["context"]} if reply.get("context") else None
    if kind == "pre-tool-use" and reply.get("decision"):
        return {"permission": reply["decision"], "agent_message": reply["reason"],
                "user_message": reply.get("user") or reply["reason"].split("\n", 1)[0]}
    return None
