"""Receipts: one JSON line per answer in .cardmem/receipts/YYYY-MM.jsonl (DESIGN §5).

A receipt is appended as one write of one line to a file opened O_APPEND, under an
exclusive flock, so concurrent answers never interleave or tear a line. Receipts are
derived state (.cardmem/ is never committed).

A judge's verdict is a line of its own, `{"judge_of": <receipt id>, "judge": {...}}`, in
the receipt's file: a receipt line is never rewritten, and reading folds the verdicts
into the receipt as `judge`, a list, oldest first (a re-judge adds to it).
"""
from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from collections import Counter

from cardmem.store import appendlog
from cardmem.store.errors import CardmemError, NotFound
from cardmem.store.store import Store

ID_RE = re.compile(r"^(\d{8}T\d{6}Z)-[0-9a-f]{6}$")


def new_id(now: datetime | None = None) -> str:
    now = now or datetime.now(timezone.utc)
    return f"{now.strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(3)}"


def folder(store: Store) -> Path:
    d = store.state_dir / "receipts"
    d.mkdir(exist_ok=True)
    return d


def _path(store: Store, receipt_id: Any) -> Path:
    m = ID_RE.match(receipt_id if isinstance(receipt_id, str) else "")
    if not m:
        raise CardmemError("receipt", f"bad id {receipt_id!r}")
    stamp = m.group(1)
    return folder(store) / f"{stamp[:4]}-{stamp[4:6]}.jsonl"


def append(store: Store, receipt: dict[str, Any]) -> Path:
    """Append one receipt (which must carry an `id`) as one line; the file it went to."""
    return _write(_path(store, receipt.get("id")), receipt)


def append_judge(store: Store, receipt_id: str, verdict: dict[str, Any]) -> Path:
    """Append a judge's verdict on a receipt, beside it; earlier verdicts stay."""
    return _write(_path(store, receipt_id), {"judge_of": receipt_id, "judge": verdict})


def _write(path: Path, obj: dict[str, Any]) -> Path:
    appendlog.append(path, json.dumps(obj, ensure_ascii=False, default=str) + "\n", mode=0o600)
    return path


def _files(store: Store) -> list[Path]:
    d = store.root / ".cardmem" / "receipts"
    return sorted(d.glob("*.jsonl")) if d.is_dir() else []


def iter_all(store: Store) -> Iterator[dict[str, Any]]:
    """Every receipt, oldest first, with its verdicts as `judge` (when it has any); a torn
    or foreign line is skipped."""
    recs: list[dict[str, Any]] = []
    verdicts: dict[str, list[dict[str, Any]]] = {}
    for path in _files(store):
        with open(path, "rb") as f:
            for raw in f:
                try:
                    rec = json.loads(raw)
                except ValueError:
                    continue
                if not isinstance(rec, dict):
                    continue
                if "judge_of" in rec and isinstance(rec.get("judge"), dict):
                    verdicts.setdefault(str(rec["judge_of"]), []).append(rec["judge"])
                elif "id" in rec:
                    recs.append(rec)
    for rec in recs:
        if str(rec["id"]) in verdicts:
            rec["judge"] = verdicts[str(rec["id"])]
        yield rec


def written_since(store: Store, after: datetime, contains: bytes = b"") -> Iterator[dict[str, Any]]:
    """Receipts whose id was stamped at or after `after` (aware), oldest first, without
    their verdicts; only the months from `after`'s on are read, and a line without
    `contains` is skipped unparsed (cheap on a long month)."""
    first = after.astimezone(timezone.utc).strftime("%Y-%m")
    for path in _files(store):
        if path.stem < first:
            continue
        with open(path, "rb") as f:
            for raw in f:
                if contains not in raw:
                    continue
                try:
                    rec = json.loads(raw)
                except ValueError:
                    continue
                m = ID_RE.match(str(rec.get("id"))) if isinstance(rec, dict) else None
                if m and datetime.strptime(m.group(1), "%Y%m%dT%H%M%SZ").replace(
                        tzinfo=timezone.utc) >= after:
                    yield rec


def last(store: Store, n: int) -> list[dict[str, Any]]:
    """The n newest receipts, oldest of them first."""
    recs = list(iter_all(store))
    return recs[-n:] if n > 0 else []


def find(store: Store, receipt_id: str) -> dict[str, Any]:
    """The receipt with this id (or `last` for the newest); NotFound otherwise."""
    if receipt_id == "last":
        recs = last(store, 1)
        if not recs:
            raise NotFound("receipts", "none yet; `cardmem ask` writes one per answer")
        return recs[0]
    if not ID_RE.match(receipt_id):
        raise CardmemError(f"receipt {receipt_id[:60]!r}",
                           "not a receipt id (like 20261130T061200Z-a1b2c3, or `last`)", 2)
    for rec in iter_all(store):
        if rec["id"] == receipt_id:
            return rec
    raise NotFound(f"receipt {receipt_id}", "no such receipt in this store")


def _reason(verdict: dict[str, Any]) -> list[str]:
    """A failing verdict's reasons, stripped of the details that make each one unique
    (quoted claims, call numbers), so alike failures count together."""
    out = []
    for part in ("rule", "grade"):
        check = verdict.get(part) or {}
        if check.get("verdict") == "fail":
            why = re.sub(r"\s*\([^)]*\)", "", str(check.get("why") or "?"))
            out.append(f"{part}: {why.split(': ')[0].strip()}")
    return out or ["?"]


def stats(recs: list[dict[str, Any]], top: int = 5) -> dict[str, Any]:
    """Outcomes, floors and the judge's verdicts over receipts (a receipt judged more
    than once counts by its newest verdict)."""
    outcomes = Counter(str(r.get("outcome", "?")) for r in recs)
    floors = Counter(str(f.get("floor")) for r in recs for f in r.get("floors") or []
                     if isinstance(f, dict))
    newest = [r["judge"][-1] for r in recs if r.get("judge")]
    verdicts = Counter(str(v.get("verdict")) for v in newest)
    graded = verdicts["pass"] + verdicts["fail"]
    reasons = Counter(x for v in newest if v.get("verdict") == "fail" for x in _reason(v))
    return {"receipts": len(recs), "outcomes": dict(outcomes), "floors": dict(floors),
            "judge": {"judged": len(newest), "pass": verdicts["pass"], "fail": verdicts["fail"],
                      "ungraded": verdicts["ungraded"],
                      "pass_rate": round(verdicts["pass"] / graded, 3) if graded else None,
                      "failure_reasons": [{"reason": k, "count": n}
                                          for k, n in reasons.most_common(top)]}}
