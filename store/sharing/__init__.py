"""A store shared and moved by git: `cardmem update` and `rollback` (updates.py),
`cardmem sync` (sync.py), attached read-only bases (bases.py)."""
