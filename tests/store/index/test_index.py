"""The lexical index and search (issue 3): freshness, rebuilds, hostile queries, typos,
confidence, filters, repair, and that indexing never touches a card."""
from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from cardmem.store.index.db import Index
from cardmem.store.search.query import search_index
from cardmem.store.search.query import search
from cardmem.store.index.files import walk

PYTEST_CARD = "projects/acme-api/pytest-fixtures"


def write(root: Path, cid: str, text: str) -> Path:
    path = root / f"{cid}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def card(title: str, body: str, **meta: str) -> str:
    head = "".join(f"{k}: {v}\n" for k, v in meta.items())
    return f"---\ntitle: {title}\n{head}---\n{body}\n"


def bump(path: Path) -> None:
    """Move mtime forward: same-second edits must not hide behind equal mtimes in a test."""
    st_ = path.stat()
    os.utime(path, ns=(st_.st_atime_ns, st_.st_mtime_ns + 2_000_000_000))


def ids(res) -> list[str]:
    return [r["id"] for r in res.results]


# --- indexing ---------------------------------------------------------------------------

def test_walk_finds_the_files_store_card_files_does(example_store) -> None:
    root = example_store.root
    write(root, ".hidden/secret", card("Hidden", "no"))
    write(root, "reference/.swap", card("Swap", "no"))
    (root / "reference" / "notes.txt").write_text("not a card")
    (root / "reference" / "linked.md").symlink_to(root / "reference" / "on-call-rota.md")
    walked = sorted(cid for cid, _, _ in walk(root))
    assert walked == sorted(cid for cid, _ in example_store.card_files())
    assert "README" not in walked and "reference/linked" in walked


def test_first_refresh_indexes_every_card_and_the_second_does_nothing(example_store) -> None:
    with Index(example_store) as index:
        first = index.refresh()
        n = len(list(example_store.card_files()))
        assert first["added"] == n == len(index.ids()) and first["problems"] == 0
        gen = index.generation()
        second = index.refresh()
        assert second == {"added": 0, "updated": 0, "removed": 0, "unchanged": n, "problems": 0}
        assert index.generation() == gen  # nothing written


def test_edit_delete_rename_and_new_are_reflected(example_store, idx) -> None:
    root = example_store.root
    path = root / f"{PYTEST_CARD}.md"
    path.write_text(path.read_text().replace("SAVEPOINT", "quokkatime"))
    bump(path)
    (root / "reference" / "on-call-rota.md").unlink()
    os.rename(root / "reference" / "grafana-dashboards.md", root / "reference" / "dashboards.md")
    write(root, "reference/new-card", card("Wombat procedures", "How to feed the wombat."))
    counts = idx.refresh()
    assert counts["updated"] == 1 and counts["added"] == 2 and counts["removed"] == 2
    assert ids(search_index(idx, "quokkatime")) == [PYTEST_CARD]
    assert search_index(idx, "savepoint").results == []
    assert "reference/on-call-rota" not in idx.ids()
    assert "reference/dashboards" in idx.ids() and "reference/grafana-dashboards" not in idx.ids()
    assert ids(search_index(idx, "wombat"))[0] == "reference/new-card"


def test_a_touch_without_change_rereads_but_does_not_reindex(example_store, idx) -> None:
    path = example_store.root / f"{PYTEST_CARD}.md"
    bump(path)
    before = idx.rows()
    # git sees no change in a touched file, so only a walk notices it (store/index/freshness.py)
    counts = idx.refresh(walk=True)
    assert counts["updated"] == 0 and counts["added"] == 0
    # The new mtime is recorded, so the next refresh does not even read the file.
    assert idx.refresh(walk=True)["unchanged"] == len(before)
    row = idx.conn.execute("SELECT mtime_ns FROM cards WHERE id=?", (PYTEST_CARD,)).fetchone()
    assert row[0] == path.stat().st_mtime_ns


def test_refresh_ids_updates_just_those(example_store, idx) -> None:
    root = example_store.root
    path = write(root, "reference/db-migration-runbook", card("Runbook", "platypus steps"))
    bump(path)
    write(root, "reference/other", card("Other", "echidna"))
    (root / "entities" / "stripe.md").unlink()
    counts = idx.refresh_ids(["reference/db-migration-runbook", "entities/stripe",
                              "../escape", ".cardmem/x", "no/such"])
    assert counts["updated"] == 1 and counts["removed"] == 1 and counts["added"] == 0
    assert ids(search_index(idx, "platypus")) == ["reference/db-migration-runbook"]
    assert "entities/stripe" not in idx.ids()
    assert search_index(idx, "echidna").results == []  # not among the ids asked for
    assert idx.refresh()["added"] == 1


