"""JSON for the PreToolUse hook, with the interpreter's C scanner and string encoder and
without importing the `json` package.

`import json` costs a hook about as much as everything else it does on an ungoverned
call (5.7 M instructions, bench/RESULTS.md: its decoder and encoder compile regular
expressions, and bring `re`), and the hook runs before every tool call. `loads` accepts
what `json.loads` accepts (strict strings, NaN and Infinity) and raises ValueError
otherwise; `dumps` writes what `json.dumps(value, ensure_ascii=False)` writes, compact,
for the plain values the hook writes (dicts with string keys, lists, tuples, strings,
numbers, booleans, None).
"""
from __future__ import annotations

try:
    from _json import encode_basestring, make_scanner
except ImportError:  # another interpreter: the json package, as anyone would
    make_scanner = encode_basestring = None

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


def dumps(value: object) -> str:
    if encode_basestring is None:
        import json

        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    out: list[str] = []
    _write(value, out.append)
    return "".join(out)


def _write(v: object, put) -> None:
    if isinstance(v, str):
        put(encode_basestring(v))
    elif v is None or v is True or v is False:
        put("null" if v is None else "true" if v else "false")
    elif isinstance(v, int):
        put(int.__repr__(v))
    elif isinstance(v, float):
        put(float.__repr__(v) if v == v and v not in (float("inf"), float("-inf")) else
            "NaN" if v != v else "Infinity" if v > 0 else "-Infinity")
    elif isinstance(v, dict):
        put("{")
        for n, (k, item) in enumerate(v.items()):
            if not isinstance(k, str):
                raise TypeError(f"keys must be str, not {type(k).__name__}")
            put("," + encode_basestring(k) + ":" if n else encode_basestring(k) + ":")
            _write(item, put)
        put("}")
    elif isinstance(v, (list, tuple)):
        put("[")
        for n, item in enumerate(v):
            if n:
                put(",")
            _write(item, put)
        put("]")
    else:
        raise TypeError(f"{type(v).__name__} is not JSON serializable")
