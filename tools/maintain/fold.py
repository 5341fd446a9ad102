"""Folding a long History (M2 synthesis): the model rewrites a card's text so it says
what holds now, given the older History lines; the lines themselves stay, raw, below it
(store/maintain/history.py lays the card out). The model only writes prose: a reply with
frontmatter, a History heading or nothing in it is refused and the card left alone.
"""
from __future__ import annotations

import re

from cardmem.tools import model

MAX_BODY_CHARS = 20000

SYSTEM = """You keep a memory card for an AI coding agent up to date.
You are given the card's title, its current text, and older dated History lines that
record decisions, rules, what worked and what failed. Rewrite the card's text so it
states what holds now: keep every fact of the current text that the lines do not
overturn, add what the lines established, and where lines disagree the later line wins.
Write plain Markdown prose or bullets for the card's body only: no frontmatter, no
title heading, no History section, no dates unless they matter. Answer with the new
text and nothing else."""


def prompt(title: str, body: str, lines: list[str]) -> str:
    listed = "\n".join(f"- {ln}" for ln in lines)
    return (f"Title: {title}\n\nCurrent text:\n{body.strip() or '(empty)'}\n\n"
            f"Older History lines, oldest first:\n{listed}")


def clean(reply: str) -> str:
    """The body the reply gives; ModelError when it is not one."""
    text = reply.strip()
    if m := re.fullmatch(r"```(?:markdown|md)?\n(.*?)\n```", text, re.S):
        text = m.group(1).strip()
    if not text:
        raise model.ModelError("the model's rewrite is empty")
    if text.startswith("---") or re.search(r"^#{1,6}\s+(Folded )?History\s*$", text, re.M | re.I):
        raise model.ModelError("the model's rewrite has frontmatter or a History section")
    if len(text) > MAX_BODY_CHARS:
        raise model.ModelError(f"the model's rewrite is {len(text):,} characters "
                               f"(at most {MAX_BODY_CHARS:,})")
    return text


def rewrite(title: str, body: str, lines: list[str], cfg) -> str:
    reply = model.complete(SYSTEM, prompt(title, body, lines), cfg=cfg, max_tokens=4000)
    return clean(reply.text)
