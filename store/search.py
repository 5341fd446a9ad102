"""Search over the lexical index: safe queries, typo correction, ranking, confidence.

User text never reaches FTS5 syntax: the query is tokenized by FTS5's own tokenizers
(a scratch table per connection), and every term goes into the MATCH expression as a
double-quoted string, so quotes, hyphens, colons, parentheses, AND/OR/NOT/NEAR, `*`, `^`,
non-Latin text and emoji are all just text. A term missing from the index vocabulary is
corrected against it (rapidfuzz, loaded only then) before the query runs.
"""
from __future__ import annotations

import sqlite3
from typing import Any

from .index import COLUMNS, INACTIVE, TOKENIZE, Index

STOPWORDS = frozenset("""a an and are as at be but by do does did for from how i if in into is
it its me my of on or our so that the their them then there these this to was we were what
when where which who whom why will with you your can should would could""".split())
SHORT_FIELDS = (0, 1, 2, 3, 5)  # FTS columns checked per term (the body is what remains)
NAME_FIELDS = ("title", "aliases")
SNIPPET_TOKENS = 12
CONFIDENCE = ("low", "medium", "high")


class SearchResult:
    """What a search found: ranked results, corrections applied, and whether any is confident."""

    def __init__(self, query: str, results: list[dict[str, Any]],
                 corrected: dict[str, str], unknown: list[str]) -> None:
        self.query = query
        self.results = results
        self.corrected = corrected  # query term -> the vocabulary word searched instead
        self.unknown = unknown  # query terms neither found nor correctable
        self.no_confident_results = not any(r["confidence"] != "low" for r in results)

    def as_dict(self) -> dict[str, Any]:
        """The `cardmem search --json` document (DESIGN §10), plus corrections."""
        return {"query": self.query, "results": self.results,
                "no_confident_results": self.no_confident_results,
                "corrected": self.corrected, "unknown_terms": self.unknown}

    def __repr__(self) -> str:
        return f"SearchResult({self.query!r}, {len(self.results)} results)"


# --- the query's terms ------------------------------------------------------------------

def _scratch(conn: sqlite3.Connection) -> None:
    """Per-connection temp FTS tables whose vocab tables give FTS5's own tokens of a text."""
    try:
        conn.execute("SELECT 1 FROM temp.q_raw_v LIMIT 0")
        return
    except sqlite3.OperationalError:
        pass
    conn.executescript(f"""
        CREATE VIRTUAL TABLE IF NOT EXISTS temp.q_raw USING fts5(x, tokenize='unicode61 remove_diacritics 2');
        CREATE VIRTUAL TABLE IF NOT EXISTS temp.q_raw_v USING fts5vocab(temp, q_raw, 'instance');
        CREATE VIRTUAL TABLE IF NOT EXISTS temp.q_stem USING fts5(x, tokenize='{TOKENIZE}');
        CREATE VIRTUAL TABLE IF NOT EXISTS temp.q_stem_v USING fts5vocab(temp, q_stem, 'instance');
    """)


def tokens(conn: sqlite3.Connection, text: str) -> list[tuple[str, str]]:
    """(word, stem) of each token FTS5 sees in text, in order, duplicates dropped."""
    _scratch(conn)
    conn.execute("INSERT INTO temp.q_raw(rowid, x) VALUES (1, ?)", (text,))
    conn.execute("INSERT INTO temp.q_stem(rowid, x) VALUES (1, ?)", (text,))
    raw = conn.execute("SELECT term FROM temp.q_raw_v ORDER BY offset").fetchall()
    stem = conn.execute("SELECT term FROM temp.q_stem_v ORDER BY offset").fetchall()
    conn.execute("DELETE FROM temp.q_raw")
    conn.execute("DELETE FROM temp.q_stem")
    out, seen = [], set()
    for (w,), (s,) in zip(raw, stem):
        if s not in seen:
            seen.add(s)
            out.append((w, s))
    return out


