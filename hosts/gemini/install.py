"""Where and how Gemini CLI keeps hooks: `~/.gemini/settings.json` (or a project's
`.gemini/settings.json`), hooks on only with `hooksConfig.enabled`, events grouped under
matchers, timeouts in milliseconds."""
from pathlib import Path

from ..claude_code.install import MCP_WRITES

SPEC = {
    "default": lambda: Path.home() / ".gemini" / "settings.json",
    "grouped": True,
    "key": "command",
    "entry": {"type": "command", "name": "cardmem"},
    "top": {"hooksConfig": {"enabled": True}},
    "events": {
        "SessionStart": ("session-start", None, {"timeout": 10_000}),
        "BeforeAgent": ("prompt", None, {"timeout": 10_000}),
        "BeforeTool": ("pre-tool-use",
                       f"^(run_shell_command|replace|write_file|mcp__.*__.*({MCP_WRITES}).*)$",
                       {"timeout": 10_000}),
        "AfterAgent": ("stop", None, {"timeout": 10_000}),
        "SessionEnd": ("session-end", None, {"timeout": 3_000}),
    },
    "export": ("gemini-md", lambda: Path.home() / ".gemini"),  # ~/.gemini/GEMINI.md: global
    "mcp": {"in_settings": True},  # mcpServers sits beside the hooks in settings.json
}
