"""The one module that talks to the model (DESIGN §9), and so the importer of `anthropic`
(tools/agents/memory_tool.py imports it too, only to subclass the SDK's memory tool).

Two routes, chosen by `[model] route`:
- api: the anthropic SDK; the key and base URL come from the environment
  (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL), the rest from the store's `[model]` section;
- claude-code: the user's own Claude Code login (a subscription, no key), through a
  headless `claude -p` child with no tools, hooks or MCP servers;
- auto (the default): api when ANTHROPIC_API_KEY is set, else claude-code when the
  `claude` binary is found, else ModelUnavailable naming both.

`anthropic` costs seconds to import (bench/RESULTS.md, "Figures from comments"), so it is
imported inside the functions that need it, never at module load.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cardmem.store import config
from cardmem.store.errors import CardmemError

if TYPE_CHECKING:
    import anthropic

# One source of defaults: the store's [model] section (claude-sonnet-4-5 reached its end of
# life on 2026-11-30, so the default is claude-sonnet-4-6).
DEFAULTS: dict[str, Any] = config.DEFAULTS["model"]
ROUTES = ("auto", "api", "claude-code")
MAX_RETRIES = 2


class ModelError(CardmemError):
    """The model could not give an answer; one line, `model: <why>`."""

    def __init__(self, why: str) -> None:
        super().__init__("model", why)


class ModelUnavailable(ModelError):
    """No model to reach (no API key, no Claude Code login): everything else still works."""


@dataclass(frozen=True)
class ModelSettings:
    name: str = DEFAULTS["name"]
    max_tokens: int = DEFAULTS["max_tokens"]
    timeout_s: float = DEFAULTS["timeout_s"]
    route: str = DEFAULTS["route"]
    claude_model: str = DEFAULTS["claude_model"]  # for the claude-code route only
    claude_path: str = DEFAULTS["claude_path"]  # "": `claude` on PATH


def settings(section: Mapping[str, Any] | None = None) -> ModelSettings:
    """ModelSettings from a `[model]` dict; missing keys take the defaults."""
    s = {**DEFAULTS, **(section or {})}
    try:
        out = ModelSettings(str(s["name"]), int(s["max_tokens"]), float(s["timeout_s"]),
                            str(s["route"]), str(s["claude_model"]), str(s["claude_path"]))
    except (TypeError, ValueError) as e:
        raise ModelError(f"bad [model] setting: {e}") from None
    if not out.name or out.max_tokens < 1 or out.timeout_s <= 0 or not out.claude_model:
        raise ModelError(f"bad [model] setting: {out}")
    if out.route not in ROUTES:
        raise ModelError(f"bad [model] setting: route must be one of {', '.join(ROUTES)}, "
                         f"got {out.route!r}")
    return out


# ---- choosing a route ------------------------------------------------------------

def _as_settings(cfg: ModelSettings | Mapping[str, Any] | None) -> ModelSettings:
    return cfg if isinstance(cfg, ModelSettings) else settings(cfg)


def find_claude(cfg: ModelSettings | Mapping[str, Any] | None = None) -> str | None:
    """The `claude` executable: [model] claude_path if set, else `claude` on PATH."""
    s = _as_settings(cfg)
    return shutil.which(os.path.expanduser(s.claude_path or "claude"))


def _no_claude(cfg: ModelSettings) -> str:
    return (f"[model] claude_path {cfg.claude_path!r} is not an executable file"
            if cfg.claude_path else "`claude` (Claude Code) is not on PATH")


def _has_key() -> bool:
    return bool(os.environ.get("ANTHROPIC_API_KEY", "").strip())


def resolve(cfg: ModelSettings | Mapping[str, Any] | None = None) -> tuple[str, str]:
    """(route, detail): "api" or "claude-code" and why/where, or ModelUnavailable.

    Cheap: reads the environment and looks for a file; no model call, no SDK import.
    """
    s = _as_settings(cfg)
    if s.route in ("auto", "api") and _has_key():
        return "api", "ANTHROPIC_API_KEY set"
    if s.route == "api":
        raise ModelUnavailable("no ANTHROPIC_API_KEY set")
    exe = find_claude(s)
    if exe:
        return "claude-code", exe
    where = _no_claude(s)
    if s.route == "claude-code":
        raise ModelUnavailable(f"route claude-code: {where}")
    raise ModelUnavailable(f"no ANTHROPIC_API_KEY set, and {where}: set the key, or install "
                           "Claude Code and log in")


def route_status(cfg: ModelSettings | Mapping[str, Any] | None = None) -> tuple[bool, str]:
    """(ok, line) for `cardmem doctor`: which route a model call would take now."""
    try:
        route, detail = resolve(cfg)
    except ModelError as exc:
        return False, f"model route: none: {exc.why}"
    return True, f"model route: {route} ({detail})"


def client(cfg: ModelSettings | Mapping[str, Any] | None = None, *, timeout_s: float | None = None,
           max_retries: int = MAX_RETRIES) -> anthropic.Anthropic:
    """An SDK client with explicit timeout and retries, or ModelUnavailable without a key.

    The key is passed explicitly so the SDK never falls back to profile files on disk.
    """
    cfg = _as_settings(cfg)
    key = os.environ.get("ANTHROPIC_API_KEY", "").strip()
    if not key:
        raise ModelUnavailable("no ANTHROPIC_API_KEY set")
    import anthropic

    return anthropic.Anthropic(api_key=key, base_url=os.environ.get("ANTHROPIC_BASE_URL") or None,
                               timeout=timeout_s or cfg.timeout_s, max_retries=max_retries)


@dataclass
class Completion:
    text: str
    model: str
    stop_reason: str | None
    usage: dict[str, int] = field(default_factory=dict)   # input_tokens, output_tokens


def describe(err: BaseException, timeout_s: float | None = None) -> str:
    """One line saying why a model call failed, for `cardmem: model: <why>`."""
    import anthropic

    if isinstance(err, anthropic.APITimeoutError):
        return f"no answer within {timeout_s:g} s" if timeout_s else "timed out"
    if isinstance(err, anthropic.APIConnectionError):
        return f"cannot reach the API ({os.environ.get('ANTHROPIC_BASE_URL') or 'api.anthropic.com'})"
    if isinstance(err, anthropic.APIStatusError):
        body = err.body if isinstance(err.body, dict) else {}
        detail = (body.get("error") or {}).get("message") if isinstance(body.get("error"), dict) else None
        return f"HTTP {err.status_code}: {detail or err.message}".splitlines()[0]
    return str(err).splitlines()[0] if str(err) else type(err).__name__


def complete(system: str, messages: str | list[dict[str, Any]], *,
             cfg: ModelSettings | Mapping[str, Any] | None = None, max_tokens: int | None = None,
             timeout_s: float | None = None, max_retries: int = MAX_RETRIES,
             sdk: anthropic.Anthropic | None = None) -> Completion:
    """One call, no tools: the text of the reply and its token counts (extraction, judge).

    Takes the route [model] route picks (a given sdk means the api route). On the
    claude-code route max_tokens and max_retries do not apply: `claude -p` has its own.
    """
    cfg = _as_settings(cfg)
    if sdk is None and resolve(cfg)[0] == "claude-code":
        if not isinstance(messages, str):
            raise ModelError("the claude-code route takes one user message, not a conversation")
        return claude_complete(system, messages, cfg, timeout_s=timeout_s)
    sdk = sdk or client(cfg, timeout_s=timeout_s, max_retries=max_retries)
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    import anthropic

    try:
        msg = sdk.messages.create(model=cfg.name, max_tokens=max_tokens or cfg.max_tokens,
                                  messages=messages, timeout=timeout_s or cfg.timeout_s,
                                  **({"system": system} if system else {}))
    except anthropic.APIError as e:
        raise ModelError(describe(e, timeout_s or cfg.timeout_s)) from e
    text = "".join(b.text for b in msg.content if b.type == "text")
    usage = {"input_tokens": msg.usage.input_tokens, "output_tokens": msg.usage.output_tokens}
    return Completion(text, msg.model, msg.stop_reason, usage)


# ---- the claude-code route: headless `claude -p` on the user's own login -----------

CHILD_ENV = "CARDMEM_HOOK_CHILD"  # set in the child; cardmem's hooks and MCP server idle there
KILL_WAIT_S = 5.0  # after killing a timed-out child, how long to wait for its pipes to close


def claude_argv(exe: str, system: str, cfg: ModelSettings) -> list[str]:
    """The child's command line. The user's text goes on stdin, never here.

    --safe-mode runs no hooks and loads no CLAUDE.md, rules, MCP servers or plugins, yet
    still authenticates (apiKeyHelper, OAuth); --bare would refuse an OAuth login, and
    `--setting-sources ""` would lose the apiKeyHelper.
    """
    return [exe, "-p", "--safe-mode", "--strict-mcp-config", "--tools", "",
            "--no-session-persistence", "--system-prompt", system, "--model", cfg.claude_model,
            "--output-format", "json"]


def claude_complete(system: str, text: str, cfg: ModelSettings | Mapping[str, Any] | None = None,
                    *, timeout_s: float | None = None, exe: str | None = None) -> Completion:
    """One call through `claude -p`, bounded by timeout_s (else [model] timeout_s)."""
    cfg = _as_settings(cfg)
    exe = exe or find_claude(cfg)
    if not exe:
        raise ModelUnavailable(_no_claude(cfg))
    timeout = timeout_s or cfg.timeout_s
    try:
        # A session of its own, so a timeout can kill the child and everything it started.
        proc = subprocess.Popen(claude_argv(exe, system, cfg), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env={**os.environ, CHILD_ENV: "1"}, start_new_session=True)
    except OSError as exc:
        raise ModelUnavailable(f"cannot run {exe}: {exc.strerror or exc}") from None
    try:
        out, err = proc.communicate(text.encode("utf-8"), timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ModelError(f"claude -p gave no answer within {timeout:g} s") from None
    finally:
        if proc.returncode is None:  # timed out or interrupted: end the whole group
            _kill_group(proc)
    return parse_claude_output(out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
                               proc.returncode, cfg)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.communicate(timeout=KILL_WAIT_S)
    except subprocess.TimeoutExpired:  # a grandchild left the group and holds a pipe
        proc.kill()
        proc.wait()


def _first_line(text: str, limit: int = 200) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line[:limit]


def parse_claude_output(stdout: str, stderr: str, returncode: int | None,
                        cfg: ModelSettings) -> Completion:
    """The Completion in `claude -p --output-format json`'s result, or one error line."""
    data: Any = None
    for candidate in (stdout, *reversed(stdout.splitlines())):
        try:
            data = json.loads(candidate)
            break
        except ValueError:
            continue
    if not isinstance(data, dict) or data.get("type") != "result":
        if returncode:
            why = _first_line(stderr) or _first_line(stdout) or "no output"
            raise ModelError(f"claude -p exited with {returncode}: {why}")
        raise ModelError(f"claude -p printed no JSON result: {_first_line(stdout) or 'nothing'}")
    result = data.get("result")
    result = result if isinstance(result, str) else ""
    if data.get("is_error") or returncode or data.get("subtype", "success") != "success":
        why = _first_line(result) or str(data.get("subtype") or f"exit {returncode}")
        if "not logged in" in why.lower() or "/login" in why or "invalid api key" in why.lower():
            raise ModelUnavailable(f"Claude Code is not logged in ({why}): run `claude` and "
                                   "log in, or set ANTHROPIC_API_KEY")
        raise ModelError(f"claude -p: {why}")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    models = data.get("modelUsage") if isinstance(data.get("modelUsage"), dict) else {}
    return Completion(result, next(iter(models), cfg.claude_model), data.get("stop_reason"),
                      {"input_tokens": int(usage.get("input_tokens") or 0),
                       "output_tokens": int(usage.get("output_tokens") or 0)})
