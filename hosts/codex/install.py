"""Where and how Codex keeps hooks: `~/.codex/hooks.json` (or a project's
`.codex/hooks.json`), events grouped under matchers as in Claude Code, timeouts in
seconds (SessionEnd is capped at 3 s: it only hands off to the learner)."""
from pathlib import Path


from ..claude_code.install import MCP_WRITES
from ..mcp_install import home as _home

SPEC = {
    "default": lambda: Path.home() / ".codex" / "hooks.json",
    "grouped": True,
    "key": "command",
    "entry": {"type": "command"},
    "events": {
        "SessionStart": ("session-start", None, {"timeout": 10}),
        "UserPromptSubmit": ("prompt", None, {"timeout": 10}),
        "PreToolUse": ("pre-tool-use", f"^(Bash|apply_patch|mcp__.*__.*({MCP_WRITES}).*)$",
                       {"timeout": 10}),
        "Stop": ("stop", None, {"timeout": 10}),
        "SessionEnd": ("session-end", None, {"timeout": 3}),
    },
    # `install codex --export`: AGENTS.md; in no project, Codex's own, read in every session
    "export": ("agents-md", lambda: _home("CODEX_HOME", ".codex")),
    "mcp": {"toml": True, "default": lambda: _home("CODEX_HOME", ".codex") / "config.toml",
            "beside": lambda hooks: hooks.parent / "config.toml"},
}
