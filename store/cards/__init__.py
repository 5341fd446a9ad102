"""Cards: the format, ids and paths, statuses, reads by address."""
