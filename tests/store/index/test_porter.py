"""store/index/porter.py's stem() gives FTS5's own porter stems: for every ASCII word of the real
corpus, for random words built from what Porter's rules look at, and for hand-picked edges.
Each batch of words goes through FTS5 in one row; its vocab table gives the stems in order."""
from __future__ import annotations

import re
import sqlite3

import pytest
from corpora import need_corpus
from hypothesis import given, settings
from hypothesis import strategies as st

from cardmem.store.index.schema import TOKENIZE
from cardmem.store.index.porter import _STEP2, _STEP3, _STEP4, stem

ASCII_WORD = re.compile(r"[a-z0-9]+")


@pytest.fixture(scope="module")
def conn() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.executescript(f"""
        CREATE VIRTUAL TABLE raw USING fts5(x, tokenize='unicode61 remove_diacritics 2');
        CREATE VIRTUAL TABLE raw_v USING fts5vocab(raw, 'instance');
        CREATE VIRTUAL TABLE stems USING fts5(x, tokenize='{TOKENIZE}');
        CREATE VIRTUAL TABLE stems_v USING fts5vocab(stems, 'instance');""")
    return db


def fts5_stems(db: sqlite3.Connection, words: list[str]) -> list[str]:
    """FTS5's stem of each word, in order (each word checked to be one unicode61 token)."""
    text = " ".join(words)
    for table in ("raw", "stems"):
        db.execute(f"DELETE FROM {table}")
        db.execute(f"INSERT INTO {table}(rowid, x) VALUES (1, ?)", (text,))
    raw = [t for (t,) in db.execute("SELECT term FROM raw_v ORDER BY offset")]
    assert raw == words, "a test word is not a single unicode61 token"
    return [t for (t,) in db.execute("SELECT term FROM stems_v ORDER BY offset")]


def assert_same_stems(db: sqlite3.Connection, words: list[str]) -> None:
    words = [w for w in words if w]  # FTS5 yields no empty token; stem("") is checked below
    wrong = [(w, want, stem(w)) for w, want in zip(words, fts5_stems(db, words))
             if stem(w) != want]
    assert not wrong, f"{len(wrong)} of {len(words)} differ (word, fts5, ours): {wrong[:20]}"


@pytest.mark.corpus
def test_every_ascii_word_of_the_corpus(conn: sqlite3.Connection) -> None:
    texts = [p.read_text(encoding="utf-8", errors="replace")
             for p in sorted(need_corpus().glob("*.md"))]
    # ASCII runs of the raw text, and the ASCII tokens unicode61 makes of it ("café" -> "cafe").
    words = {w for t in texts for w in ASCII_WORD.findall(t.lower())}
    conn.execute("DELETE FROM raw")
    conn.executemany("INSERT INTO raw(x) VALUES (?)", [(t,) for t in texts])
    words |= {t for (t,) in conn.execute("SELECT DISTINCT term FROM raw_v")
              if ASCII_WORD.fullmatch(t)}
    assert len(words) > 5000
    assert_same_stems(conn, sorted(words))


# Pieces Porter's rules look at: vowels, y, doubles, digits, every suffix it knows.
SUFFIXES = sorted({s for s, _ in _STEP2 + _STEP3 + _STEP4}
                  | {"s", "es", "ies", "sses", "ss", "ed", "eed", "ing", "at", "bl", "iz",
                     "e", "y", "ll", "ion", "sion", "tion"})
LETTERS = "aeiouy" + "bcdlnrstwxz" + "019"
PIECES = list(LETTERS) + ["ll", "ss", "tt", "zz", "yy", "bb", "11", "cvc"] + SUFFIXES
random_words = st.one_of(
    st.text(alphabet=LETTERS, max_size=80),
    st.lists(st.sampled_from(PIECES), max_size=12).map(lambda ps: "".join(ps)[:80]),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(random_words, min_size=1, max_size=30))
def test_random_words(conn: sqlite3.Connection, words: list[str]) -> None:
    assert_same_stems(conn, words)


EDGES = """
caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated troubled
sized hopping tanned falling hissing fizzed failing filing happy sky relational conditional
rational valenci hesitanci digitizer conformabli radicalli differentli vileli analogousli
vietnamization predication operator feudalism decisiveness hopefulness callousness formaliti
sensitiviti sensibiliti triplicate formative formalize electriciti electrical hopeful goodness
revival allowance inference airliner gyroscopic adjustable defensible irritant replacement
adjustment dependent adoption homologou communism activate angulariti homologous effective
bowdlerize probate rate cease controll roll generalization oscillators analogi
ies sss ss eds ied eed aing eing ing ed ated bled bing abed ational tional ement ment alli
ion sion tion ations ness ful fully ally ll all tell
y yy yyy say sayy toy toyed yying crying syzygy ayyy yes by byed bying spying played cry
v2 abc123def a11ing 1234 123ing x86s 2nd 3ds 00es i18n k8s utf8 x11 aa11ed
a ab abc abcd e ee eee at bl iz ats bls izs hop hope hoping hoped hopes
""".split()
LONG = ["e" * 63 + "s", "e" * 64 + "s", "a" * 61 + "ing", "a" * 62 + "ing",
        "internationalization" * 3, ("abcdefghij" * 7), "conditional" * 5 + "ness",
        "y" * 64, "y" * 65, "s" * 70, "ing" * 26]


def test_hand_picked_edges(conn: sqlite3.Connection) -> None:
    # Every suffix after stems of m = 0, 1, 2 and after y / digits, as well as the list.
    stems_before = ["", "b", "a", "ab", "tab", "batab", "y", "by", "oy", "s", "st", "trees",
                    "1", "a1", "t1t", "hop", "fail", "sens", "adopt"]
    built = [s + suf for s in stems_before for suf in SUFFIXES]
    assert_same_stems(conn, EDGES + LONG + built)
    assert stem("") == "" and stem("a") == "a" and stem("is") == "is"
    assert len(stem("a" * 70)) == 70 and stem("deploying") == "deploi"
