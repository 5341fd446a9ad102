"""`cardmem search` in the first hour (issue 15): filters that match nothing, --type's
choices, an empty query, snippets' bold, transposed letters. In-process."""
from __future__ import annotations

import json

import pytest
from gitremote import cli

from cardmem.tools.search_text import lines


def test_a_filter_matching_no_card_is_named_not_blamed_on_the_query(example_store) -> None:
    s = str(example_store.root)
    code, out, _ = cli("search", "deploy", "--type", "feedback", "--project", "acme-api",
                       "--store", s)
    assert code == 0
    assert out.startswith("No card has type feedback and project acme-api: the filter"), out
    assert "No confident results" not in out
    code, out, _ = cli("search", "deploy", "--project", "nosuch", "--json", "--store", s)
    doc = json.loads(out)
    assert doc["results"] == [] and doc["filter_matches_nothing"] is True
    # a filter some card passes, with a query none of them matches: the query is named
    code, out, _ = cli("search", "zxqv blorf", "--type", "feedback", "--store", s)
    assert out.startswith("No confident results for 'zxqv blorf'"), out
    doc = json.loads(cli("search", "deploy", "--type", "feedback", "--json", "--store", s)[1])
    assert doc["results"] and doc["filter_matches_nothing"] is False


def test_type_is_one_of_the_card_types(example_store) -> None:
    code, _, err = cli("search", "deploy", "--type", "feedbak", "--store",
                       str(example_store.root))
    assert code == 2 and "'feedbak' is not one of" in err and "'reference'" in err


@pytest.mark.parametrize("query", [[""], ["  "], []])
def test_an_empty_query_is_refused_as_over_mcp(example_store, query) -> None:
    code, out, err = cli("search", *query, "--store", str(example_store.root))
    assert code == 2 and out == ""
    assert "query" in err.lower() or "QUERY" in err


@pytest.mark.parametrize("typo,card", [("deplyo", "projects/acme-api/deploy"),
                                        ("stirpe", "entities/stripe")])
def test_transposed_letters_are_corrected(example_store, typo: str, card: str) -> None:
    code, out, _ = cli("search", typo, "--json", "--store", str(example_store.root))
    doc = json.loads(out)
    assert typo in doc["corrected"]
    assert card in [r["id"] for r in doc["results"][:3]]


def test_snippets_bold_on_a_terminal_and_plain_elsewhere(example_store) -> None:
    code, out, _ = cli("search", "webhooks", "--store", str(example_store.root))
    assert code == 0 and "webhooks" in out and "**" not in out
    doc = json.loads(cli("search", "webhooks", "--json", "--store",
                         str(example_store.root))[1])
    assert any("**" in r["snippet"] for r in doc["results"])  # JSON keeps the marks

    class Res:
        corrected, no_confident_results, query, empty_filter = {}, False, "q", None
        results = [{"id": "a", "type": "reference", "title": "A", "confidence": "high",
                    "status": "active", "snippet": "the **deploy** step"}]
    assert lines(Res(), tty=True)[1] == "    the \x1b[1mdeploy\x1b[0m step"
    assert lines(Res(), tty=False)[1] == "    the deploy step"
