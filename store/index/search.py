"""Search over the lexical index: safe queries, typo correction, ranking, confidence.

User text never reaches FTS5 syntax: the query is tokenized as the index is (ASCII words
by porter.py, FTS5's porter in Python; other text by FTS5's own tokenizers, in scratch
tables per connection; words seen before are cached per process), and every term goes
into the MATCH expression as a double-quoted string, so quotes, hyphens, colons,
parentheses, AND/OR/NOT/NEAR, `*`, `^`, non-Latin text and emoji are all just text. A
term missing from the index vocabulary is corrected against it (rapidfuzz, loaded only
then) before the query runs.
"""
from __future__ import annotations

import re
import sqlite3
import unicodedata
from bisect import bisect_right
TYPE_CHECKING = False  # typing costs a search ~5 ms to import; annotations only
if TYPE_CHECKING:
    from typing import Any, Iterable

    from .db import Index  # annotations only: db imports search (Index.search)

from .schema import COLUMNS, TOKENIZE, WEIGHTS
from .confidence import CONFIDENCE, coverage, lexical_label
from ..cards.status import INACTIVE
from . import porter
from ..cards.paths import project_key

STOPWORDS = frozenset("""a an and are as at be but by do does did for from how i if in into is
it its me my of on or our so that the their them then there these this to was we were what
when where which who whom why will with you your can should would could""".split())
NAME_SET = {"title", "aliases"}
SNIPPET_TOKENS = 12
SNIPPET_CHARS = 4000
FUZZY_CUTOFF = 85  # rapidfuzz ratio of the whole query to a title or alias


class SearchResult:
    """What a search found: ranked results, corrections applied, and whether any is confident."""

    def __init__(self, query: str, results: list[dict[str, Any]],
                 corrected: dict[str, str], unknown: list[str],
                 empty_filter: str | None = None) -> None:
        self.query = query
        self.results = results
        self.corrected = corrected  # query term -> the vocabulary word searched instead
        self.unknown = unknown  # query terms neither found nor correctable
        self.no_confident_results = not any(r["confidence"] != "low" for r in results)
        # "type feedback in project acme-api" when no card at all passes the filters: the
        # query was never the problem
        self.empty_filter = empty_filter
        self.semantic: dict[str, Any] | None = None  # store/index/hybrid.py: model on or off, why
        self.note: str | None = None  # a line for stderr (the semantic fallback, once)

    def as_dict(self) -> dict[str, Any]:
        """The `cardmem search --json` document (DESIGN §10), plus corrections."""
        out = {"query": self.query, "results": self.results,
               "no_confident_results": self.no_confident_results,
               "corrected": self.corrected, "unknown_terms": self.unknown,
               "filter_matches_nothing": self.empty_filter is not None}
        if self.semantic is not None:
            out["semantic"] = self.semantic
        return out

    def __repr__(self) -> str:
        return f"SearchResult({self.query!r}, {len(self.results)} results)"


# --- the query's terms ------------------------------------------------------------------

_READY: dict[int, sqlite3.Connection] = {}  # connections that have them (held: ids stay unique)
# Tokens of each whitespace-separated chunk of a query, per process. unicode61 never joins
# characters across whitespace and porter stems each token alone, so a text's tokens are
# its chunks' tokens in order; they depend on the tokenizer only, never on the index, so
# nothing here goes stale. A long-lived process (MCP server) asks about the same words
# again and again: a repeated non-ASCII chunk costs no statement, an ASCII one no stemming.
_TOKENS: dict[str, tuple[tuple[str, str], ...]] = {}
_TOKENS_MAX, _CHUNK_MAX = 4096, 64  # entries kept; longer chunks are tokenized, not kept
# Non-ASCII chunks new to the cache are tokenized together, one per column of a scratch row
# (the vocab tables say which column a token came from), in contentless tables emptied
# with 'delete-all': fewer statements, and cheaper ones, than a row per text and DELETE.
_COLS = 4


def _scratch(conn: sqlite3.Connection) -> None:
    """Per-connection temp FTS tables whose vocab tables give FTS5's own tokens of a text."""
    if _READY.get(id(conn)) is conn:
        return
    cols = ", ".join(f"x{i}" for i in range(_COLS))
    conn.executescript(f"""
        CREATE VIRTUAL TABLE IF NOT EXISTS temp.q_words
            USING fts5({cols}, content='', tokenize='unicode61 remove_diacritics 2');
        CREATE VIRTUAL TABLE IF NOT EXISTS temp.q_words_v USING fts5vocab(temp, q_words, 'instance');
        CREATE VIRTUAL TABLE IF NOT EXISTS temp.q_stems USING fts5({cols}, content='', tokenize='{TOKENIZE}');
        CREATE VIRTUAL TABLE IF NOT EXISTS temp.q_stems_v USING fts5vocab(temp, q_stems, 'instance');
    """)
    if len(_READY) > 64:
        _READY.clear()
    _READY[id(conn)] = conn


_INSERT = "INSERT INTO temp.{t}(rowid, " + ", ".join(f"x{i}" for i in range(_COLS)) \
    + ") VALUES (?" + ", ?" * _COLS + ")"
_VOCAB = ("SELECT 0, doc, col, offset, term FROM temp.q_words_v"
          " UNION ALL SELECT 1, doc, col, offset, term FROM temp.q_stems_v")


_ASCII_WORD = re.compile(r"[a-z0-9]+")  # unicode61's tokens of lowercased ASCII text


