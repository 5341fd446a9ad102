"""A fake Slack Web API on 127.0.0.1, and signed Events API requests, for tests.

The real slack_sdk / slack_bolt talk HTTP to it as they would to slack.com/api:

    with FakeSlack() as slack:                  # SLACK_API_URL = slack.base_url
        slack.rate_limit("chat.postMessage", retry_after=1)   # the next call gets a 429
        slack.delay("reactions.add", 2.0)       # every call waits 2 s before its answer
        ...
        slack.calls("chat.postMessage")         # every call: method, form/json args, time

`signed_event(secret, body)` makes the headers and bytes Slack would send to
/slack/events (v0 HMAC-SHA256 over `v0:{timestamp}:{body}`), `signed(secret, raw)` the
headers for any bytes (junk signed as Slack would sign it); `post_event` sends them.
"""
from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

BOT_USER = "UBOT0001"
_ts = itertools.count(1)


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    at: float  # time.monotonic() when it arrived
    token: str | None
    status: int = 200


class FakeSlack:
    def __init__(self) -> None:
        self._calls: list[Call] = []
        self._limits: dict[str, list[int]] = {}
        self._delays: dict[str, float] = {}
        self._lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None
        self.socket_url = ""  # what apps.connections.open hands out (tests/fakesocket.py)

    # ---- scripting -------------------------------------------------------------------

    def rate_limit(self, method: str, retry_after: int = 1, times: int = 1) -> None:
        """The next `times` calls of `method` are answered 429 with this Retry-After."""
        with self._lock:
            self._limits.setdefault(method, []).extend([retry_after] * times)

    def delay(self, method: str, seconds: float) -> None:
        """Every later call of `method` is answered after `seconds` (0: at once again)."""
        with self._lock:
            self._delays[method] = seconds

    def calls(self, method: str | None = None) -> list[Call]:
        with self._lock:
            return [c for c in self._calls if method is None or c.method == method]

    def wait_for(self, method: str, n: int = 1, timeout: float = 10.0) -> list[Call]:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            got = [c for c in self.calls(method) if c.status == 200]
            if len(got) >= n:
                return got
            time.sleep(0.02)
        raise AssertionError(f"{method}: {len(self.calls(method))} calls, wanted {n}")

    # ---- serving ---------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/api/"

    def __enter__(self) -> "FakeSlack":
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.daemon_threads = True
        self.server.fake = self  # type: ignore[attr-defined]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.shutdown()
        self.server.server_close()

    def _answer(self, method: str, args: dict[str, Any], token: str | None) -> tuple[int, dict, dict]:
        with self._lock:
            call = Call(method, args, time.monotonic(), token)
            self._calls.append(call)
            pending = self._limits.get(method)
            if pending:
                call.status = 429
                return 429, {"Retry-After": str(pending.pop(0))}, {"ok": False, "error": "ratelimited"}
        # Waits out the method's delay as it stands now: lowering it (delay(m, 0)) releases
        # the calls already waiting, so a test can hold calls for as long as it needs.
        start = time.monotonic()
        while time.monotonic() - start < self._delays.get(method, 0.0):
            time.sleep(0.02)
        if token in ("xoxb-bad", "xapp-bad") or (method == "apps.connections.open"
                                                 and not self.socket_url):
            return 200, {}, {"ok": False, "error": "invalid_auth"}
        if method == "auth.test":
            return 200, {}, {"ok": True, "user_id": BOT_USER, "bot_id": "BBOT0001",
                             "team_id": "T0001", "user": "cardmem", "team": "Acme"}
        if method == "apps.connections.open":
            return 200, {}, {"ok": True, "url": self.socket_url}
        if method == "chat.postMessage":
            return 200, {}, {"ok": True, "channel": args.get("channel"),
                             "ts": f"{int(time.time())}.{next(_ts):06d}"}
        return 200, {}, {"ok": True}


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        if "json" in (self.headers.get("Content-Type") or ""):
            args = json.loads(raw or "{}")
        else:
            args = {k: v[0] for k, v in urllib.parse.parse_qs(raw).items()}
        auth = self.headers.get("Authorization") or ""
        method = self.path.split("/api/", 1)[-1].split("?", 1)[0]
        status, headers, body = self.server.fake._answer(  # type: ignore[attr-defined]
            method, args, auth.removeprefix("Bearer ") or None)
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)


# ---- the Events API side: what Slack posts to /slack/events --------------------------

def signed(secret: str, raw: bytes, *, timestamp: int | None = None) -> dict[str, str]:
    """The headers Slack sends with these bytes, signed with this secret."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    sig = "v0=" + hmac.new(secret.encode(), f"v0:{ts}:".encode() + raw, hashlib.sha256).hexdigest()
    return {"Content-Type": "application/json", "X-Slack-Request-Timestamp": ts,
            "X-Slack-Signature": sig}


def signed_event(secret: str, body: dict[str, Any], *, timestamp: int | None = None,
                 retry: int | None = None) -> tuple[bytes, dict[str, str]]:
    raw = json.dumps(body).encode()
    headers = signed(secret, raw, timestamp=timestamp)
    if retry is not None:
        headers.update({"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"})
    return raw, headers


def post_event(url: str, raw: bytes, headers: dict[str, str]) -> tuple[int, str, float]:
    """POST to the app; (status, body, seconds taken)."""
    t = time.monotonic()
    req = urllib.request.Request(url, data=raw, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read().decode(), time.monotonic() - t
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), time.monotonic() - t


def mention(text: str, *, user: str = "UMARA001", channel: str = "C0GENERAL", ts: str | None = None,
            event_id: str | None = None, thread_ts: str | None = None) -> dict[str, Any]:
    """An Events API envelope of an app_mention."""
    n = next(_ts)
    ev: dict[str, Any] = {"type": "app_mention", "user": user, "text": f"<@{BOT_USER}> {text}",
                          "ts": ts or f"1764600000.{n:06d}", "channel": channel,
                          "event_ts": ts or f"1764600000.{n:06d}"}
    if thread_ts:
        ev["thread_ts"] = thread_ts
    return {"token": "x", "team_id": "T0001", "api_app_id": "A0001", "type": "event_callback",
            "event_id": event_id or f"Ev{n:08d}", "event_time": int(time.time()), "event": ev}


def direct_message(text: str, *, user: str = "UMARA001", channel: str = "D0MARA") -> dict[str, Any]:
    body = mention(text, user=user, channel=channel)
    body["event"].update(type="message", channel_type="im", text=text)
    return body
