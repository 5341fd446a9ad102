"""Where and how Cursor keeps hooks: `~/.cursor/hooks.json` (or a project's
`.cursor/hooks.json`), `version: 1`, camelCase events, each a flat list of commands."""
from pathlib import Path

SPEC = {
    "default": lambda: Path.home() / ".cursor" / "hooks.json",
    "grouped": False,
    "key": "command",
    "top": {"version": 1},
    "events": {
        "sessionStart": ("session-start", None, {}),
        "preToolUse": ("pre-tool-use", None, {}),
        "beforeShellExecution": ("pre-tool-use", None, {}),
        "stop": ("stop", None, {}),
    },
    "export": ("cursor-rules", None),  # a project's .cursor/rules only (user rules: settings)
    "mcp": {"default": lambda: Path.home() / ".cursor" / "mcp.json",
            "beside": lambda hooks: hooks.parent / "mcp.json"},
}
