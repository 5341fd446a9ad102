"""The query side of the index: the one entry (query.py), terms, candidates, snippets,
scoring and confidence; meaning (embedding, semantic, hybrid, vectors, the embedder); the
search socket a running watcher or MCP server answers on (searchd, searchd_server)."""
