"""The real anthropic SDK against the fake Messages API (tests/fakeapi.py)."""
from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request

import anthropic
import httpx2
import pytest
from fakeapi import FakeAPI, drop, error, reply, text, tool_use

MODEL = "claude-sonnet-4-6"
USER = [{"role": "user", "content": "hello"}]


def sdk(api: FakeAPI, **kw) -> anthropic.Anthropic:
    kw.setdefault("timeout", 5.0)
    kw.setdefault("max_retries", 0)
    return anthropic.Anthropic(api_key="sk-ant-fake", base_url=api.base_url, **kw)


def test_plain_text_reply(fake_api: FakeAPI) -> None:
    fake_api.add(reply("The deploy uses uv lock --frozen.", usage={"input_tokens": 42, "output_tokens": 7}))
    msg = sdk(fake_api).messages.create(model=MODEL, max_tokens=100, system="be brief", messages=USER)
    assert [b.type for b in msg.content] == ["text"]
    assert msg.content[0].text == "The deploy uses uv lock --frozen."
    assert msg.stop_reason == "end_turn"
    assert (msg.usage.input_tokens, msg.usage.output_tokens) == (42, 7)
    assert msg.model == MODEL  # echoed from the request


def test_tool_use_turn_then_final_text(fake_api: FakeAPI) -> None:
    fake_api.add([text("Let me look."), tool_use("read_card", {"id": "people/ana"}, id="toolu_1")],
                 "Ana owns the deploy.")
    client = sdk(fake_api)
    tools = [{"name": "read_card", "description": "read one card",
              "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}}}]
    first = client.messages.create(model=MODEL, max_tokens=100, messages=USER, tools=tools)
    assert first.stop_reason == "tool_use"
    call = first.content[1]
    assert (call.type, call.id, call.name, call.input) == ("tool_use", "toolu_1", "read_card", {"id": "people/ana"})

    history = USER + [{"role": "assistant", "content": first.content},
                      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id,
                                                    "content": "Ana: owns deploys"}]}]
    final = client.messages.create(model=MODEL, max_tokens=100, messages=history, tools=tools)
    assert final.stop_reason == "end_turn" and final.content[0].text == "Ana owns the deploy."

    sent = fake_api.messages_requests()[1].body
    assert sent["tools"][0]["name"] == "read_card"
    assert sent["messages"][1]["content"][1] == {"type": "tool_use", "id": "toolu_1", "name": "read_card",
                                                  "input": {"id": "people/ana"}}
    assert sent["messages"][2]["content"][0]["tool_use_id"] == "toolu_1"


def test_streaming_text_and_final_message(fake_api: FakeAPI) -> None:
    words = "Streaming arrives in several pieces, and the SDK joins them back together."
    fake_api.add([text(words), tool_use("list_recent", {"type": "feedback", "since": "2026-11-01"}, id="toolu_s")])
    with sdk(fake_api).messages.stream(model=MODEL, max_tokens=100, messages=USER) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert len(pieces) > 1 and "".join(pieces) == words
    assert final.content[0].text == words
    assert final.content[1].input == {"type": "feedback", "since": "2026-11-01"}
    assert final.stop_reason == "tool_use" and final.usage.output_tokens > 1
    assert fake_api.messages_requests()[0].body["stream"] is True


def test_raw_stream_event_order(fake_api: FakeAPI) -> None:
    fake_api.add([text("hi"), tool_use("read_memory_map", {})])
    events = [e.type for e in sdk(fake_api).messages.create(model=MODEL, max_tokens=10, messages=USER, stream=True)]
    assert events[0] == "message_start" and events[-2:] == ["message_delta", "message_stop"]
    assert events.count("content_block_start") == events.count("content_block_stop") == 2
    assert "content_block_delta" in events


def test_429_then_success_is_retried(fake_api: FakeAPI) -> None:
    fake_api.add(error(429), error(529), "after retries")
    msg = sdk(fake_api, max_retries=2).messages.create(model=MODEL, max_tokens=10, messages=USER)
    assert msg.content[0].text == "after retries"
    assert len(fake_api.messages_requests()) == 3


def test_errors_surface_with_their_class_when_retries_run_out(fake_api: FakeAPI) -> None:
    fake_api.add(error(529), error(529), error(429, "slow down"), error(500))
    with pytest.raises(anthropic.OverloadedError) as exc:
        sdk(fake_api, max_retries=1).messages.create(model=MODEL, max_tokens=10, messages=USER)
    assert exc.value.status_code == 529 and exc.value.body["error"]["type"] == "overloaded_error"
    with pytest.raises(anthropic.RateLimitError, match="slow down"):
        sdk(fake_api).messages.create(model=MODEL, max_tokens=10, messages=USER)
    with pytest.raises(anthropic.InternalServerError):
        sdk(fake_api).messages.create(model=MODEL, max_tokens=10, messages=USER)
    assert len(fake_api.messages_requests()) == 4


