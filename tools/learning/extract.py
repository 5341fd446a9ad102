"""Extraction: one model call turns a session excerpt into signal lines (DESIGN §6).

The model proposes; code keeps only lines of the contract
`Decision: | Rule: | Worked: | Failed: | Knowledge: <text>` (or `EMPTY`). Anything
else it writes (preambles, bullets, markdown, a second opinion) is dropped, so a chatty
or manipulated reply cannot put free text into the store.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from ..model import complete

KINDS = ("Decision", "Rule", "Worked", "Failed", "Knowledge")
MAX_SIGNAL_CHARS = 400
MAX_SIGNALS = 12
_LINE = re.compile(r"^(Decision|Rule|Worked|Failed|Knowledge): (\S.*)$")

SYSTEM = """You read an excerpt of a coding session between a user and an AI assistant \
and write down what the session taught that is worth remembering next time.

Write only facts that actually happened in this session:
- Decision: a choice the user or the assistant made and acted on
- Rule: an instruction the user gave about how to work from now on
- Worked: an approach or command that was tried and succeeded
- Failed: an approach or command that was tried and did not work (and why, if known)
- Knowledge: a durable fact about the code, the systems or the team that came to light

Leave out:
- anything hypothetical, planned but not done, or merely discussed as an option
- text the user quoted or pasted (logs, documents, other people's messages): it did not \
happen in this session
- personal data: names of private individuals beyond a first name or handle, e-mail \
addresses, phone numbers, health, family or money matters
- secrets of any kind, and anything marked [REDACTED]
- small talk and the routine steps of the task itself

Answer with one line per fact, each starting with exactly one of `Decision: `, `Rule: `, \
`Worked: `, `Failed: `, `Knowledge: `, each line self-contained and under 300 \
characters, at most 8 lines, no other text. If there is nothing worth remembering, \
answer with the single word EMPTY."""


@dataclass(frozen=True)
class Signal:
    kind: str
    text: str

    @property
    def line(self) -> str:
        return f"{self.kind}: {self.text}"


def contract_lines(reply: str) -> list[Signal]:
    """The contract lines of a reply, in order, without repeats; EMPTY or noise -> []."""
    out: list[Signal] = []
    seen: set[str] = set()
    for raw in reply.splitlines():
        line = raw.strip()
        m = _LINE.match(line)
        if not m:
            continue
        text = " ".join(m.group(2).split())
        if len(text) > MAX_SIGNAL_CHARS or text.upper() == "EMPTY":
            continue
        key = f"{m.group(1)}:{text.casefold()}"
        if key in seen:
            continue
        seen.add(key)
        out.append(Signal(m.group(1), text))
        if len(out) >= MAX_SIGNALS:
            break
    return out


def render_excerpt(turns: Sequence[Any]) -> str:
    """Turns (dicts with role/text, or (role, text) pairs) as a plain transcript."""
    parts = []
    for t in turns:
        if isinstance(t, Mapping):
            role, text = t.get("role", "?"), t.get("text", "")
        elif hasattr(t, "role"):
            role, text = t.role, getattr(t, "text", "")
        else:
            role, text = t
        parts.append(f"[{role}]\n{text}")
    return "\n\n".join(parts)


def extract(turns: Sequence[Any], cfg: Mapping[str, Any] | None = None) -> list[Signal]:
    """One model call over a (redacted) excerpt. Raises ModelUnavailable without a key,
    ModelError when the call fails."""
    excerpt = render_excerpt(turns)
    if not excerpt.strip():
        return []
    prompt = ("<session_excerpt>\n" + excerpt + "\n</session_excerpt>\n\n"
              "What did this session teach? Contract lines only, or EMPTY.")
    reply = complete(SYSTEM, prompt, cfg=cfg)
    return contract_lines(reply.text)
