"""Honest counts (issue 31): an ask stopped with Ctrl-C is counted as interrupted, not as
an error, in `receipts --stats`."""
from __future__ import annotations

import json
from gitremote import cli


def test_an_interrupted_ask_is_counted_as_interrupted(example_store, monkeypatch) -> None:
    import cardmem.store.context as context

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")

    def stopped(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(context, "question_context", stopped)
    code, _, _ = cli("ask", "Who approves a billing migration?", "--store", str(example_store.root))
    assert code == 130
    code, out, _ = cli("receipts", "--stats", "--json", "--store", str(example_store.root))
    assert code == 0
    assert json.loads(out)["outcomes"] == {"interrupted": 1}
