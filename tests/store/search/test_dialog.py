"""A conversation kept in one card is scored by its best turns too (store/search/dialog.py):
hybrid.fuse on a small store's lexical result, every card equally near the query for the
vectors (no model), so the words decide."""
from __future__ import annotations

from cardmem.store.search import dialog
from semantickit import fused_ids

# Small talk around what matters, as in any chat log.
FILLER = ["How was your week?", "Busy, the kids had a cold.", "Hope they feel better soon.",
          "They do, thanks. Dinner on Friday?", "Sure, I will bring dessert.",
          "Great, see you at seven."]


def chat(*lines: str) -> str:
    """A conversation: Ana and Ben take turns, small talk after the given lines."""
    said = list(lines) + FILLER
    return "\n\n".join(f"{'Ana' if i % 2 == 0 else 'Ben'}: {t}" for i, t in enumerate(said))


# The question's words in one turn of one day; spread over many turns of another, where
# they come back again and again, so the whole-card bm25 prefers that other day.
ANSWER = chat("Morning! The kids are up early.", "Any plans for the weekend?",
              "I will buy a camera lens for the trip.", "Oh nice, which one?")
SPREAD = chat("The camera is broken again.", "Which one, the old one?",
              "Yes, and the lens is cracked.", "Another lens, then?",
              "Buy one before the trip.", "The trip is in June.")
QUESTION = "which camera lens did Ana buy for the trip"
NOTES = {f"notes/note-{i}": f"A note about {w}, kept for later." for i, w in enumerate(
    ["deploys", "backups", "on-call", "flags", "billing", "replicas", "releases", "tests"])}


def ranked(tmp_path, bodies: dict[str, str]) -> list[str]:
    return fused_ids(tmp_path / "store", NOTES | bodies, QUESTION)


def test_the_day_whose_one_turn_answers_comes_before_the_day_that_repeats_the_words(tmp_path):
    ids = ranked(tmp_path, {"chats/day-1": SPREAD, "chats/day-2": ANSWER})
    assert ids[:2] == ["chats/day-2", "chats/day-1"], ids


def test_notes_of_paragraphs_are_not_scored_by_their_paragraphs(tmp_path):
    # The same texts without speakers: one subject each, ranked as whole cards.
    plain = {cid: "\n\n".join(p.split(": ", 1)[1] for p in body.split("\n\n"))
             for cid, body in {"notes/day-1": SPREAD, "notes/day-2": ANSWER}.items()}
    assert ranked(tmp_path, plain)[0] == "notes/day-1"


def test_a_dialog_is_turns_whose_speakers_come_back() -> None:
    assert len(dialog.turns(ANSWER)) == 10
    assert dialog.turns("Conversation of 8 May.\n\n" + ANSWER)[0].startswith("Ana: Morning")
    steps = "\n\n".join(f"Step {i}: do thing {i}." for i in range(1, 7))
    assert dialog.turns(steps) == []  # a list of labelled steps, every label new
    assert dialog.turns("Ana: hi\n\nBen: hello") == []  # too short to be about many things
    prose = "\n\n".join(["Some prose without speakers."] * 3 + ["Ana: one", "Ben: two"])
    assert dialog.turns(prose) == []  # most paragraphs are not turns
