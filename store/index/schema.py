"""The index's FTS5 columns, tokenizer and ranking weights: what both the index (which
builds the tables) and search (which queries them) must agree on."""
from __future__ import annotations

TOKENIZE = "porter unicode61 remove_diacritics 2"
COLUMNS = ("title", "aliases", "tags", "description", "body", "extra")
# bm25 weights per FTS column, in COLUMNS order: names a card answers to count most.
WEIGHTS = (10.0, 8.0, 4.0, 3.0, 1.0, 1.0)
