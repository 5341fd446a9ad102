"""What people and agents call, above the store: the CLI (cli/), asking (ask/), agents'
surfaces (agents/), the session-end pipeline (learning/), redaction (secrets/), importers,
maintenance with a model, Slack, and the model itself (model.py)."""
