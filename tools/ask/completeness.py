"""The completeness rule: after a floor, a reply that claims to be complete fails.

No model. Which floors a receipt shows (`floors`): the walk's budget and time floors, a
tool call abandoned at its per-call timeout, a tool result cut by its cap (a card's
`truncated_chars`, the map's `left_out`), and a skipped walk (the claude-code route
answers from rung 1 only: the model could not read more, so that counts as a floor).

After a floor the rule (`check`) says, for the reply:
- fail: it asserts completeness in any phrasing ("that's everything", "nothing is
  missing", "I have the whole answer", "la liste est complète"), also when it mentions
  the limit only to dismiss it;
- pass: it claims nothing of the kind and says it stopped or what it could not read;
- undecided: it does neither, or it is in a language the rule does not read. The model
  grade decides those; the rule does not guess.

A claim inside the scope of a doubt ("I can't be sure that's everything", "la liste
n'est pas complète") or scoped to what was read ("everything I could read") is no claim.
Measured on tests/replies_corpus.py by bench/bench_judge.py.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# ---- the languages the rule reads: how to recognise each, its claims, doubts, stops ----

# Function words that tell the languages apart; a reply needs 2 hits to be read at all.
WORDS = {
    "en": "the and is are i it that to of this what was have not but be my",
    "de": "der die das ist und ich nicht habe ein eine zu auch aber sind",
    "fr": "le la les est et je ne pas un une c'est j'ai des du mais",
    "es": "el la los las es y no que un una eso está en pero del",
    "pt": "o os as é e não que um uma isso está em mas do da",
    "it": "il lo è e non che un una questo sono di ma della",
    "nl": "de het een is en ik niet dat van zijn maar ook",
}

_EN_CLAIMS = [
    r"\b(?:that|this|it)(?:'s| is| was)(?: \w+)? (?:everything|all\b|it\b)",
    r"\b(?:that|this|it) (?:should|would|must|will) be (?:it|everything|all)\b",
    r"\b(?:the|a|my|this|your) (?:complete|full|entire|whole|exhaustive|comprehensive) "
    r"(?:list|answer|picture|set|process|story|procedure|set of \w+)\b",
    r"\b(?:is|are|was|be|looks|seems)(?: \w+)? (?:complete|comprehensive|exhaustive)\b",
    r"\ball of (?:them|it|the \w+)\b",
    r"\b(?:fully|completely|comprehensively|exhaustively|in full)\b",
    r"\bcover(?:s|ed)? (?:everything|it all|all\b|every)",
    r"\b(?:covered|have|had|found|got|listed|named|know|knew|included|read|identified) "
    r"(?:\w+ )?(?:everything|every \w+|all (?:the|of)\b)",
    r"\bnothing (?:\w+ )?(?:else|more|further|is missing|was missing|missing|left out)\b",
    r"\b(?:no|none) (?:other|others|more|further)\b|\b(?:nobody|no one|no-one) else\b",
    r"\b(?:not missing|didn'?t miss|haven'?t missed|left nothing) (?:anything|out)\b",
    r"\b(?:doubt|don'?t think|do not think) (?:that )?(?:anything|much)(?: \w+)? "
    r"(?:is |was )?missing\b",
]
CLAIMS = {
    "en": _EN_CLAIMS,
    "de": [r"\bdas (?:ist|war) (?:alles|es)\b", r"\b(?:vollständig|komplett|lückenlos)\b",
           r"\b(?:nichts|es fehlt nichts|fehlt nichts)\b(?: \w+)?(?: fehlt)?"],
    "fr": [r"\bc'est tout\b", r"\b(?:complète?s?|exhaustive?s?)\b",
           r"\brien ne manque\b|\bil ne manque rien\b|\btoute la liste\b"],
    "es": [r"\beso es todo\b", r"\b(?:complet[oa]s?|exhaustiv[oa]s?)\b",
           r"\bno falta nada\b|\bnada falta\b"],
    "pt": [r"\bisso é tudo\b", r"\b(?:complet[oa]s?|exaustiv[oa]s?)\b",
           r"\bnão falta nada\b|\bnada falta\b"],
    "it": [r"\b(?:questo|ecco) è tutto\b|\bè tutto\b", r"\b(?:complet[oa]|esaustiv[oa])\b",
           r"\bnon manca (?:nulla|niente)\b"],
    "nl": [r"\bdat is alles\b", r"\b(?:volledig|compleet)\b",
           r"\b(?:er ontbreekt niets|niets ontbreekt)\b"],
}
# A claim after one of these in its own clause is doubted or denied, so it is no claim.
DOUBTS = {
    "en": r"\b(?:not|no|never|nor|cannot|can'?t|couldn'?t|don'?t|doesn'?t|didn'?t|isn'?t|"
          r"aren'?t|wasn'?t|won'?t|haven'?t|hasn'?t|unable|unsure|uncertain|doubt|whether|"
          r"if|unclear|unknown|without|may|might|hard to say)\b",
    "de": r"\b(?:nicht|kein\w*|nie|ob|vielleicht|möglicherweise|unklar)\b",
    "fr": r"\b(?:ne|n'|pas|jamais|si|peut-être|incertain)",
    "es": r"\b(?:no|nunca|si|quizás|tal vez|quizá)\b",
    "pt": r"\b(?:não|nunca|se|talvez)\b",
    "it": r"\b(?:non|mai|se|forse)\b",
    "nl": r"\b(?:niet|geen|nooit|of|misschien)\b",
}
# A claim wanted, not made: "I would need more reads to be complete", "a complete answer
# would need more reads". Read in the claim's own clause, before or after it (English).
WANTED = re.compile(r"\b(?:would|need(?:s|ed)?|require[sd]?|in order)\b|\bto\s*$", re.I)
WANTED_AFTER = re.compile(r"\bwould\b|\bneed(?:s|ed)? (?:more|further|to read)\b", re.I)

# Phrases that look like doubts but affirm: "no doubt", "without a doubt", "not only".
AFFIRMS = re.compile(r"\b(?:no|without(?: a)?) doubt\b|\bnot only\b|\bof course\b", re.I)
# A claim followed by these is scoped to what was read ("everything I could read").
SCOPED = re.compile(
    r"^\W{0,3}(?:(?:that|which) )?(?:I|we) (?:\w+ )?(?:could|was able to|managed to|did|had "
    r"time to|got to)?\s*(?:read|find|found|see|saw|reach|check|open)|^\W{0,3}(?:so far|"
    r"before (?:the|I|hitting|reading)|from (?:the|what|those)|in (?:the|those) (?:cards?|"
    r"material))", re.I)
STOPS = {
    "en": r"\blimits?\b|\bbudget\b|\bfloor\b|\bstopped\b|\bran out\b|\bout of (?:time|reads)\b|"
          r"\b(?:couldn'?t|could not|can'?t|cannot|did ?n[o']t|never|was not able to|"
          r"wasn'?t able to|unable to|haven'?t|have not) (?:\w+ ){0,2}(?:read|reach|check|"
          r"open|opened|get to|look|seen|confirm|finish|identify)|\bnot (?:yet )?read\b|"
          r"\bincomplete\b|\bpartial\b|\bunread\b|\btime ran out\b|\bmay be missing\b|"
          r"\b(?:may|might) not be\b|\bpossibly (?:others|more)\b|\bmay be more\b|"
          r"\bcut (?:me )?off\b|\bstopped early\b|\bI don'?t know\b|"
          r"\b(?:can'?t|cannot|not) (?:be )?(?:sure|certain)\b|\btime ?box\b|"
          r"\bout of (?:tool )?(?:calls|reads|time)\b|\bonly (?:got through|read|reached)\b|"
          r"\b(?:did ?n[o']t|never) (?:\w+ )?see\b|\bunknown\b|"
          r"\bneed(?:s|ed)? (?:to read |to check )?(?:more|further|other) (?:reads|cards|time|"
          r"calls|reading)\b|\bneed(?:s|ed)? to read more\b",
    "de": r"\b(?:Limit|Grenze|Budget|aufgehört|abgebrochen|unvollständig)\b|"
          r"\bnicht (?:\w+ )?(?:gelesen|lesen|prüfen|geprüft)\b",
    "fr": r"\b(?:limite|budget|arrêtée?|incomplète?|partielle?)\b|\bpas (?:pu )?(?:lu|lire)\b",
    "es": r"\b(?:límite|presupuesto|detuve|incomplet[oa]|parcial)\b|\bno (?:pude )?(?:leer|leí)\b",
    "pt": r"\b(?:limite|parei|incomplet[oa]|parcial)\b|\bnão (?:consegui )?(?:ler|li)\b",
    "it": r"\b(?:limite|fermato|fermata|incomplet[oa]|parziale)\b|\bnon (?:ho )?(?:letto|potuto)\b",
    "nl": r"\b(?:limiet|grens|gestopt|onvolledig|gedeeltelijk)\b|\bniet (?:\w+ )?gelezen\b",
}
_CLAIM_RE = {k: re.compile("|".join(v), re.I) for k, v in CLAIMS.items()}
_DOUBT_RE = {k: re.compile(v, re.I) for k, v in DOUBTS.items()}
_STOP_RE = {k: re.compile(v, re.I) for k, v in STOPS.items()}
_WORDS = {k: set(v.split()) for k, v in WORDS.items()}
# Clauses: a claim's doubt must sit in the same clause ("I stopped, but nothing is missing").
CLAUSE = re.compile(r"[.;:!?\n()\u2014]+|,\s*|\s-\s|\b(?:but|though|although|yet|aber|mais|"
                    r"pero|mas|ma|maar)\b", re.I)


def language(text: str) -> str | None:
    """The language among WORDS whose function words the reply uses most (2 at least; a
    short reply in plain ASCII is read as English); None for another script."""
    letters = [c for c in text if c.isalpha()]
    if not letters or sum(c.isascii() or "\u00c0" <= c <= "\u024f" for c in letters) < 0.8 * len(letters):
        return None
    tokens = re.findall(r"[\w']+", text.lower())
    scores = {lang: sum(t in words for t in tokens) for lang, words in _WORDS.items()}
    best = max(scores, key=lambda k: (scores[k], k == "en"))
    if scores[best] >= 2:
        return best
    return "en" if text.isascii() else None


def claims(text: str, lang: str = "en") -> list[str]:
    """The completeness claims in a reply: not doubted in their clause, not scoped to
    what was read."""
    out = []
    for m in _CLAIM_RE[lang].finditer(text):
        cuts = [c.end() for c in CLAUSE.finditer(text, 0, m.start())]
        before = AFFIRMS.sub(" ", text[cuts[-1] if cuts else 0:m.start()])
        if _DOUBT_RE[lang].search(before) or SCOPED.search(text[m.end():m.end() + 60]):
            continue
        end = next(CLAUSE.finditer(text, m.end()), None)
        after = text[m.end():end.start() if end else len(text)]
        if lang == "en" and (WANTED.search(before) or WANTED_AFTER.search(after)):
            continue
        out.append(m.group(0).strip())
    return out


def stops(text: str, lang: str = "en") -> list[str]:
    """Where the reply says it stopped or what it could not read."""
    return [m.group(0) for m in _STOP_RE[lang].finditer(text)]


def floors(receipt: dict[str, Any]) -> list[str]:
    """Every floor the receipt shows, named for a person."""
    out = [str(f.get("floor")) for f in receipt.get("floors") or [] if isinstance(f, dict)]
    if receipt.get("walk"):  # the claude-code route: rung 1 only
        out.append("walk skipped (the first cards only)")
    for c in receipt.get("tool_calls") or []:
        if "took longer than" in str(c.get("error") or ""):
            out.append(f"per-call timeout (call {c.get('n')})")
        cut = _cut(c.get("result"))
        if cut:
            out.append(f"capped result (call {c.get('n')}: {cut})")
    return out


def _cut(result: Any) -> str | None:
    if not isinstance(result, str) or not result.startswith("{"):
        return None
    try:
        data = json.loads(result)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    if data.get("truncated_chars"):
        return f"card cut by {data['truncated_chars']} characters"
    if data.get("left_out"):
        return f"map left out {data['left_out']} cards"
    return None


@dataclass
class Check:
    verdict: str  # pass | fail | undecided (rule); pass | fail | ungraded (grade)
    why: str

    def as_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "why": self.why}


def judge_text(reply: str, hit: list[str]) -> Check:
    """The rule on a reply, given the floors its walk hit."""
    if not hit:
        return Check("pass", "no floor was hit")
    where = ", ".join(hit)
    lang = language(reply)
    if lang is None:
        return Check("undecided", f"floor {where} was hit; the reply is in a language the "
                                  "rule does not read")
    said = claims(reply, lang)
    if said:
        return Check("fail", f"floor {where} was hit, yet the reply claims completeness: "
                             + ", ".join(repr(c) for c in said))
    if stops(reply, lang):
        return Check("pass", f"floor {where} was hit and the reply says it stopped")
    return Check("undecided", f"floor {where} was hit; the reply neither says it stopped nor "
                              "claims completeness")


def check(receipt: dict[str, Any]) -> Check:
    """The rule on a receipt's reply; undecided when there is no composed reply."""
    reply = receipt.get("reply")
    if receipt.get("outcome") != "composed" or not isinstance(reply, str) or not reply.strip():
        return Check("undecided", "no composed reply to check")
    return judge_text(reply, floors(receipt))