def _tokenize(conn: sqlite3.Connection, chunks: list[str]) -> list[list[tuple[str, str]]]:
    """(word, stem) of each token of each chunk, in order. ASCII chunks need no SQL:
    unicode61 keeps ASCII letters and digits, lowercased, and splits on all else, and
    porter.stem is FTS5's porter. Other chunks go through FTS5's own tokenizers."""
    out: list[list[tuple[str, str]]] = []
    other = [chunk for chunk in chunks if not chunk.isascii()]
    theirs = iter(_fts5_tokens(conn, other) if other else ())
    for chunk in chunks:
        if chunk.isascii():
            words = _ASCII_WORD.findall(chunk.lower())
            out.append([(w, porter.stem(w)) for w in words])
        else:
            out.append(next(theirs))
    return out


def _fts5_tokens(conn: sqlite3.Connection, chunks: list[str]) -> list[list[tuple[str, str]]]:
    """(word, stem) of each token of each chunk, in order, from FTS5's tokenizers."""
    _scratch(conn)
    rows = [(n // _COLS + 1, *chunks[n:n + _COLS], *[None] * (_COLS - len(chunks[n:n + _COLS])))
            for n in range(0, len(chunks), _COLS)]
    for t in ("q_words", "q_stems"):
        conn.execute(f"INSERT INTO temp.{t}({t}) VALUES ('delete-all')")
        conn.executemany(_INSERT.format(t=t), rows)
    raw: list[dict[int, str]] = [{} for _ in chunks]
    stems: list[dict[int, str]] = [{} for _ in chunks]
    for which, doc, col, offset, term in conn.execute(_VOCAB):
        j = (doc - 1) * _COLS + int(col[1:])
        (stems if which else raw)[j][offset] = term
    return [[(r[o], st[o]) for o in sorted(r)] for r, st in zip(raw, stems)]


def tokens(conn: sqlite3.Connection, text: str) -> list[tuple[str, str]]:
    """(word, stem) of each token FTS5 sees in text, in order, duplicates dropped."""
    chunks = text.split()
    known: dict[str, tuple[tuple[str, str], ...]] = {}
    missing = []
    for chunk in dict.fromkeys(chunks):
        hit = _TOKENS.get(chunk)
        if hit is None:
            missing.append(chunk)
        else:
            known[chunk] = hit
    if missing:
        if len(_TOKENS) > _TOKENS_MAX:
            _TOKENS.clear()
        for chunk, toks in zip(missing, _tokenize(conn, missing)):
            known[chunk] = tuple(toks)
            if len(chunk) <= _CHUNK_MAX:
                _TOKENS[chunk] = known[chunk]
    out, seen = [], set()
    for chunk in chunks:
        for w, s in known[chunk]:
            if s not in seen:
                seen.add(s)
                out.append((w, s))
    return out


def quote(word: str, prefix: bool = False) -> str:
    """One FTS5 string token: double quotes doubled, optional prefix star outside them."""
    return '"' + word.replace('"', '""') + '"' + ("*" if prefix else "")


def _exists(conn: sqlite3.Connection, expr: str) -> bool:
    return conn.execute("SELECT 1 FROM fts WHERE fts MATCH ? LIMIT 1", (expr,)).fetchone() is not None


def _exist_all(conn: sqlite3.Connection, exprs: list[str]) -> list[bool]:
    """_exists of each expression, in one statement per 50."""
    out: list[bool] = []
    for at in range(0, len(exprs), 50):
        part = exprs[at:at + 50]
        sql = "SELECT " + ", ".join(f"EXISTS(SELECT 1 FROM fts WHERE fts MATCH ?{i})"
                                    for i in range(1, len(part) + 1))
        out += [bool(x) for x in conn.execute(sql, part).fetchone()]
    return out


def _df_bounds(idx: Index, stems: list[str]) -> dict[str, tuple[int, int]]:
    """stem -> (fewest, most) cards it can be in now, from the `terms` table and the count
    of cards changed since it was built (each changed card moves a stem's count by at
    most one); {} when the table was never built. Costs no FTS5 query: it tells which
    words exist and which are rare enough to rank without the CAP bound."""
    if not stems:
        return {}
    # One statement: the meta keys hold "_", which no token does, so the two never mix.
    df: dict[str, int] = {}
    meta: dict[str, str] = {}
    for at in range(0, len(stems), 500):
        part = stems[at:at + 500]
        rows = idx.conn.execute(
            "SELECT key, value FROM meta WHERE key IN ('terms_generation', 'changed_since_terms')"
            f" UNION ALL SELECT term, df FROM terms WHERE term IN ({','.join('?' * len(part))})",
            part).fetchall()
        for key, value in rows:
            if key in ("terms_generation", "changed_since_terms"):
                meta[key] = value
            else:
                df[key] = value
    if "terms_generation" not in meta:
        return {}
    changed = int(meta.get("changed_since_terms") or 0)
    return {s: (df.get(s, 0) - changed, df.get(s, 0) + changed) for s in stems}


def max_edits(word: str) -> int:
    """Typos tolerated in a word of this length: none in short words, where one edit
    turns most nonsense into some real word."""
    return 0 if len(word) <= 4 else 1 if len(word) <= 7 else 2


def vocabulary(idx: Index, force: bool = False) -> str | None:
    """Materialise fts_vocab (every indexed stem, with its document count) into `terms`.

    Reading fts5vocab walks every doclist: ~0.2 s at 10k cards, seconds at 100k, so it
    is not done per query. `cardmem index` builds it; a search rebuilds it only when it
    is missing or more than a few percent of the cards changed since (a stale table
    still corrects every word it knows; words new since then wait for the next build).
    Returns the generation the table was built at.
    """
    c = idx.conn
    meta = dict(c.execute("SELECT key, value FROM meta WHERE key IN"
                          " ('generation', 'terms_generation', 'changed_since_terms')"))
    gen = str(int(meta.get("generation") or 0))  # as idx.generation(), in the same read
    if meta.get("terms_generation") == gen:
        return gen
    if not force and "terms_generation" in meta:
        cards = c.execute("SELECT count(*) FROM cards").fetchone()[0]
        if int(meta.get("changed_since_terms", 0)) <= max(50, cards // 50):
            return meta["terms_generation"]
    c.execute("BEGIN IMMEDIATE")
    try:
        c.execute("DELETE FROM terms")
        c.execute("INSERT INTO terms SELECT term, doc FROM fts_vocab")
        c.execute("INSERT OR REPLACE INTO meta VALUES('terms_generation', ?)", (gen,))
        c.execute("INSERT OR REPLACE INTO meta VALUES('changed_since_terms', '0')")
        c.execute("COMMIT")
    except BaseException:
        c.execute("ROLLBACK")
        raise
    return gen


def _vocab_near(idx: Index, built: str | None, first: str, lo: int, hi: int
                ) -> tuple[list[str], list[int]]:
    """The `terms` rows starting with `first`, lo to hi characters long (and their
    document counts). A letter's rows are read once per process for each build of the
    table (keyed by its generation and the connection, so a rebuilt or replaced index
    file is read again), by length: a long-lived process corrects many words, most of
    them starting with a letter it has seen."""
    cache = getattr(idx, "_terms_cache", None)
    if cache is None or cache[0] is not idx.conn or cache[1] != built or len(cache[2]) > 512:
        cache = (idx.conn, built, {})
        idx._terms_cache = cache  # type: ignore[attr-defined]
    by_len: dict[int, tuple[list[str], list[int]]] | None = cache[2].get(first)
    if by_len is None:
        by_len = cache[2][first] = {}
        for term, df in idx.conn.execute("SELECT term, df FROM terms WHERE term >= ? AND term < ?",
                                         (first, first + "\U0010ffff")):
            got = by_len.get(len(term))
            if got is None:
                got = by_len[len(term)] = ([], [])
            got[0].append(term)
            got[1].append(df)
    terms: list[str] = []
    dfs: list[int] = []
    for n in range(lo, hi + 1):
        if n in by_len:
            terms += by_len[n][0]
            dfs += by_len[n][1]
    return terms, dfs


def correct(idx: Index, word: str, stem: str) -> str | None:
    """The vocabulary stem nearest to an unknown word's stem, within its edit budget."""
    budget = max_edits(word)
    if budget == 0 or not stem.isalpha():
        return None
    from rapidfuzz import process  # lazy: only a query with an unknown term pays
    from rapidfuzz.distance import OSA

    built = vocabulary(idx)
    # Typos rarely hit both of the first two letters: look where either is right.
    terms: list[str] = []
    dfs: list[int] = []
    for first in {stem[0], stem[1]}:
        near = _vocab_near(idx, built, first, len(stem) - budget, len(stem) + budget)
        terms += near[0]
        dfs += near[1]
    cands = [(d, -dfs[j], term) for term, d, j in process.extract(
        stem, terms, scorer=OSA.distance, score_cutoff=budget, limit=None)]
    for _, _, term in sorted(cands):
        if _exists(idx.conn, quote(term)):  # a stem that FTS5 re-stems the same way
            return term
    return _transposed(idx, word)


def _transposed(idx: Index, word: str) -> str | None:
    """The stem of the word with two neighbouring letters swapped back, if the index has
    it. Stemming can put a transposition far off: "deplyo" stems to itself, two edits from
    deploy's "deploi"; "stirpe" to "stirp", two from "stripe". So the swaps of the word as
    typed are stemmed and looked up; the one in most cards wins."""
    swaps = sorted({word[:i] + word[i + 1] + word[i] + word[i + 2:]
                    for i in range(len(word) - 1) if word[i] != word[i + 1]})
    found = [w for w, there in zip(swaps, _exist_all(idx.conn, [quote(w) for w in swaps]))
             if there]
    stems = [s for w in found for _, s in tokens(idx.conn, w)[:1]]
    if not stems:
        return None
    bounds = _df_bounds(idx, stems)
    return max(stems, key=lambda s: (bounds.get(s, (0, 0))[1], s))


def _prefix_tries(word: str) -> list[str]:
    """The last word, still being typed, as FTS5 prefixes in the order they are tried:
    the whole word ("deplo" -> deploy, deployment), then up to two letters dropped, for
    a word typed past its stem ("deploym" -> "deploy"*)."""
    return [quote(word, prefix=True)] + [quote(word[:n], prefix=True)
                                         for n in range(len(word) - 1, max(4, len(word) - 3), -1)]


class Plan:
    """The query after analysis: FTS5 terms to search, and what was corrected."""

    def __init__(self) -> None:
        self.terms: list[str] = []  # quoted FTS5 strings, one per query term
        self.stems: list[tuple[str, bool]] = []  # (stem, is_prefix) FTS5 matches per term
        self.corrected: dict[str, str] = {}
        self.unknown: list[str] = []
        # per term: at most how many cards it matches, where _df_bounds tells
        self.most: list[int | None] = []

    def add(self, expr: str, stem: str, prefix: bool = False, most: int | None = None) -> None:
        self.terms.append(expr)
        self.stems.append((stem, prefix))
        self.most.append(most)


def plan(idx: Index, query: str) -> Plan:
    p = Plan()
    toks = tokens(idx.conn, query)
    content = [t for t in toks if t[0] not in STOPWORDS]
    toks = content or toks
    typing = not query.rstrip().endswith(('"', " ")) and query == query.rstrip()
    bounds = _df_bounds(idx, [stem for _, stem in toks])
    unsure = [quote(w) for w, s in toks if bounds.get(s, (0, 0))[0] <= 0]
    # The last word may be still being typed: its prefixes are asked in the same statement.
    last = toks[-1][0] if typing and toks and len(toks[-1][0]) >= 3 else None
    tries = _prefix_tries(last) if last is not None and quote(last) in unsure else []
    there = dict(zip(unsure + tries, _exist_all(idx.conn, unsure + tries)))
    for i, (word, stem) in enumerate(toks):
        if there.get(quote(word), True):
            p.add(quote(word), stem, most=bounds[stem][1] if stem in bounds else None)
            continue
        if i == len(toks) - 1 and tries:
            if there[tries[0]]:
                p.add(tries[0], stem, prefix=True)
                continue
            cut = next((len(word) - j for j in range(1, len(tries)) if there[tries[j]]), None)
            if cut is not None:  # the stem FTS5 prefix-matches is the cut word's
                toks_cut = tokens(idx.conn, word[:cut])
                p.add(quote(word[:cut], prefix=True), toks_cut[0][1] if toks_cut else word[:cut],
                      prefix=True)
                continue
        fixed = correct(idx, word, stem)
        if fixed is not None:
            most = _df_bounds(idx, [fixed]).get(fixed, (0, None))[1]
            p.add(quote(fixed), fixed, most=most)
            p.corrected[word] = fixed
            continue
        p.unknown.append(word)
    return p


# --- candidates -------------------------------------------------------------------------

# At most this many matching rows are ranked by bm25 in one query: FTS5 ranks every match
# before sorting (about 1 µs a row), and a word in half of 100k cards would cost ~0.1 s.
# Past the cap the newest CAP matches are ranked. 300 rather than 500 took 12% off the
# median search at 10k cards; of 1,195 labelled bench queries as many found their card
# first (507), 715 in the top 10 instead of 718, and 50 changed their top result (one
# common word matching hundreds of cards: the best of the newer ones comes first).
CAP = 300
# The "any" tier (cards holding some of the words, not all) gets a smaller cap. It is the
# fallback below cards named by or holding every word, and its OR matches most of the
# store for common words: ranking 200 of them instead of 500 took a fifth off the median
# search (bench_search.py, 10k cards) and changed the top result of 4 of 798 labelled
# queries, none of them finding its source card less often. See also _any_terms().
CAP_ANY = 200


def _filters(card_type: str | None, project: str | None) -> tuple[str, list[Any]]:
    sql, args = "", []
    if card_type:
        sql += " AND c.type = ?"
        args.append(card_type)
    if project:
        sql += " AND c.project = ?"
        args.append(project_key(project))
    return sql, args


# bm25 with the weights the index configured as its `rank`, called directly: ORDER BY rank
# makes FTS5 prepare a sorting statement (and one to read the weights) on every query.
# Ties go to the lower rowid, as FTS5's own sort of rank leaves them.
_BM25 = {"fts": "bm25(fts, {})".format(", ".join(str(w) for w in WEIGHTS)),
         "names": f"bm25(names, {WEIGHTS[0]}, {WEIGHTS[1]})"}
_NO_ROWID = -(2 ** 63)
PROBE = -1  # _ranked's `bound` when the CAP bound is not known yet: found in the query


def _ranked(c: sqlite3.Connection, table: str, expr: str, k: int, where: str,
            args: list[Any], bound: int | None = PROBE, cap: int = CAP
            ) -> list[tuple[int, float]]:
    """(rowid, bm25 higher-is-better) of the best k matches of expr in table, among its
    newest cap matches: `bound` is the rowid they start after (None: no more than cap
    match; PROBE: not known, the statement finds it)."""
    params: list[Any] = [expr]
    cond = ""
    if bound == PROBE:
        cond = (f" AND {table}.rowid > coalesce((SELECT rowid FROM {table} WHERE {table}"
                f" MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET {int(cap)}), {_NO_ROWID})")
        params.append(expr)
    elif bound is not None:
        cond = f" AND {table}.rowid > {int(bound)}"
    join = " JOIN cards c ON c.n = {t}.rowid".format(t=table) if where else ""
    sql = (f"SELECT {table}.rowid, {_BM25[table]} AS score FROM {table}{join}"
           f" WHERE {table} MATCH ?{cond}{where} ORDER BY score, {table}.rowid LIMIT ?")
    return [(r, -rank) for r, rank in c.execute(sql, (*params, *args, k))]


def _any_terms(p: Plan) -> tuple[list[str], bool]:
    """The words the any tier ORs, and whether the counts show they match no more than
    CAP_ANY cards. All the words, unless together they may match more while the rarest
    of them cannot; then only those rarest: bm25 weighs a rare word most, so their cards
    are the ones it ranks first anyway, where the newest CAP_ANY cards holding any word
    would be mostly cards holding only a common one."""
    known = sorted((most, i) for i, most in enumerate(p.most) if most is not None)
    rare: list[int] = []
    total = 0
    for most, i in known:
        if total + most > CAP_ANY:
            break
        rare.append(i)
        total += most
    if not rare:
        return p.terms, False
    return [p.terms[i] for i in sorted(rare)], True


def _bounds(p: Plan) -> tuple[int | None, int | None, int | None]:
    """The cap bounds of the names, all and any tiers: None where the terms' counts show
    that no more than the tier's cap of cards can match (an AND of terms matches no more
    cards than its rarest term, an OR no more than all of them together, and `names`
    holds a subset of the text `fts` holds); PROBE where the ranked query must find the
    bound itself."""
    known = [n for n in p.most if n is not None]
    every: int | None = PROBE
    if known and min(known) <= CAP:
        every = None
    some: int | None = None if _any_terms(p)[1] else PROBE
    return every, every, some


class Candidate:
    __slots__ = ("n", "bm25", "rel", "tier")

    def __init__(self, n: int, bm25: float, tier: str) -> None:
        self.n, self.bm25, self.tier, self.rel = n, bm25, tier, 0.0


def _candidates(idx: Index, p: Plan, k: int, card_type: str | None,
                project: str | None) -> dict[int, Candidate]:
    """k cards: named by every term; then holding every term; then any term, each tier
    filling what the tiers above it left of the k.

    Each tier's bm25 is relative to its own best (rel), so tiers need not share a scale.
    """
    c = idx.conn
    where, args = _filters(card_type, project)
    found: dict[int, Candidate] = {}
    names, every, some = _bounds(p)
    tiers = [("names", "names", " AND ".join(p.terms), names, CAP),
             ("all", "fts", " AND ".join(p.terms), every, CAP)]
    if len(p.terms) > 1:
        rare, _ = _any_terms(p)
        tiers.append(("any", "fts", " OR ".join(rare), some, CAP_ANY))
        if len(rare) < len(p.terms):  # too few cards hold the rare words: any word at all
            tiers.append(("any", "fts", " OR ".join(p.terms), PROBE, CAP_ANY))
    for tier, table, expr, bound, cap in tiers:
        if len(found) >= k:
            break
        rows = _ranked(c, table, expr, k, where, args, bound, cap)
        best = max((b for _, b in rows), default=0.0)
        for n, b in rows:
            if len(found) >= k:
                break
            if n not in found:
                cand = found[n] = Candidate(n, b, tier)
                cand.rel = b / best if best > 0 else 1.0
    return found


# --- which words matched where, and snippets: on the few candidates only ---------------
#
# FTS5 said which cards match; which field each word sits in, and where to cut a snippet,
# is found in Python on the candidates' text, with a pattern per term that accepts the
# forms porter folds into its stem (deploy/deploys/deployed -> "deploi"), scanned once per
# term over all the candidates' texts joined. This is for labels and display only, never
# for what matches. (Re-running FTS5 per candidate, or loading candidates into a scratch
# FTS table, cost more than the search itself.)

_WORD = r"[^\W_]"


_RUN = re.compile(f"{_WORD}*")  # the rest of a word
_RUN6 = re.compile(f"{_WORD}{{0,6}}")  # enough of it to tell whether it is over 5 long


def _matches(low: str, stem: str, prefix: bool) -> list[tuple[int, int]]:
    """(start, end) of each place in lowercased text where the stem, with an ending porter
    folds into it, ends a word: the stem (a final "i" also as "y": deploy, deploying ->
    "deploi"), then up to 5 more letters, or any number for a prefix. After a match the
    scan goes on from its end, after a failed start from the next place; word starts are
    the caller's to check. What a regex per stem would find (tests/store/test_search.py
    holds that regex), without one: sre's compiler, in Python, cost more than the search
    itself for a query's new words."""
    lit, iy = (stem[:-1], True) if len(stem) > 2 and stem[-1] == "i" else (stem, False)
    out: list[tuple[int, int]] = []
    if not lit:
        return out
    size, pos, find = len(lit), 0, low.find
    run = _RUN.match if prefix else _RUN6.match
    while (s := find(lit, pos)) >= 0:
        e = s + size
        if iy:
            if low[e:e + 1] not in ("i", "y"):
                pos = s + 1
                continue
            e += 1
        end = run(low, e).end()  # type: ignore[union-attr]
        if not prefix and end - e > 5:
            pos = s + 1
            continue
        out.append((s, end))
        pos = end
    return out


def _fold_table() -> dict[int, str]:
    table = {}
    for cp in range(0xC0, 0x250):
        d = unicodedata.normalize("NFD", chr(cp))
        if len(d) > 1 and d[0].isascii():
            table[cp] = d[0]
    return table


_FOLD = _fold_table()
_ACCENTED = re.compile("[\u00c0-\u024f]")


class Terms:
    """Finds the query's terms in text (lowercased and diacritics-folded first)."""

    def __init__(self, p: Plan) -> None:
        self.stems = list(p.stems)
        self.ascii = all(stem.isascii() for stem, _ in p.stems)

    @staticmethod
    def prepare(text: str) -> str:
        if not text.isascii() and _ACCENTED.search(text):
            text = text.translate(_FOLD)  # as FTS5's remove_diacritics; offsets kept
        low = text.lower()
        return low if len(low) == len(text) else text  # offsets must stay put

    def hits_each(self, texts: list[str], cap: int | None = None
                  ) -> list[list[tuple[int, int, int]]]:
        """(start, end, term index) of the words of each text that are query terms, in
        text order, the first `cap` of them (no cap: all), text prepared as prepare()
        does. One scan per term over all the texts joined by newlines (offsets mapped
        back): a call costs more than scanning a card's short text, and a match never
        crosses a newline (terms are word characters) nor sees past one (a newline is
        neither a letter nor a digit)."""
        low = _prepare_joined(texts, self.ascii)
        starts, at = [], 0
        for text in texts:
            starts.append(at)
            at += len(text) + 1
        per: list[list[tuple[int, int, int]]] = [[] for _ in texts]
        for i, (stem, prefix) in enumerate(self.stems):
            for s, e in _matches(low, stem, prefix):
                if s and low[s - 1].isalnum():
                    continue  # inside a word, not at its start
                j = bisect_right(starts, s) - 1
                at = starts[j]
                per[j].append((s - at, e - at, i))
        for hits in per:
            if hits:
                hits.sort()
                if cap is not None:
                    del hits[cap:]
        return per


_LEADS = tuple(bytes([b]) for b in range(0xC3, 0xCA))  # UTF-8 lead bytes of U+00C0..U+024F


def _fold_one(m: re.Match[str]) -> str:
    return _FOLD.get(ord(m.group()), m.group())


def _prepare_joined(texts: list[str], ascii_terms: bool = False) -> str:
    """Terms.prepare of each text, joined by newlines, for offsets into the texts.

    Folding is per character, and so is lowercasing once folded (U+0130, the one letter
    whose lowercase is longer, folds to I; Greek final sigma, the one rule with context,
    stops at a newline as at the end of a text), so it is done on the whole. When every
    term is ASCII only ASCII letters need lowering (no other letter lowercases to ASCII
    but the Kelvin sign, and case changes no letter's class, so the words and word starts
    the term regexes see are the same): bytes.lower() does that at memcpy speed, where
    str.lower() and the accent scan together cost ~25 ns a character on non-ASCII text.
    """
    joined = "\n".join(texts)
    if joined.isascii():
        return joined.lower()
    raw: bytes | None = joined.encode("utf-8", "surrogatepass")
    if any(lead in raw for lead in _LEADS) and _ACCENTED.search(joined):
        joined = _ACCENTED.sub(_fold_one, joined)  # as str.translate(_FOLD), much faster
        raw = None
    if ascii_terms and "\u212a" not in joined:
        if raw is None:
            raw = joined.encode("utf-8", "surrogatepass")
        return raw.lower().decode("utf-8", "surrogatepass")
    low = joined.lower()
    if len(low) == len(joined):
        return low
    return "\n".join(Terms.prepare(t) for t in texts)


SHORT = [c for c in COLUMNS if c != "body"]
_AT = 7  # a _texts row: n, id, title, type, status, project, description, then SHORT, body
# A candidate's text, read once: its card row, its short FTS columns (for the fields its
# words are in) and the start of its body (for a snippet). They come from FTS5's content
# table (fts_content: id, then c0, c1... in COLUMNS order), the values the fts table
# returns, without FTS5 fetching each row through its own cursor (measurably slower).
# This leans on FTS5's shadow-table layout: tests/store/test_search.py checks they agree.
_TEXT_SQL = ("SELECT c.n, c.id, c.title, c.type, c.status, c.project, c.description, {fts},"
             " substr(f.c{body}, 1, {chars}) FROM cards c JOIN fts_content f ON f.id = c.n"
             " WHERE c.n IN (SELECT value FROM json_each(?))").format(
    fts=", ".join(f"f.c{COLUMNS.index(col)}" for col in SHORT),
    body=COLUMNS.index("body"), chars=SNIPPET_CHARS)


def _json_ids(rowids: Iterable[int]) -> str:
    """Rowids as one JSON parameter for `IN (SELECT value FROM json_each(?))`: the same
    SQL for any number of them, prepared once per connection."""
    return "[" + ",".join(str(int(n)) for n in rowids) + "]"


def _texts(idx: Index, rowids: Iterable[int]) -> dict[int, tuple[Any, ...]]:
    return {row[0]: row for row in idx.conn.execute(_TEXT_SQL, (_json_ids(rowids),))}


Hits = list[list[tuple[int, int, int]]]  # of a candidate's SHORT fields, in that order


def _hits(p: Plan, texts: dict[int, tuple[Any, ...]]) -> dict[int, Hits]:
    """rowid -> every hit of the query's terms in each of its short fields
    (Terms.hits_each): one scan serves the fields it matched in and, for the description
    and title, its snippet. Bodies are scanned for the results shown only."""
    terms = Terms(p)
    width = len(SHORT)
    pieces = [text or "" for row in texts.values() for text in row[_AT:_AT + width]]
    each = iter(terms.hits_each(pieces))
    return {n: [next(each) for _ in range(width)] for n in texts}


def _fields(p: Plan, hits: dict[int, Hits]) -> dict[int, list[set[str]]]:
    """rowid -> for each term, the short fields (not the body) it occurs in."""
    out: dict[int, list[set[str]]] = {}
    for n, per_text in hits.items():
        per_term: list[set[str]] = [set() for _ in p.stems]
        for name, found in zip(SHORT, per_text):
            for _, _, i in found:
                per_term[i].add(name)
        out[n] = per_term
    return out


def _snippet(text: str, hits: list[tuple[int, int, int]], width: int = 160) -> str | None:
    """The window of text holding the most query words, the words in **bold**.
    text is cut to SNIPPET_CHARS and hits are Terms.hits_each's for it."""
    if not hits:
        return None
    lead = 24  # a few words of context before the first hit
    best, best_n = hits[0][0], 0
    every = len({i for _, _, i in hits})  # no window can hold more: the first with all wins
    for j, (start, _, _) in enumerate(hits):
        if best_n == every:
            break
        while j and hits[j - 1][0] == start:
            j -= 1  # hits sharing this start come before it: count them too
        stop = start - lead + width
        seen = set()
        for s, _, i in hits[j:]:
            if s >= stop:
                break
            seen.add(i)
        if len(seen) > best_n:
            best, best_n = start, len(seen)
    lo = max(0, best - lead)
    while lo > 0 and not text[lo - 1].isspace() and best - lo < lead * 2:
        lo -= 1
    hi = min(len(text), lo + width)
    while hi < len(text) and not text[hi].isspace() and hi - lo < width + 20:
        hi += 1
    parts, pos = [], lo
    for s, e, _ in hits:
        if s >= pos and e <= hi:
            parts += [text[pos:s], "**", text[s:e], "**"]
            pos = e
    parts.append(text[pos:hi])
    snip = " ".join("".join(parts).split())
    return ("…" if lo > 0 else "") + snip + ("…" if hi < len(text) else "")


_SNIPPET_FROM = (SHORT.index("description"), SHORT.index("title"))  # after the body


def _snippets(idx: Index, p: Plan, results: list[dict[str, Any]],
              texts: dict[int, tuple[Any, ...]], hits: dict[int, Hits]) -> None:
    """Snippets of the results shown, from the body, else the description, else the title."""
    shown = {r["_n"] for r in results}
    texts = {n: texts[n] for n in shown if n in texts}
    if len(texts) < len(shown):  # found by name only (_fuzzy_names): not read yet
        more = _texts(idx, shown - set(texts))
        texts.update(more)
        hits = {**hits, **_hits(p, more)}
    bodies = [row[-1] or "" for row in texts.values()]  # their first SNIPPET_CHARS
    snips = {}
    for (n, row), body, found in zip(texts.items(), bodies, Terms(p).hits_each(bodies, 40)):
        if sn := _snippet(body, found):
            snips[n] = sn
            continue
        for which in _SNIPPET_FROM:  # a field's place in hits[n], and _AT later in row
            text = (row[_AT + which] or "")[:SNIPPET_CHARS]
            found = [h for h in hits[n][which] if h[1] <= len(text)][:40]
            if sn := _snippet(text, found):
                snips[n] = sn
                break
    for r in results:
        r["snippet"] = snips.get(r["_n"], "")
    # Show corrections as words of the cards ("fixtures"), not as index stems ("fixtur").
    desc_at, title_at = (_AT + SHORT.index(f) for f in ("description", "title"))
    for word, stem in list(p.corrected.items()):
        for n in sorted(texts):
            row = texts[n]
            body, desc, title = row[-1] or "", row[desc_at] or "", row[title_at] or ""
            low = Terms.prepare(f"{title}\n{desc}\n{body}")
            m = next(((s, e) for s, e in _matches(low, stem, False)
                      if not s or not low[s - 1].isalnum()), None)
            if m:
                p.corrected[word] = low[m[0]:m[1]]
                break


# --- scoring ----------------------------------------------------------------------------

def _confidence(coverage: float, names: float, rel: float) -> str:
    if names == 1 or (coverage == 1 and names >= 0.5 and rel >= 0.5):
        return "high"
    if (coverage == 1 and (names > 0 or rel >= 0.3)) or (coverage >= 0.5 and names >= 0.5):
        return "medium"
    return "low"


def run(idx: Index, query: str, limit: int = 10, card_type: str | None = None,
        project: str | None = None) -> SearchResult:
    limit = max(1, int(limit))
    query = query or ""
    p = plan(idx, query)
    results: list[dict[str, Any]] = []
    texts: dict[int, tuple[Any, ...]] = {}
    hits: dict[int, Hits] = {}
    if p.terms:
        # A few candidates past the limit, so that confidence can reorder them; more let
        # weaker tiers crowd out better-named cards (bench_search.py's labelled queries).
        found = _candidates(idx, p, max(limit + 2, 12), card_type, project)
        if found:
            texts = _texts(idx, found)
            hits = _hits(p, texts)
            results = _score(p, found, texts, hits)
    # Whole-query fuzzy matching of names, when some words were not found (or nothing was).
    if (p.unknown or not results) and query.strip():
        _merge(results, _fuzzy_names(idx, query, limit, card_type, project))
    _calibrate(idx, p, results)
    if results:
        from ..maintain.record import stale

        for cid in stale(idx.root, {r["id"] for r in results}):
            for r in results:
                if r["id"] == cid:
                    r["stale"] = True  # `cardmem maintain` found it stale, and it is unchanged
    results.sort(key=_order)
    results = results[:limit]
    if p.terms and results:
        _snippets(idx, p, results, texts, hits)
    for r in results:
        desc = r.pop("_desc", "")
        r.pop("_n", None)
        if not r.get("snippet"):
            r["snippet"] = " ".join(desc.split())[:200]
        r["match"] = "lexical"
    empty = None if results or not (card_type or project) else _empty_filter(idx, card_type,
                                                                             project)
    return SearchResult(query, results, p.corrected, p.unknown, empty)


def _empty_filter(idx: Index, card_type: str | None, project: str | None) -> str | None:
    """What the filters ask for, when no card at all has it ("type feedback and project
    acme-api"); None when some card does."""
    where, args = _filters(card_type, project)
    if idx.conn.execute(f"SELECT 1 FROM cards c WHERE 1{where} LIMIT 1", args).fetchone():
        return None
    return " and ".join(([f"type {card_type}"] if card_type else [])
                       + ([f"project {project_key(project)}"] if project else []))


def _calibrate(idx: Index, p: Plan, results: list[dict[str, Any]]) -> None:
    """Each word-matched result's label from the share of the query's information it
    holds (store/index/confidence.py), at most medium when they are all in its body; a name
    matched whole by rapidfuzz keeps its own."""
    bounds = _df_bounds(idx, [s for s, _ in p.stems])
    cover = coverage(idx, p, [r["_n"] for r in results], bounds)
    for r in results:
        label = lexical_label(cover[r["_n"]])
        if label == "high" and r["matched"] == ["body"]:
            label = "medium"  # words met only in passing: found, not what the card is about
        if "title~" not in r["matched"] or CONFIDENCE.index(label) > CONFIDENCE.index(r["confidence"]):
            r["confidence"] = label


def _order(r: dict[str, Any]) -> tuple[Any, ...]:
    """Better confidence first; a superseded, archived, proposed or stale card counts one
    level lower and comes after active cards of that level, so what is in force is read
    first."""
    inactive = r["status"] in INACTIVE or "stale" in r
    return (-(CONFIDENCE.index(r["confidence"]) - inactive), inactive, -r["score"], r["id"])


def _score(p: Plan, found: dict[int, Candidate], texts: dict[int, tuple[Any, ...]],
           hits: dict[int, Hits]) -> list[dict[str, Any]]:
    fields = _fields(p, hits)
    n_terms = len(p.terms)
    out = []
    for n, cid, title, ctype, status, proj, desc, *_ in texts.values():
        cand, per_term = found[n], fields[n]
        in_short = sum(1 for f in per_term if f)
        # Tiers "names" and "all" matched every term; "any" at least one, maybe in the body.
        coverage = 1.0 if cand.tier != "any" else max(in_short, 1) / n_terms
        names = sum(1 for f in per_term if f & NAME_SET) / n_terms
        if cand.tier == "names":
            names = 1.0
        score = 0.5 * cand.rel + 0.3 * coverage + 0.2 * names
        matched = set().union(*per_term)
        if cand.tier != "any" and in_short < n_terms or not matched:
            matched.add("body")
        out.append({"id": cid, "title": title, "type": ctype, "score": round(score, 4),
                    "confidence": _confidence(coverage, names, cand.rel),
                    "matched": sorted(matched, key=COLUMNS.index), "status": status,
                    "project": proj, "_n": n, "_desc": desc})
    return out


def _names(idx: Index) -> tuple[list[str], list[int], list[int]]:
    """Every title and alias (rapidfuzz-processed), its card's rowid, and its length,
    sorted by length; cached per index generation, so one process loads them once."""
    from rapidfuzz import utils

    gen = idx.generation()
    cached = getattr(idx, "_names_cache", None)
    if cached and cached[0] == gen:
        return cached[1]
    pairs = []
    for n, title, aliases in idx.conn.execute("SELECT n, title, aliases FROM cards"):
        for name in (title, *aliases.split("\n")) if aliases else (title,):
            name = utils.default_process(name)
            pairs.append((len(name), name, n))
    pairs.sort()
    table = ([p[1] for p in pairs], [p[2] for p in pairs], [p[0] for p in pairs])
    idx._names_cache = (gen, table)  # type: ignore[attr-defined]
    return table


def _fuzzy_names(idx: Index, query: str, limit: int, card_type: str | None,
                 project: str | None) -> list[dict[str, Any]]:
    """Cards whose title or an alias is close to the whole query (rapidfuzz ratio)."""
    from bisect import bisect_left, bisect_right

    from rapidfuzz import fuzz, process, utils

    q = utils.default_process(query)
    if len(q) < 4:
        return []
    names, owner, lengths = _names(idx)
    # ratio = 2*matches/(len(a)+len(b)) >= c needs len(b) within [len(a)*c/(2-c), len(a)*(2-c)/c].
    c = FUZZY_CUTOFF / 100
    lo = bisect_left(lengths, int(len(q) * c / (2 - c)))
    hi = bisect_right(lengths, int(len(q) * (2 - c) / c) + 1)
    best: dict[int, float] = {}
    for _, score, j in process.extract(q, names[lo:hi], scorer=fuzz.ratio, processor=None,
                                       score_cutoff=FUZZY_CUTOFF, limit=limit * 3):
        n = owner[lo + j]
        best[n] = max(best.get(n, 0.0), score)
    if not best:
        return []
    where, args = _filters(card_type, project)
    out = []
    for n, cid, title, ctype, status, proj, desc in idx.conn.execute(
            "SELECT n, id, title, type, status, project, description FROM cards c"
            f" WHERE n IN (SELECT value FROM json_each(?)){where}", (_json_ids(best), *args)):
        score = best[n]
        out.append({"id": cid, "title": title, "type": ctype,
                    "score": round(0.8 * score / 100, 4),
                    "confidence": "high" if score >= 95 else "medium",
                    "matched": ["title~"], "status": status, "project": proj, "_n": n,
                    "_desc": desc})
    return out


def _merge(results: list[dict[str, Any]], extra: list[dict[str, Any]]) -> None:
    by_id = {r["id"]: r for r in results}
    for e in extra:
        r = by_id.get(e["id"])
        if r is None:
            results.append(e)
            continue
        if CONFIDENCE.index(e["confidence"]) > CONFIDENCE.index(r["confidence"]):
            r["confidence"] = e["confidence"]
        r["score"] = max(r["score"], e["score"])
        r["matched"] = [*r["matched"], "title~"]