def quote(word: str, prefix: bool = False) -> str:
    """One FTS5 string token: double quotes doubled, optional prefix star outside them."""
    return '"' + word.replace('"', '""') + '"' + ("*" if prefix else "")


def _exists(conn: sqlite3.Connection, expr: str) -> bool:
    return conn.execute("SELECT 1 FROM fts WHERE fts MATCH ? LIMIT 1", (expr,)).fetchone() is not None


def max_edits(word: str) -> int:
    """Typos tolerated in a word of this length: none in short words, where one edit
    turns most nonsense into some real word."""
    return 0 if len(word) <= 4 else 1 if len(word) <= 7 else 2


def vocabulary(idx: Index) -> None:
    """Materialise fts_vocab into `terms` when the index changed since the last time.

    Reading fts5vocab walks every doclist, too slow per query at 100k cards; the plain
    table is rebuilt lazily, at the first correction after a change.
    """
    c = idx.conn
    gen = str(idx.generation())
    row = c.execute("SELECT value FROM meta WHERE key='terms_generation'").fetchone()
    if row and row[0] == gen:
        return
    c.execute("BEGIN IMMEDIATE")
    try:
        c.execute("DELETE FROM terms")
        c.execute("INSERT INTO terms SELECT term, doc FROM fts_vocab")
        c.execute("INSERT OR REPLACE INTO meta VALUES('terms_generation', ?)", (gen,))
        c.execute("COMMIT")
    except BaseException:
        c.execute("ROLLBACK")
        raise


def correct(idx: Index, word: str, stem: str) -> str | None:
    """The vocabulary stem nearest to an unknown word's stem, within its edit budget."""
    budget = max_edits(word)
    if budget == 0 or not stem.isalpha():
        return None
    from rapidfuzz.distance import OSA  # lazy: only a query with an unknown term pays

    vocabulary(idx)
    # Typos rarely hit both of the first two letters: look where either is right.
    firsts = {stem[0], stem[1]}
    cands: list[tuple[int, int, str]] = []
    for first in firsts:
        for term, df in idx.conn.execute(
                "SELECT term, df FROM terms WHERE term >= ? AND term < ?",
                (first, first + "\U0010ffff")):
            if abs(len(term) - len(stem)) > budget:
                continue
            d = OSA.distance(stem, term, score_cutoff=budget)
            if d <= budget:
                cands.append((d, -df, term))
    for _, _, term in sorted(cands):
        if _exists(idx.conn, quote(term)):  # a stem that FTS5 re-stems the same way
            return term
    return None


def _prefix_fallback(idx: Index, word: str) -> str | None:
    """A last word typed past its stem ("deploym" -> "deploy"*): drop up to two letters."""
    for n in range(len(word) - 1, max(3, len(word) - 3), -1):
        expr = quote(word[:n], prefix=True)
        if _exists(idx.conn, expr):
            return expr
    return None


class Plan:
    """The query after analysis: FTS5 terms to search, and what was corrected."""

    def __init__(self) -> None:
        self.terms: list[str] = []  # quoted FTS5 strings, one per query term
        self.words: list[str] = []  # the query word each term came from
        self.corrected: dict[str, str] = {}
        self.unknown: list[str] = []


def plan(idx: Index, query: str) -> Plan:
    p = Plan()
    toks = tokens(idx.conn, query)
    content = [t for t in toks if t[0] not in STOPWORDS]
    toks = content or toks
    for i, (word, stem) in enumerate(toks):
        last = i == len(toks) - 1 and len(word) >= 3 and not query.rstrip().endswith(('"', " "))
        expr = quote(word, prefix=last)
        if _exists(idx.conn, expr):
            p.terms.append(expr)
            p.words.append(word)
            continue
        if last and (expr := _prefix_fallback(idx, word)):
            p.terms.append(expr)
            p.words.append(word)
            continue
        fixed = correct(idx, word, stem)
        if fixed is not None:
            p.terms.append(quote(fixed))
            p.words.append(word)
            p.corrected[word] = fixed
            continue
        p.unknown.append(word)
    return p


