"""search.py's shortcuts (issue 3 speed work) give what the plain way gives: tokens from the
per-process cache, term hits found over joined texts without a regex per stem, ranking by
bm25() rather than FTS5's rank, candidate texts from FTS5's content table, and the CAP bound
skipped only when the `terms` counts prove it unneeded, however stale they are."""
from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import cardmem.store.search.candidates as C
import cardmem.store.search.search as S
import cardmem.store.search.snippets as N
import cardmem.store.search.terms as T
from cardmem.store.index.schema import TOKENIZE
from cardmem.store.index.db import Index
from cardmem.store.search.query import search_index


def write(root: Path, cid: str, title: str, body: str) -> None:
    path = root / f"{cid}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\ntitle: {title}\n---\n{body}\n", encoding="utf-8")


def ids(res) -> list[str]:
    return [r["id"] for r in res.results]


# --- tokens -----------------------------------------------------------------------------

def fts5_tokens(conn: sqlite3.Connection, text: str) -> list[tuple[str, str]]:
    """The plain way: the whole text through FTS5's two tokenizers, duplicates dropped."""
    conn.executescript(f"""
        CREATE VIRTUAL TABLE IF NOT EXISTS temp.t_raw USING fts5(x, tokenize='unicode61 remove_diacritics 2');
        CREATE VIRTUAL TABLE IF NOT EXISTS temp.t_raw_v USING fts5vocab(temp, t_raw, 'instance');
        CREATE VIRTUAL TABLE IF NOT EXISTS temp.t_stem USING fts5(x, tokenize='{TOKENIZE}');
        CREATE VIRTUAL TABLE IF NOT EXISTS temp.t_stem_v USING fts5vocab(temp, t_stem, 'instance');
        DELETE FROM temp.t_raw; DELETE FROM temp.t_stem;""")
    conn.execute("INSERT INTO temp.t_raw(rowid, x) VALUES (1, ?)", (text,))
    conn.execute("INSERT INTO temp.t_stem(rowid, x) VALUES (1, ?)", (text,))
    raw = conn.execute("SELECT term FROM temp.t_raw_v ORDER BY offset").fetchall()
    stem = conn.execute("SELECT term FROM temp.t_stem_v ORDER BY offset").fetchall()
    out, seen = [], set()
    for (w,), (s,) in zip(raw, stem):
        if s not in seen:
            seen.add(s)
            out.append((w, s))
    return out


TRICKY = "aZ09 _-'\".:\t\n\x1c\x85\xa0\u2028\u200béÉİıΣσςK\u212aﬁＡ日本😀ß"


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet=TRICKY, max_size=12), max_size=8))
def test_cached_tokens_are_fts5s_tokens(parts: list[str]) -> None:
    conn = sqlite3.connect(":memory:")
    text = " ".join(parts)
    want = fts5_tokens(conn, text)
    assert T.tokens(conn, text) == want
    assert T.tokens(conn, text) == want  # again, now from the cache


def test_tokens_of_many_and_long_chunks(tmp_path) -> None:
    conn = sqlite3.connect(":memory:")
    for text in [" ".join(f"w{i}ord Deploying{i}" for i in range(40)), "x" * 5000,
                 " ".join(["deploy"] * 300), "Café naïve résumé " * 3, ""]:
        assert T.tokens(conn, text) == fts5_tokens(conn, text)


# --- term hits --------------------------------------------------------------------------

def term_rx(stem: str, prefix: bool) -> str:
    """The plain way to match a term: a regex of the stem and the endings porter folds
    into it (a final "i" also as "y"), up to 5 more letters or any for a prefix."""
    word = r"[^\W_]"
    base = re.escape(stem)
    if len(stem) > 2 and stem.endswith("i"):
        base = re.escape(stem[:-1]) + "[iy]"
    tail = f"{word}*" if prefix else f"{word}{{0,5}}"
    return f"{base}{tail}(?!{word})"


def regex_hits(stems: list[tuple[str, bool]], low: str, cap: int) -> list[tuple[int, int, int]]:
    """The plain way to find a text's term hits: each term's regex, word starts only, the
    first `cap` per term, then the first `cap` of all in text order."""
    out = []
    for i, (stem, prefix) in enumerate(stems):
        n = 0
        for m in re.finditer(term_rx(stem, prefix), low):
            if m.start() and low[m.start() - 1].isalnum():
                continue  # inside a word, not at its start
            out.append((m.start(), m.end(), i))
            n += 1
            if n >= cap:
                break
    return sorted(out)[:cap]


STEMS = ["deploi", "de", "i", "aai", "x", "k", "fi", "σα", "cafe", "ß", "1"]
TEXT = "deploiyax DEPLOYé ÉéÀİıΣσςK\u212aﬁ×·—_-'01 \n\t日😀"


def check_matches(stem: str, prefix: bool, low: str) -> None:
    want = [(m.start(), m.end()) for m in re.finditer(term_rx(stem, prefix), low)]
    assert N._matches(low, stem, prefix) == want


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(STEMS), st.booleans(), st.text(alphabet=TEXT, max_size=40))
def test_matches_are_the_term_regex_matches(stem: str, prefix: bool, low: str) -> None:
    check_matches(stem, prefix, low)


