"""OpenAI Codex CLI: its hook protocol (protocol.py), where it keeps hooks (install.py)
and the MCP server's block in its config.toml (mcp_toml.py)."""
