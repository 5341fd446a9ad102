"""Claude Code, the first host: its hook protocol (protocol.py), the settings install
writes (install.py, mcp_install.py) and what `cardmem doctor` checks (checks.py)."""
