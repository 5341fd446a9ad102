"""bench/RESULTS.md, written by the benchmarks: each replaces its own section in place (from
its heading to the next `## `), or adds it at the end."""
from __future__ import annotations

import re
from pathlib import Path


def write_section(path: Path, section: str, text: str) -> None:
    """Put `text` (which starts with the heading line `section`) in the results file."""
    old = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
    pattern = re.compile(rf"^{re.escape(section)}\n.*?(?=^## |\Z)", re.S | re.M)
    new = pattern.sub(lambda _m: text, old) if pattern.search(old) else (
        old.rstrip("\n") + "\n\n" + text)
    path.write_text(new, encoding="utf-8")
