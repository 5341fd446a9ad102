"""The lexical index: its file and rows, the file pass, freshness from git, the pile's
view, the vectors table kept across a rebuild (the query side is store/search/)."""
