"""The Events API's HTTP server: a deep listen queue, a bounded pool of handler threads.

    events = EventsServer(("127.0.0.1", port), front)   # front(raw, headers) -> Response
    events.serve_forever(poll_interval=0.2) ... events.shutdown(); events.server_close()

A request costs an HMAC, a JSON parse and a hand-off to the answerer's queues, so a few
threads keep up with a burst; what they have not accepted yet waits in the kernel's listen
queue. socketserver's default queue of 5 reset most of a burst of 100 events (bench/
RESULTS.md, issue 33); BACKLOG holds a burst of 300 with room. When every handler is busy
the accept loop waits for one (a bounded number of threads and sockets, so bounded
memory) rather than starting a thread per connection.

One request per connection (HTTP/1.0), a body over intake.MAX_BODY refused (413, dropped),
a client that stalls (READ_TIMEOUT_S) or drips its request (REQUEST_S in all) hung up on,
so a handler is never held long; whatever goes wrong is one log line, never a traceback.
"""
from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from .intake import MAX_BODY, Quiet

EVENTS_PATH = "/slack/events"
BACKLOG = 1024  # connections the kernel holds while the handlers are busy (capped by somaxconn)
WORKERS = 8  # handler threads
READ_TIMEOUT_S = 10.0  # of silence, within one read
REQUEST_S = 10.0  # for a whole request: a client dripping bytes is hung up on
DRAIN_MAX = 16 << 20  # bytes of a refused body read and dropped


@dataclass
class Response:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


Front = Callable[[bytes, Message], Response]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    timeout = READ_TIMEOUT_S
    server_version = "cardmem-slack"
    server: "EventsServer"

    def log_message(self, format: str, *args: Any) -> None:  # refusals are logged by the front
        pass

    def do_POST(self) -> None:
        if self.path.split("?", 1)[0] != EVENTS_PATH:
            return self._send(Response(404, b"not found"))
        length = self.headers.get("Content-Length") or ""
        if not length.isascii() or not length.isdigit():
            self.server.quiet.refused("a request", "no Content-Length")
            return self._send(Response(411, b"Content-Length required"))
        if int(length) > MAX_BODY:
            self.server.quiet.refused("a request", f"body over {MAX_BODY} bytes")
            self._discard(int(length))
            return self._send(Response(413, b"body too large"))
        raw = self.rfile.read(int(length))
        if len(raw) < int(length):
            self.server.quiet.refused("a request", "body shorter than its Content-Length")
            return self._send(Response(400, b"body cut short"))
        self._send(self.server.front(raw, self.headers))

    def _discard(self, n: int) -> None:
        """Read what the client sends of a refused body, so it reads the 413 rather than a
        reset; past DRAIN_MAX the connection is just closed."""
        if n <= DRAIN_MAX:
            while n > 0 and (chunk := self.rfile.read(min(n, 1 << 16))):
                n -= len(chunk)

    def _send(self, r: Response) -> None:
        self.send_response(r.status)
        headers = dict(r.headers)
        if not any(k.lower() == "content-type" for k in headers):  # Bolt's keys are lower-case
            headers["Content-Type"] = "text/plain; charset=utf-8"
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(r.body)))
        self.end_headers()
        self.wfile.write(r.body)


class EventsServer(HTTPServer):
    def __init__(self, address: tuple[str, int], front: Front, quiet: Quiet | None = None,
                 workers: int | None = None) -> None:
        self.front, self.quiet = front, quiet or Quiet()
        workers = workers or WORKERS
        self._slots = threading.BoundedSemaphore(workers)
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="cardmem-http")
        super().__init__(address, _Handler, bind_and_activate=False)
        self.request_queue_size = BACKLOG  # both read here, so a bench can set the module's
        try:
            self.server_bind()
            self.server_activate()
        except BaseException:
            self.server_close()
            raise

    def process_request(self, request: Any, client_address: Any) -> None:
        self._slots.acquire()  # every handler busy: the next connection waits in the queue
        try:
            self._pool.submit(self._serve, request, client_address)
        except RuntimeError:  # the pool is shut: stopping
            self._slots.release()
            self.shutdown_request(request)

    def _serve(self, request: Any, client_address: Any) -> None:
        timer = threading.Timer(REQUEST_S, _hang_up, (request,))
        timer.daemon = True
        timer.start()
        try:
            self.finish_request(request, client_address)
        except Exception:  # noqa: BLE001 - one line, and the server goes on
            self.handle_error(request, client_address)
        finally:
            timer.cancel()
            self.shutdown_request(request)
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        self.quiet.refused("a request", f"{type(exc).__name__}: {exc}"[:200])

    def server_close(self) -> None:
        super().server_close()
        self._pool.shutdown(wait=False)


def _hang_up(request: socket.socket) -> None:
    """Past REQUEST_S: the handler's next read or write fails, and it lets go."""
    try:
        request.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