def test_matches_at_the_edges_of_an_ending() -> None:
    # random text seldom puts a stem before exactly 5 or 6 more letters, or "y" for "i"
    for tail in ["", "a", "ing", "abcd", "abcde", "abcdef", "abcdefg", "_x", "é", "1"]:
        for stem, word in [("de", "de"), ("deploi", "deploy"), ("deploi", "deploi")]:
            for prefix in (False, True):
                check_matches(stem, prefix, f"{word}{tail} x{word}{tail} {word}")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(STEMS), st.booleans()), min_size=1, max_size=3),
       st.lists(st.text(alphabet=TEXT, max_size=30), min_size=1, max_size=6),
       st.sampled_from([1, 2, 40]))
def test_hits_over_joined_texts_are_each_texts_hits(stems, texts, cap) -> None:
    p = T.Plan()
    for stem, prefix in stems:
        p.add('"x"', stem, prefix)
    terms = N.Terms(p)
    want = [regex_hits(stems, N.Terms.prepare(t), cap) for t in texts]
    assert terms.hits_each(texts, cap) == want


# --- ranking and candidate texts --------------------------------------------------------

def test_bm25_order_is_fts5_rank_order_ties_included(example_store) -> None:
    for i in range(6):  # identical cards: equal scores, so the tie order shows
        write(example_store.root, f"reference/twin-{i}", "Twin gizmo", "The same gizmo text.")
    with Index(example_store) as index:
        index.refresh()
        c = index.conn
        for table, expr in [("fts", '"gizmo"'), ("fts", '"deploy" OR "gizmo" OR "tests"'),
                            ("names", '"twin"'), ("fts", '"pytest" AND "fixtures"')]:
            want = [(r, -rank) for r, rank in c.execute(
                f"SELECT rowid, rank FROM {table} WHERE {table} MATCH ? ORDER BY rank LIMIT 8",
                (expr,))]
            assert want and C._ranked(c, table, expr, 8, "", [], None) == want
            assert C._ranked(c, table, expr, 8, "", [], C.PROBE) == want  # under CAP: no bound


def test_a_field_names_every_term_it_holds_however_often_one_repeats(example_store) -> None:
    # Each word's fields come from all its hits: once the first hits of a field were
    # kept (as many as the query has words), "deploy" twice hid "production" after it.
    path = example_store.root / "reference" / "release.md"
    path.write_text("---\ntitle: Release notes\ndescription: Deploy, deploy again, then"
                    " production.\n---\nUnrelated steps.\n", encoding="utf-8")
    with Index(example_store) as index:
        index.refresh()
        top = S.run(index, "deploy production").results
        mine = next(r for r in top if r["id"] == "reference/release")
        assert mine["matched"] == ["description"]


def test_candidate_texts_are_the_fts_columns(idx) -> None:
    rows = [n for (n,) in idx.conn.execute("SELECT n FROM cards")]
    texts = N._texts(idx, rows)
    assert set(texts) == set(rows)
    for n, row in texts.items():
        fts = idx.conn.execute("SELECT title, aliases, tags, description, extra,"
                               f" substr(body, 1, {N.SNIPPET_CHARS}) FROM fts WHERE rowid = ?",
                               (n,)).fetchone()
        assert tuple(row[7:]) == fts


# --- the CAP bound and the terms counts -------------------------------------------------

def search_without_counts(index: Index, query: str, monkeypatch) -> list[str]:
    with monkeypatch.context() as m:
        m.setattr(T, "_df_bounds", lambda idx, stems: {})
        return ids(S.run(index, query))


def test_stale_terms_counts_never_skip_a_needed_cap_bound(example_store, monkeypatch) -> None:
    monkeypatch.setattr(C, "CAP", 3)  # a small cap, so a handful of cards passes it
    monkeypatch.setattr(C, "CAP_ANY", 3)
    root = example_store.root
    for i in range(2):
        write(root, f"reference/quoll-{i}", f"Note {i}", "A quoll sighting.")
    with Index(example_store) as index:
        index.refresh()
        T.vocabulary(index, force=True)  # counts quoll in 2 cards: under the cap
        assert T._df_bounds(index, ["quoll"]) == {"quoll": (2, 2)}
        for i in range(2, 9):
            write(root, f"reference/quoll-{i}", f"Note {i}", "Another quoll sighting.")
        index.refresh()
        fewest, most = T._df_bounds(index, ["quoll"])["quoll"]
        assert fewest <= 9 <= most  # stale, yet a true bound
        p = T.plan(index, "quoll")
        assert C._bounds(p) == (C.PROBE, C.PROBE, C.PROBE)
        got = ids(S.run(index, "quoll"))
        assert got == search_without_counts(index, "quoll", monkeypatch)
        # the cap ranks only the newest CAP + 1 matches: the old notes are left out
        assert not {"reference/quoll-0", "reference/quoll-1"} & set(got)


