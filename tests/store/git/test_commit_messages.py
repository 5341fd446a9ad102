"""What cardmem's commits say (issue 15): revert's trailer, whole session ids, a capped
message for a large batch, the SessionEnd hook named as such."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from gitremote import cli

from cardmem.store.git import runner as git
from cardmem.store.learning.compound import file_signals
from cardmem.store.git.writer import MESSAGE_LINES, Message

SESSION = "0a6a12f9-1111-4222-8333-444455556666"


def body(root: Path, rev: str = "HEAD") -> str:
    return subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%B", rev],
                          capture_output=True, text=True, check=True).stdout


def test_revert_commits_carry_the_cardmem_source_trailer(tmp_path: Path) -> None:
    s = tmp_path / "s"
    assert cli("init", str(s))[0] == 0
    assert cli("new", "reference/a", "--title", "A", "--store", str(s))[0] == 0
    head = git.head(s)
    code, out, err = cli("revert", head, "--store", str(s))
    assert code == 0, err
    text = body(s)
    assert text.startswith('Revert "new: reference/a"')
    assert f"This reverts commit {head}." in text
    assert text.rstrip().endswith("Cardmem-Source: revert")
    assert not (s / "reference" / "a.md").exists()


def test_signal_commits_keep_the_whole_session_id(example_store) -> None:
    r = file_signals(example_store, ["Knowledge: the ledger-db replica lags 5 s at peak"],
                     SESSION, source="session-end-hook")
    assert r.commit
    text = body(example_store.root)
    assert f"Cardmem-Session: {SESSION}\n" in text
    assert "Cardmem-Source: session-end-hook" in text


def test_a_commit_of_a_thousand_cards_has_a_capped_message() -> None:
    msg = Message("watch: 1000 cards edited by hand", [f"reference/n{i}  M" for i in range(1000)],
                  source="watch")
    lines = msg.text().splitlines()
    assert len(lines) < MESSAGE_LINES + 8
    assert "... and 950 more (`git show --stat` lists them all)" in lines
    assert lines[-1] == "Cardmem-Source: watch"
    short = Message("s", ["a", "b"], source="cli").text()
    assert short == "s\n\na\nb\n\nCardmem-Source: cli\n"


def test_the_session_end_hook_commits_say_session_end(example_store, tmp_path, fake_api,
                                                      monkeypatch) -> None:
    from cardmem.hosts import learn as learning

    turns = [("user", "The billing-service workers keep hitting the KEDA ceiling. " * 5),
             ("assistant", "I raised KEDA maxReplicaCount for billing-service to 16. " * 5),
             ("user", "Great, keep it at 16. " * 5)]
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(json.dumps(
        {"type": role, "uuid": f"u{i}", "sessionId": SESSION, "isSidechain": False,
         "message": {"role": role, "content": [{"type": "text", "text": text}]}}) + "\n"
        for i, (role, text) in enumerate(turns)))
    fake_api.add("Decision: billing-service workers scale with KEDA up to 16 replicas now")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.base_url)
    before = git.head(example_store.root)
    outcome = learning.learn("session-end", {"session_id": SESSION,
                                             "transcript_path": str(transcript)},
                             str(example_store.root))
    assert outcome.startswith("ok: filed 1 signal"), outcome
    assert git.head(example_store.root) != before
    text = body(example_store.root)
    assert "Cardmem-Source: session-end-hook" in text and "stop-hook" not in text
    assert f"Cardmem-Session: {SESSION}" in text
