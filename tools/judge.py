"""The groundedness judge: a reply graded against exactly what its receipt shows was read.

Two parts:
- a rule that needs no model: a reply whose walk hit a floor fails if it claims
  completeness ("that's everything", "the complete list", "all of them", "fully"...), and
  is flagged if it never says it stopped (no "limit", "couldn't read", "stopped"...);
- the model's grade: supported | unsupported-but-plausible | contradicted, given the
  rung-1 pile and every tool result exactly as the receipt stored them.

A reply passes only if the rule does not fail or flag it and the grade is `supported`.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from . import model

GRADES = ("supported", "unsupported-but-plausible", "contradicted")

# Completeness claims. A claim negated just before it ("not the complete list") is no claim.
COMPLETE = re.compile(
    r"that'?s (?:everything|all\b|the (?:whole|full|complete))|that is (?:everything|all\b)|"
    r"\b(?:the|a) (?:complete|full|entire|exhaustive) (?:list|answer|picture|set|set of \w+)\b|"
    r"\ball of them\b|\bfully\b|\bexhaustive(?:ly)?\b|\bcompletely\b|"
    r"\bnothing (?:else|more) (?:to|is|needs)\b|\bevery (?:step|approver|check|one of them)\b",
    re.I)
NEGATION = re.compile(r"(?:\bnot|n't|\bno|\bnever|\bmay not be|\bcannot|\bcan't)\W+(?:\w+\W+){0,2}$",
                      re.I)
# Saying it stopped: a limit, a budget, what it could not read.
STOPPED = re.compile(
    r"\blimits?\b|\bbudget\b|\bfloor\b|\bstopped\b|\bran out\b|\bout of (?:time|reads)\b|"
    r"\b(?:couldn'?t|could not|can'?t|cannot|did ?n[o']t|was not able to|wasn'?t able to|"
    r"unable to|haven'?t|have not) (?:\w+ ){0,2}(?:read|reach|check|open|get to|look)|"
    r"\bnot (?:yet )?read\b|\bincomplete\b|\bpartial\b|\bunread\b|\btime ran out\b",
    re.I)


@dataclass
class RuleResult:
    status: str  # pass | fail | flag | n/a
    reasons: list[str] = field(default_factory=list)


def completeness_claims(text: str) -> list[str]:
    """The completeness claims in a reply, negated ones left out."""
    out = []
    for m in COMPLETE.finditer(text):
        if not NEGATION.search(text[max(0, m.start() - 40):m.start()]):
            out.append(m.group(0))
    return out


def rule(receipt: dict[str, Any]) -> RuleResult:
    """The model-free check of a receipt's reply against the floors it hit."""
    reply = receipt.get("reply")
    if receipt.get("outcome") != "composed" or not reply:
        return RuleResult("n/a", ["no composed reply to check"])
    floors = [f.get("floor") for f in receipt.get("floors") or []]
    if not floors:
        return RuleResult("pass", ["no floor was hit"])
    claims = completeness_claims(reply)
    if claims:
        return RuleResult("fail", [f"floor {', '.join(floors)} was hit, yet the reply claims "
                                   f"completeness: {', '.join(repr(c) for c in claims)}"])
    if not STOPPED.search(reply):
        return RuleResult("flag", [f"floor {', '.join(floors)} was hit and the reply never "
                                   "says it stopped or what it could not read"])
    return RuleResult("pass", [f"floor {', '.join(floors)} was hit and the reply says it stopped"])


def evidence(receipt: dict[str, Any]) -> str:
    """Everything the answering model saw, from the receipt, in the order it saw it."""
    parts = ["## Rung 1 (given before answering)", (receipt.get("rung1") or {}).get("text", "")]
    for c in receipt.get("tool_calls") or []:
        parts.append(f"## Tool call {c.get('n')}: {c.get('tool')} "
                     f"{json.dumps(c.get('input'), ensure_ascii=False)}")
        parts.append(c.get("result") or "")
    return "\n\n".join(parts)


SYSTEM = (
    "You grade whether a reply is grounded in the material its author read. Use only the "
    "material given, not your own knowledge. Answer with one JSON object and nothing else: "
    '{"grade": "supported" | "unsupported-but-plausible" | "contradicted", "reason": "<one '
    'sentence>"}. supported: every claim in the reply is backed by the material. '
    "unsupported-but-plausible: some claim is not in the material but nothing contradicts "
    "it. contradicted: some claim conflicts with the material.")


def parse_grade(text: str) -> tuple[str, str]:
    """(grade, reason) from the judge model's answer; grade `unparsed` if none is found."""
    m = re.search(r"\{.*\}", text, re.S)
    if m:
        try:
            data = json.loads(m.group(0))
            if isinstance(data, dict) and data.get("grade") in GRADES:
                return data["grade"], str(data.get("reason") or "")
        except ValueError:
            pass
    found = re.search(r"\b(unsupported-but-plausible|contradicted|supported)\b", text, re.I)
    if found:
        return found.group(1).lower(), text.strip()[:300]
    return "unparsed", text.strip()[:300]


@dataclass
class Verdict:
    receipt_id: str
    verdict: str  # pass | fail | flagged | nothing to judge
    rule: RuleResult
    grade: str | None = None  # None when the model was not asked
    grade_reason: str = ""
    tokens: dict[str, int] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.verdict in ("pass", "nothing to judge")

    def as_dict(self) -> dict[str, Any]:
        return {"receipt_id": self.receipt_id, "verdict": self.verdict, "passed": self.passed,
                "rule": {"status": self.rule.status, "reasons": self.rule.reasons},
                "grade": self.grade, "grade_reason": self.grade_reason, "tokens": self.tokens}


def judge(receipt: dict[str, Any], *, use_model: bool = True,
          cfg: Any = None, sdk: Any = None) -> Verdict:
    """Grade a receipt's reply: the rule always, the model unless use_model is False."""
    r = rule(receipt)
    v = Verdict(receipt["id"], "nothing to judge", r)
    if r.status == "n/a":
        return v
    if use_model:
        prompt = (f"{evidence(receipt)}\n\n## The question\n{receipt.get('question')}\n\n"
                  f"## The reply to grade\n{receipt.get('reply')}")
        out = model.complete(SYSTEM, prompt, cfg=cfg, max_tokens=300, sdk=sdk)
        v.grade, v.grade_reason = parse_grade(out.text)
        v.tokens = out.usage
    if r.status == "fail" or (v.grade is not None and v.grade != "supported"):
        v.verdict = "fail"
    elif r.status == "flag":
        v.verdict = "flagged"
    else:
        v.verdict = "pass"
    return v
