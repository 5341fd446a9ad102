"""GitHub Copilot CLI's hook protocol
(https://docs.github.com/en/copilot/reference/copilot-cli-reference/cli-hooks-reference;
`.github/hooks/*.json` or `~/.copilot/hooks/*.json`, `version: 1`, camelCase events).

`preToolUse` (`toolName`, `toolArgs`, `sessionId`, `cwd`) answers `permissionDecision`
allow/deny/ask with `permissionDecisionReason` (shown to the agent). The output of
`sessionStart` and `userPromptSubmitted` is not processed, so memory at session start
reaches Copilot through its instruction files (`cardmem export copilot-instructions`),
not here; `agentStop` carries `transcriptPath` for the learner, `sessionEnd` only the
`sessionId`, whose events file `transcript_of` finds. Tools: `bash` and, on Windows,
`powershell` (`command`), `edit` and `create` (`path`): the reference's names, checked
again in December 2026 (Copilot CLI 1.0.102).
"""
from __future__ import annotations

NAME, LABEL = "copilot", "Copilot CLI"
EVENTS = {"sessionStart": "session-start", "preToolUse": "pre-tool-use", "agentStop": "stop",
          "sessionEnd": "session-end"}
TOOLS = {"bash": ("Bash", "command"), "powershell": ("Bash", "command"),  # Windows' shell
         "edit": ("Edit", "path"), "create": ("Write", "path")}
CAP = 9_500
EMPTY = ""


def answer(kind: str, reply: dict) -> dict | None:
    if kind == "pre-tool-use" and reply.get("decision"):
        return {"permissionDecision": reply["decision"],
                "permissionDecisionReason": reply["reason"]}
    return None


def transcript_of(session: str) -> str:
    """The session's events file, where Copilot keeps it ("" if none): `$COPILOT_HOME` (else
    ~/.copilot)/session-state/<session id>/events.jsonl
    (https://docs.github.com/en/copilot/reference/copilot-cli-reference/cli-config-dir-reference).
    sessionEnd names no transcript, only the session."""
    import os

    if not session or session in (".", "..") or "/" in session or "\\" in session:
        return ""  # an id, never a path out of session-state/
    home = os.environ.get("COPILOT_HOME") or os.path.join(os.path.expanduser("~"), ".copilot")
    path = os.path.join(home, "session-state", session, "events.jsonl")
    return path if os.path.isfile(path) else ""
