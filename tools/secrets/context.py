"""Secrets recognised by the words around them rather than by their own shape.

`password = ...`, `"apiKey": "..."`, `--token ...`, `?access_token=...`,
`Authorization: Bearer ...`, and a net for random-looking values next to words like
key, secret, token, password or auth. Patterns and their `accept` checks; redact.py
runs them, after the provider shapes of catalogue.py.
"""
from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter

from .catalogue import has_digit_and_letter

# --- assignments: password = ..., "apiKey": "...", --token ..., X-Api-Key: ... --------

# A key counts when its name ENDS in one of these words (so max_tokens, password_hash,
# token_bucket are not keys of secrets) and the word starts a name segment: after a
# non-alphanumeric character or at a camelCase hump (dbPassword, _authToken).
_WORDS = (
    "pgpassword|password|passwd|passphrase|pass|pwd|secret|token|apikey|credentials?"
)
_KEY_WORDS = "(?:api|secret|access|private|auth|encryption|signing|master|account)[_-]?key"
_SECRET_WORD = rf"(?P<word>(?i:{_KEY_WORDS}|{_WORDS}))(?![A-Za-z0-9_])"


def _value(bare: str) -> str:
    return (
        # \"...\" inside a JSON string (\\\"...\\\" when it is escaped twice)
        r"(?:\\+\"(?P<s_esc>(?:[^\"\\\n]|\\+[^\"\\\n])*)\\+\""
        r"|\"(?P<s_dq>(?:[^\"\\\n]|\\.)*)\""               # "..."
        r"|'(?P<s_sq>[^'\n]*)'"                            # '...'
        rf"|(?P<s_bare>{bare}))"                          # bare, up to a delimiter
    )


ASSIGN = re.compile(
    _SECRET_WORD
    + r"(?P<kq>\\?[\"'])?"  # closing quote of a quoted key
    # a Python annotation between name and value: password: str = "..."
    + r"(?P<ann>[ \t]*:[ \t]*[A-Za-z_][\w.\[\]|, ]{0,40}?(?=[ \t]*=(?!=)))?"
    + r"(?P<sep>[ \t]*(?P<op>=>|:=|=|:)[ \t]*)"
    # '&' may be part of a password in an env file; URL queries have their own rule.
    + _value(r"[^\s'\"`,;<>(){}\[\]\\]+")
)
# ?access_token=...&  (a query parameter ends at '&' or '#')
QUERY = re.compile(
    r"[?&](?:[A-Za-z0-9_.-]*[_.-]|[A-Za-z0-9]*[a-z0-9](?=[A-Z]))?"
    + rf"(?i:{_KEY_WORDS}|{_WORDS})=(?P<s>[^&#\s'\"<>\\]+)"
)
# CLI flags: --password hunter2, --api-key=..., --client-secret "..." (one shell word)
FLAG = re.compile(
    r"--(?<![\w-]--)(?:[A-Za-z0-9-]*-)?"
    + rf"(?i:{_KEY_WORDS}|{_WORDS})(?![A-Za-z0-9_-])(?:=|[ \t]+)(?!-)"
    + _value(r"[^\s'\"`\\]+")
)

# Values that name a type, a variable or a placeholder rather than hold a secret.
_NOT_SECRETS = frozenset(
    """str string bytes int float bool boolean none null nil true false undefined
    optional any object dict list number text required secretstr secretbytes
    yes no on off env redacted unset empty include omit same-origin""".split()
)
_PLACEHOLDER = re.compile(
    r"""^(?:\$|%\(|\{\{|<|\*{3}|x{3,}$|\.{3}|\[REDACTED|os\.(?:environ|getenv)
    |process\.env|getpass|env\(|input\()""",
    re.X | re.I,
)
DOTTED_NAME = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
_TYPE_NAME = re.compile(r"^(?:[A-Z][a-z]+)+$")
_LINE_END = re.compile(r"""[ \t]*(?:\#[^\n]*)?(?:\r?\n|\\[nr]|\\?["']|\Z)""")
_LINE_PREFIX = re.compile(r"""^[ \t>*-]*(?:export[ \t]+)?["']?[\w.-]*$""")


