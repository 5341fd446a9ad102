"""Learning at the end of a Cursor or Copilot CLI session: contract tests built from the
shapes their docs give (the `stop` / `agentStop` / `sessionEnd` payloads) and the
transcript files those payloads point at.

Cursor: https://cursor.com/docs/agent/hooks (common fields `conversation_id`,
`generation_id`, `workspace_roots`, `transcript_path`; `stop` adds `status`, `loop_count`);
its agent transcript is `{"role", "message": {"content": [...]}}` lines.
Copilot CLI: https://docs.github.com/en/copilot/reference/copilot-cli-reference/cli-hooks-reference
(`agentStop`: sessionId, timestamp, cwd, transcriptPath, stopReason; `sessionEnd`:
sessionId, timestamp, cwd, reason) and cli-config-dir-reference (session-state/<id>/events.jsonl).
"""
from __future__ import annotations

import io
import json
from datetime import date
from pathlib import Path

import pytest

from cardmem.hosts.hook import FOREGROUND_ENV, run
from cardmem.tools.learning.transcript import read_excerpt, talk_since

SAID = "Our staging deploys need the VPN up first, the {w} runbook says so. " * 4
REPLY = "Understood: I will bring the VPN up before deploying {w} to staging. " * 4


def cursor_transcript(path: Path, word: str) -> Path:
    lines = [
        {"role": "user", "message": {"content": [{"type": "text", "text":
            "<timestamp>Tuesday, Dec 1, 2026, 9:14 AM</timestamp>\n<attached_files>\n"
            "<file path=\"deploy.sh\"/>\n</attached_files>\n<user_query>\n"
            + SAID.format(w=word) + "\n</user_query>"}]}},
        {"role": "assistant", "message": {"content": [
            {"type": "text", "text": "[REDACTED]"},
            {"type": "tool_use", "name": "Shell", "input": {"command": "cat deploy.sh"}}]}},
        {"role": "assistant", "message": {"content": [{"type": "text",
                                                        "text": REPLY.format(w=word)}]}},
        {"type": "turn_ended", "status": "success"},
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def copilot_events(path: Path, word: str) -> Path:
    ev = [
        {"type": "session.start", "data": {"sessionId": "s", "version": 1,
                                           "context": {"cwd": "/w"}}},
        {"type": "user.message", "data": {"content": SAID.format(w=word),
                                          "transformedContent": "<current_datetime>…"}},
        {"type": "assistant.turn_start", "data": {"turnId": "0"}},
        {"type": "assistant.message", "data": {"messageId": "m1", "content": "",
                                               "toolRequests": [{"name": "bash"}]}},
        {"type": "tool.execution_start", "data": {"toolCallId": "t1", "toolName": "bash",
                                                  "arguments": {"command": "ls"}}},
        {"type": "tool.execution_complete", "data": {"toolCallId": "t1", "success": True}},
        {"type": "assistant.message", "data": {"messageId": "m2",
                                               "content": REPLY.format(w=word)}},
        {"type": "assistant.turn_end", "data": {"turnId": "0"}},
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({**e, "id": str(i), "timestamp": "2026-12-01T09:14:00Z",
                                        "parentId": None}) + "\n" for i, e in enumerate(ev)))
    return path


def test_cursor_transcript_gives_the_persons_words_and_the_reply(tmp_path):
    turns = read_excerpt(cursor_transcript(tmp_path / "c.jsonl", "kilo"))
    assert [(t.role, t.text) for t in turns] == [
        ("user", SAID.format(w="kilo").strip()), ("assistant", REPLY.format(w="kilo").strip())]


def test_copilot_events_give_the_talk_and_nothing_else(tmp_path):
    path = copilot_events(tmp_path / "events.jsonl", "kilo")
    turns = read_excerpt(path)
    assert [(t.role, t.text) for t in turns] == [
        ("user", SAID.format(w="kilo").strip()), ("assistant", REPLY.format(w="kilo").strip())]
    size = path.stat().st_size
    with path.open("a") as f:  # tool runs after the mark are not new talk
        f.write(json.dumps({"type": "tool.execution_start", "data": {"toolName": "bash"}}) + "\n")
    assert not talk_since(path, size)