def test_full_rebuild_equals_incremental(example_store, idx, tmp_path) -> None:
    root = example_store.root
    write(root, "reference/a", card("Alpha", "first"))
    write(root, "reference/b", "---\ntitle: [broken\n---\nbad\n")
    (root / "entities" / "pagerduty.md").unlink()
    p = root / "feedback" / "small-prs.md"
    p.write_text(p.read_text() + "\nMore text.\n")
    bump(p)
    idx.refresh()
    incremental, problems = idx.rows(), idx.problems()
    counts = idx.rebuild()
    assert counts["added"] == len(incremental) + len(problems)  # problem files count too
    assert idx.rows() == incremental and idx.problems() == problems
    with Index(root=root, db_path=tmp_path / "fresh.sqlite") as fresh:
        fresh.refresh()
        assert fresh.rows() == incremental


def test_rebuild_is_seen_by_an_open_connection(example_store, idx) -> None:
    other = Index(example_store)
    assert PYTEST_CARD in other.ids()
    write(example_store.root, "reference/late", card("Late card", "kookaburra"))
    idx.rebuild()
    assert "reference/late" in other.ids()
    other.close()


def test_broken_cards_are_problems_and_never_touched(example_store, idx) -> None:
    root = example_store.root
    write(root, "reference/bad-yaml", "---\ntitle: [unclosed\n---\nnumbat\n")
    (root / "reference" / "binary.md").write_bytes(b"\x00\x01numbat")
    (root / "reference" / "latin1.md").write_bytes("caf\xe9 numbat".encode("latin-1"))
    idx.refresh()
    probs = {p["id"]: p["reason"] for p in idx.problems()}
    assert "bad YAML" in probs["reference/bad-yaml"]
    assert "binary" in probs["reference/binary"] and "UTF-8" in probs["reference/latin1"]
    assert search_index(idx, "numbat").results == []
    write(root, "reference/bad-yaml", card("Fixed", "numbat"))
    bump(root / "reference" / "bad-yaml.md")
    idx.refresh()
    assert ids(search_index(idx, "numbat")) == ["reference/bad-yaml"]
    assert "reference/bad-yaml" not in {p["id"] for p in idx.problems()}


def test_indexing_and_searching_never_modify_a_card(example_store) -> None:
    root = example_store.root

    def snapshot() -> dict[str, tuple[bytes, int]]:
        return {str(p): (p.read_bytes(), p.stat().st_mtime_ns)
                for p in root.rglob("*") if p.is_file() and ".git" not in p.parts
                and ".cardmem" not in p.parts}

    before = snapshot()
    with Index(example_store) as index:
        index.refresh()
        search_index(index, "pytets fixtrues")
        index.rebuild()
        search_index(index, "deploy", card_type="feedback")
    search(example_store, "stripe webhooks")
    assert snapshot() == before
    from cardmem.store.git import runner as git
    assert git.run(root, "status", "--porcelain") == ""


