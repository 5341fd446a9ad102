"""What agents call: the MCP server (mcp_server.py), the memory tool (memory_tool.py,
memory_folder.py), and `remember` on someone's behalf (remember.py)."""
