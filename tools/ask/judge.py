"""The groundedness judge: a reply graded against exactly what its receipt shows was read.

    v = judge(receipt)            # the rule always, the model's grade unless use_model=False
    v.verdict                     # pass | fail | ungraded
    keep(store, v)                # appended to the receipt's judge list, never overwriting
    later(store, receipt_id)      # [judge] auto: judged in a detached process

Two checks, each with its own verdict and reason:
- the rule (tools/ask/completeness.py, no model): after a floor, a claim of completeness
  fails; pass, fail or undecided;
- the grade: the model checks each claim of the reply against the rung-1 pile and every
  tool result as the receipt stored them, hunting for "unsupported but plausible" claims,
  and lists the unsupported ones; pass, fail, or ungraded when the grader cannot be
  reached or its reply cannot be parsed (a grader's failure is never the reply's).

The verdict: fail if either check fails; pass if the grade passes (the rule passing or
undecided); otherwise ungraded.
"""
from __future__ import annotations

import json
import re
import sys
import subprocess
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from cardmem.store.store import Store

from .. import model
from . import receipts
from .completeness import Check, check, floors

GRADES = ("supported", "unsupported-but-plausible", "contradicted")  # best to worst

SYSTEM = (
    "You grade a reply against the material its author read, and nothing else: not your own "
    "knowledge, not what is likely true. Split the reply into its claims: every statement "
    "of fact, name, role, number or step, and any claim that the answer or a list is "
    "complete. Check each claim against the material: supported (the material states it), "
    "unsupported-but-plausible (the material does not state it, though it may well be "
    "true), or contradicted (the material says otherwise). Unsupported but plausible claims "
    "are the fault to hunt for: a fluent reply fills gaps with what sounds right. A claim "
    "that the answer is complete is unsupported when reading stopped at a limit. Saying "
    "what was not read, or that reading stopped, is not a claim to check. Answer with one "
    "JSON object and nothing else: "
    '{"claims": [{"claim": "<the claim, quoted or closely paraphrased>", "status": '
    '"supported" | "unsupported-but-plausible" | "contradicted"}], "grade": "<the worst '
    'status among the claims>", "reason": "<one sentence>"}')


def evidence(receipt: dict[str, Any]) -> str:
    """Everything the answering model saw, from the receipt, in the order it saw it."""
    parts = ["## Rung 1 (given before answering)", (receipt.get("rung1") or {}).get("text", "")]
    for c in receipt.get("tool_calls") or []:
        parts.append(f"## Tool call {c.get('n')}: {c.get('tool')} "
                     f"{json.dumps(c.get('input'), ensure_ascii=False)}")
        parts.append(c.get("result") or "")
    hit = floors(receipt)
    parts += ["## Limits hit while reading", ", ".join(hit) if hit else "none"]
    return "\n\n".join(parts)


def prompt(receipt: dict[str, Any]) -> str:
    return (f"{evidence(receipt)}\n\n## The question\n{receipt.get('question')}\n\n"
            f"## The reply to grade\n{receipt.get('reply')}")


@dataclass
class Grade(Check):
    unsupported: list[str] = field(default_factory=list)
    contradicted: list[str] = field(default_factory=list)
    tokens: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {**super().as_dict(), "unsupported": self.unsupported,
                "contradicted": self.contradicted, "tokens": self.tokens}


def parse_grade(text: str) -> Grade:
    """The grader's JSON as a Grade; ungraded if no JSON object with a status is in it.

    Only JSON counts: a loose word ("supported") in prose could as well be "not supported".
    """
    m = re.search(r"\{.*\}", text, re.S)
    data: Any = None
    if m:
        try:
            data = json.loads(m.group(0))
        except ValueError:
            data = None
    if not isinstance(data, dict):
        return Grade("ungraded", f"the grader's reply is not JSON: {_short(text)}")
    items = data.get("claims") if isinstance(data.get("claims"), list) else []
    by_status: dict[str, list[str]] = {g: [] for g in GRADES}
    for item in items:
        if isinstance(item, dict) and item.get("status") in GRADES:
            by_status[item["status"]].append(str(item.get("claim") or "").strip())
    said = [g for g in GRADES if by_status[g]]
    if data.get("grade") in GRADES:
        said.append(data["grade"])
    if not said:
        return Grade("ungraded", f"the grader gave no grade: {_short(text)}")
    worst = max(said, key=GRADES.index)  # a grade and its claims that disagree: the worse
    reason = str(data.get("reason") or "").strip()
    g = Grade("pass" if worst == "supported" else "fail", f"{worst}" + (f": {reason}" if reason else ""),
              by_status["unsupported-but-plausible"], by_status["contradicted"])
    return g


def _short(text: str) -> str:
    return " ".join(text.split())[:200] or "(empty)"


@dataclass
class Verdict:
    receipt_id: str
    verdict: str  # pass | fail | ungraded
    rule: Check
    grade: Grade
    by: str = "judge"  # cli | auto | judge (a library call)
    time: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(
        timespec="seconds"))

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    def as_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "rule": self.rule.as_dict(),
                "grade": self.grade.as_dict(), "receipt_id": self.receipt_id,
                "time": self.time, "by": self.by}


def combine(rule: Check, grade: Check) -> str:
    if "fail" in (rule.verdict, grade.verdict):
        return "fail"
    return "pass" if grade.verdict == "pass" else "ungraded"


def judge(receipt: dict[str, Any], *, use_model: bool = True, cfg: Any = None,
          sdk: Any = None, by: str = "judge") -> Verdict:
    """Both checks on a receipt's reply; never raises for a grader that fails."""
    rule = check(receipt)
    if receipt.get("outcome") != "composed" or not receipt.get("reply"):
        grade = Grade("ungraded", "no composed reply to grade")
    elif not use_model:
        grade = Grade("ungraded", "not asked (rule only)")
    else:
        try:
            out = model.complete(SYSTEM, prompt(receipt), cfg=cfg, max_tokens=1024, sdk=sdk)
        except model.ModelError as exc:  # ModelUnavailable too: no key, no login
            grade = Grade("ungraded", f"the grader could not be reached: {exc.why}")
        else:
            grade = parse_grade(out.text)
            grade.tokens = out.usage
    return Verdict(str(receipt.get("id")), combine(rule, grade), rule, grade, by)


def keep(store: Store, v: Verdict) -> None:
    """Store the verdict with its receipt (appended: earlier verdicts stay)."""
    receipts.append_judge(store, v.receipt_id, v.as_dict())


# ---- [judge] auto: after an answer is delivered, judged in a process of its own -------

def later(store: Store, receipt_id: str) -> bool:
    """Judge the receipt in a detached process if `[judge] auto` is on; True if started.

    Called once the reply is out: the caller returns at once and the child outlives it.
    """
    if not store.config.get("judge", {}).get("auto"):
        return False

    try:
        subprocess.Popen([sys.executable, "-m", "cardmem.tools.ask.judge", str(store.root), receipt_id],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    except OSError:
        return False  # never let the judge cost the answer
    return True


def _background(root: str, receipt_id: str) -> int:
    """The detached judge: one verdict appended, whatever happens."""
    store = Store.open(root)
    rec = receipts.find(store, receipt_id)
    try:
        v = judge(rec, cfg=store.config.get("model"), by="auto")
    except Exception as exc:  # stored, since no one watches this process
        v = Verdict(receipt_id, "ungraded", check(rec),
                    Grade("ungraded", f"the judge failed: {type(exc).__name__}: {exc}"), "auto")
    keep(store, v)
    return 0


if __name__ == "__main__":
    raise SystemExit(_background(*sys.argv[1:3]))
