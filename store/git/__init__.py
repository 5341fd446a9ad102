"""git: one runner, HEAD read without git, the one write door, updates, sync."""
