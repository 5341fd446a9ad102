"""Replace API keys, tokens and passwords by `[REDACTED:<kind>]` markers.

Everything that leaves the machine (a transcript excerpt sent to the model) or enters
git (a signal card) passes through `redact` first. Standard library only; the regexes
are compiled once at import.

Each rule names the secret's kind and the part of its match that is secret (group
`s`, or one of the `s_*` value groups); the rest of the match, such as a key name or a
URL's scheme and host, is kept so the text stays readable. A rule also lists literals
of which one must occur for the rule to run at all, and may reject look-alikes.

Speed: every pattern opens with a literal (or a short character set), never with a
look-behind or `\\b`, because Python's regex engine scans for a literal prefix quickly
but tries a leading look-behind at every position (30x slower on 2 MB). Word-boundary
checks therefore come right after the literal, as a look-behind over it.

Rules run in order, each on the output of the one before: private-key blocks first
(their base64 would otherwise be half-matched by the token rules), then connection
strings and provider token shapes, then `password = ...` style assignments, which
skip values that are already markers.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterator

MARKER = "[REDACTED:{}]"


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    # Literals of which one must occur in the text for the rule to run: a `in` scan of
    # 2 MB costs about a millisecond, a regex pass tens of them.
    needles: tuple[str, ...]
    lowered: bool = False  # needles are checked against text.lower()
    # For case-insensitive rules: lowercase literals (see _literals) where a match
    # starts; found in text.lower(), and `pattern` is tried only there (see _matches).
    anchor: re.Pattern[str] | None = None
    # Returns False for a match that only looks like a secret (then kept as it is).
    accept: Callable[[re.Match[str], str], bool] | None = None


def _tok(prefix: str, width: int, body: str) -> str:
    """A token opening with `prefix` (`width` characters long) not glued to a longer
    token on either side."""
    return (
        rf"(?P<s>{prefix}(?<![A-Za-z0-9_-][\s\S]{{{width}}}){body})(?![A-Za-z0-9_-])"
    )


def _has_digit_and_letter(s: str) -> bool:
    return any(c.isdigit() for c in s) and any(c.isalpha() for c in s)


def _random_looking(m: re.Match[str], _text: str) -> bool:
    # Real keys are random, letters and digits mixed; a slug such as
    # sk-this-is-not-a-key-at-all is left alone.
    return _has_digit_and_letter(m.group("s"))


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


_ASSIGN = re.compile(
    _SECRET_WORD
    + r"(?P<kq>\\?[\"'])?"  # closing quote of a quoted key
    # a Python annotation between name and value: password: str = "..."
    + r"(?P<ann>[ \t]*:[ \t]*[A-Za-z_][\w.\[\]|, ]{0,40}?(?=[ \t]*=(?!=)))?"
    + r"(?P<sep>[ \t]*(?P<op>=>|:=|=|:)[ \t]*)"
    # '&' may be part of a password in an env file; URL queries have their own rule.
    + _value(r"[^\s'\"`,;<>(){}\[\]\\]+")
)
# ?access_token=...&  (a query parameter ends at '&' or '#')
_QUERY = re.compile(
    r"[?&](?:[A-Za-z0-9_.-]*[_.-]|[A-Za-z0-9]*[a-z0-9](?=[A-Z]))?"
    + rf"(?i:{_KEY_WORDS}|{_WORDS})=(?P<s>[^&#\s'\"<>\\]+)"
)
# CLI flags: --password hunter2, --api-key=..., --client-secret "..." (one shell word)
_FLAG = re.compile(
    r"--(?<![\w-]--)(?:[A-Za-z0-9-]*-)?"
    + rf"(?i:{_KEY_WORDS}|{_WORDS})(?![A-Za-z0-9_-])(?:=|[ \t]+)(?!-)"
    + _value(r"[^\s'\"`\\]+")
)

# Values that name a type, a variable or a placeholder rather than hold a secret.
_NOT_SECRETS = frozenset(
    """str string bytes int float bool boolean none null nil true false undefined
    optional any object dict list number text required secretstr secretbytes
    yes no on off env redacted unset empty""".split()
)
_PLACEHOLDER = re.compile(
    r"""^(?:\$|%\(|\{\{|<|\*{3}|x{3,}$|\.{3}|\[REDACTED|os\.(?:environ|getenv)
    |process\.env|getpass|env\(|input\()""",
    re.X | re.I,
)
_DOTTED_NAME = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
_TYPE_NAME = re.compile(r"^(?:[A-Z][a-z]+)+$")
_LINE_END = re.compile(r"""[ \t]*(?:\#[^\n]*)?(?:\r?\n|\\[nr]|\\?["']|\Z)""")
_LINE_PREFIX = re.compile(r"""^[ \t>*-]*(?:export[ \t]+)?["']?[\w.-]*$""")


def _secret_group(m: re.Match[str]) -> str:
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
    if bare and _DOTTED_NAME.match(v):
        return False  # token=self.token, password=args.password
    return True


def _line_prefix(text: str, start: int) -> str:
    # Text between the last line break (a real one, or a JSON-escaped "\n") and start.
    real = text.rfind("\n", 0, start) + 1
    escaped = text.rfind("\\n", 0, start)
    return text[max(real, escaped + 2 if escaped >= 0 else 0) : start]


def _starts_name_segment(text: str, i: int) -> bool:
    if i == 0 or not text[i - 1].isascii() or not text[i - 1].isalnum():
        return True
    return text[i].isupper() and (text[i - 1].islower() or text[i - 1].isdigit())


def _assign_ok(m: re.Match[str], text: str) -> bool:
    if not _starts_name_segment(text, m.start()):
        return False  # bypass=..., compass: ...
    if m.start() > 0 and text[m.start() - 1] in "?&":
        return False  # a URL query parameter: _QUERY's business (ends at '&')
    g = _secret_group(m)
    bare = g == "s_bare"
    if bare and m.end() < len(text) and text[m.end()] in "([.":
        return False  # a call or an index: token = make_token(...)
    if not _value_is_secret(m.group(g), m.group("word"), bare):
        return False
    if m.group("op") == ":" and bare:
        # "key: value" without quotes is prose unless the key opens its line
        # (YAML, HTTP headers, .npmrc) or is quoted (JSON, Python dicts).
        if not m.group("kq") and not _LINE_PREFIX.match(_line_prefix(text, m.start())):
            return False
        if _TYPE_NAME.match(m.group(g)):
            return False  # password: SecretStr
        if not _LINE_END.match(text, m.end()):
            return False  # "Password: must be 8 characters" is a sentence
    return True


def _value_ok(m: re.Match[str], _text: str) -> bool:
    g = _secret_group(m)
    return _value_is_secret(m.group(g), "", g == "s_bare")


_AUTH_HEADER = re.compile(r"authorization\\?[\"']?\s*[:=]\s*\\?[\"']?\s*$")
_AUTH_WORD = re.compile(r"authorization\\?[\"']?\s+\\?[\"']?$")  # nginx: Authorization 'Basic ...'


def _bearer_ok(m: re.Match[str], text: str) -> bool:
    s = m.group("s")
    if "[REDACTED:" in s:
        return False
    before = text[max(0, m.start() - 40) : m.start()].lower()
    if _AUTH_HEADER.search(before) is not None:
        return True  # Authorization: Bearer/Basic/token <credential>
    if not _has_digit_and_letter(s):
        return False  # "basic setup", "token bucket", "Bearer tokenization"
    return m.group("scheme").lower() == "bearer" or _AUTH_WORD.search(before) is not None


def _c(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _literals(*words: str) -> re.Pattern[str]:
    # A bare alternation of literals (longest first) is scanned fast; the rule's own
    # pattern, with its case-insensitive groups and look-arounds, would not be.
    return re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)))


_RULES: tuple[_Rule, ...] = (
    # -----BEGIN RSA PRIVATE KEY----- ... -----END RSA PRIVATE KEY-----, also inside a
    # JSON string (escaped \n); when cut off, up to where the base64 body ends.
    _Rule(
        "private-key",
        _c(
            r"(?P<s>-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:[\s\S]{0,20000}?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
            r"|(?:\\[nr]|[A-Za-z0-9+/=\s:,.-])*))"
        ),
        ("PRIVATE KEY",),
    ),
    # scheme://user:password@host: scheme, user and host stay, the password goes.
    _Rule(
        "connection-password",
        _c(r"://[^\s:/@'\"<>]*:(?P<s>[^\s'\"<>/]+)@(?=[A-Za-z0-9\[._-])"),
        ("://",),
        accept=lambda m, _t: "[REDACTED:" not in m.group("s"),
    ),
    _Rule(
        "slack-webhook",
        _c(r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9_/-]{10,})"),
        ("hooks.slack.com",),
    ),
    _Rule(
        "discord-webhook",
        _c(r"discord(?:app)?\.com/api/webhooks/(?P<s>\d+/[A-Za-z0-9_-]{20,})"),
        ("/api/webhooks/",),
    ),
    _Rule("anthropic-key", _c(_tok("sk-ant-", 7, r"[A-Za-z0-9_-]{20,}")), ("sk-ant-",)),
    _Rule(
        "openai-key",
        _c(_tok("sk-", 3, r"(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
        ("sk-",),
        accept=_random_looking,
    ),
    _Rule(
        "aws-key",
        _c(_tok("A(?:KIA|SIA|BIA|CCA|IDA|ROA|IPA|NPA|NVA|PKA)", 4, "[A-Z0-9]{16}")),
        ("AKIA", "ASIA", "ABIA", "ACCA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA"),
    ),
    # The 40-character secret key has no prefix: only recognised where it is assigned.
    _Rule(
        "aws-secret",
        _c(
            r"(?i:secret(?:_?access)?_?key)"
            r"\\?[\"']?[ \t]*[:=][ \t]*(?:\\?[\"'])?"
            r"(?P<s>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        ),
        ("secret",),
        lowered=True,
        anchor=_literals("secret"),
    ),
    _Rule("github-token", _c(_tok("gh[pousr]_", 4, "[A-Za-z0-9]{36,255}")), ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    _Rule("github-token", _c(_tok("github_pat_", 11, "[A-Za-z0-9_]{22,255}")), ("github_pat_",)),
    _Rule("gitlab-token", _c(_tok("glpat-", 6, "[A-Za-z0-9_-]{20,}")), ("glpat-",)),
    _Rule(
        "slack-token",
        _c(_tok("xox[abposre]-", 5, "[A-Za-z0-9-]{10,}")),
        ("xox",),
        accept=_random_looking,
    ),
    _Rule("slack-token", _c(_tok("xapp-", 5, r"\d-[A-Za-z0-9-]{10,}")), ("xapp-",)),
    _Rule("google-api-key", _c(_tok("AIza", 4, "[0-9A-Za-z_-]{35}")), ("AIza",)),
    _Rule("google-oauth-secret", _c(_tok("GOCSPX-", 7, "[A-Za-z0-9_-]{20,}")), ("GOCSPX-",)),
    _Rule("google-oauth-token", _c(_tok(r"ya29\.", 5, "[0-9A-Za-z_-]{20,}")), ("ya29.",)),
    _Rule("stripe-key", _c(_tok("sk_(?:live|test)_", 8, "[A-Za-z0-9]{16,}")), ("sk_live_", "sk_test_")),
    _Rule("stripe-key", _c(_tok("rk_(?:live|test)_", 8, "[A-Za-z0-9]{16,}")), ("rk_live_", "rk_test_")),
    _Rule("stripe-webhook-secret", _c(_tok("whsec_", 6, "[A-Za-z0-9]{24,}")), ("whsec_",)),
    _Rule("npm-token", _c(_tok("npm_", 4, "[A-Za-z0-9]{36}")), ("npm_",)),
    _Rule(
        "huggingface-token",
        _c(_tok("hf_", 3, "[A-Za-z0-9]{34,}")),
        ("hf_",),
        accept=_random_looking,
    ),
    _Rule(
        "sendgrid-key",
        _c(_tok(r"SG\.", 3, r"[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,64}")),
        ("SG.",),
    ),
    _Rule("twilio-key", _c(_tok("SK", 2, "[0-9a-f]{32}")), ("SK",)),
    _Rule("digitalocean-token", _c(_tok("do[opr]_v1_", 7, "[a-f0-9]{64}")), ("_v1_",)),
    # header.payload.signature, each base64url; the header is JSON, so it opens "eyJ".
    _Rule(
        "jwt",
        _c(_tok("eyJ", 3, r"[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")),
        ("eyJ",),
    ),
    # Authorization: Bearer <token> / Basic <base64> / token <token>; "Bearer x" anywhere.
    _Rule(
        "bearer",
        _c(
            r"(?P<scheme>(?i:bearer|basic|token))[ \t]+"
            r"(?P<s>[A-Za-z0-9._~+/-]{8,}=*)(?![A-Za-z0-9._~+/=-])"
        ),
        ("bearer", "basic", "token"),
        lowered=True,
        anchor=_literals("bearer", "basic", "token"),
        accept=_bearer_ok,
    ),
    _Rule("password", _QUERY, ("=",), accept=_value_ok),
    _Rule("password", _FLAG, ("--",), accept=_value_ok),
    _Rule(
        "password",
        _ASSIGN,
        ("pass", "pwd", "secret", "token", "key", "credential"),
        lowered=True,
        anchor=_literals(
            "pgpass", "pass", "pwd", "secret", "token", "credential", "api",
            "access", "private", "auth", "encryption", "signing", "master", "account",
        ),
        accept=_assign_ok,
    ),
)


def _matches(rule: _Rule, text: str, lowered: str | None) -> Iterator[re.Match[str]]:
    """Accepted, non-overlapping matches of the rule, left to right.

    With an anchor, the rule's pattern is only tried where one of its literals occurs
    in text.lower(). That needs the lowered text to line up with the original one
    character for one (true unless some character lowercases to two, like 'İ');
    otherwise, or without an anchor, the pattern scans the text itself.
    """
    accept = rule.accept or (lambda _m, _t: True)
    if rule.anchor is None or lowered is None or len(lowered) != len(text):
        yield from (m for m in rule.pattern.finditer(text) if accept(m, text))
        return
    end = 0
    for cand in rule.anchor.finditer(lowered):
        start = cand.start()
        if start < end:
            continue
        m = rule.pattern.match(text, start)
        if m is not None and accept(m, text):
            end = m.end()
            yield m


def _apply(rule: _Rule, text: str, lowered: str | None, counts: Counter[str]) -> str:
    marker = MARKER.format(rule.kind)
    out: list[str] = []
    pos = 0
    for m in _matches(rule, text, lowered):
        g = _secret_group(m)
        counts[rule.kind] += 1
        out.append(text[pos : m.start(g)])
        out.append(marker)
        pos = m.end(g)
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def redact_with_counts(text: str) -> tuple[str, dict[str, int]]:
    """The redacted text and how many secrets of each kind were replaced."""
    counts: Counter[str] = Counter()
    lowered: str | None = None
    for rule in _RULES:
        if rule.lowered:
            if lowered is None:
                lowered = text.lower()
            hay = lowered
        else:
            hay = text
        if not any(n in hay for n in rule.needles):
            continue
        new = _apply(rule, text, lowered if rule.lowered else None, counts)
        if new != text:
            text, lowered = new, None
    return text, dict(counts)


def redact(text: str) -> str:
    """`text` with every recognised secret replaced by `[REDACTED:<kind>]`."""
    return redact_with_counts(text)[0]
