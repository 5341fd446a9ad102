"""The one module that talks to the model (DESIGN §9): the only importer of `anthropic`.

The key and base URL come from the environment (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL),
the rest from the store's `[model]` section. `anthropic` costs ~2.6 s to import, so it is
imported inside the functions that need it, never at module load.
"""
from __future__ import annotations

import os
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
MAX_RETRIES = 2


class ModelError(CardmemError):
    """The model could not give an answer; one line, `model: <why>`."""

    def __init__(self, why: str) -> None:
        super().__init__("model", why)


class ModelUnavailable(ModelError):
    """No model is configured (no API key): everything else still works."""


@dataclass(frozen=True)
class ModelSettings:
    name: str = DEFAULTS["name"]
    max_tokens: int = DEFAULTS["max_tokens"]
    timeout_s: float = DEFAULTS["timeout_s"]


def settings(section: Mapping[str, Any] | None = None) -> ModelSettings:
    """ModelSettings from a `[model]` dict; missing keys take the defaults."""
    s = {**DEFAULTS, **(section or {})}
    try:
        out = ModelSettings(str(s["name"]), int(s["max_tokens"]), float(s["timeout_s"]))
    except (TypeError, ValueError) as e:
        raise ModelError(f"bad [model] setting: {e}") from None
    if not out.name or out.max_tokens < 1 or out.timeout_s <= 0:
        raise ModelError(f"bad [model] setting: {out}")
    return out


def client(cfg: ModelSettings | Mapping[str, Any] | None = None, *, timeout_s: float | None = None,
           max_retries: int = MAX_RETRIES) -> anthropic.Anthropic:
    """An SDK client with explicit timeout and retries, or ModelUnavailable without a key.

    The key is passed explicitly so the SDK never falls back to profile files on disk.
    """
    cfg = cfg if isinstance(cfg, ModelSettings) else settings(cfg)
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
    """One call, no tools: the text of the reply and its token counts (extraction, judge)."""
    cfg = cfg if isinstance(cfg, ModelSettings) else settings(cfg)
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