def test_slow_reply_beyond_timeout_raises_timeout(fake_api: FakeAPI) -> None:
    fake_api.add(reply("too late", delay=20))
    start = time.monotonic()
    with pytest.raises(anthropic.APITimeoutError):
        sdk(fake_api, timeout=0.3).messages.create(model=MODEL, max_tokens=10, messages=USER)
    assert time.monotonic() - start < 5  # the 0.3 s timeout, not the 20 s reply
    # a per-request timeout overrides the client's
    fake_api.add(reply("late again", delay=3))
    with pytest.raises(anthropic.APITimeoutError):
        sdk(fake_api, timeout=30).messages.create(model=MODEL, max_tokens=10, messages=USER, timeout=0.3)


def test_slow_stream_between_events_times_out(fake_api: FakeAPI) -> None:
    # SDK 2.14 fact: once headers arrived, a stalled stream raises httpx2's own
    # ReadTimeout (not anthropic.APITimeoutError), and it is not retried.
    fake_api.add(reply("one two three four five six", event_delay=1.0))
    with pytest.raises(httpx2.ReadTimeout):
        with sdk(fake_api, timeout=0.3).messages.stream(model=MODEL, max_tokens=10, messages=USER) as s:
            s.get_final_text()


def test_dropped_connection(fake_api: FakeAPI) -> None:
    fake_api.add(drop())
    with pytest.raises(anthropic.APIConnectionError):
        sdk(fake_api).messages.create(model=MODEL, max_tokens=10, messages=USER)
    fake_api.add(drop(), "reconnected")
    msg = sdk(fake_api, max_retries=1).messages.create(model=MODEL, max_tokens=10, messages=USER)
    assert msg.content[0].text == "reconnected"


def test_stream_broken_midway(fake_api: FakeAPI) -> None:
    fake_api.add(reply("a long answer that never finishes", drop_after_events=3))
    with pytest.raises(httpx2.RemoteProtocolError):  # raw httpx2 error mid-stream, as above
        with sdk(fake_api).messages.stream(model=MODEL, max_tokens=10, messages=USER) as s:
            s.get_final_text()
    fake_api.add(error(529, mid_stream_error=True))
    with pytest.raises(anthropic.APIStatusError, match="overloaded_error"):
        with sdk(fake_api).messages.stream(model=MODEL, max_tokens=10, messages=USER) as s:
            s.get_final_text()


def test_requests_are_recorded(fake_api: FakeAPI) -> None:
    sdk(fake_api).messages.create(model=MODEL, max_tokens=33, system="sys", messages=USER)
    (req,) = fake_api.requests
    assert (req.method, req.path) == ("POST", "/v1/messages")
    assert req.api_key == "sk-ant-fake" and "anthropic-version" in req.headers
    assert req.body["max_tokens"] == 33 and req.body["system"] == "sys" and req.body["messages"] == USER


def test_fallback_handler_and_routing(fake_api: FakeAPI) -> None:
    client = sdk(fake_api)
    ask = lambda model: client.messages.create(model=model, max_tokens=5, messages=USER).content[0].text  # noqa: E731
    assert ask(MODEL) == "OK (fake fallback)"                     # empty queue: the fallback
    fake_api.handler = lambda body: f"handled {body['model']}"
    assert ask("claude-haiku-4-5") == "handled claude-haiku-4-5"
    fake_api.add("for the main model", when=lambda body: body["model"] == MODEL)
    assert ask("claude-haiku-4-5") == "handled claude-haiku-4-5"  # side call does not eat the scripted reply
    assert ask(MODEL) == "for the main model"
    assert fake_api.pending == 0


def test_count_tokens_and_unknown_paths(fake_api: FakeAPI) -> None:
    count = sdk(fake_api).messages.count_tokens(model=MODEL, messages=USER)
    assert count.input_tokens >= 1
    with pytest.raises(urllib.error.HTTPError) as exc:
        urllib.request.urlopen(f"{fake_api.base_url}/api/oauth/whatever?x=1", timeout=5)
    assert exc.value.code == 404 and json.load(exc.value)["error"]["type"] == "not_found_error"
    assert [(r.method, r.path) for r in fake_api.requests][-1] == ("GET", "/api/oauth/whatever")
    assert fake_api.messages_requests() == []  # neither consumed nor counted as a messages call


def test_concurrent_requests_recorded_and_stop_does_not_hang() -> None:
    with FakeAPI(fallback="same") as api:
        client = sdk(api)
        out: list[str] = []
        threads = [threading.Thread(target=lambda: out.append(
            client.messages.create(model=MODEL, max_tokens=5, messages=USER).content[0].text)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert out == ["same"] * 8 and len(api.messages_requests()) == 8
        api.add(reply("never sent", delay=30))
        errors: list[BaseException] = []

        def call() -> None:
            try:
                client.messages.create(model=MODEL, max_tokens=5, messages=USER)
            except BaseException as e:  # noqa: BLE001 - recorded for the assertion below
                errors.append(e)

        hung = threading.Thread(target=call, daemon=True)
        hung.start()
        api.wait_for(9)
        start = time.monotonic()
    assert time.monotonic() - start < 3  # leaving the with-block stopped the server despite the 30 s delay
    hung.join(5)
    assert not hung.is_alive() and isinstance(errors[0], anthropic.APIConnectionError)
