"""`cardmem receipts --stats --plot FILE`: the latency and cost distribution as an SVG
image a browser shows (receipt_stats.py computes it; this module only draws and writes).

    target = check_target("latency.svg")   # a bad FILE refused before anything is read
    write(target, svg(distribution(recs), heading))

Three histograms, one under the other: ack latency (a Slack answer's first sign of life),
reply latency, and cost per reply; each with n, p50/p90/p99 and max in its heading, and
its percentiles marked on the bars. Hovering over a bar names its range and count.

Plain SVG written here, no plotting library: three bar charts do not earn a dependency
the size of matplotlib, and the file needs nothing but a browser.
"""
from __future__ import annotations

import math
from html import escape
from pathlib import Path
from typing import Any, Callable

from cardmem.store.errors import CardmemError
from .receipt_stats import histogram

WIDTH, PANEL, LEFT, RIGHT, TOP, BOTTOM = 760, 230, 64, 24, 46, 42
BAR, GRID, INK, MUTED = "#4c78a8", "#e4e4e4", "#222", "#666"
MARKS = (("p50", "#f58518"), ("p90", "#d6336c"), ("p99", "#7b2cbf"))
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"


def check_target(value: str) -> Path:
    """The FILE of --plot, refused with one clear line (exit 2) when it cannot be one:
    empty, a folder, not named .svg, or in a folder that does not exist."""
    what = f"--plot {value}"
    if not value.strip():
        raise CardmemError("--plot", "is empty; name the SVG file to write, e.g. "
                                     "latency.svg", exit_code=2)
    path = Path(value).expanduser()
    if path.is_dir():
        raise CardmemError(what, "is a folder; name the SVG file to write in it, e.g. "
                                 f"{path / 'latency.svg'}", exit_code=2)
    if path.suffix.lower() != ".svg":
        raise CardmemError(what, "the plot is an SVG image: name the file with .svg, so "
                                 "a browser opens it as one", exit_code=2)
    if not path.parent.is_dir():
        why = "is not a folder" if path.parent.exists() else "does not exist"
        raise CardmemError(what, f"the folder {path.parent} {why}", exit_code=2)
    return path


def write(path: Path, text: str) -> None:
    """text into path whole, or nothing: a temporary file beside it, renamed over it."""
    from cardmem.store.git.writer import atomic_write

    try:
        atomic_write(path, text.encode("utf-8"))
    except OSError as exc:
        raise CardmemError(f"--plot {path}", f"cannot write: {exc.strerror or exc}; "
                                             "nothing was written") from None


def svg(dist: dict[str, Any], heading: str) -> str:
    """The image: a heading, the three panels, a line of totals."""
    panels = [
        ("Ack latency", "a Slack answer's first sign of life, from the event", dist["ack_s"],
         _seconds, "no ack latencies here: only answers in Slack have one"),
        ("Reply latency", "from the question to the reply", dist["reply_s"], _seconds,
         "no reply latencies here"),
        ("Cost per reply", "tokens at the model's list price", dist["cost_usd"], _dollars,
         "no priced replies here: " + (f"{dist['cost_usd']['unpriced']} of a model with no "
                                       "listed price" if dist["cost_usd"]["unpriced"] else
                                       "no tokens recorded")),
    ]
    if not dist["answers"]:
        none = "no answers in these receipts (`cardmem ask` and the Slack teammate write them)"
        panels = [(name, about, p, fmt, none) for name, about, p, fmt, _ in panels]
    height = TOP + len(panels) * PANEL + 40
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" font-family="{escape(FONT)}" font-size="12" '
           f'fill="{INK}">',
           f"<title>{escape(heading)}</title>",
           f'<rect width="{WIDTH}" height="{height}" fill="#fff"/>',
           _text(LEFT - 48, 26, heading, size=16, weight="600")]
    for i, (name, about, p, fmt, empty) in enumerate(panels):
        out += _panel(TOP + i * PANEL, name, about, p, fmt, empty)
    c = dist["cost_usd"]
    totals = (f"{dist['receipts']} receipts, {dist['answers']} answers ({dist['slack']} from Slack): {dist['floors_hit']} "
              f"hit a floor, {dist['deadlines_missed']} missed the deadline; cost in all "
              f"${c['total']:.4f}" + (f", {c['unpriced']} unpriced" if c["unpriced"] else ""))
    out += [_text(LEFT - 48, height - 16, totals, fill=MUTED), "</svg>"]
    return "\n".join(out) + "\n"


