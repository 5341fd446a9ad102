"""The session-end pipeline without a host (tools/learning/session_end.py): what a host's
adapter hands in, the store, where its transcripts are, who hears of a give-up, is all it
knows of the host."""
from __future__ import annotations

import json

from cardmem.tools.learning.session_end import learn


def test_a_payload_without_a_transcript_asks_the_hosts_finder(store) -> None:
    asked: list[str] = []

    def transcript_of(session: str) -> str:
        asked.append(session)
        return ""

    out = learn("session-end", {"session_id": "s-1"}, store.root, transcript_of=transcript_of)
    assert asked == ["s-1"] and out == "skipped: no transcript_path"
    assert learn("session-end", {"session_id": "s-2"}, store.root) == \
        "skipped: no transcript_path"  # no finder: nothing to ask


def test_the_finders_transcript_is_read(store, tmp_path) -> None:
    small = tmp_path / "t.jsonl"
    small.write_text(json.dumps({"type": "user", "message": {"role": "user",
                                                             "content": "hi"}}) + "\n")
    out = learn("stop", {"session_id": "s-3"}, str(store.root), transcript_of=lambda s: str(small))
    assert out == "skipped: no transcript or under 1,000 bytes"


def test_no_store_is_said_not_raised(tmp_path) -> None:
    assert learn("stop", {"session_id": "s"}, tmp_path / "none").startswith("no store: ")
