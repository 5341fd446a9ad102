"""A fake Slack Socket Mode endpoint on 127.0.0.1: a minimal WebSocket server (RFC 6455
text, ping/pong and close frames) speaking Socket Mode's envelopes, for tests.

    with FakeSocket() as ws:                   # FakeSlack answers apps.connections.open
        slack.socket_url = ws.url              # with this ws:// URL
        ws.wait_connected()
        ws.send_event(body)                    # an events_api envelope; acks in ws.acks
        ws.send_text(b"{not json")             # any text frame, junk included
"""
from __future__ import annotations

import base64
import hashlib
import itertools
import json
import socket
import struct
import threading
import time
from typing import Any

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_ids = itertools.count(1)


class FakeSocket:
    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.conn: socket.socket | None = None
        self.acks: list[str] = []
        self.connected = threading.Event()
        self._lock = threading.Lock()
        self._stop = False

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.sock.getsockname()[1]}/link/?ticket=fake"

    def __enter__(self) -> "FakeSocket":
        threading.Thread(target=self._serve, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop = True
        for s in (self.conn, self.sock):
            if s is None:
                continue
            try:  # a close alone leaves accept() blocked, its port still taking connections
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def wait_connected(self, timeout: float = 10.0) -> None:
        assert self.connected.wait(timeout), "the Socket Mode client never connected"

    def send_event(self, body: dict[str, Any], retry: int = 0) -> str:
        eid = f"env-{next(_ids)}"
        self._send(json.dumps({"envelope_id": eid, "type": "events_api", "payload": body,
                               "accepts_response_payload": False, "retry_attempt": retry,
                               "retry_reason": "timeout" if retry else ""}).encode(), 0x1)
        return eid

    def send_text(self, data: bytes) -> None:
        """One text frame of whatever bytes (what a broken or hostile peer might send)."""
        self._send(data, 0x1)

    def wait_acks(self, n: int, timeout: float = 10.0) -> list[str]:
        end = time.monotonic() + timeout
        while len(self.acks) < n and time.monotonic() < end:
            time.sleep(0.02)
        assert len(self.acks) >= n, f"{len(self.acks)} envelopes acked, wanted {n}"
        return self.acks

    # ---- the wire ----------------------------------------------------------------------

    def _serve(self) -> None:
        while not self._stop:  # the client may reconnect (e.g. a slow pong under load)
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conn = conn
            try:
                self._session(conn)
            except (OSError, ConnectionError, StopIteration):
                pass

    def _session(self, conn: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(1024)
            if not chunk:
                raise ConnectionError("closed")
            head += chunk
        key = next(ln.split(":", 1)[1].strip() for ln in head.decode().split("\r\n")
                   if ln.lower().startswith("sec-websocket-key:"))
        accept = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        conn.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                      f"Connection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n").encode())
        self._send(json.dumps({"type": "hello", "num_connections": 1,
                               "connection_info": {"app_id": "A0001"},
                               "debug_info": {"host": "fake"}}).encode(), 0x1)
        self.connected.set()
        while not self._stop:
            opcode, payload = self._read()
            if opcode == 0x9:
                self._send(payload, 0xA)
            elif opcode == 0x8:
                return
            elif opcode == 0x1:
                msg = json.loads(payload)
                if "envelope_id" in msg:
                    self.acks.append(msg["envelope_id"])

    def _exact(self, n: int) -> bytes:
        assert self.conn is not None
        data = b""
        while len(data) < n:
            chunk = self.conn.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
        return data

    def _read(self) -> tuple[int, bytes]:
        b1, b2 = self._exact(2)
        n = b2 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self._exact(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self._exact(8))[0]
        mask = self._exact(4) if b2 & 0x80 else b"\0\0\0\0"
        data = bytes(c ^ mask[i % 4] for i, c in enumerate(self._exact(n)))
        return b1 & 0x0F, data

    def _send(self, payload: bytes, opcode: int) -> None:
        n = len(payload)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([n])
        elif n < 65536:
            head += bytes([126]) + struct.pack("!H", n)
        else:
            head += bytes([127]) + struct.pack("!Q", n)
        with self._lock:
            assert self.conn is not None
            self.conn.sendall(head + payload)