def _seconds(x: float) -> str:
    return f"{x:.2f} s" if x < 10 else f"{x:.1f} s"


def _dollars(x: float) -> str:
    return f"${x:.4f}" if x < 1 else f"${x:.2f}"


def _text(x: float, y: float, text: str, size: int = 12, fill: str = INK, anchor: str = "start",
          weight: str = "400", halo: bool = False) -> str:
    """A line of text; with halo, a white outline keeps it readable over a bar."""
    ring = ' stroke="#fff" stroke-width="3" paint-order="stroke"' if halo else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{fill}" '
            f'text-anchor="{anchor}" font-weight="{weight}"{ring}>{escape(text)}</text>')


def nice_step(span: float, buckets: int) -> float:
    """A bucket width of 1, 2, 2.5 or 5 times a power of ten, about span / buckets."""
    raw = span / buckets if span > 0 else 1.0
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)


def _panel(y0: float, name: str, about: str, p: dict[str, Any], fmt: Callable[[float], str],
           empty: str) -> list[str]:
    x0, x1, top, base = LEFT, WIDTH - RIGHT, y0 + 34, y0 + PANEL - BOTTOM
    head = f"{name} (n={p['n']})"
    if p["n"]:
        head += (f": p50 {fmt(p['p50'])}, p90 {fmt(p['p90'])}, p99 {fmt(p['p99'])}, "
                 f"max {fmt(p['max'])}")
    out = [_text(x0 - 48, y0 + 10, head, size=13, weight="600"),
           _text(x0 - 48, y0 + 25, f"{about}; a bar: the answers in its range", size=11,
                 fill=MUTED)]
    values = p.get("values") or []
    if not values:
        out.append(_text((x0 + x1) / 2, (top + base) / 2, empty, fill=MUTED, anchor="middle"))
        return out
    span = max(values) - min(values)
    step = nice_step(span or abs(max(values)) or 1.0, 12)
    lo = math.floor(min(values) / step) * step
    n = max(1, math.floor((max(values) - lo) / step) + 1)
    counts = histogram(values, lo, step, n)
    top_count = max(counts)
    grid = max(1, nice_step(top_count, 4))
    ymax = math.ceil(top_count / grid) * grid

    def y(count: float) -> float:
        return base - (base - top) * count / ymax

    def x(v: float) -> float:
        return x0 + (x1 - x0) * (v - lo) / (n * step)

    g = 0.0
    while g <= ymax:
        out.append(f'<line x1="{x0}" x2="{x1}" y1="{y(g):.1f}" y2="{y(g):.1f}" '
                   f'stroke="{GRID}"/>')
        out.append(_text(x0 - 6, y(g) + 4, f"{g:g}", size=11, fill=MUTED, anchor="end"))
        g += grid
    for i, count in enumerate(counts):
        a, b = lo + i * step, lo + (i + 1) * step
        tip = f"{fmt(a)} to {fmt(b)}: {count} {'reply' if count == 1 else 'replies'}"
        out.append(f'<rect x="{x(a) + 1:.1f}" y="{y(count):.1f}" width="{x(b) - x(a) - 2:.1f}" '
                   f'height="{base - y(count):.1f}" fill="{BAR}"><title>{escape(tip)}</title>'
                   "</rect>")
    every = math.ceil((n + 1) / 8)  # at most nine labels under the axis
    for i in range(0, n + 1, every):
        out.append(_text(x(lo + i * step), base + 16, fmt(lo + i * step), size=11,
                         fill=MUTED, anchor="middle"))
    out.append(f'<line x1="{x0}" x2="{x1}" y1="{base}" y2="{base}" stroke="{INK}"/>')
    for k, (mark, colour) in enumerate(MARKS):
        mx = x(p[mark])
        out.append(f'<line x1="{mx:.1f}" x2="{mx:.1f}" y1="{top - 2}" y2="{base}" '
                   f'stroke="{colour}" stroke-width="1.5" stroke-dasharray="4 3"/>')
        left = mx > x1 - 100  # near the right edge: the label goes left of its line
        out.append(_text(mx - 4 if left else mx + 4, top + 10 + 13 * k,
                         f"{mark} {fmt(p[mark])}", size=11, fill=colour,
                         anchor="end" if left else "start", halo=True))
    return out
