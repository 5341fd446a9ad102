"""A scripted conversation through the real anthropic SDK (tool runner) against the fake
Messages API: the model's memory tool calls land on the store as cards and commits."""
from __future__ import annotations

import json
import subprocess

from fakeapi import text, tool_use

from cardmem.tools.agents.memory_tool import memory_tool


def _tool_results(request) -> list[dict]:
    """The tool_result blocks of the last user turn of a recorded request."""
    last = request.body["messages"][-1]
    assert last["role"] == "user"
    return [b for b in last["content"] if b.get("type") == "tool_result"]


def _result_text(block: dict) -> str:
    content = block["content"]
    if isinstance(content, str):
        return content
    return "".join(c.get("text", "") for c in content)


def test_a_conversation_remembers_through_the_memory_tool(model_env, store) -> None:
    from cardmem.tools.model import client

    api = model_env
    api.add([text("Let me check my memory first."),
             tool_use("memory", {"command": "view", "path": "/memories"}, id="toolu_view")])
    api.add([tool_use("memory", {"command": "create", "path": "/memories/user/coffee.md",
                                 "file_text": "# Coffee\n\nThe user drinks flat whites.\n"},
                      id="toolu_create")])
    api.add([tool_use("memory", {"command": "str_replace", "path": "/memories/user/coffee.md",
                                 "old_str": "flat whites", "new_str": "cortados, no sugar"},
                      id="toolu_edit"),
             tool_use("memory", {"command": "view", "path": "/memories/../cardmem.toml"},
                      id="toolu_escape")])
    api.add("Noted: cortados, no sugar.")

    tool = memory_tool(store, session="conv-1")
    runner = client({"name": "claude-fake"}).beta.messages.tool_runner(
        model="claude-fake", max_tokens=256, tools=[tool],
        messages=[{"role": "user", "content": "Remember: I drink cortados, no sugar."}])
    final = runner.until_done()

    assert "".join(b.text for b in final.content if b.type == "text") == "Noted: cortados, no sugar."
    requests = api.messages_requests()
    assert len(requests) == 4
    # The tool went to the API as the client-side memory tool.
    assert {"type": "memory_20250818", "name": "memory"} in requests[0].body["tools"]
    # Each tool_use got its answer from the store-backed tool.
    view = _tool_results(requests[1])
    assert [b["tool_use_id"] for b in view] == ["toolu_view"]
    assert _result_text(view[0]).startswith(
        "Here're the files and directories up to 2 levels deep in /memories")
    created = _tool_results(requests[2])
    assert _result_text(created[0]) == "File created successfully at: /memories/user/coffee.md"
    edits = {b["tool_use_id"]: b for b in _tool_results(requests[3])}
    assert "has been edited" in _result_text(edits["toolu_edit"])
    assert not edits["toolu_edit"].get("is_error")
    assert edits["toolu_escape"]["is_error"] is True
    assert "escape /memories" in _result_text(edits["toolu_escape"])

    card = store.root / "memories" / "user" / "coffee.md"
    assert card.read_text() == "# Coffee\n\nThe user drinks cortados, no sugar.\n"
    log = subprocess.run(["git", "-C", str(store.root), "log", "-2", "--format=%an|%s|%b"],
                         capture_output=True, text=True, check=True).stdout
    assert "cardmem-agent|memory: edit memories/user/coffee|" in log
    assert "cardmem-agent|memory: create memories/user/coffee|" in log
    assert log.count("Cardmem-Session: conv-1") == 2
    json.dumps([r.body for r in requests])  # every request was plain JSON the SDK built