def secret_group(m: re.Match[str]) -> str:
    groups = m.re.groupindex
    for g in ("s_esc", "s_dq", "s_sq", "s_bare"):
        if g in groups and m.group(g) is not None:
            return g
    return "s"


def _value_is_secret(value: str, key: str, bare: bool) -> bool:
    v = value.strip()
    if len(v) < 3 or "[REDACTED:" in v:
        return False
    low = v.lower()
    if low in _NOT_SECRETS or low.strip("_") == key.lower().strip("_-"):
        return False  # password=None, token=token
    if _PLACEHOLDER.match(v):
        return False  # password=$DB_PASSWORD, token: ${{ secrets.X }}, <your-key>
    if bare and DOTTED_NAME.match(v) and not any(map(has_digit_and_letter, v.split(".")[1:])):
        return False  # token=self.token, password=args.password; not hvs.CAESIJ0abc
    return True


def _line_prefix(text: str, start: int) -> str:
    # Text between the last line break (a real one, or a JSON-escaped "\n") and start.
    real = text.rfind("\n", 0, start) + 1
    escaped = text.rfind("\\n", 0, start)
    return text[max(real, escaped + 2 if escaped >= 0 else 0) : start]


def _starts_name_segment(text: str, i: int) -> bool:
    if i == 0 or not text[i - 1].isascii() or not text[i - 1].isalnum():
        return True
    if text[i - 1 : i + 8].lower() == "1password":
        return False  # the product: 1Password: "Stripe live" names a vault item
    return text[i].isupper() and (text[i - 1].islower() or text[i - 1].isdigit())


def assign_ok(m: re.Match[str], text: str) -> bool:
    if not _starts_name_segment(text, m.start()):
        return False  # bypass=..., compass: ...
    if m.start() > 0 and text[m.start() - 1] in "?&":
        return False  # a URL query parameter: QUERY's business (ends at '&')
    g = secret_group(m)
    bare = g == "s_bare"
    if bare and m.end() < len(text) and text[m.end()] in "([.":
        return False  # a call or an index: token = make_token(...)
    if not _value_is_secret(m.group(g), m.group("word"), bare):
        return False
    if m.group("op") == ":" and bare:
        value = m.group(g)
        if _TYPE_NAME.match(value):
            return False  # password: SecretStr
        if not _LINE_END.match(text, m.end()):
            return False  # "Password: must be 8 characters" is a sentence
        # "key: value" without quotes is prose unless the key opens its line (YAML,
        # HTTP headers, .npmrc), is quoted (JSON, Python dicts), is a header in quotes
        # of its own (curl -H 'X-Api-Key: ...') or the value looks random.
        if not (m.group("kq") or _LINE_PREFIX.match(_line_prefix(text, m.start()))
                or _quoted_header(m, text) or (len(value) >= 8 and has_digit_and_letter(value))):
            return False
    return True


def _quoted_header(m: re.Match[str], text: str) -> bool:
    start = m.start()
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_-."):
        start -= 1
    quote = text[start - 1 : start]
    return quote in ("'", '"') and text[m.end() : m.end() + 1] == quote


def value_ok(m: re.Match[str], _text: str) -> bool:
    g = secret_group(m)
    return _value_is_secret(m.group(g), "", g == "s_bare")


_AUTH_HEADER = re.compile(r"authorization\\?[\"']?\s*[:=]\s*\\?[\"']?\s*$")
_AUTH_WORD = re.compile(r"authorization\\?[\"']?\s+\\?[\"']?$")  # nginx: Authorization 'Basic ...'


def bearer_ok(m: re.Match[str], text: str) -> bool:
    s = m.group("s")
    if "[REDACTED:" in s:
        return False
    before = text[max(0, m.start() - 40) : m.start()].lower()
    if _AUTH_HEADER.search(before) is not None:
        return True  # Authorization: Bearer/Basic/token <credential>
    if not has_digit_and_letter(s):
        return False  # "basic setup", "token bucket", "Bearer tokenization"
    return m.group("scheme").lower() == "bearer" or _AUTH_WORD.search(before) is not None


# --- a secret in a curl command: curl -u user:password -----------------------------

CURL_USER = re.compile(
    r"(?:-u|--user)(?:[ \t]+|=)(?P<q>[\"']?)[^\s:\"']+:(?P<s>[^\s\"']{3,})(?P=q)(?![^\s;|&)])"
)