# --- ranking ----------------------------------------------------------------------------

def _filters(card_type: str | None, project: str | None) -> tuple[str, list[Any]]:
    sql, args = "", []
    if card_type:
        sql += " AND c.type = ?"
        args.append(card_type)
    if project:
        sql += " AND c.project = ?"
        args.append(project)
    return sql, args


def _candidates(idx: Index, p: Plan, k: int, card_type: str | None,
                project: str | None) -> dict[int, float]:
    """rowid -> bm25 (higher is better): cards with every term first, then with any."""
    c = idx.conn
    where, args = _filters(card_type, project)
    found: dict[int, float] = {}
    exprs = [" AND ".join(p.terms)]
    if len(p.terms) > 1:
        exprs.append(" OR ".join(p.terms))
    for expr in exprs:
        if len(found) >= k:
            break
        if where:
            sql = ("SELECT f.rowid, f.rank FROM fts f JOIN cards c ON c.n = f.rowid"
                   f" WHERE fts MATCH ?{where} ORDER BY f.rank LIMIT ?")
        else:
            sql = "SELECT rowid, rank FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT ?"
        for rowid, rank in c.execute(sql, (expr, *args, k + len(found))):
            if rowid not in found:
                found[rowid] = -rank
    return found


def _fields(idx: Index, p: Plan, rowids: list[int]) -> dict[int, list[set[str]]]:
    """rowid -> for each term, the fields it matched in."""
    marks = ", ".join(f"instr(highlight(fts, {i}, char(1), char(2)), char(1))"
                      for i in SHORT_FIELDS)
    marks_names = [COLUMNS[i] for i in SHORT_FIELDS]
    inlist = ",".join(str(r) for r in rowids)
    out: dict[int, list[set[str]]] = {r: [set() for _ in p.terms] for r in rowids}
    for t, expr in enumerate(p.terms):
        for row in idx.conn.execute(
                f"SELECT rowid, {marks} FROM fts WHERE fts MATCH ? AND rowid IN ({inlist})",
                (expr,)):
            hit = {name for name, m in zip(marks_names, row[1:]) if m}
            out[row[0]][t] = hit or {"body"}
    return out


def _confidence(coverage: float, names: float, rel: float) -> str:
    if names == 1 or (coverage == 1 and names >= 0.5 and rel >= 0.5):
        return "high"
    if (coverage == 1 and (names > 0 or rel >= 0.3)) or (coverage >= 0.5 and names >= 0.5):
        return "medium"
    return "low"


def run(idx: Index, query: str, limit: int = 10, card_type: str | None = None,
        project: str | None = None) -> SearchResult:
    limit = max(1, int(limit))
    p = plan(idx, query or "")
    results: list[dict[str, Any]] = []
    if p.terms:
        found = _candidates(idx, p, max(3 * limit, 20), card_type, project)
        if found:
            results = _score(idx, p, found)
    fuzzy_needed = (p.corrected or p.unknown) or not any(
        r["confidence"] != "low" for r in results)
    if fuzzy_needed and (query or "").strip():
        _merge(results, _fuzzy_names(idx, query, limit, card_type, project))
    results.sort(key=_order)
    results = results[:limit]
    if p.terms and results:
        _snippets(idx, p, results)
        _surface_words(idx, p, [r["_n"] for r in results])
    for r in results:
        desc = r.pop("_desc", "")
        r.pop("_n", None)
        if not r.get("snippet"):
            r["snippet"] = " ".join(desc.split())[:200]
    return SearchResult(query, results, p.corrected, p.unknown)


