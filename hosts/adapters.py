"""The hosts cardmem serves through hooks, and the module that speaks each one's protocol.

Every adapter module has: NAME (as `--host` names it), LABEL (as the person knows it),
EVENTS (the host's event name -> ours, hosts/event.py KINDS), TOOLS (the host's tool
name -> the matcher's name and the input field holding the command or path), CAP (the
characters of context the host shows whole; UNIT, if set, says how the host counts them:
"utf-8" bytes, else UTF-16 units), EMPTY (what to print when there is nothing
to say: Gemini CLI reads stdout as JSON, so "{}"), and answer(kind, reply) -> the host's
JSON, or None for no output. Optional: covered(payload) -> whether another of the host's
hooks answers this pre-tool-use call (Cursor's shell: beforeShellExecution, not preToolUse).

Imported by name, lazily: the PreToolUse hook loads only its own host's module.
"""
from __future__ import annotations

MODULES = {
    "claude": "cardmem.hosts.claude_code.protocol",
    "codex": "cardmem.hosts.codex.protocol",
    "gemini": "cardmem.hosts.gemini.protocol",
    "cursor": "cardmem.hosts.cursor.protocol",
    "copilot": "cardmem.hosts.copilot.protocol",
}
ALIASES = {"claude-code": "claude"}
HOSTS = tuple(MODULES)


def load(host: str):
    """The adapter module for a host name (or alias); KeyError names the known ones."""
    name = ALIASES.get(host, host)
    if name not in MODULES:
        raise KeyError(f"unknown host {host!r}; expected one of {', '.join(HOSTS)}")
    return __import__(MODULES[name], fromlist=["answer"])
