"""Learning: signals filed into cards, agents' proposals, the retry queue."""
