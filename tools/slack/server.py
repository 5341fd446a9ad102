"""The Bolt app over the Answerer: Socket Mode, or the Events API over HTTP.

    server = SlackServer.build(store, settings)      # auth.test: learns the bot's user id
    server.listen(port); server.serve_http()  /  server.serve_socket_mode()   # until stop()

Over HTTP, `events()` sees each request's raw bytes first: the signature and timestamp
(`X-Slack-Signature`, `X-Slack-Request-Timestamp`: forged, unsigned or over 5 minutes off
is a 401), then a JSON object (else 400), then the event's field types (else 400), all
before Bolt parses it; with the answerer's queues full, a 503 (Slack retries it later).
Bolt then answers the `url_verification` challenge and runs our listener before it acks
(`process_before_response`; `take()` never blocks): an event the answerer could not take
is a 503 too, never acked and then lost. The server is httpd.py's: a deep listen queue, a
bounded pool of handlers.
"""
from __future__ import annotations

import logging
import threading
from email.message import Message
from typing import Any

from cardmem.store.errors import CardmemError
from cardmem.store.store import Store

from . import intake
from .answerer import Answerer
from .httpd import EVENTS_PATH, EventsServer, Response
from .settings import SlackSettings
from cardmem.tools import model

__all__ = ["EVENTS_PATH", "SlackServer", "model_client", "web_client"]
# What the listener's take() said, per handler thread: Bolt runs the listener in the thread
# that dispatched the request (process_before_response), so events() can answer 503 for it.
_TAKEN = threading.local()
RATE_LIMIT_RETRIES = 2  # a 429 is retried after its Retry-After, this many times


def web_client(settings: SlackSettings) -> Any:
    """slack_sdk's WebClient on the configured base URL, honouring 429 Retry-After."""
    from slack_sdk import WebClient
    from slack_sdk.http_retry.builtin_handlers import (ConnectionErrorRetryHandler,
                                                       RateLimitErrorRetryHandler)

    return WebClient(token=settings.bot_token, base_url=settings.api_url, timeout=10,
                     retry_handlers=[ConnectionErrorRetryHandler(),
                                     RateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES)])


def model_client(store: Store) -> Any:
    """One SDK client for every answer (the api route), built now: a missing model is said
    at start-up, and the SDK's import (seconds) is never paid by the first question; None on
    the claude-code route."""
    cfg = model.settings(store.config.get("model"))
    try:
        route, _ = model.resolve(cfg)
        return model.client(cfg, max_retries=0) if route == "api" else None  # the walk retries
    except model.ModelUnavailable as exc:
        raise CardmemError("slack", f"needs a model: {exc.why}") from None


class SlackServer:
    def __init__(self, app: Any, answerer: Answerer, settings: SlackSettings) -> None:
        self.app, self.answerer, self.settings = app, answerer, settings
        self._http: EventsServer | None = None
        self._socket: Any = None
        self._stopped = threading.Event()

    @classmethod
    def build(cls, store: Store, settings: SlackSettings, *, http: bool, **answerer_kw: Any
              ) -> "SlackServer":
        from slack_bolt import App
        from slack_sdk.errors import SlackApiError

        web = web_client(settings)
        logger = logging.getLogger("cardmem.slack.bolt")
        logger.setLevel(logging.ERROR)  # not its notes (e.g. SLACK_BOT_TOKEN read twice)
        try:
            web.auth_test()
        except SlackApiError as exc:
            raise CardmemError("slack", f"SLACK_BOT_TOKEN was refused by auth.test: "
                                        f"{exc.response.get('error')}") from None
        except Exception as exc:  # noqa: BLE001 - e.g. the Web API unreachable
            raise CardmemError("slack", f"cannot reach the Web API at {settings.api_url}: "
                                        f"{exc}") from None
        app = App(client=web, signing_secret=settings.signing_secret if http else "",
                  request_verification_enabled=http, logger=logger,
                  process_before_response=True)
        answerer_kw.setdefault("sdk", model_client(store))
        answerer = Answerer(store, web, settings, **answerer_kw)

        def listener(body: dict, request: Any, context: Any) -> None:
            _TAKEN.outcome = answerer.take(body, request.headers, context.bot_user_id)

        app.event("app_mention")(listener)
        app.event("message")(listener)  # direct messages; the rest is ignored by take()
        return cls(app, answerer, settings)

    def listen(self, port: int, host: str = "127.0.0.1") -> int:
        """Bind the Events API at http://HOST:PORT/slack/events; the port bound."""
        try:
            self._http = EventsServer((host, port), self.events, self.answerer.quiet)
        except OSError as exc:
            raise CardmemError(f"--http {port}", f"cannot listen on {host}: {exc.strerror}") from None
        return self._http.server_address[1]

    def events(self, raw: bytes, headers: Message) -> Response:
        """One POST to /slack/events, checked on its raw bytes before Bolt parses it."""
        from slack_bolt.request import BoltRequest

        try:
            intake.check_signature(raw, headers.get("X-Slack-Request-Timestamp"),
                                   headers.get("X-Slack-Signature"), self.settings.signing_secret)
            body = intake.parse(raw)
            why = intake.bad_shape(body)
            if why:
                raise intake.Refused(400, f"{why} (event {str(body.get('event_id'))[:40]})")
        except intake.Refused as r:
            self.answerer.quiet.refused("a request", r.why)
            return Response(r.status, r.why.encode())
        if self.answerer.full():
            self.answerer.quiet.refused("an event", "every queue is full; Slack will retry")
            return Response(503, b"busy", {"Retry-After": "60"})
        _TAKEN.outcome = None
        out = self.app.dispatch(BoltRequest(body=raw.decode(), query="", headers={
            k.lower(): v for k, v in headers.items()}))
        if _TAKEN.outcome == "dropped":  # filled between the check above and take(): not acked
            return Response(503, b"busy", {"Retry-After": "60"})
        return Response(out.status, (out.body or "").encode(),
                        {k: v[0] if isinstance(v, (list, tuple)) else v for k, v in out.headers.items()
                         if k.lower() != "content-length"})

    def serve_http(self) -> None:
        """Serve what listen() bound, until stop()."""
        assert self._http is not None, "listen() first"
        self._http.serve_forever(poll_interval=0.2)

    def serve_socket_mode(self) -> None:
        """Connect to Slack over a WebSocket (no public URL), until stop()."""
        from slack_bolt.adapter.socket_mode import SocketModeHandler

        from slack_sdk.errors import SlackApiError

        self._socket = SocketModeHandler(self.app, self.settings.app_token)
        try:
            self._socket.connect()
        except SlackApiError as exc:
            raise CardmemError("slack", f"Socket Mode was refused: {exc.response.get('error')} "
                                        "(SLACK_APP_TOKEN must be an app-level xapp- token with "
                                        "connections:write)") from None
        self._stopped.wait()

    def stop(self, wait: bool = True) -> None:
        self._stopped.set()
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
        if self._socket is not None:
            self._socket.close()
        self.answerer.close(wait=wait)
