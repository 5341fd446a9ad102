"""The lexical index: schema, the file pass, freshness, search, the pile's view."""
