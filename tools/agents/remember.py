"""`remember` on someone's behalf, by an agent or a bot (MCP, Slack): one door for both.

Checked (ValueError naming title or body), secrets redacted before anything is written, and
a `feedback` or `user` card (the `[extract] protected_types`) never changed: a proposal is
filed for `cardmem review` instead (a prompt injection must not set standing rules).

    remember(store, "Deploy steps", "make deploy, then check", by="slack")
    # -> {"id", "created", "appended", "redacted", ["proposed", "note"]}
"""
from __future__ import annotations

from typing import Any

from cardmem.store.store import Store
from cardmem.tools.secrets.redact import screen
from cardmem.store.learning.proposals import protected_types, propose_remember

TITLE_MAX_CHARS = 200
BODY_MAX_CHARS = 16_000  # one remembered note; a card read back is capped at 8,000


def remember(store: Store, title: str, body: str, type: str = "reference",
             project: str | None = None, *, by: str,
             meta: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """File a memory as agent `by` (the commits' source and the proposals' author); meta:
    tags and aliases the card gets (a proposal takes none: its note says so)."""
    title = (title or "").strip()
    if not title:
        raise ValueError("title: is empty; give the memory a short title")
    if len(title) > TITLE_MAX_CHARS:
        raise ValueError(f"title: too long ({len(title)} characters; the limit is "
                         f"{TITLE_MAX_CHARS})")
    if not (body or "").strip():
        raise ValueError("body: is empty; say what to remember")
    if len(body) > BODY_MAX_CHARS:
        raise ValueError(f"body: too large ({len(body)} characters; the limit is "
                         f"{BODY_MAX_CHARS}); remember a shorter summary")
    # Secrets never reach a card (nor git history): redact before anything is written.
    (title, body), redacted = screen([title, body])
    out: dict[str, Any]

    protected = protected_types(store)
    found = store.titled(title)
    if len(found) == 1 and found[0][1] in protected:  # that title is a rule or user card
        out = _propose(store, title, body, found[0][1], project or None, by, target=found[0][0])
    elif type in protected:
        out = _propose(store, title, body, type, project or None, by)
    else:
        cid, created = store.remember(title, body, card_type=type, project=project or None,
                                      source=by, agent=True, meta=meta)
        out = {"id": cid, "created": created, "appended": not created}
    if out.get("proposed") and meta:  # not dropped unsaid: the person adds them on accepting
        out["note"] += f"; its {' and '.join(sorted(meta))} were not kept on the proposal"
    out["redacted"] = redacted
    if redacted:
        out["note"] = (out.get("note", "") + " " if out.get("note") else "") + (
            f"{sum(redacted.values())} secret(s) were redacted before saving")
    return out


def _propose(store: Store, title: str, body: str, type: str, project: str | None, by: str,
             target: str | None = None) -> dict[str, Any]:
    w = propose_remember(store, title, body, card_type=type, project=project,
                         proposed_by=by, source=by, target=target)
    what = f"a change to {w.target}" if w.target else "a new card"
    return {"id": w.id, "created": w.created, "appended": not w.created, "proposed": True,
            "note": f"{type} cards are protected: saved as a proposal ({what}), not in "
                    f"force until a person accepts it (`cardmem review accept {w.id}`)"}
