"""A question that names a speaker, over cards of one turn each (store/search/speakers.py):
the fused first result, a turn of someone else, gives its place to the named person's own
turn from the next few. hybrid.fuse on a small store's lexical result, every card equally
near the query for the vectors (no model), so the words decide."""
from __future__ import annotations

from cardmem.store.search import hybrid, speakers
from semantickit import fused_ids

# One day of a chat kept a card a turn, as a transcript importer would (`On <date>, Name:`).
# Ben asks about Ana's pet with every word of the question; Ana answers in her own turn.
DAY = ["Ben: Morning Ana! How was the weekend?",
       "Ana: Lovely, we went to the lake.",
       "Ben: Ana, what pet do you have now? You said you would get a pet.",
       "Ana: A guinea pig called Oscar, my first pet.",
       "Ben: Cute! Dinner on Friday?",
       "Ana: Sure, see you at seven."]
TURNS = {f"turns/d1-{i}": f"On 8 May, 2023, {t}" for i, t in enumerate(DAY, 1)}
NOTES = {f"notes/note-{i}": f"A note about {w}, kept for later." for i, w in enumerate(
    ["deploys", "backups", "on-call", "flags", "billing", "replicas", "releases", "tests"])}


def ranked(tmp_path, query: str, cards: dict[str, str] = TURNS, limit: int = 5) -> list[str]:
    return fused_ids(tmp_path / "store", NOTES | cards, query, limit)


def test_the_named_persons_own_turn_comes_before_the_question_put_to_her(tmp_path):
    ids = ranked(tmp_path, "What pet does Ana have?")
    assert ids[:2] == ["turns/d1-4", "turns/d1-3"], ids


def test_the_first_result_is_the_same_whatever_the_limit(tmp_path):
    assert ranked(tmp_path, "What pet does Ana have?", limit=1) == ["turns/d1-4"]


def test_the_first_five_are_the_same_cards_whoever_is_named(tmp_path, monkeypatch):
    named = ranked(tmp_path / "a", "What pet does Ana have?")
    monkeypatch.setattr(hybrid, "SPEAKERS", False)
    plain = ranked(tmp_path / "b", "What pet does Ana have?")
    assert plain[0] == "turns/d1-3" and set(named) == set(plain), (named, plain)


def test_a_question_naming_no_speaker_or_both_keeps_the_fused_order(tmp_path):
    assert ranked(tmp_path / "a", "what pet do you have now")[0] == "turns/d1-3"
    assert ranked(tmp_path / "b", "What pet does Ana have, Ben?")[0] == "turns/d1-3"


def test_a_card_holding_the_only_match_of_a_word_stays_first(tmp_path):
    # `oscarhouse` is in one card only: the pin of a unique word wins over a speaker.
    cards = TURNS | {"turns/d1-3": TURNS["turns/d1-3"] + " Is it the oscarhouse one?"}
    assert ranked(tmp_path, "Ana pet oscarhouse", cards)[0] == "turns/d1-3"


def test_who_speaks_in_a_card_of_one_turn() -> None:
    assert speakers.speaker("On 8 May, 2023, Ana: hello there") == "Ana"
    assert speakers.speaker("Mary Ann: hello") == "Mary Ann"
    assert speakers.speaker("On 1:56 pm on 8 May, 2023, Caroline: I went") == "Caroline"
    assert speakers.speaker("Ana: hello\n\nBen: hi") is None  # a whole dialog, not one turn
    assert speakers.speaker("Conversation of 8 May, 2023.") is None
    assert speakers.speaker("A plain note, nothing said by anyone. " * 3) is None
    assert speakers.speaker("") is None


def test_a_word_of_the_query_is_no_speaker_it_names(tmp_path, monkeypatch):
    """A FAQ kept a card a line (`Q: ...`, `A: ...`): "a" in the question is an article,
    not the speaker `A`, and `note` is not the `Note:` card's speaker either."""
    faq = {"faq/q1": "Q: How do I rotate a key for the deploy bot?",
           "faq/a1": "A: Run the rotate script, then restart.",
           "faq/n1": "Note: rotate keys on Mondays."}
    for query in ("how do I rotate a key for the deploy bot", "rotate key note deploy bot"):
        on = ranked(tmp_path / "on" / query[:3], query, faq)
        monkeypatch.setattr(hybrid, "SPEAKERS", False)
        off = ranked(tmp_path / "off" / query[:3], query, faq)
        monkeypatch.setattr(hybrid, "SPEAKERS", True)
        assert on == off, (query, on, off)
