"""tools/model.py: settings, the client builder and complete(), against the fake API."""
from __future__ import annotations

import subprocess
import sys

import pytest
from fakeapi import FakeAPI, error, reply

from cardmem.tools import model


def test_settings_defaults_and_overrides() -> None:
    assert model.settings() == model.ModelSettings(**model.DEFAULTS)
    s = model.settings({"name": "claude-haiku-4-5", "max_tokens": "200", "unknown": 1})
    assert (s.name, s.max_tokens, s.timeout_s) == ("claude-haiku-4-5", 200, 30.0)
    for bad in ({"max_tokens": "many"}, {"timeout_s": 0}, {"max_tokens": 0}):
        with pytest.raises(model.ModelError, match=r"^model: bad \[model\] setting"):
            model.settings(bad)


def test_no_key_is_one_clear_line(fake_api: FakeAPI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_api.base_url)
    with pytest.raises(model.ModelUnavailable) as exc:
        model.complete("sys", "hello")
    assert str(exc.value).startswith("model: no ANTHROPIC_API_KEY set, and `claude`")
    assert (exc.value.what, exc.value.exit_code) == ("model", 1)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "   ")
    with pytest.raises(model.ModelUnavailable):
        model.client()
    assert fake_api.requests == []


def test_complete_returns_text_and_usage(model_env: FakeAPI) -> None:
    model_env.add(reply("Decision: ", "keep -x", usage={"input_tokens": 120, "output_tokens": 9}))
    out = model.complete("Extract signals.", "transcript...", cfg={"name": "claude-haiku-4-5", "max_tokens": 300})
    assert out.text == "Decision: keep -x"
    assert out.usage == {"input_tokens": 120, "output_tokens": 9}
    assert (out.model, out.stop_reason) == ("claude-haiku-4-5", "end_turn")
    (req,) = model_env.requests
    assert req.api_key == "sk-ant-fake-test-key"
    assert req.body["system"] == "Extract signals." and req.body["max_tokens"] == 300
    assert req.body["messages"] == [{"role": "user", "content": "transcript..."}]


def test_client_has_explicit_timeout_and_retries(model_env: FakeAPI) -> None:
    c = model.client({"timeout_s": 12}, max_retries=1)
    assert (c.timeout, c.max_retries) == (12.0, 1)
    assert str(c.base_url).rstrip("/") == model_env.base_url


def test_complete_retries_then_reports_failures_in_one_line(model_env: FakeAPI) -> None:
    model_env.add(error(429), "fine")
    assert model.complete("", "hi").text == "fine"
    assert "system" not in model_env.messages_requests()[-1].body  # empty system is not sent
    model_env.add(error(529, "Overloaded"), error(529, "Overloaded"))
    with pytest.raises(model.ModelError, match=r"^model: HTTP 529: Overloaded$"):
        model.complete("", "hi", max_retries=1)


def test_complete_timeout(model_env: FakeAPI) -> None:
    model_env.add(reply("too late", delay=3))
    with pytest.raises(model.ModelError, match=r"^model: no answer within 0.3 s$"):
        model.complete("", "hi", cfg={"timeout_s": 0.3}, max_retries=0)


def test_unreachable_api(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeAPI() as api:
        url = api.base_url  # a port that is closed once the fake stops
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    with pytest.raises(model.ModelError, match=r"^model: cannot reach the API"):
        model.complete("", "hi", max_retries=0)


def test_import_is_lazy() -> None:
    code = "import sys, cardmem.tools.model; print('anthropic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