def index_older_then_newer(index: Index, older: list[tuple[str, str, str]],
                           newer: list[tuple[str, str, str]]) -> None:
    """Write and index the older cards, then the newer ones: newer rowids, "newest"."""
    for cards in (older, newer):
        for cid, title, body in cards:
            write(index.root, cid, title, body)
        index.refresh()


def test_the_any_tier_ranks_only_its_own_newest_matches(example_store, monkeypatch) -> None:
    monkeypatch.setattr(C, "CAP", 20)
    monkeypatch.setattr(C, "CAP_ANY", 2)  # the newest 2 of the cards holding either word
    with Index(example_store) as index:
        # the old ones are the best matches: the word three times
        index_older_then_newer(
            index, [("reference/both", "Marsupials", "A quokka met a wombat.")]
            + [(f"reference/old-{i}", f"Old {i}", "Wombat, wombat, wombat.") for i in range(3)],
            [(f"reference/new-{i}", f"New {i}", "A wombat.") for i in range(2)])
        got = ids(S.run(index, "quokka wombat"))
        assert got[0] == "reference/both"  # the all tier: every word, under its own cap
        assert set(got[1:]) == {"reference/new-0", "reference/new-1"}
        monkeypatch.setattr(C, "CAP_ANY", 20)
        assert {f"reference/old-{i}" for i in range(3)} <= set(ids(S.run(index, "quokka wombat")))


def test_the_any_tier_ranks_every_card_of_a_rare_word_then_fills_up(example_store,
                                                                     monkeypatch) -> None:
    monkeypatch.setattr(C, "CAP_ANY", 3)
    with Index(example_store) as index:
        # the quolls are old: the newest 3 cards holding either word would miss them
        index_older_then_newer(
            index, [(f"reference/quoll-{i}", f"Sighting {i}", "A quoll.") for i in range(2)],
            [(f"reference/wombat-{i}", f"Burrow {i}", "A wombat.") for i in range(6)])
        T.vocabulary(index, force=True)
        p = T.plan(index, "quoll wombat")
        assert C._any_terms(p) == (['"quoll"'], True)
        got = ids(S.run(index, "quoll wombat"))
        assert got[:2] == ["reference/quoll-0", "reference/quoll-1"]
        # fewer than a page of results: the newest cards holding any word fill it
        assert set(got[2:]) == {"reference/wombat-3", "reference/wombat-4", "reference/wombat-5"}


def test_rare_words_skip_the_cap_probe_and_find_the_same(idx, monkeypatch) -> None:
    T.vocabulary(idx, force=True)
    for query in ["pytest fixtures", "stripe webhooks", "deploy", "pytets fixtrues", "deplo"]:
        p = T.plan(idx, query)
        if query == "pytest fixtures":
            assert C._bounds(p) == (None, None, None)  # no probe statement at all
        assert ids(S.run(idx, query)) == search_without_counts(idx, query, monkeypatch)


def test_words_new_since_the_counts_are_still_found(example_store) -> None:
    with Index(example_store) as index:
        index.refresh()
        T.vocabulary(index, force=True)
        write(example_store.root, "reference/animals", "Animals", "The bilby burrow.")
        index.refresh()
        assert T._df_bounds(index, ["bilbi"])["bilbi"][0] <= 0  # not known to exist
        assert ids(search_index(index, "bilby")) == ["reference/animals"]


def test_the_vocabulary_cache_follows_a_rebuilt_terms_table(example_store) -> None:
    with Index(example_store) as index:
        index.refresh()
        assert T.correct(index, "pytheom", "pytheom") is None  # builds the table, caches
        write(example_store.root, "reference/pets", "Pets", "A pytheon of petunias.")
        index.refresh()
        assert T.correct(index, "pytheom", "pytheom") is None  # the table has not changed
        T.vocabulary(index, force=True)
        assert T.correct(index, "pytheom", "pytheom") == "pytheon"  # same process, new table


# --- the question's words ---------------------------------------------------------------

def test_a_questions_function_words_do_not_decide_which_card_answers(tmp_path, monkeypatch
                                                                      ) -> None:
    """"What has Melanie painted?" asks about Melanie and painting: a card that also holds
    "has" is not a better answer for it (issue 27)."""
    from cardmem.store.store import init

    monkeypatch.setenv("CARDMEM_SEMANTIC", "off")
    root = tmp_path / "store"
    write(root, "turns/d1-12", "Melanie, 8 May 2023", "Melanie: I painted that lake sunrise.")
    write(root, "turns/d2-3", "Caroline, 9 May 2023",
          "Caroline: my sister has a new job at the gallery, where Melanie once had an"
          " exhibition; nothing there was painted by her, and she has little time now that"
          " the shop has moved across town and has longer opening hours.")
    for i in range(8):
        write(root, f"turns/d3-{i}", "Caroline, 10 May 2023", f"Caroline: note {i} of the day.")
    store = init(root)[0]
    with Index(store) as idx:
        idx.refresh()
        for q in ("What has Melanie painted?", "what have Melanie painted"):
            assert ids(idx.search(q, limit=3))[0] == "turns/d1-12", q
