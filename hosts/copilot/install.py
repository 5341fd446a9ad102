"""Where and how Copilot CLI keeps hooks: any `~/.copilot/hooks/*.json` (a file of
cardmem's own by default) or a repository's `.github/hooks/*.json`; `version: 1`,
camelCase events, each a flat list of `{"type": "command", "bash": …, "timeoutSec": …}`.
sessionStart's output is not read by Copilot, so no hook is spent on it."""
from pathlib import Path

from ..mcp_install import home as _home


SPEC = {
    "default": lambda: Path.home() / ".copilot" / "hooks" / "cardmem.json",
    "grouped": False,
    "key": "bash",
    "entry": {"type": "command"},
    "top": {"version": 1},
    "events": {
        "preToolUse": ("pre-tool-use", None, {"timeoutSec": 10}),
        "agentStop": ("stop", None, {"timeoutSec": 10}),
        "sessionEnd": ("session-end", None, {"timeoutSec": 10}),
    },
    "export": ("copilot-instructions", None),  # a project's .github/ files
    "mcp": {"default": lambda: _home("COPILOT_HOME", ".copilot") / "mcp-config.json",
            "entry": {"type": "local"}, "after": {"tools": ["*"]},
            # a repository's .github/hooks/*.json: its .github/mcp.json
            "beside": lambda hooks: hooks.parent.parent / "mcp.json"
            if hooks.parent.parent.name == ".github" else None},
}
