"""`stale`: a card nobody has changed, verified or read for a long time while its
project moved on.

A card is stale when
- it is active and no signal card (those are a log, not a claim);
- git last changed it, its `last_verified` (if any) is, and a reader was last given it
  (reads.py: show, read_card, a search's top results, the session-start context) is,
  more than STALE_DAYS (`[maintain] stale_days`) ago;
- and its scope moved on since: another active card of the same project (for a global
  card, another global card of its type) changed at least MOVED_ON_DAYS after it.
The fix is a person's: verify it (`last_verified: <today>`), or archive it.
"""
from __future__ import annotations

from datetime import date, datetime, timezone

from .reads import last_read
from .survey import Finding, Survey

DAY = 86400.0
MOVED_ON_DAYS = 30


def _verified(value) -> float | None:
    try:
        d = date.fromisoformat(str(value).strip()[:10])
    except ValueError:
        return None
    return datetime(d.year, d.month, d.day, tzinfo=timezone.utc).timestamp()


def _unread(at: float | None, now: float) -> str:
    return "with no read noted" if at is None else f"unread for {(now - at) / DAY:.0f} days"


def find(survey: Survey) -> list[Finding]:
    days = float(survey.store.config.get("maintain", {}).get("stale_days", 180))
    cards = [c for c in survey.active() if c.type != "signal"]
    newest: dict[tuple[str | None, str | None], float] = {}
    for c in cards:
        key = (c.project, None if c.project else c.type)
        newest[key] = max(newest.get(key, 0.0), survey.last_changed(c.id))
    read = last_read(survey.store.root)
    out = []
    for c in sorted(cards, key=lambda c: c.id):
        changed = survey.last_changed(c.id)
        seen = max(changed, _verified(c.meta.get("last_verified")) or 0.0)
        if (survey.now - max(seen, read.get(c.id, 0.0))) / DAY < days:
            continue
        age = (survey.now - seen) / DAY
        later = newest[(c.project, None if c.project else c.type)]
        if later - seen < MOVED_ON_DAYS * DAY:
            continue
        scope = f"project {c.project}" if c.project else f"the global {c.type} cards"
        out.append(Finding("stale", [c.id],
                           f"unchanged and unverified for {age:.0f} days, "
                           f"{_unread(read.get(c.id), survey.now)}, while {scope} "
                           f"changed {(later - seen) / DAY:.0f} days after it",
                           "check it still holds and set `last_verified`, or archive it"))
    return out
