"""A fake Anthropic Messages API on 127.0.0.1, for tests (DESIGN §9).

The real SDK (and the Claude Code CLI) talk HTTP to it exactly as they would to
api.anthropic.com, so the production code path is exercised without the network.

    with FakeAPI() as api:                      # or the `fake_api` pytest fixture
        api.add("hello")                        # a text reply
        api.add([text("let me look"), tool_use("read_card", {"id": "user/me"})])
        api.add(error(429))                     # rate limited once
        api.add(reply("slow", delay=5))         # answers after 5 s
        client = anthropic.Anthropic(api_key="k", base_url=api.base_url)
        ...
        api.requests                            # every request: path, headers, body

Replies are served from a FIFO queue (each queued reply may carry a `when`
predicate on the request body, e.g. to route by model), then from `handler`
(a callable taking the request JSON and returning a reply or None), then from
`fallback`, so extra side calls (Claude Code's title generation) never break.
`"stream": true` requests get the same reply as Server-Sent Events.

Run standalone (`python tests/fakeapi.py --port 8765`) to serve the fallback text.
"""
from __future__ import annotations

import itertools
import json
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeAPI", "Reply", "Request", "text", "tool_use", "reply", "error", "drop"]

_ids = itertools.count(1)

# Anthropic error types by HTTP status (https://docs.anthropic.com/en/api/errors).
ERROR_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
    404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
    500: "api_error", 529: "overloaded_error",
}


# ---- building replies -------------------------------------------------------

def text(s: str) -> dict[str, Any]:
    """A text content block."""
    return {"type": "text", "text": s}


def tool_use(name: str, input: dict[str, Any] | None = None, id: str | None = None) -> dict[str, Any]:
    """A tool_use content block; `id` defaults to a fresh `toolu_fake_N`."""
    return {"type": "tool_use", "id": id or f"toolu_fake_{next(_ids)}", "name": name, "input": input or {}}


@dataclass
class Reply:
    """One scripted answer. `status` other than 200 makes it an error reply."""
    content: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None          # None: "tool_use" if any tool_use block, else "end_turn"
    usage: dict[str, int] | None = None     # None: rough counts from the request/reply sizes
    delay: float = 0.0                      # seconds before the first byte
    model: str | None = None                # None: echo the request's model
    status: int = 200
    error_type: str | None = None
    error_message: str | None = None
    retry_after_ms: int | None = None       # sent as retry-after-ms on errors (keeps SDK retries fast)
    drop: bool = False                      # close the connection without answering
    drop_after_events: int | None = None    # streaming: close mid-stream after N events
    mid_stream_error: bool = False          # streaming: send 200, then an SSE `error` event
    event_delay: float = 0.0                # streaming: seconds between SSE events
    when: Callable[[dict[str, Any]], bool] | None = None  # queue only: serve if the request matches


def reply(*content: str | dict[str, Any], **kw: Any) -> Reply:
    """A reply from strings (text blocks) and blocks; keywords are Reply fields."""
    return Reply(content=[text(c) if isinstance(c, str) else c for c in content], **kw)


def error(status: int = 429, message: str | None = None, type: str | None = None,
          retry_after_ms: int | None = 10, **kw: Any) -> Reply:
    """An Anthropic-shaped error reply (429 rate_limit_error, 529 overloaded_error, 500 api_error...)."""
    return Reply(status=status, error_type=type or ERROR_TYPES.get(status, "api_error"),
                 error_message=message or f"fake {status}", retry_after_ms=retry_after_ms, **kw)


def drop(**kw: Any) -> Reply:
    """Close the connection without a response (the SDK sees a connection error)."""
    return Reply(drop=True, **kw)


def as_reply(r: Reply | str | dict[str, Any] | Iterable[Any]) -> Reply:
    if isinstance(r, Reply):
        return r
    if isinstance(r, (str, dict)):
        return reply(r)
    return reply(*r)


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]     # lower-cased names
    body: Any                   # parsed JSON, or None
    time: float

    @property
    def api_key(self) -> str | None:
        """The key sent: x-api-key (Claude Code), or `Authorization: Bearer` (anthropic SDK 2.x)."""
        auth = self.headers.get("authorization", "")
        return self.headers.get("x-api-key") or (auth[7:] if auth.lower().startswith("bearer ") else None)


# ---- the server ---------------------------------------------------------------

