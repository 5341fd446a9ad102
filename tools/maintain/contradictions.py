"""`contradiction`: two active cards that cannot both hold, judged by the model.

A cheap pass picks candidate pairs: active cards of one scope (same project, or global)
about the same thing (the duplicate pass's idf cosine of stems from TOPIC: below the
duplicate threshold, or above it with other facts, such as "v2 allows 100" and "v3
allows 500"; a duplicate agrees, an unrelated card cannot disagree), best first,
at most MAX_PAIRS. The model (tools/model.py, either route) judges each pair and answers
one JSON object. Without a model the kind is skipped, and the report says so.

Which card loses (M1's authority rules), in order:
1. a protected card (feedback, user) outranks one that is not;
2. a card a person last changed outranks one an agent last changed;
3. the newer card (git's last change) outranks the older.
The loser is suggested `status: superseded` with `superseded_by: <winner>`.
"""
from __future__ import annotations

import json
import re

from cardmem.store.learning import proposals
from cardmem.store.maintain import Finding, Survey
from cardmem.store.maintain.duplicates import DUPLICATE, card_pairs, card_text, same_facts
from cardmem.tools import model

TOPIC = 0.15
MAX_PAIRS = 12
CARD_CHARS = 2500  # of each card shown to the model

SYSTEM = """You check a memory of facts and rules kept for an AI coding agent.
You are shown two cards, A and B. Decide whether they contradict each other: whether
following or believing one means going against the other (for example "always squash
merges" against "never squash merges", or "the limit is 12" against "the limit is 16").
Cards that are about different things, that add to each other, or that differ only in
wording or detail do not contradict.
Answer with one JSON object and nothing else:
{"contradiction": true or false, "why": "<one sentence naming the conflicting claims>"}"""


def candidates(survey: Survey) -> list[tuple[float, str, str]]:
    """Pairs worth asking the model about, best first (all of them, uncapped)."""
    return [(s, a, b) for s, a, b in card_pairs(survey, threshold=TOPIC)
            if (s < DUPLICATE or not same_facts(survey, a, b))
            and "signal" not in (survey.cards[a].type, survey.cards[b].type)]


def _shown(survey: Survey, cid: str) -> str:
    c = survey.cards[cid]
    text = card_text(c).strip()
    return f"id: {cid}\ntype: {c.type}\n{text[:CARD_CHARS]}"


def parse_verdict(text: str) -> tuple[bool, str]:
    """(contradiction, why) from the model's reply; ModelError if it has no such object."""
    m = re.search(r"\{.*\}", text, re.S)
    try:
        data = json.loads(m.group(0)) if m else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("contradiction"), bool):
        raise model.ModelError(f"the judge's answer is not the JSON asked for: {text[:80]!r}")
    return data["contradiction"], str(data.get("why") or "").strip()


def authority(survey: Survey, cid: str) -> tuple[bool, bool, float]:
    c = survey.cards[cid]
    protected = c.type in proposals.protected_types(survey.store)
    return (protected, not survey.by_agent(cid), survey.last_changed(cid))


def winner(survey: Survey, a: str, b: str) -> tuple[str, str, str]:
    """(keep, lose, the rule that decided)."""
    ka, kb = authority(survey, a), authority(survey, b)
    keep, lose = (a, b) if ka >= kb else (b, a)
    rule = ("a protected card outranks one that is not" if ka[0] != kb[0] else
            "a person's card outranks an agent's" if ka[1] != kb[1] else
            "the newer card outranks the older")
    return keep, lose, rule


def judge_all(survey: Survey, limit: int = MAX_PAIRS) -> tuple[list[Finding], str | None]:
    """Findings for the pairs the model calls contradictions, and a note when the kind
    was skipped, stopped, or left pairs unjudged."""
    cfg = survey.store.config["model"]
    try:
        model.resolve(cfg)
    except model.ModelError as exc:  # before the pairs: no cost for a judge that is absent
        return [], f"contradiction: skipped, no model ({exc.why})"
    pairs = candidates(survey)
    if not pairs:
        return [], None
    out: list[Finding] = []
    for n, (_, a, b) in enumerate(pairs[:limit]):
        prompt = f"Card A\n{_shown(survey, a)}\n\nCard B\n{_shown(survey, b)}"
        try:
            verdict, why = parse_verdict(model.complete(SYSTEM, prompt, cfg=cfg,
                                                        max_tokens=300).text)
        except model.ModelError as exc:
            return out, f"contradiction: stopped after {n} of {len(pairs)} pair(s): {exc.why}"
        if verdict:
            keep, lose, rule = winner(survey, a, b)
            out.append(Finding("contradiction", [keep, lose], why or "the model found a conflict",
                               f"mark {lose} superseded by {keep} ({rule}); --apply does",
                               fix={"keep": keep, "lose": lose}))
    left = len(pairs) - min(limit, len(pairs))
    return out, (f"contradiction: judged the {limit} closest of {len(pairs)} candidate pairs"
                 if left else None)
