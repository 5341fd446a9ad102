"""M3, mining answers: an `ask` answer the judge (tools/ask/judge.py) graded supported by
what it read, that states something no card states, is worth keeping as a card.

Found (kind `unfiled-answer`, ids = the receipt's id): a composed receipt whose newest
verdict is `pass`, whose reply says something (MIN_STEMS stems or more, not a "memory
does not say"), and no active card holds NOVEL or more of the reply's stems. A receipt
proposed once (a commit line `from receipt ID`) is never proposed again, whatever a
person did with the proposal. With --apply a receipt not yet judged is judged first (at
most MAX_JUDGED a run, the verdict kept with the receipt); only a pass is filed, as a
proposed card (`status: proposed`, `source: receipt ID`) for `cardmem review`.
"""
from __future__ import annotations

import re
from datetime import date
from typing import Any

from cardmem.store.cards import card as cardlib
from cardmem.store.git import runner as git
from cardmem.store.cards import paths
from cardmem.store.learning import proposals
from cardmem.store.maintain import Finding, Survey
from cardmem.store.maintain.duplicates import card_text, stems
from cardmem.store.cards.status import PROPOSED

from ..ask import receipts
from ..ask.judge import judge, keep

KIND = "unfiled-answer"
NOVEL = 0.8  # a card holding this share of the reply's stems says it already
MIN_STEMS = 6
MAX_JUDGED = 5  # receipts --apply judges in one run
RECENT = 500  # newest receipts looked at
TITLE_CHARS = 80
_NOTHING = re.compile(r"\b(no card|nothing in memory|(?:does|do) not (?:say|state|mention)|"
                      r"don't know|do not know|could(?:n't| not) find|not in (?:the )?memory)\b",
                      re.I)
MINED = re.compile(r"^from receipt (\d{8}T\d{6}Z-[0-9a-f]{6})", re.M)


def verdict(rec: dict[str, Any]) -> str | None:
    """The newest verdict on a receipt, or None (never judged)."""
    js = rec.get("judge") or []
    return str(js[-1].get("verdict")) if js and isinstance(js[-1], dict) else None


def mined(survey: Survey) -> set[str]:
    """Receipts already proposed as cards (git remembers, even after a reject)."""
    log = git.run(survey.store.root, "log", "--fixed-strings", "--grep=from receipt ",
                  "--format=%B", check=False)
    return set(MINED.findall(log))


def closest(said: dict[str, set[str]], reply: str) -> tuple[float, str | None]:
    """(share of the reply's stems the best card holds, that card); said: id -> stems."""
    want = stems(reply)
    best, best_id = 0.0, None
    for cid, ws in said.items():
        share = len(want & ws) / len(want)
        if share > best:
            best, best_id = share, cid
    return best, best_id


def _says_something(reply: str | None) -> bool:
    return bool(reply) and len(stems(reply or "")) >= MIN_STEMS and not _NOTHING.search(reply or "")


def find(survey: Survey, *, judge_now: bool = False) -> tuple[list[Finding], str | None]:
    """Findings for receipts worth filing, and a note on answers not judged yet."""
    recs = [r for r in list(receipts.iter_all(survey.store))[-RECENT:]
            if r.get("outcome") == "composed" and _says_something(r.get("reply"))]
    if not recs:
        return [], None
    done = mined(survey)
    recs = [r for r in recs if str(r.get("id")) not in done]
    unjudged = [r for r in recs if verdict(r) is None]
    note = None
    if judge_now and unjudged:
        for r in unjudged[-MAX_JUDGED:]:
            v = judge(r, cfg=survey.store.config.get("model"), by="maintain")
            keep(survey.store, v)
            r["judge"] = [*(r.get("judge") or []), v.as_dict()]
        left = len(unjudged) - min(len(unjudged), MAX_JUDGED)
        if left:
            note = f"{KIND}: judged the newest {MAX_JUDGED}; {left} answer(s) wait for the next run"
    elif unjudged:
        note = (f"{KIND}: {len(unjudged)} answer(s) not judged yet (`cardmem judge ID`, or "
                "--apply judges them)")
    out: list[Finding] = []
    passed = [r for r in recs if verdict(r) == "pass"]
    said = {c.id: stems(card_text(c)) for c in survey.active()} if passed else {}
    for r in passed:
        share, near = closest(said, r["reply"])
        if share >= NOVEL:
            continue
        rid = str(r["id"])
        out.append(Finding(KIND, [rid], f"the judge found the answer to {r.get('question')!r} "
                           f"supported, and no card says it (closest: {near or 'none'}, "
                           f"{share:.0%} of its words)",
                           "file it as a proposed card for `cardmem review` (--apply does)",
                           fix={"receipt": rid, "question": str(r.get("question") or ""),
                                "reply": str(r["reply"])}))
    return out, note


def proposed_card(store, fix: dict[str, str], taken: list[str]) -> tuple[str, str]:
    """(id, text) of the proposal a mined answer becomes, at a free id under reference/."""
    q = " ".join(fix["question"].split()) or "An answer"
    title = q if len(q) <= TITLE_CHARS else q[:TITLE_CHARS - 3].rsplit(" ", 1)[0] + "..."
    cid = proposals.free_id(store, f"reference/{paths.slugify(title)}", taken)
    meta = {"title": title, "type": "reference", "status": PROPOSED, "proposed_by": "maintain",
            "source": f"receipt {fix['receipt']}", "created": date.today()}
    body = (f"{fix['reply'].strip()}\n\n_Mined from `cardmem ask` receipt {fix['receipt']}, "
            "which the judge graded supported by the cards it read._")
    return cid, cardlib.render(meta, body)
