"""Searches answered by a running cardmem process that already holds the model (issue 16).

`cardmem search` from the shell pays more CPU for the semantic layer (importing numpy,
loading the model, its first forward pass) than for everything else it does (bench/
RESULTS.md, "Step 3: what the semantic layer costs"). `cardmem watch` and
`cardmem mcp` keep the model loaded, so they also serve searches on a local socket
(store/search/searchd_server.py), and `cardmem search` asks there first (ask()); on any
failure it searches in its own process, as before. The server runs the library's own search (query.search: the
same freshness check, the same fusion), so there is one search, not two.

Protocol: one JSON request line, {"v", "root", "query", "limit", "type", "project"};
one JSON reply line, {"ok": true, "doc": SearchResult.as_dict(), "empty_filter",
"note"} or {"ok": false, "error": "..."}. The client prints the reply as it would have
printed its own result.

Where the socket lives: `<store>/.cardmem/search.sock`, owned by the store. An AF_UNIX
path must fit in 108 bytes (sun_path), so a store deep in the tree uses
`$XDG_RUNTIME_DIR/cardmem/<hash>.sock` (else `/tmp/cardmem-<uid>/<hash>.sock`), the
hash being of the store's real path, in a folder of mode 0700 that both sides check is
ours. Not the Linux abstract namespace: it has no file permissions, so any local user
could connect, and its names do not vanish with the store. Only the same user can use
the socket: the file is 0600 and both ends check the peer's uid (SO_PEERCRED).

One server per store: it holds an exclusive flock on `<socket>.lock` while it serves;
a second server (another `cardmem watch`, an MCP server) finds it held, connects to be
sure, and leaves the live socket alone. A socket left by a killed server refuses
connections at once, and the next server (holding the lock) replaces it.

This module is the client and what both sides share (where the socket is, the protocol);
it imports only os and json, and socket only where a socket file is there: the lean
search entry (tools/entry.py) must not load numpy or the model to ask, and a shell with
no server running pays one stat for asking.
"""
from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from typing import Any, Callable

PROTOCOL = 1
SOCKET_NAME = "search.sock"
SUN_PATH_MAX = 107  # bytes of a path in sockaddr_un, less the closing NUL
CONNECT_S = 0.1  # the client's whole budget to connect
REPLY_S = 10.0  # and to read the reply: a search that refreshes many cards takes a while
REQUEST_MAX = 64 * 1024  # bytes of one request line
REPLY_MAX = 64 * 1024 * 1024


# --- where -----------------------------------------------------------------------------

def _short_dir() -> str:
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and os.path.isabs(base) and os.path.isdir(base):
        return os.path.join(base, "cardmem")
    return os.path.join("/tmp", f"cardmem-{os.getuid()}")


def _own_private_dir(path: str) -> bool:
    """A real folder (not a link), ours, that no one else can enter."""
    import stat

    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
            and not st.st_mode & 0o077)


def socket_path(root: str, create: bool = False) -> str | None:
    """The socket of the store at root (its real path); None when the short folder it
    would need is not ours and private. create: make that folder (the server)."""
    real = os.path.realpath(root)
    path = os.path.join(real, ".cardmem", SOCKET_NAME)
    if len(os.fsencode(path)) <= SUN_PATH_MAX:
        if create:
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)  # a store new to cardmem
            except OSError:
                return None
        return path
    import hashlib

    d = _short_dir()
    if create:
        try:
            os.makedirs(d, mode=0o700, exist_ok=True)
        except OSError:
            return None
    if not _own_private_dir(d):
        return None
    digest = hashlib.sha256(os.fsencode(real)).hexdigest()[:24]
    path = os.path.join(d, f"{digest}.sock")
    return path if len(os.fsencode(path)) <= SUN_PATH_MAX else None


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end (Linux), None where it cannot be asked."""
    import socket

    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return None
    import struct

    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, opt,
                                                           struct.calcsize("3i")))
    return uid


# --- the client --------------------------------------------------------------------------

_SHOWN = {"id", "title", "type", "status", "confidence", "snippet"}  # what lines() prints


class Reply:
    """A served search, read as a SearchResult is (tools/search_text.lines, as_dict)."""

    def __init__(self, doc: dict[str, Any], empty_filter: str | None, note: str | None) -> None:
        self.doc = doc
        self.query = doc["query"]
        self.results = doc["results"]
        if not isinstance(self.results, list) or not all(
                isinstance(r, dict) and _SHOWN <= r.keys() for r in self.results):
            raise ValueError("reply: results are not search results")
        self.corrected = doc["corrected"]
        self.no_confident_results = doc["no_confident_results"]
        self.empty_filter = empty_filter
        self.note = note

    def as_dict(self) -> dict[str, Any]:
        return self.doc


def ask(root: str, query: str, limit: int = 10, card_type: str | None = None,
        project: str | None = None, say: "Callable[[str], None] | None" = None) -> Reply | None:
    """The search as a running server of the store at root answers it; None when none
    answers well (no socket, a stale one, refused, too slow, a bad or error reply):
    the caller then searches itself. say: told which, in one line. With the semantic
    layer turned off (CARDMEM_SEMANTIC) there is nothing to gain: None."""
    from .embedding import turned_off

    if turned_off():
        if say is not None:
            say("semantic search turned off: searching in this process")
        return None
    path = None
    try:
        path = socket_path(root)
        if path is None:
            raise OSError("no private folder for the socket")
        if not os.path.exists(path):  # no server: ask no further (socket and selectors: +14.7 M instructions, bench/RESULTS.md)
            raise FileNotFoundError(2, "No such file or directory")
        got = _exchange(path, {"v": PROTOCOL, "root": os.path.realpath(root), "query": query,
                               "limit": limit, "type": card_type, "project": project})
        if not got.get("ok"):
            raise ValueError(f"the server said: {got.get('error')}")
        reply = Reply(got["doc"], got.get("empty_filter"), got.get("note"))
    except Exception as exc:  # noqa: BLE001 - any failure: search in this process
        if say is not None:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else (
                str(exc) or type(exc).__name__)
            say(f"no search server ({path or 'no socket'}: {why}); searching in this process")
        return None
    if say is not None:
        say(f"answered by the search server on {path}")
    return reply


def _exchange(path: str, request: dict[str, Any]) -> dict[str, Any]:
    import socket

    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(CONNECT_S)
        s.connect(path)
        uid = peer_uid(s)
        if uid is not None and uid != os.getuid():
            raise PermissionError(1, "the server runs as another user")
        import time

        deadline = time.monotonic() + REPLY_S  # for the whole reply, not each read
        s.settimeout(REPLY_S)
        s.sendall(json.dumps(request).encode() + b"\n")
        s.shutdown(socket.SHUT_WR)
        chunks = []
        size = 0
        while chunk := s.recv(1 << 16):
            chunks.append(chunk)
            size += len(chunk)
            if size > REPLY_MAX:
                raise ValueError("reply too large")
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("timed out")
            s.settimeout(left)
    finally:
        s.close()
    got = json.loads(b"".join(chunks))
    if not isinstance(got, dict):
        raise ValueError("reply is not a JSON object")
    return got