def curl_user_ok(m: re.Match[str], text: str) -> bool:
    line = text[text.rfind("\n", 0, m.start()) + 1 : m.start()]
    return "curl" in line and not m.group("s").startswith(("$", "[REDACTED"))


# --- Docker's config.json: "auth": "<base64 of user:password>" ----------------------

DOCKER_AUTH = re.compile(r'"auth\\?"[ \t]*:[ \t]*\\?"(?P<s>[A-Za-z0-9+/]{4,}={0,2})\\?"')


def docker_auth_ok(m: re.Match[str], _text: str) -> bool:
    try:
        return b":" in base64.b64decode(m.group("s"), validate=True)
    except (binascii.Error, ValueError):
        return False


def b64_private_key_ok(m: re.Match[str], _text: str) -> bool:
    # LS0tLS1CRUdJTi is "-----BEGIN"; a certificate is public, a private key is not.
    head = m.group("s")[:64]
    try:
        return b"PRIVATE KEY" in base64.b64decode(head[: len(head) // 4 * 4])
    except (binascii.Error, ValueError):
        return False


# --- the net: a random-looking value next to key/secret/token/password/auth ---------

NEAR_WORDS = ("key", "secret", "token", "passw", "pwd", "cred", "auth")
NEAR = re.compile(
    r"(?P<word>(?i:key|secret|token|passw(?:or)?d|pwd|credentials?|creds|auth))"
    r"[\w.-]{0,20}?"  # the rest of the name: _KEY, -key-data, Token
    r"(?:\\?[\"'])?"
    r"(?:[ \t]*(?:=>|:=|[:=])[ \t]*|[ \t]+(?:(?i:is|was)[ \t]+)?)"  # = or : or prose
    r"(?:\\?[\"'])?"
    r"(?P<s>[A-Za-z0-9+/_.~=-]{16,})(?![A-Za-z0-9+/_.~=-])"
)
_HEX_DIGEST = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64}|[0-9A-F]{40}|[0-9A-F]{64})$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_VERSION = re.compile(r"^v?[0-9]+(?:\.[0-9]+)+(?:[-+.][0-9A-Za-z.-]+)?$")
_WORDY = re.compile(r"^[A-Za-z]+(?:[_.-][A-Za-z]+)*$")


def entropy(s: str) -> float:
    """Shannon entropy of s, in bits per character."""
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


# Parts of names and digests: node-cache-Linux-x64-npm-<sha256>, bert-base-cased-conll03
_NAME_PART = re.compile(r"[A-Za-z][a-z]*[0-9]{0,4}|[0-9]{1,4}|[A-Z]{1,6}[0-9]{0,3}|[0-9a-f]{40}|[0-9a-f]{64}")


def _looks_like_name(v: str) -> bool:
    parts = re.split(r"[-_.]", v)
    return len(parts) > 1 and all(_NAME_PART.fullmatch(p) for p in parts if p)


def _looks_like_path(v: str) -> bool:
    # src/auth/token_store.py, /var/lib/app: segments are names, not random strings
    if "/" not in v or "+" in v or "=" in v:
        return False
    return all(seg == seg.lower() or _WORDY.match(seg) or seg.isdigit()
               for seg in v.split("/") if seg)


def random_enough(v: str) -> bool:
    """True for a value that looks random rather than a name, a path, a hash or a
    version: what a key, token or password next to such a word looks like."""
    v = v.rstrip("=")
    if len(v) < 16 or _HEX_DIGEST.match(v) or _UUID.match(v) or _VERSION.match(v):
        return False
    if DOTTED_NAME.match(v) or _looks_like_path(v) or _looks_like_name(v):
        return False
    if _WORDY.match(v):
        # letters only: a random string switches case often, an identifier rarely
        switches = sum(a.islower() != b.islower() for a, b in zip(v, v[1:]) if a.isalpha() and b.isalpha())
        if switches < len(v) / 4:
            return False
    elif not has_digit_and_letter(v):
        return False
    return entropy(v) >= 3.0


def near_ok(m: re.Match[str], _text: str) -> bool:
    return random_enough(m.group("s"))
