"""`cardmem maintain`, in-process through CliRunner, on stores built from the corpus."""
from __future__ import annotations

import json

import pytest
from gitremote import cli
from maintainkit import commit_as_person, corpus_store, git


@pytest.fixture
def corpus(tmp_path):
    return corpus_store(tmp_path / "store", ("oxc", "ruff"))


def test_help_ends_with_an_example() -> None:
    code, out, _ = cli("maintain", "--help")
    assert code == 0
    tail = out.rstrip().splitlines()
    assert tail[-4].strip() == "Example:" and tail[-1].strip().startswith("cardmem maintain")


@pytest.mark.corpus
def test_clean_store_json_says_no_findings_and_that_contradictions_were_skipped(corpus) -> None:
    code, out, err = cli("maintain", "--json", "--store", str(corpus.root))
    assert code == 0, err
    doc = json.loads(out)
    assert doc["findings"] == []
    assert any(n.startswith("contradiction: skipped") for n in doc["notes"])
    code, out, _ = cli("maintain", "--store", str(corpus.root))
    assert "no findings" in out and "contradiction: skipped" in out


@pytest.mark.corpus
def test_json_findings_have_the_contract_keys_and_only_filters(corpus) -> None:
    p = corpus.root / "projects/oxc/testing.md"
    p.write_text(p.read_text() + "\nSee [[projects/oxc/gone]].\n")
    commit_as_person(corpus)
    head = git(corpus, "rev-parse", "HEAD")
    code, out, err = cli("maintain", "--json", "--only", "broken-link", "--store", str(corpus.root))
    assert code == 0, err
    [f] = json.loads(out)["findings"]
    assert f == {"kind": "broken-link", "ids": ["projects/oxc/testing"],
                 "detail": "[[projects/oxc/gone]] names no card",
                 "suggestion": "create the card, or remove or fix the link"}
    assert json.loads(out)["notes"] == []  # contradiction not asked for, not mentioned
    code, out, _ = cli("maintain", "--json", "--only", "stale", "--store", str(corpus.root))
    assert json.loads(out)["findings"] == []
    assert git(corpus, "rev-parse", "HEAD") == head and git(corpus, "status", "--porcelain") == ""


def test_bad_kind_and_no_store_are_one_line_errors(tmp_path) -> None:
    code, _, err = cli("maintain", "--only", "typo", "--store", str(tmp_path))
    assert code == 2 and "typo" in err
    code, _, err = cli("maintain", "--store", str(tmp_path / "none"))
    assert code != 0 and err.startswith("cardmem: ") and len(err.strip().splitlines()) == 1


@pytest.mark.corpus
def test_apply_on_a_clean_store_changes_nothing(corpus) -> None:
    head = git(corpus, "rev-parse", "HEAD")
    code, out, err = cli("maintain", "--apply", "--store", str(corpus.root))
    assert code == 0, err
    assert "no findings" in out and "applied" not in out
    assert git(corpus, "rev-parse", "HEAD") == head and git(corpus, "status", "--porcelain") == ""
