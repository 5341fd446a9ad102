"""cardmem.toml: store settings with defaults; a malformed file names the key."""
from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any, Iterable

from .errors import CardmemError

FILE = "cardmem.toml"

DEFAULTS: dict[str, dict[str, Any]] = {
    "model": {"name": "claude-sonnet-4-6", "max_tokens": 1024, "timeout_s": 30.0,
              "route": "auto", "claude_model": "haiku", "claude_path": ""},
    "context": {"budget_chars": 9000, "rules_file_chars": 100_000},
    "walk": {
        "max_tool_calls": 4,
        "tool_call_s": 6.0,
        "walk_s": 18.0,
        "deadline_s": 30.0,
        "on_deadline": "silence",
    },
    "judge": {"auto": False},  # grade every answer in the background after it is delivered
    "extract": {"protected_types": ["feedback", "user"], "max_turns": 20, "turn_chars": 1500},
    "watch": {"autocommit": True, "quiet_s": 5.0},
    "store": {"lock_timeout_s": 10.0},
    "rules": {"relevance_threshold": 0.65},  # store/rules/match.py THRESHOLD
    "maintain": {"stale_days": 180, "history_keep": 20, "history_fold_at": 40,
                 # the learner's model-free pass, at most once a day, cut off after
                 # daily_cpu_s of CPU (what it checked by then is recorded)
                 "daily": True, "daily_cpu_s": 10.0},
    "projects": {},  # working-directory name -> project slug
    # `cardmem slack` (tools/slack/): api_url "" = SLACK_API_URL, else Slack's own; queue:
    # questions waiting for a worker, past it a busy line (holds a burst of 300:
    # bench/bench_slack_load.py)
    "slack": {"api_url": "", "ack": "reaction", "reaction": "eyes", "concurrency": 4,
              "remember": False, "queue": 500},
}

# Keys whose value must be one of a few words.
_CHOICES = {("walk", "on_deadline"): {"silence", "receipt"},
            ("model", "route"): {"auto", "api", "claude-code"},
            ("slack", "ack"): {"reaction", "line", "both"}}


def _check(section: str, key: str, value: Any, default: Any, path: Path) -> Any:
    """The value, if it has its default's type (a bool is not an int here, and ints pass
    for floats), is not negative and is one of its choices; else one error line."""
    where = f"{path}: [{section}] {key}"
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, list):
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    else:
        ok = isinstance(value, type(default))
    if not ok:
        raise CardmemError(where, f"expected {type(default).__name__}, got {value!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        raise CardmemError(where, f"must not be negative, got {value!r}")
    choices = _CHOICES.get((section, key))
    if choices and value not in choices:
        raise CardmemError(where, f"must be one of {sorted(choices)}, got {value!r}")
    return value


def load(root: Path) -> dict[str, dict[str, Any]]:
    """The store's settings: the file's values over the defaults, each checked (the first
    wrong value is the error)."""
    cfg, errors, _unknown = check(root)
    if errors:
        raise errors[0]
    return cfg


def check(root: Path) -> tuple[dict[str, dict[str, Any]], list[CardmemError], list[str]]:
    """The settings, every wrong value (as errors), and every section or key cardmem does
    not know ("[modle]: unknown section; did you mean [model]?"), for `cardmem doctor`."""
    cfg = copy.deepcopy(DEFAULTS)
    path = root / FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return cfg, [], []
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        return cfg, [CardmemError(str(path), f"not valid TOML: {exc}")], []
    errors: list[CardmemError] = []
    unknown: list[str] = []
    for section, values in data.items():
        if section not in cfg:
            # kept (the user's business), but named: a misspelt section is silently default
            unknown.append(f"{path}: [{section}]: unknown section{_did_you_mean(section, cfg)}")
            continue
        if not isinstance(values, dict):
            errors.append(CardmemError(f"{path}: [{section}]", "must be a table"))
            continue
        if section == "projects":
            for k, v in values.items():
                if isinstance(v, str):
                    cfg[section][k] = v
                else:
                    errors.append(CardmemError(f"{path}: [projects] {k}",
                                               f"expected str, got {v!r}"))
            continue
        for key, value in values.items():
            if key not in cfg[section]:
                cfg[section][key] = value
                unknown.append(f"{path}: [{section}] {key}: unknown key"
                               + _did_you_mean(key, DEFAULTS[section]))
                continue
            try:
                cfg[section][key] = _check(section, key, value, DEFAULTS[section][key], path)
            except CardmemError as exc:
                errors.append(exc)
    return cfg, errors, unknown


def _did_you_mean(word: str, known: Iterable[str]) -> str:
    import difflib

    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def default_text() -> str:
    """The cardmem.toml that `init` writes: the defaults, spelled out."""
    return """# cardmem store settings. Missing keys take these defaults.

[model]
route = "auto"             # "api" (ANTHROPIC_API_KEY), "claude-code" (your Claude Code
                           # login, through `claude -p`), or "auto": api if the key is set
name = "claude-sonnet-4-6" # the api route's model
max_tokens = 1024
timeout_s = 30
claude_model = "haiku"     # the claude-code route's model
claude_path = ""           # "": `claude` on PATH

[context]
budget_chars = 9000        # Claude Code shows the model 10,000 at most
rules_file_chars = 100000  # every rule, whole while they fit, in the file Claude Code loads

[walk]
max_tool_calls = 4
tool_call_s = 6
walk_s = 18
deadline_s = 30
on_deadline = "silence"    # or "receipt"

[judge]
auto = false               # true: every `ask` is judged in the background once delivered

[extract]
protected_types = ["feedback", "user"]
max_turns = 20
turn_chars = 1500

[watch]
autocommit = true
quiet_s = 5

[rules]
relevance_threshold = 0.65 # a rule without applies_to reminds at a tool call from here

# The sections below are at their defaults, commented out: uncomment a section's lines to
# change one (a section may appear only once in the file).

# [store]
# lock_timeout_s = 10        # how long a write waits for another writer (then exit 4)

# [maintain]
# stale_days = 180           # unchanged, unverified and unread this long: `stale`
# history_keep = 20          # History lines kept when a long History is folded
# history_fold_at = 40       # History lines from which `maintain` offers to fold
# daily = true               # the model-free findings, at most once a day after a session
# daily_cpu_s = 10.0         # ...cut off cleanly after this much CPU (what it finished stays)

# [projects]                 # a working folder's name (or a checkout's path) -> project
# "acme-api-checkout" = "acme-api"

# [slack]
# api_url = ""               # "": SLACK_API_URL, else Slack's own
# ack = "reaction"           # or "line" (a short threaded line), or "both"
# reaction = "eyes"
# concurrency = 4            # questions answered at a time
# remember = false           # true: "@bot remember TITLE: what" files a card
# queue = 500               # questions waiting past that get a busy line
"""
