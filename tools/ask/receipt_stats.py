"""The latency and cost distribution over receipts (`cardmem receipts --stats`).

    d = distribution(recs)      # ack/reply latency p50/p90/p99, walk calls, floors,
                                # deadlines missed, tokens and cost per reply
    chart(d["reply_s"]["values"])   # a small histogram for the terminal
                                    # (receipt_plot.py draws the same as an SVG image)

Latency: a Slack answer's (`slack.ack_s`, `slack.reply_s`) counts from the event's
arrival; an `ask`'s reply latency is its receipt's `timings.total_s`. Cost is tokens times
the list price of the receipt's model (PRICES, dollars per million tokens); a model not
listed has no cost, and is counted as such rather than guessed.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

# Dollars per million input and output tokens, by model name prefix (longest wins).
PRICES: dict[str, tuple[float, float]] = {
    "claude-opus-4-5": (5.0, 25.0), "claude-opus-4-6": (5.0, 25.0),
    "claude-opus-4": (15.0, 75.0), "claude-sonnet-4": (3.0, 15.0),
    "claude-haiku-4": (1.0, 5.0), "claude-3-5-haiku": (0.8, 4.0),
}
BARS = " ▏▎▍▌▋▊▉█"


def since(recs: Iterable[dict[str, Any]], after: datetime) -> list[dict[str, Any]]:
    """Receipts written at or after `after` (a receipt without a readable time is left out)."""
    out = []
    for r in recs:
        try:
            t = datetime.fromisoformat(str(r.get("time")))
        except ValueError:
            continue
        if (t if t.tzinfo else t.replace(tzinfo=timezone.utc)) >= after:
            out.append(r)
    return out


def percentiles(values: list[float]) -> dict[str, Any]:
    """n, p50/p90/p99 (nearest rank), max and the values themselves (for a chart)."""
    v = sorted(values)
    if not v:
        return {"n": 0, "p50": None, "p90": None, "p99": None, "max": None, "values": []}

    def rank(p: float) -> float:
        return v[max(0, math.ceil(p / 100 * len(v)) - 1)]

    return {"n": len(v), "p50": rank(50), "p90": rank(90), "p99": rank(99), "max": v[-1],
            "values": v}


def cost(model: str | None, tokens: dict[str, Any] | None) -> float | None:
    if not model or not isinstance(tokens, dict):
        return None
    best = max((p for p in PRICES if str(model).startswith(p)), key=len, default=None)
    if best is None:
        return None
    pin, pout = PRICES[best]
    return (_num(tokens.get("input")) * pin + _num(tokens.get("output")) * pout) / 1e6


def _num(x: Any) -> float:
    return float(x) if _finite(x) else 0.0


def _finite(x: Any) -> bool:
    """A number a chart can place: not a bool, nor Infinity or NaN (JSON reading takes
    both, from a receipt edited by hand)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _latency(r: dict[str, Any], key: str) -> float | None:
    s = r.get("slack")
    if isinstance(s, dict):
        v = s.get(key)
    elif key == "reply_s":
        v = (r.get("timings") or {}).get("total_s")
    else:
        v = None
    return float(v) if _finite(v) else None


def missed_deadline(r: dict[str, Any]) -> bool:
    return r.get("outcome") == "fallback" and r.get("reason") == "deadline"


def distribution(recs: list[dict[str, Any]]) -> dict[str, Any]:
    """What the walk budget is tuned with: latency, calls, floors, deadlines, tokens, cost."""
    answered = [r for r in recs if r.get("outcome") in ("composed", "fallback")]
    costs = [cost(r.get("model"), r.get("tokens")) for r in answered]
    priced = [c for c in costs if c is not None]
    tokens = [_num((r.get("tokens") or {}).get("input")) + _num((r.get("tokens") or {}).get("output"))
              for r in answered if isinstance(r.get("tokens"), dict)]
    return {
        "receipts": len(recs), "answers": len(answered),
        "slack": sum(isinstance(r.get("slack"), dict) for r in recs),
        "ack_s": percentiles([x for r in recs if (x := _latency(r, "ack_s")) is not None]),
        "reply_s": percentiles([x for r in answered if (x := _latency(r, "reply_s")) is not None]),
        "walk_calls": percentiles([float(len(r.get("tool_calls") or [])) for r in answered]),
        "floors_hit": sum(bool(r.get("floors")) for r in answered),
        "deadlines_missed": sum(missed_deadline(r) for r in answered),
        "tokens": percentiles(tokens),
        "cost_usd": {**percentiles(priced), "total": round(sum(priced), 6),
                     "unpriced": len(costs) - len(priced)},
    }


def histogram(values: list[float], lo: float, step: float, n: int) -> list[int]:
    """How many values fall in each of n buckets of width step from lo (the last bucket
    takes its right edge and anything past it; the first, anything below lo)."""
    counts = [0] * n
    for x in values:
        counts[min(n - 1, max(0, int((x - lo) / step)))] += 1
    return counts


def chart(values: list[float], buckets: int = 8, width: int = 30, unit: str = "s") -> list[str]:
    """A histogram in text: one line per bucket, `  0.5–1.0 s ███▌ 12`."""
    if not values:
        return []
    lo, hi = min(values), max(values)
    if hi == lo:
        hi = lo + 1e-9
    step = (hi - lo) / buckets
    counts = histogram(values, lo, step, buckets)
    top = max(counts)
    lines = []
    for i, n in enumerate(counts):
        eighths = round(n / top * width * 8)
        bar = "█" * (eighths // 8) + (BARS[eighths % 8] if eighths % 8 else "")
        lines.append(f"  {lo + i * step:6.2f}–{lo + (i + 1) * step:.2f} {unit} {bar:<{width}} {n}")
    return lines
