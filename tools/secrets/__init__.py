"""Redaction: secrets replaced by markers before text leaves the machine or enters git
(redact.py), from provider token shapes (catalogue.py) and the words around a value
(context.py)."""