def _order(r: dict[str, Any]) -> tuple[Any, ...]:
    """Better confidence first; a superseded or archived card counts one level lower and
    comes after active cards of that level, so its replacement is read first."""
    inactive = r["status"] in INACTIVE
    return (-(CONFIDENCE.index(r["confidence"]) - inactive), inactive, -r["score"], r["id"])


def _score(idx: Index, p: Plan, found: dict[int, float]) -> list[dict[str, Any]]:
    rowids = list(found)
    fields = _fields(idx, p, rowids)
    best = max(found.values()) or 1.0
    inlist = ",".join(str(r) for r in rowids)
    rows = idx.conn.execute(f"SELECT n, id, title, type, status, project, description"
                            f" FROM cards WHERE n IN ({inlist})").fetchall()
    n_terms = len(p.terms)
    out = []
    for n, cid, title, ctype, status, proj, desc in rows:
        per_term = fields[n]
        coverage = sum(1 for f in per_term if f) / n_terms
        names = sum(1 for f in per_term if f & set(NAME_FIELDS)) / n_terms
        rel = found[n] / best if best > 0 else 0.0
        score = 0.5 * rel + 0.3 * coverage + 0.2 * names
        matched = sorted(set().union(*per_term), key=COLUMNS.index)
        out.append({"id": cid, "title": title, "type": ctype, "score": round(score, 4),
                    "confidence": _confidence(coverage, names, rel), "matched": matched,
                    "status": status, "project": proj, "_n": n, "_desc": desc})
    return out


def _fuzzy_names(idx: Index, query: str, limit: int, card_type: str | None,
                 project: str | None) -> list[dict[str, Any]]:
    """Cards whose title or an alias is close to the whole query (rapidfuzz WRatio)."""
    from rapidfuzz import fuzz, process, utils

    where, args = _filters(card_type, project)
    rows = idx.conn.execute("SELECT n, id, title, type, status, project, aliases, description"
                            " FROM cards c"
                            f" WHERE 1{where}", args).fetchall()
    names: list[str] = []
    owner: list[int] = []
    for i, row in enumerate(rows):
        for name in [row[2], *row[6].split("\n")]:
            if name:
                names.append(name)
                owner.append(i)
    q = utils.default_process(query)
    if len(q) < 3:
        return []
    best: dict[int, float] = {}
    for name, score, j in process.extract(q, names, scorer=fuzz.WRatio,
                                          processor=utils.default_process,
                                          score_cutoff=85, limit=limit * 3):
        best[owner[j]] = max(best.get(owner[j], 0.0), score)
    out = []
    for i, score in best.items():
        n, cid, title, ctype, status, proj, _, desc = rows[i]
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


def _surface_words(idx: Index, p: Plan, rowids: list[int]) -> None:
    """Show corrections as words of the cards ("fixtures"), not as index stems ("fixtur")."""
    inlist = ",".join(str(r) for r in rowids)
    for word, stem in p.corrected.items():
        row = idx.conn.execute(
            "SELECT snippet(fts, -1, char(1), char(2), '', 4) FROM fts"
            f" WHERE fts MATCH ? AND rowid IN ({inlist}) LIMIT 1", (quote(stem),)).fetchone()
        if row and "\x01" in row[0]:
            shown = row[0].split("\x01", 1)[1].split("\x02", 1)[0].strip().lower()
            if shown:
                p.corrected[word] = shown


def _snippets(idx: Index, p: Plan, results: list[dict[str, Any]]) -> None:
    inlist = ",".join(str(r["_n"]) for r in results)
    expr = " OR ".join(p.terms)
    snips = dict(idx.conn.execute(
        f"SELECT rowid, snippet(fts, -1, '**', '**', '…', {SNIPPET_TOKENS}) FROM fts"
        f" WHERE fts MATCH ? AND rowid IN ({inlist})", (expr,)).fetchall())
    for r in results:
        s = snips.get(r["_n"])
        if s:
            r["snippet"] = " ".join(s.split())
