"""Cursor: its hook protocol (protocol.py) and where it keeps hooks (install.py)."""