class FakeAPI:
    def __init__(self, handler: Callable[[dict[str, Any]], Any] | None = None,
                 fallback: Reply | str | Iterable[Any] = "OK (fake fallback)") -> None:
        self.handler = handler
        self.fallback = fallback
        self._queue: list[Reply] = []
        self._requests: list[Request] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._conns: set[socket.socket] = set()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # scripting
    def add(self, *replies: Reply | str | dict[str, Any] | Iterable[Any], when: Callable[[dict], bool] | None = None) -> "FakeAPI":
        """Queue replies, served in order to /v1/messages calls (whose body `when` accepts)."""
        with self._lock:
            for r in replies:
                r = as_reply(r)
                if when is not None:
                    r.when = when
                self._queue.append(r)
        return self

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    # recording
    @property
    def requests(self) -> list[Request]:
        with self._lock:
            return list(self._requests)

    def messages_requests(self) -> list[Request]:
        """The POST /v1/messages requests only (no count_tokens, no probes)."""
        return [r for r in self.requests if r.method == "POST" and r.path == "/v1/messages"]

    def wait_for(self, n: int, timeout: float = 5.0) -> list[Request]:
        """Block until at least n /v1/messages requests were received."""
        end = time.monotonic() + timeout
        while len(got := self.messages_requests()) < n and time.monotonic() < end:
            time.sleep(0.01)
        return got

    # lifecycle
    @property
    def base_url(self) -> str:
        assert self._server is not None, "FakeAPI not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self, port: int = 0) -> "FakeAPI":
        if self._server is not None:
            return self
        self._stopping.clear()
        server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
        server.daemon_threads = True
        server.block_on_close = False   # stop() closes live connections itself
        server.fake = self  # type: ignore[attr-defined]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fakeapi", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()            # wakes handlers sleeping in a delay
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            conns = list(self._conns)
        for c in conns:                 # idle keep-alive connections would otherwise linger
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread:
            self._thread.join(2)
        self._server = None

    def __enter__(self) -> "FakeAPI":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # internals, called from handler threads
    def _record(self, req: Request) -> None:
        with self._lock:
            self._requests.append(req)

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            for i, r in enumerate(self._queue):
                if r.when is None or r.when(body):
                    return self._queue.pop(i)
        if self.handler is not None:
            r = self.handler(body)
            if r is not None:
                return as_reply(r)
        return as_reply(self.fallback)


