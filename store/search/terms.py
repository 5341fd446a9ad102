"""A query's terms: tokenized as the index tokenizes (ASCII words by porter.py, FTS5's
porter in Python; other text by FTS5's own tokenizers, in scratch tables per connection;
words seen before are cached per process), quoted so user text never reaches FTS5 syntax,
and a term missing from the index vocabulary corrected against it (rapidfuzz, loaded only
then). `plan` turns a query into the Plan the other search modules work from.
"""
from __future__ import annotations

import re
import sqlite3

from ..index import porter
from ..index.schema import TOKENIZE
TYPE_CHECKING = False  # typing costs a search to import (bench/RESULTS.md); annotations only
if TYPE_CHECKING:
    from ..index.db import Index

# English function words, dropped from a query that has other words: a question's "has",
# "been" or "about" is not what it asks for, and requiring it ranks cards that merely hold
# it above the card that answers (bench/RESULTS.md, issue 27: NLTK's list, abridged).
STOPWORDS = frozenset("""a about above after again against all am an and any are as at be
because been before being below between both but by can could did do does doing down during
each few for from further had has have having he her here hers herself him himself his how i
if in into is it its itself just me more most my myself no nor not now of off on once only or
other our ours ourselves out over own same she should so some such than that the their theirs
them themselves then there these they this those through to too under until up very was we
were what when where which while who whom why will with would you your yours yourself
yourselves""".split())

# Function words of the other languages people ask in (none an English word): a query
# with one and no English one is not English, and its unknown words are not English typos
# ("qui approuve" is no misspelt "approval"). The semantic layer answers such queries.
FOREIGN = frozenset("""le la les est et je ne pas une des du mais qui que pour avec dans sur
ce cette sont où der das ist und ich nicht ein eine zu auch aber sind wer wie wird mit
el los las y eso está pero del por para con quién cómo não um uma isso você com
il lo è che questo sono della chi het een niet zijn ook wie""".split())

# --- the query's terms ------------------------------------------------------------------

_READY: dict[int, sqlite3.Connection] = {}  # connections that have them (held: ids stay unique)
# Tokens of each whitespace-separated chunk of a query, per process. unicode61 never joins
# characters across whitespace and porter stems each token alone, so a text's tokens are
# its chunks' tokens in order; they depend on the tokenizer only, never on the index, so
# nothing here goes stale. A long-lived process (MCP server) asks about the same words
# again and again: a repeated non-ASCII chunk costs no statement, an ASCII one no stemming
# (bench/bench_tricks.py; bench/RESULTS.md, "Speed tricks, each against its plain alternative").
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

    Reading fts5vocab walks every doclist, longer than a whole search at 10k cards and far
    longer at 100k (bench/RESULTS.md, "Figures from comments"), so it is not done per
    query. `cardmem index` builds it; a search rebuilds it only when it is missing or more
    than a few percent of the cards changed since (a stale table still corrects every word
    it knows; words new since then wait for the next build).
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
    words = set(query.lower().split())
    foreign = bool(words & FOREIGN) and not words & STOPWORDS  # no English typos to fix
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
        fixed = None if foreign else correct(idx, word, stem)
        if fixed is not None:
            most = _df_bounds(idx, [fixed]).get(fixed, (0, None))[1]
            p.add(quote(fixed), fixed, most=most)
            p.corrected[word] = fixed
            continue
        p.unknown.append(word)
    return p
