"""Fake model APIs for the Codex, Gemini and Copilot CLIs, on 127.0.0.1: what each CLI
sends is recorded, and each request is answered by a test's function.

    with FakeModels(answer) as fake:      # answer(kind, body, n) -> a list of outputs
        ... codex -c model_providers.fake.base_url={fake.base_url}/v1 ...
        ... GOOGLE_GEMINI_BASE_URL={fake.base_url} gemini -p ...
        ... COPILOT_PROVIDER_BASE_URL={fake.base_url}/v1 copilot -p ...
        fake.requests                     # [(path, body)], in order

An output is ("text", "...") or ("shell", "the command line"). Codex gets them as the
Responses API's server-sent events (POST /v1/responses); Gemini CLI as a
generateContent or streamGenerateContent answer (POST /v1beta/models/M:…); Copilot CLI
(its own model provider, "openai") as Chat Completions chunks (POST /v1/chat/completions).
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Answer = Callable[[str, dict, int], list[tuple[str, str]]]


class FakeModels:
    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[tuple[str, dict]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "FakeModels":
        fake = self

        class Handler(_Handler):
            models = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    def model_requests(self, kind: str) -> list[dict]:
        return [b for p, b in self.requests if _kind(p) == kind]


def _kind(path: str) -> str:
    if path.endswith("/responses"):
        return "codex"
    if ":generateContent" in path or ":streamGenerateContent" in path:
        return "gemini"
    if path.endswith("/chat/completions"):
        return "copilot"
    return ""


class _Handler(BaseHTTPRequestHandler):
    models: FakeModels
    protocol_version = "HTTP/1.1"

    def log_message(self, *a: Any) -> None:
        pass

    def do_GET(self) -> None:  # model lists and the like: an empty answer
        self._send(200, "application/json", b'{"models": [], "data": []}')

    def do_POST(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if self.headers.get("Content-Encoding") == "zstd":
            body = {}
        else:
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
        kind = _kind(self.path)
        with self.models._lock:
            self.models.requests.append((self.path, body))
            count = len(self.models.model_requests(kind)) if kind else 0
        if not kind:
            self._send(404, "application/json", b'{"error": "not faked"}')
            return
        outputs = self.models.answer(kind, body, count)
        if kind == "codex":
            self._codex(outputs, count)
        elif kind == "copilot":
            self._chat(outputs, count, stream=bool(body.get("stream")))
        else:
            self._gemini(outputs, stream=":streamGenerateContent" in self.path)

    def _send(self, status: int, ctype: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _codex(self, outputs: list[tuple[str, str]], n: int) -> None:
        rid = f"resp_{n}"
        events = [("response.created", {"type": "response.created",
                                        "response": {"id": rid, "status": "in_progress"}})]
        for i, (what, value) in enumerate(outputs):
            if what == "text":
                item = {"type": "message", "role": "assistant", "id": f"msg_{n}_{i}",
                        "content": [{"type": "output_text", "text": value, "annotations": []}]}
            else:
                item = {"type": "function_call", "id": f"fc_{n}_{i}", "call_id": f"call_{n}_{i}",
                        "name": "exec_command", "arguments": json.dumps({"cmd": value})}
            events.append(("response.output_item.done",
                           {"type": "response.output_item.done", "output_index": i, "item": item}))
        events.append(("response.completed", {"type": "response.completed", "response": {
            "id": rid, "status": "completed", "output": [],
            "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": 15}}}))
        data = "".join(f"event: {e}\ndata: {json.dumps(d)}\n\n" for e, d in events).encode()
        self._send(200, "text/event-stream", data)

    def _gemini(self, outputs: list[tuple[str, str]], stream: bool) -> None:
        parts = []
        for what, value in outputs:
            if what == "text":
                parts.append({"text": value})
            else:
                parts.append({"functionCall": {"name": "run_shell_command",
                                               "args": {"command": value}}})
        doc = {"candidates": [{"content": {"role": "model", "parts": parts},
                               "finishReason": "STOP", "index": 0}],
               "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                                 "totalTokenCount": 15}}
        if stream:
            self._send(200, "text/event-stream", f"data: {json.dumps(doc)}\n\n".encode())
        else:
            self._send(200, "application/json", json.dumps(doc).encode())

    def _chat(self, outputs: list[tuple[str, str]], n: int, stream: bool) -> None:
        """Chat Completions: text as content, a shell command as a call of Copilot's
        `bash` tool."""
        text = "".join(v for what, v in outputs if what == "text")
        calls = [{"index": i, "id": f"call_{n}_{i}", "type": "function",
                  "function": {"name": "bash", "arguments": json.dumps(
                      {"command": v, "description": "Run the command"})}}
                 for i, (what, v) in enumerate(o for o in outputs if o[0] == "shell")]
        done = "tool_calls" if calls else "stop"
        message = {"role": "assistant", "content": text or None,
                   **({"tool_calls": calls} if calls else {})}
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        head = {"id": f"chatcmpl-{n}", "created": 1796231000, "model": "gpt-4.1"}
        if not stream:
            doc = {**head, "object": "chat.completion", "usage": usage,
                   "choices": [{"index": 0, "message": message, "finish_reason": done}]}
            self._send(200, "application/json", json.dumps(doc).encode())
            return
        chunks = [{**head, "object": "chat.completion.chunk",
                   "choices": [{"index": 0, "delta": message, "finish_reason": None}]},
                  {**head, "object": "chat.completion.chunk", "usage": usage,
                   "choices": [{"index": 0, "delta": {}, "finish_reason": done}]}]
        data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        self._send(200, "text/event-stream", data.encode())