def _estimate_tokens(obj: Any) -> int:
    return max(1, len(json.dumps(obj, ensure_ascii=False)) // 4)


def _message(r: Reply, body: dict[str, Any]) -> dict[str, Any]:
    """The full Message object the non-streaming endpoint returns."""
    stop = r.stop_reason or ("tool_use" if any(b.get("type") == "tool_use" for b in r.content) else "end_turn")
    usage = {"input_tokens": _estimate_tokens(body.get("messages", [])) if body else 1,
             "output_tokens": _estimate_tokens(r.content), "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0, "service_tier": "standard"}
    usage.update(r.usage or {})
    return {"id": f"msg_fake_{uuid.uuid4().hex[:20]}", "type": "message", "role": "assistant",
            "model": r.model or body.get("model") or "claude-fake", "content": r.content,
            "stop_reason": stop, "stop_sequence": None, "usage": usage}


def _pieces(s: str, n: int = 3) -> list[str]:
    """Split s into up to n roughly equal, non-empty parts (deltas arrive in pieces)."""
    if not s:
        return []
    size = max(1, -(-len(s) // n))
    return [s[i:i + size] for i in range(0, len(s), size)]


def _sse_events(msg: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The streaming form of a Message, event by event, as the real API sends it."""
    start = dict(msg, content=[], stop_reason=None, stop_sequence=None,
                 usage=dict(msg["usage"], output_tokens=1))
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(msg["content"]):
        if block["type"] == "text":
            first, deltas = {"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in _pieces(block["text"])]
        elif block["type"] == "tool_use":
            first = dict(block, input={})
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in ["", *_pieces(json.dumps(block["input"]))]]
        else:  # other block kinds (thinking...) are sent whole
            first, deltas = block, []
        events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": first}))
        if i == 0:
            events.append(("ping", {"type": "ping"}))
        events += [("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d}) for d in deltas]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    u = msg["usage"]
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                                     "usage": {"input_tokens": u["input_tokens"], "output_tokens": u["output_tokens"],
                                               "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _error_body(r: Reply) -> dict[str, Any]:
    return {"type": "error", "error": {"type": r.error_type or "api_error", "message": r.error_message or "error"},
            "request_id": f"req_fake_{uuid.uuid4().hex[:16]}"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive, as the SDK's connection pool expects
    server_version = "fakeapi/1"

    @property
    def fake(self) -> FakeAPI:
        return self.server.fake  # type: ignore[attr-defined]

    def setup(self) -> None:
        super().setup()
        with self.fake._lock:
            self.fake._conns.add(self.connection)

    def finish(self) -> None:
        with self.fake._lock:
            self.fake._conns.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:  # quiet: requests are recorded instead
        pass

    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            data = b""
            while (size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)):
                data += self.rfile.read(size)
                self.rfile.readline()
            while self.rfile.readline().strip():  # trailers
                pass
            return data
        return self.rfile.read(int(self.headers.get("content-length") or 0))

    def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", f"req_fake_{uuid.uuid4().hex[:16]}")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _dispatch(self) -> None:
        raw = self._read_body() if self.command in ("POST", "PUT", "PATCH") else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = self.path.split("?", 1)[0]
        self.fake._record(Request(self.command, path, {k.lower(): v for k, v in self.headers.items()}, body, time.time()))
        try:
            if self.command == "POST" and path == "/v1/messages" and isinstance(body, dict):
                self._messages(body)
            elif self.command == "POST" and path == "/v1/messages/count_tokens" and isinstance(body, dict):
                self._json(200, {"input_tokens": _estimate_tokens([body.get("system"), body.get("messages"), body.get("tools")])})
            elif self.command == "POST" and path.startswith("/v1/messages"):
                self._json(400, _error_body(error(400, "fakeapi: request body is not a JSON object")))
            elif self.command == "GET" and path == "/v1/models":
                self._json(200, {"data": [], "has_more": False, "first_id": None, "last_id": None})
            else:  # any other probe: a harmless, well-formed 404
                self._json(404, _error_body(error(404, f"fakeapi: no route {self.command} {path}")))
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout); fine
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _dispatch

    def do_HEAD(self) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.fake._record(Request("HEAD", self.path.split("?", 1)[0], headers, None, time.time()))
        self.send_response(404)
        self.send_header("content-length", "0")
        self.end_headers()

    def _hang_up(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _messages(self, body: dict[str, Any]) -> None:
        r = self.fake._next_reply(body)
        if r.delay and self.fake._stopping.wait(r.delay):
            return self._hang_up()
        if r.drop or self.fake._stopping.is_set():
            return self._hang_up()
        if r.status != 200 and not r.mid_stream_error:
            headers = {"x-should-retry": "true"} if r.status in (429, 529) or r.status >= 500 else {}
            if r.retry_after_ms is not None:
                headers["retry-after-ms"] = str(r.retry_after_ms)
            return self._json(r.status, _error_body(r), headers)
        msg = _message(r, body)
        if not body.get("stream"):
            return self._json(200, msg)
        self._stream(r, msg)

    def _stream(self, r: Reply, msg: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", f"req_fake_{uuid.uuid4().hex[:16]}")
        self.end_headers()
        events = _sse_events(msg)
        if r.mid_stream_error:
            events = events[:1] + [("error", _error_body(r))]
        for n, (name, data) in enumerate(events):
            if r.drop_after_events is not None and n >= r.drop_after_events:
                return self._hang_up()
            if n and r.event_delay and self.fake._stopping.wait(r.event_delay):
                return self._hang_up()
            chunk = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def claude_on_path(script: str, bindir: Any, monkeypatch: Any, log: Any) -> Any:
    """A fake `claude` CLI (`script`, a Python program: `{python}` is this interpreter)
    first on PATH, writing what it was given to `log` (FAKE_CLAUDE_LOG), and no API key,
    so the model's auto route takes the Claude Code login. The script's path."""
    import os
    import sys
    from pathlib import Path

    bindir = Path(bindir)
    bindir.mkdir(exist_ok=True)
    exe = bindir / "claude"
    exe.write_text(script.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | 0o100)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(log))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    return exe


if __name__ == "__main__":  # a standalone fake for manual runs: answers every call with the fallback
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--text", default="OK (fake fallback)")
    args = ap.parse_args()
    with FakeAPI(fallback=args.text).start(args.port) as api:
        print(api.base_url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