def test_a_corrupt_or_missing_index_rebuilds_itself(example_store) -> None:
    db = example_store.state_dir / "index.sqlite"
    db.write_bytes(b"this is not a database" * 100)
    assert ids(search(example_store, "pytets fixtrues"))[0] == PYTEST_CARD
    # Damage deep inside a valid file: verify() (run by `cardmem index`) finds and fixes it.
    def damage() -> None:
        size = db.stat().st_size
        with open(db, "r+b") as fh:
            fh.seek(size // 2)
            fh.write(b"\xff" * 8192)

    damage()
    with Index(example_store) as index:
        assert index.verify() != []
        assert index.verify() == []
    assert ids(search(example_store, "stripe webhooks"))[0].endswith("stripe-webhooks")
    # ...and a search over such a file does not crash either.
    damage()
    search(example_store, "stripe webhooks")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    assert ids(search(example_store, "pytest fixtures"))[0] == PYTEST_CARD


def test_an_index_of_another_schema_is_replaced(example_store) -> None:
    db = example_store.state_dir / "index.sqlite"
    c = sqlite3.connect(db)
    c.execute("CREATE TABLE cards(x)")
    c.execute("PRAGMA user_version = 999")
    c.commit()
    c.close()
    assert ids(search(example_store, "pytest fixtures"))[0] == PYTEST_CARD


def test_an_attached_folder_without_frontmatter_is_indexed(tmp_path) -> None:
    docs = tmp_path / "docs"
    write(docs, "guide/install", "# Installing the gizmo\n\nRun the gizmo installer.\n")
    write(docs, "guide/faq", "Plain text with no heading about sprockets.\n")
    with Index(root=docs, db_path=tmp_path / "state" / "docs.sqlite") as base:
        assert base.refresh()["added"] == 2
        res = search_index(base, "gizmo instaler")
        assert res.results[0]["id"] == "guide/install"
        assert res.results[0]["title"] == "Installing the gizmo"
        assert ids(search_index(base, "sprockets")) == ["guide/faq"]
    assert not (docs / ".cardmem").exists()


def test_unknown_frontmatter_keys_are_searchable(store) -> None:
    write(store.root, "entities/thing", card("Thing", "body", owner_team="quetzalteam"))
    res = search(store, "quetzalteam")
    assert ids(res) == ["entities/thing"] and "extra" in res.results[0]["matched"]


# --- search -----------------------------------------------------------------------------

HOSTILE = ['"', '""', "'", "-", "--x", "a-b", "key:value", ":", "(", ")", "((a)", "a AND",
           "AND", "OR", "NOT", "NEAR", "NEAR(a b)", "a NEAR/2 b", "*", "a*", "*a", "^", "^a",
           "{title}: x", "title:pytest", "col : x", "+", "a + b", "\\", "%", "_", "\x00",
           "日本語の検索", "Ελληνικά", "مرحبا", "🎉", "🔥 deploy 🚀", "", "   ", "\t\n",
           "x" * 5000, " ".join(["deploy"] * 300), "pytest -x", "'; DROP TABLE cards; --",
           "café", "naïve résumé", "ﬁxtures", "Ａ Ｂ"]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_return_without_error(idx, query: str) -> None:
    res = search_index(idx, query)
    json.dumps(res.as_dict())  # the CLI's --json document
    assert isinstance(res.no_confident_results, bool)
    assert all(r["confidence"] in ("high", "medium", "low") for r in res.results)


def test_hostile_queries_still_find_what_they_name(idx) -> None:
    assert ids(search_index(idx, "pytest -x"))[0] == "feedback/run-tests-with-x"
    assert ids(search_index(idx, '"pytest fixtures"'))[0] == PYTEST_CARD
    assert ids(search_index(idx, "title:pytest fixtures"))[0] == PYTEST_CARD
    assert ids(search_index(idx, "🔥 stripe webhooks 🚀"))[0] == "projects/billing-v2/stripe-webhooks"
    assert search_index(idx, "fixtures AND").results[0]["id"] == PYTEST_CARD


@pytest.mark.parametrize("query,expected", [
    ("pytets fixtrues", PYTEST_CARD),
    ("pytest fixtrues", PYTEST_CARD),
    ("stripe webhoks", "projects/billing-v2/stripe-webhooks"),
    ("incidnet response", "reference/incident-response"),
    ("reversable migrations", "feedback/reversible-migrations"),
])
def test_typo_queries_find_their_card(idx, query: str, expected: str) -> None:
    res = search_index(idx, query)
    assert res.results[0]["id"] == expected
    assert not res.no_confident_results


def test_corrections_are_reported_as_words(idx) -> None:
    res = search_index(idx, "pytets fixtrues")
    assert res.corrected == {"pytets": "pytest", "fixtrues": "fixtures"}
    assert res.results[0]["confidence"] == "high"


@pytest.mark.parametrize("query", ["zxqv blorf", "qwxz", "blorfenstein quuxification"])
def test_nonsense_has_no_confident_results(idx, query: str) -> None:
    res = search_index(idx, query)
    assert res.no_confident_results
    assert res.as_dict()["no_confident_results"] is True


def test_a_word_being_typed_matches_by_prefix(idx) -> None:
    assert "projects/acme-api/deploy" in ids(search_index(idx, "deplo"))
    assert "projects/acme-api/deploy" in ids(search_index(idx, "acme deploym"))


def test_confidence_follows_how_well_it_matched(idx) -> None:
    res = search_index(idx, "pytest fixtures")
    top = res.results[0]
    assert top["id"] == PYTEST_CARD and top["confidence"] == "high"
    assert {"title", "aliases"} & set(top["matched"])
    assert "**" in top["snippet"]
    # A word that only appears in passing is not a high-confidence hit.
    body_only = search_index(idx, "SAVEPOINT")
    assert body_only.results and all(r["confidence"] != "high" for r in body_only.results)
    levels = ["high", "medium", "low"]
    active = [levels.index(r["confidence"]) for r in res.results if r["status"] == "active"]
    assert active == sorted(active)  # better matches first


def test_filters_by_type_and_project(idx) -> None:
    res = search_index(idx, "deploy", card_type="feedback")
    assert res.results and all(r["type"] == "feedback" for r in res.results)
    res = search_index(idx, "tests", project="acme-api")
    assert res.results and all(r["project"] == "acme-api" for r in res.results)
    assert search_index(idx, "deploy", project="no-such-project").results == []


def test_superseded_ranks_below_its_active_replacement(idx) -> None:
    order = ids(search_index(idx, "pin dependencies deploys"))
    assert order.index("feedback/uv-lock-frozen-in-deploys") < order.index(
        "feedback/pin-deps-with-pip-tools")
    old = next(r for r in search_index(idx, "pip-tools").results
               if r["id"] == "feedback/pin-deps-with-pip-tools")
    assert old["status"] == "superseded"


def test_archived_ranks_below_active(store) -> None:
    write(store.root, "reference/old", card("Kiwi fruit storage", "kiwi", status="archived"))
    write(store.root, "reference/new", card("Kiwi fruit storage today", "kiwi"))
    assert ids(search(store, "kiwi fruit storage")) == ["reference/new", "reference/old"]


def test_limit_is_respected(idx) -> None:
    assert len(search_index(idx, "the deploy tests", limit=3).results) <= 3


def test_as_dict_has_the_documented_shape(idx) -> None:
    doc = search_index(idx, "pytest fixtures").as_dict()
    assert {"query", "results", "no_confident_results"} <= set(doc)
    assert doc["query"] == "pytest fixtures"
    for r in doc["results"]:
        assert {"id", "title", "type", "score", "confidence", "snippet"} <= set(r)


def test_module_search_refreshes_first(store) -> None:
    write(store.root, "reference/fresh", card("Fresh card", "axolotl"))
    assert ids(search(store, "axolotl")) == ["reference/fresh"]
    (store.root / "reference" / "fresh.md").unlink()
    assert search(store, "axolotl").results == []


def test_a_big_store_stays_quick_to_check(tmp_path) -> None:
    """Not a benchmark: a guard that the no-change refresh does no per-card reads."""
    root = tmp_path / "many"
    for i in range(400):
        write(root, f"reference/c{i}", card(f"Card {i}", f"body {i}"))
    with Index(root=root, db_path=tmp_path / "i.sqlite") as index:
        index.refresh()
        t = time.perf_counter()
        counts = index.refresh()
        assert counts["unchanged"] == 400
        assert time.perf_counter() - t < 2.0


def test_the_parallel_pipeline_indexes_exactly_like_the_plain_path(example_store, tmp_path,
                                                                   monkeypatch) -> None:
    from cardmem.store.index import refresh as indexmod

    write(example_store.root, "reference/bad", "---\ntitle: [x\n---\n")
    with Index(root=example_store.root, db_path=tmp_path / "plain.sqlite") as plain:
        plain.refresh()
        expected, problems = plain.rows(), plain.problems()
    monkeypatch.setattr(indexmod, "PIPELINE_MIN", 10)
    monkeypatch.setattr(indexmod, "BATCH", 7)
    with Index(root=example_store.root, db_path=tmp_path / "piped.sqlite") as piped:
        counts = piped.refresh()
        assert counts["added"] == len(expected) + 1
        assert piped.rows() == expected and piped.problems() == problems


def test_a_symlink_out_of_the_store_is_a_problem_not_a_card(example_store, tmp_path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text(card("Secret", "wallaby"))
    (example_store.root / "reference" / "leak.md").symlink_to(outside)
    with Index(example_store) as index:
        index.refresh()
        assert search_index(index, "wallaby").results == []
        reasons = {p["id"]: p["reason"] for p in index.problems()}
        assert "outside" in reasons["reference/leak"]


def test_the_correction_vocabulary_is_rebuilt_by_index_not_per_search(example_store, idx) -> None:
    from cardmem.store.search.terms import vocabulary

    assert search_index(idx, "pytets").corrected == {"pytets": "pytest"}  # builds the vocabulary
    write(example_store.root, "reference/animals", card("Animals", "The marsupial house."))
    idx.refresh()
    assert ids(search_index(idx, "marsupial")) == ["reference/animals"]  # found: no correction needed
    # a typo of a new word waits for the rebuild (a swap of two letters, "marsupail", is
    # found without it: the swaps are looked up in the index itself)
    assert search_index(idx, "marsupual").results == []
    assert search_index(idx, "pytets").corrected == {"pytets": "pytest"}  # old words still corrected
    vocabulary(idx, force=True)
    assert ids(search_index(idx, "marsupual")) == ["reference/animals"]
