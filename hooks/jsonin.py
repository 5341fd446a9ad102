"""JSON in, for the PreToolUse hook: the host's call and the session file, read with the
interpreter's C scanner without importing the `json` package.

`import json` costs a hook about as much as everything else it does on an ungoverned call
(its decoder and encoder compile regular expressions, and bring `re`): the hook runs
before every tool call, and writes JSON only when a rule fires. `loads` accepts what
`json.loads` accepts (strict strings, NaN and Infinity) and raises ValueError otherwise.
"""
from __future__ import annotations

try:
    from _json import make_scanner
except ImportError:  # another interpreter: the json package, as anyone would
    make_scanner = None

WHITESPACE = " \t\n\r"


class _Context:
    """What the C scanner reads off json.JSONDecoder (its defaults)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float  # "NaN", "Infinity", "-Infinity", as json.loads reads them


_scan = make_scanner(_Context()) if make_scanner else None


def loads(text: str) -> object:
    if _scan is None:
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip(WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration:
        raise ValueError("not JSON") from None
    if text[end:].strip(WHITESPACE):
        raise ValueError("extra data after the JSON value")
    return value
