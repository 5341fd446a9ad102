"""`cardmem search` and `cardmem index` as a user and a host run them: `python -m
cardmem.tools.cli`'s main in-process (tests/clikit.py); a process where what it imports is
the point."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from clikit import Ran, run

PYTEST_CARD = "projects/acme-api/pytest-fixtures"


def cardmem(*args: str) -> Ran:
    return run(*args)


def test_search_json_has_the_contract_shape(example_store) -> None:
    p = cardmem("search", "pytets fixtrues", "--json", "--store", str(example_store.root))
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["query"] == "pytets fixtrues" and doc["no_confident_results"] is False
    top = doc["results"][0]
    assert top["id"] == PYTEST_CARD and top["confidence"] == "high"
    for r in doc["results"]:
        assert {"id", "title", "type", "score", "confidence", "snippet"} <= set(r)
    assert doc["corrected"] == {"pytets": "pytest", "fixtrues": "fixtures"}


def test_search_text_finds_the_typo_card_and_says_what_it_corrected(example_store) -> None:
    p = cardmem("search", "pytets", "fixtrues", "--limit", "3", "--store", str(example_store.root))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "(corrected: pytets -> pytest, fixtrues -> fixtures)"
    assert lines[1].startswith(f"{PYTEST_CARD}  [project]  pytest fixtures for the API tests")
    assert sum(1 for ln in lines if not ln.startswith((" ", "("))) == 3


def test_nonsense_says_so_plainly(example_store) -> None:
    p = cardmem("search", "zxqv blorf", "--store", str(example_store.root))
    assert p.returncode == 0
    assert p.stdout.startswith("No confident results for 'zxqv blorf'")
    j = json.loads(cardmem("search", "zxqv blorf", "--json", "--store",
                           str(example_store.root)).stdout)
    assert j["no_confident_results"] is True


@pytest.mark.parametrize("query", ["-x", '"', "NEAR(a", "a:b", "*", "🎉", "日本語", "OR"])
def test_hostile_queries_from_the_command_line(example_store, query: str) -> None:
    p = cardmem("search", "--json", "--store", str(example_store.root), "--", query)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["query"] == query


def test_filters(example_store) -> None:
    s = str(example_store.root)
    doc = json.loads(cardmem("search", "deploy", "--type", "feedback", "--json",
                             "--store", s).stdout)
    assert doc["results"] and {r["type"] for r in doc["results"]} == {"feedback"}
    doc = json.loads(cardmem("search", "tests", "--project", "acme-api", "--json",
                             "--store", s).stdout)
    assert doc["results"] and all(r["id"].startswith("projects/acme-api/") for r in doc["results"])


def test_index_then_full_rebuild(example_store) -> None:
    s = str(example_store.root)
    first = json.loads(cardmem("index", "--json", "--store", s).stdout)
    assert first["added"] == first["cards"] == 55 and first["problem_files"] == []
    again = cardmem("index", "--store", s)
    assert again.stdout.startswith("index: 55 cards (0 added, 0 updated, 0 removed, 55 unchanged")
    bad = example_store.root / "reference" / "broken.md"
    bad.write_text("---\ntitle: [x\n---\n")
    full = cardmem("index", "--full", "--store", s)
    assert full.returncode == 0 and "rebuilt" in full.stdout
    assert f"cardmem: {bad}: skipped: bad YAML frontmatter" in full.stderr


def test_index_repairs_a_damaged_file(example_store) -> None:
    s = str(example_store.root)
    cardmem("index", "--store", s)
    db = example_store.root / ".cardmem" / "index.sqlite"
    size = db.stat().st_size
    with open(db, "r+b") as fh:
        fh.seek(size // 2)
        fh.write(b"\xff" * 8192)
    p = cardmem("index", "--store", s)
    assert p.returncode == 0 and "index: was damaged" in p.stderr
    assert json.loads(cardmem("search", "pytest fixtures", "--json", "--store", s)
                      .stdout)["results"][0]["id"] == PYTEST_CARD


def test_a_missing_store_is_one_clear_error(tmp_path: Path) -> None:
    p = cardmem("search", "x", "--store", str(tmp_path / "nope"))
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.startswith(f"cardmem: store {tmp_path / 'nope'}: does not exist")
    assert len(p.stderr.splitlines()) == 1


def test_the_search_process_stays_lean(example_store) -> None:
    """A fresh index and a plain query, semantic layer off: no YAML, frontmatter, rapidfuzz,
    numpy, the semantic module (hashlib loads OpenSSL) or socket (no server) imported."""
    s = str(example_store.root)
    cardmem("index", "--store", s)
    code = ("import sys\nfrom cardmem.tools.cli.group import main\nsys.argv=['cardmem','search',"
            f"'pytest fixtures','--store',{s!r}]\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('yaml','frontmatter','rapidfuzz','anthropic','mcp','numpy',"
            "'hashlib','socket','cardmem.store.search.semantic')"
            " if m in sys.modules), file=sys.stderr)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert PYTEST_CARD in p.stdout
    assert p.stderr.strip().splitlines()[-1] == "[]"


def test_demo_has_a_search_step() -> None:
    from cardmem.tools.cli import demo

    assert ("search, typo-tolerant", "search", "pytets fixtrues") in demo.STEPS


def test_an_unwritable_state_folder_is_one_clear_error(example_store) -> None:
    import os

    if os.geteuid() == 0:
        state = example_store.root / ".cardmem"
        state.mkdir(exist_ok=True)
        (state / "index.sqlite").mkdir()  # a folder where the file should be: refused even as root
    else:
        (example_store.root / ".cardmem").mkdir(mode=0o500, exist_ok=True)
    p = cardmem("search", "pytest", "--store", str(example_store.root))
    assert p.returncode != 0 and p.stdout == ""
    assert p.stderr.startswith("cardmem: index ") and len(p.stderr.splitlines()) == 1
