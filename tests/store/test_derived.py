"""store/derived.py after a commit: a write that touches no rule opens no Index; one that
touches a rule (made one, or stopped being one) brings the rule's index row up to date."""
from __future__ import annotations

import pytest

from cardmem.store.git.writer import Message
from cardmem.store.index import db

RULE = "---\ntitle: Run tests with -x\ntype: feedback\n---\nStop at the first failure.\n"
NOTE = "---\ntitle: Deploy notes\ntype: reference\n---\nDeploy on Tuesdays.\n"


@pytest.fixture
def opened(example_store, monkeypatch) -> list[str]:
    with db.Index(example_store) as idx:
        idx.refresh()
    seen: list[str] = []
    real = db.Index.__init__

    def spy(self, *a, **kw) -> None:
        seen.append("open")
        real(self, *a, **kw)

    monkeypatch.setattr(db.Index, "__init__", spy)
    return seen


def rule_ids(store) -> set[str]:
    with db.Index(store) as idx:
        return {r[0] for r in idx.conn.execute("SELECT id FROM cards WHERE type = 'feedback'")}


def test_a_commit_of_no_rule_opens_no_index(example_store, opened) -> None:
    example_store.commit({"reference/deploy-notes.md": NOTE.encode()}, Message("note"),
                         agent=False)
    assert opened == []


def test_a_rule_made_and_unmade_reaches_the_index_at_once(example_store, opened) -> None:
    store = example_store
    store.commit({"projects/acme/run-tests.md": RULE.encode()}, Message("rule"), agent=False)
    assert opened and "projects/acme/run-tests" in rule_ids(store)
    store.commit({"projects/acme/run-tests.md": NOTE.encode()}, Message("not a rule"),
                 agent=False)
    assert "projects/acme/run-tests" not in rule_ids(store)
