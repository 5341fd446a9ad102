"""Calls under a wall clock, and which Messages API errors are worth another try.

`anthropic` is never imported here (tools/model.py talks to the model): its errors
are recognised by class name.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def bounded(fn: Callable[[], Any], timeout: float) -> tuple[Any, BaseException | None, bool]:
    """fn() in a daemon thread, waited for at most timeout: (value, error, timed_out).

    A store read or an HTTP request cannot be interrupted from outside; one that overruns
    is abandoned (reads change nothing; the request's own timeout ends it later).
    """
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed back to the caller
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True, name="cardmem-walk-tool")
    t.start()
    t.join(max(0.0, timeout))
    if t.is_alive():
        return None, None, True
    return box.get("value"), box.get("error"), False


class WallTimeout(Exception):
    """A model request outran its wall clock and was abandoned."""

    def __init__(self, timeout: float) -> None:
        super().__init__(f"no answer within {timeout:g} s (abandoned)")


def error_kind(exc: BaseException) -> str | None:
    """timeout | connection | status | other-api, or None for a non-API error."""
    if isinstance(exc, WallTimeout):
        return "timeout"
    names = {c.__name__ for c in type(exc).__mro__}
    if "APIError" not in names or not type(exc).__module__.startswith("anthropic"):
        return None
    if "APITimeoutError" in names:
        return "timeout"
    if "APIConnectionError" in names:
        return "connection"
    if "APIStatusError" in names:
        return "status"
    return "other-api"


def retryable(exc: BaseException) -> bool:
    kind = error_kind(exc)
    if kind in ("timeout", "connection"):
        return True
    status = getattr(exc, "status_code", 0)
    return kind == "status" and (status in (408, 409, 429) or status >= 500)


def backoff(exc: BaseException, attempt: int) -> float:
    """The server's retry-after if it says one, else 0.25 s doubling per attempt."""
    headers = getattr(getattr(exc, "response", None), "headers", None) or {}
    for key, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            if headers.get(key) is not None:
                return max(0.0, float(headers[key]) * scale)
        except (TypeError, ValueError):
            pass
    return 0.25 * 2 ** (attempt - 1)
