"""Replace API keys, tokens and passwords by `[REDACTED:<kind>]` markers.

Everything that leaves the machine (a transcript excerpt sent to the model) or enters
git (a card an agent writes) passes through `redact` first. Standard library only; the
regexes are compiled once at import.

Each rule names the secret's kind and the part of its match that is secret (group
`s`, or one of the `s_*` value groups); the rest of the match, such as a key name or a
URL's scheme and host, is kept so the text stays readable. A rule also lists literals
(gitleaks calls them keywords) of which one must occur for the rule to run at all, and
may reject look-alikes.

Where the rules are: provider token shapes (ported from gitleaks) in
catalogue.py; secrets known by the words around them (`password = ...`,
`Authorization: Bearer ...`, a random-looking value next to "key") in
context.py. This module runs them.

Speed: every pattern opens with a literal (or a short character set), never with a
look-behind or `\\b`, because Python's regex engine scans for a literal prefix quickly
but tries a leading look-behind at every position (far slower on a long text:
bench/RESULTS.md, "Figures from comments"). The token
rules' keywords are looked up in the text's long words only (see _long_words).

Rules run in order, each on the output of the one before: private-key blocks first
(their base64 would otherwise be half-matched by the token rules), then connection
strings and provider token shapes, then `password = ...` style assignments and the
entropy net, which skip values that are already markers.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterator

from . import context as ctx
from .catalogue import TOKENS, WEBHOOKS

MARKER = "[REDACTED:{}]"


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    # Literals of which one must occur in the text for the rule to run: a `in` scan of
    # 2 MB costs about a millisecond, a regex pass tens of them.
    needles: tuple[str, ...]
    lowered: bool = False  # needles are checked against text.lower()
    # Needles (lowercase) are checked against the text's long words (see _long_words):
    # for rules whose whole match is one word of at least MIN_WORD characters.
    in_words: bool = False
    # For case-insensitive rules: lowercase literals (see _literals) where a match
    # starts; found in text.lower(), and `pattern` is tried only there (see _matches).
    anchor: re.Pattern[str] | None = None
    # Returns False for a match that only looks like a secret (then kept as it is).
    accept: Callable[[re.Match[str], str], bool] | None = None
    left: int = 0  # the secret starts this many characters before its group


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
    # The same block, base64-encoded (kubeconfig client-key-data, Kubernetes secrets).
    _Rule("private-key", _c(r"(?P<s>LS0tLS1CRUdJTi[A-Za-z0-9+/]{20,}={0,2})"), ("ls0tls1crudjti",),
          in_words=True, accept=ctx.b64_private_key_ok),
    *(_Rule(kind, _c(p), needles, in_words=True) for kind, p, needles in WEBHOOKS),
    *(_Rule(t.kind, _c(t.pattern), t.needles, in_words=True, accept=t.accept, left=t.left)
      for t in TOKENS),
    # The 40-character AWS secret key has no prefix: only recognised where it is named,
    # also in prose ("secret access key wJalr...").
    _Rule(
        "aws-secret",
        _c(
            r"(?i:secret(?:_?access)?_?key|secret[ \t]access[ \t]key)"
            r"(?:\\?[\"']?[ \t]*[:=][ \t]*(?:\\?[\"'])?|[ \t]+(?:is[ \t]+)?)"
            r"(?P<s>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        ),
        ("secret",),
        lowered=True,
        anchor=_literals("secret"),
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
        accept=ctx.bearer_ok,
    ),
    _Rule("docker-auth", ctx.DOCKER_AUTH, ('"auth',), lowered=True, anchor=_literals('"auth'),
          accept=ctx.docker_auth_ok),
    _Rule("password", ctx.CURL_USER, ("curl",), lowered=True, accept=ctx.curl_user_ok),
    _Rule("password", ctx.QUERY, ("=",), accept=ctx.value_ok),
    _Rule("password", ctx.FLAG, ("--",), accept=ctx.value_ok),
    _Rule(
        "password",
        ctx.ASSIGN,
        ("pass", "pwd", "secret", "token", "key", "credential"),
        lowered=True,
        anchor=_literals(
            "pgpass", "pass", "pwd", "secret", "token", "credential", "api",
            "access", "private", "auth", "encryption", "signing", "master", "account",
        ),
        accept=ctx.assign_ok,
    ),
    # Last, the net: what is left that looks random, next to key/secret/token/auth.
    _Rule("secret", ctx.NEAR, ctx.NEAR_WORDS, lowered=True, anchor=_literals(*ctx.NEAR_WORDS),
          accept=ctx.near_ok),
)

# The word rules run together (_word_rules): they must be one run in _RULES.
_WORD_RULES = tuple(r for r in _RULES if r.in_words)
_first = next(i for i, r in enumerate(_RULES) if r.in_words)
assert _RULES[_first:_first + len(_WORD_RULES)] == _WORD_RULES
del _first

# The token rules' keywords are looked up in the words of a text that are at least
# this long (no token is shorter), deduplicated: a few per cent of a transcript. A rule
# whose keyword is there is tried on those words first, and on the whole text only if
# it matches there: most keywords (sk-, pat, key-) turn up in ordinary text.
MIN_WORD = 16
_SPLIT = str.maketrans({c: " " for c in "\"'<>(){}[],;`|\\"})


def _long_words(text: str) -> str:
    if len(text) < 20_000:
        return text  # small: as cheap to search whole
    return " ".join({w for w in text.translate(_SPLIT).split() if len(w) >= MIN_WORD})


# Characters of real text past a window's word that a pattern's look-ahead may read.
LOOKAHEAD = 64


def _word_windows(rule: _Rule, words: str, text: str) -> list[tuple[int, int]]:
    """Where in `text` a word rule can match: the occurrences of the long words in which
    it matches (`words` are text's long words), merged and sorted.

    A word rule's whole match is one word of MIN_WORD+ characters (in_words), so every
    match lies inside a long word the rule matches in `words`; finding those words with
    str.find is much cheaper than running the pattern over 2 MB once per kind present.
    """
    hits = set()
    for m in rule.pattern.finditer(words):
        start = words.rfind(" ", 0, m.start()) + 1
        end = words.find(" ", m.end())
        hits.add(words[start:end if end >= 0 else len(words)])
    spans = []
    for w in hits:
        at = text.find(w)
        while at >= 0:
            spans.append((at, at + len(w)))
            at = text.find(w, at + 1)
    spans.sort()
    merged: list[tuple[int, int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged


def _matches(rule: _Rule, text: str, lowered: str | None,
             windows: list[tuple[int, int]] | None = None) -> Iterator[re.Match[str]]:
    """Accepted, non-overlapping matches of the rule, left to right.

    With an anchor, the rule's pattern is only tried where one of its literals occurs
    in text.lower(). That needs the lowered text to line up with the original one
    character for one (true unless some character lowercases to two, like 'İ');
    otherwise, or without an anchor, the pattern scans the text itself.
    """
    accept = rule.accept or (lambda _m, _t: True)
    if windows is not None:
        # Each window scanned from its word's start (a look-behind still sees the text
        # before it) to a little past its end (a look-ahead sees the real next characters).
        end = 0
        for a, b in windows:
            for m in rule.pattern.finditer(text, a, min(len(text), b + LOOKAHEAD)):
                if m.start() >= b:
                    break
                if m.start() >= end and accept(m, text):
                    end = m.end()
                    yield m
        return
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
        g = ctx.secret_group(m)
        counts[rule.kind] += 1
        out.append(text[pos : max(pos, m.start(g) - rule.left)])
        out.append(marker)
        pos = m.end(g)
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _word_rules(rules: tuple[_Rule, ...], text: str, counts: Counter[str]) -> str:
    """The word rules (provider token shapes, webhooks) together, in one pass over text.

    Each is tried only if one of its keywords, then its pattern, turns up in the text's
    long words (see _long_words; most keywords, like sk-, pat or key-, turn up in ordinary
    text), and then only around the long words it matches (_word_windows). All of them
    look at the same text and the secrets they find are replaced at once: where two
    overlap, the earlier rule (the more specific shape) wins, as when each ran on the
    output of the one before. Two MB with a hundred kinds present cost one copy, not a
    hundred regex passes and copies.
    """
    words = _long_words(text)
    lowered = words.lower()
    whole = words is text  # a small text is its own words: scanned whole, as cheaply
    taken: list[tuple[int, int, str]] = []  # (start, end, kind) of each secret
    for rule in rules:
        if not any(n in lowered for n in rule.needles) or not rule.pattern.search(words):
            continue
        windows = None if whole else _word_windows(rule, words, text)
        for m in _matches(rule, text, None, windows):
            g = ctx.secret_group(m)
            start, end = m.start(g) - rule.left, m.end(g)
            if not any(start < e and s < end for s, e, _ in taken):
                taken.append((max(0, start), end, rule.kind))
    if not taken:
        return text
    out: list[str] = []
    pos = 0
    for start, end, kind in sorted(taken):
        counts[kind] += 1
        out.append(text[pos:max(pos, start)])
        out.append(MARKER.format(kind))
        pos = end
    out.append(text[pos:])
    return "".join(out)


def redact_with_counts(text: str) -> tuple[str, dict[str, int]]:
    """The redacted text and how many secrets of each kind were replaced."""
    counts: Counter[str] = Counter()
    lowered: str | None = None
    done_words = False
    for rule in _RULES:
        if rule.in_words:
            if not done_words:  # the run of word rules, together
                done_words = True
                new = _word_rules(_WORD_RULES, text, counts)
                if new != text:
                    text, lowered = new, None
            continue
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


def screen(texts: "list[str | None]", keep: bool = False
           ) -> "tuple[list[str | None], dict[str, int]]":
    """Texts about to be written, secrets redacted (unless keep), and how many of each kind
    they held: the one rule every write follows (CLI, import, MCP, memory tool)."""
    kinds: Counter[str] = Counter()
    out: list[str | None] = []
    for text in texts:
        if text:
            cleaned, counts = redact_with_counts(text)
            kinds.update(counts)
            text = text if keep else cleaned
        out.append(text)
    return out, dict(kinds)


def redact(text: str) -> str:
    """`text` with every recognised secret replaced by `[REDACTED:<kind>]`."""
    return redact_with_counts(text)[0]


def secret_kinds(text: str) -> dict[str, int]:
    """How many secrets of each kind `text` holds (what `redact` would replace)."""
    return redact_with_counts(text)[1]
