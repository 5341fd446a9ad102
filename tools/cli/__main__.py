"""`python -m cardmem.tools.cli`: the path users' Claude Code settings name (the MCP server
entry hosts/claude_code/mcp_install.py writes), kept working since cli.py became this package."""
from .group import main

main()
