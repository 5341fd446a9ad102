"""Rules: what they apply to, matching a tool call, the rules file hosts load."""