def hook(host, event, payload, store, capsys):
    out = io.StringIO()
    assert run(event, str(store.root), stdin=io.StringIO(json.dumps(payload)), stdout=out,
               host=host) == 0
    return out.getvalue(), capsys.readouterr().err


def learned(store):
    return (store.root / ".cardmem" / "hooks.log").read_text().splitlines()[-1]


@pytest.fixture
def foreground(monkeypatch):
    monkeypatch.setenv(FOREGROUND_ENV, "1")


def test_cursor_stop_files_a_lesson(example_store, tmp_path, model_env, foreground, capsys):
    path = cursor_transcript(tmp_path / ".cursor/projects/w/agent-transcripts/c1/c1.jsonl", "kilo")
    model_env.add("Knowledge: staging deploys of kilo need the VPN up first")
    payload = {"hook_event_name": "stop", "conversation_id": "c1", "generation_id": "g7",
               "model": "claude-4.5-sonnet", "cursor_version": "2.1.0",
               "workspace_roots": [str(tmp_path)], "user_email": None,
               "transcript_path": str(path), "status": "completed", "loop_count": 0}
    out, err = hook("cursor", "stop", payload, example_store, capsys)
    assert out == "" and err == ""
    assert "stop/learn" in learned(example_store) and "ok: filed 1 signal(s)" in learned(example_store)
    card = learned(example_store).split(" into ")[1].split(",")[0]
    assert "kilo need the VPN" in example_store.read(card).text


def test_copilot_agent_stop_files_a_lesson(example_store, tmp_path, model_env, foreground, capsys):
    path = copilot_events(tmp_path / ".copilot/session-state/s1/events.jsonl", "lima")
    model_env.add("Knowledge: staging deploys of lima need the VPN up first")
    payload = {"sessionId": "s1", "timestamp": 1764580440000, "cwd": str(tmp_path),
               "transcriptPath": str(path), "stopReason": "end_turn"}
    out, err = hook("copilot", "agentStop", payload, example_store, capsys)
    assert out == "" and err == ""
    assert "ok: filed 1 signal(s)" in learned(example_store)


def test_copilot_session_end_finds_the_events_file_by_session(example_store, tmp_path, model_env,
                                                              foreground, capsys, monkeypatch):
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "copilot-home"))
    copilot_events(tmp_path / "copilot-home/session-state/s2/events.jsonl", "mike")
    model_env.add("Knowledge: staging deploys of mike need the VPN up first")
    payload = {"sessionId": "s2", "timestamp": 1764580440000, "cwd": str(tmp_path),
               "reason": "user_exit"}
    out, err = hook("copilot", "sessionEnd", payload, example_store, capsys)
    assert err == ""
    assert "session-end/learn" in learned(example_store)
    assert "ok: filed 1 signal(s)" in learned(example_store)
    # An id is never a path out of session-state/.
    from cardmem.hosts.copilot.protocol import transcript_of

    assert transcript_of("s2").endswith("session-state/s2/events.jsonl")
    assert transcript_of("../session-state/s2") == "" and transcript_of("") == ""


def test_a_stop_without_a_transcript_is_said_once_and_doctor_keeps_it(example_store, tmp_path,
                                                                        foreground, capsys):
    payload = {"hook_event_name": "stop", "conversation_id": "c9", "generation_id": "g1",
               "workspace_roots": [str(tmp_path)], "transcript_path": None,
               "status": "completed", "loop_count": 0}
    out, err = hook("cursor", "stop", payload, example_store, capsys)
    assert out == ""
    assert err.startswith("cardmem: hook cursor stop: Cursor sent no transcript path")
    assert "skipped: no transcript_path" in learned(example_store)
    _, err = hook("cursor", "stop", payload, example_store, capsys)
    assert err == ""  # once, not at every turn
    from cardmem.hosts.checks import no_transcript

    assert no_transcript(example_store, "cursor")
    path = cursor_transcript(tmp_path / "c.jsonl", "november")
    hook("cursor", "stop", {**payload, "transcript_path": str(path)}, example_store, capsys)
    assert not no_transcript(example_store, "cursor")  # transcripts are back
