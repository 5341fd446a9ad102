"""The core: cards in a git work tree, their index and search, rules, learning, upkeep and
sharing; no model and no click. Its rooms, lowest first: docs/architecture.md."""
