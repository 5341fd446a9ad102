"""Searches answered by a running cardmem process that already holds the model (issue 16).

`cardmem search` from the shell pays ~0.35 s of CPU for the semantic layer (importing
numpy, loading the model, its first forward pass; bench/RESULTS.md). `cardmem watch` and
`cardmem mcp` keep the model loaded, so they also serve searches on a local socket
(Server), and `cardmem search` asks there first (ask()); on any failure it searches in
its own process, as before. The server runs the library's own search (db.search: the
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

This module's top level imports only what the client needs (os, json, socket): the lean
search entry (tools/entry.py) must not load numpy or the model to ask.
"""
from __future__ import annotations

import json
import os
import socket

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

PROTOCOL = 1
SOCKET_NAME = "search.sock"
SUN_PATH_MAX = 107  # bytes of a path in sockaddr_un, less the closing NUL
CONNECT_S = 0.1  # the client's whole budget to connect
REPLY_S = 10.0  # and to read the reply: a search that refreshes many cards takes a while
REQUEST_MAX = 64 * 1024  # bytes of one request line
REPLY_MAX = 64 * 1024 * 1024
HANDLERS_MAX = 8  # requests served at once (they take turns at the index anyway)


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


def _peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end (Linux), None where it cannot be asked."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return None
    import struct

    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, opt,
                                                           struct.calcsize("3i")))
    return uid


# --- the client --------------------------------------------------------------------------

class Reply:
    """A served search, read as a SearchResult is (tools/search_text.lines, as_dict)."""

    def __init__(self, doc: dict[str, Any], empty_filter: str | None, note: str | None) -> None:
        self.doc = doc
        self.query = doc["query"]
        self.results = doc["results"]
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
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(CONNECT_S)
        s.connect(path)
        uid = _peer_uid(s)
        if uid is not None and uid != os.getuid():
            raise PermissionError(1, "the server runs as another user")
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
    finally:
        s.close()
    got = json.loads(b"".join(chunks))
    if not isinstance(got, dict):
        raise ValueError("reply is not a JSON object")
    return got


# --- the server --------------------------------------------------------------------------

class IndexSearch:
    """db.search over one kept-open Index, one search at a time (`cardmem watch`'s; the
    MCP server passes its own CardTools.search_result)."""

    def __init__(self, store: Any) -> None:
        import threading

        self.store = store
        self._lock = threading.Lock()
        self._index: Any = None

    def __call__(self, query: str, limit: int, card_type: str | None,
                 project: str | None) -> Any:
        from .db import Index, search

        with self._lock:
            if self._index is None:
                self._index = Index(self.store)
            return search(self.store, query, limit=limit, card_type=card_type,
                          project=project, index=self._index)

    def close(self) -> None:
        with self._lock:
            if self._index is not None:
                self._index.close()
                self._index = None


class Server:
    """Serve a store's searches on its socket from a thread, until stop()."""

    def __init__(self, root: str, search: "Callable[..., Any]",
                 say: "Callable[[str], None] | None" = None) -> None:
        self.root = os.path.realpath(root)
        self.search = search
        self.say = say or (lambda line: None)
        self.path: str | None = None
        self._sock: socket.socket | None = None
        self._lock_fd: int | None = None
        self._inode: tuple[int, int] | None = None
        self._thread: Any = None
        self._slots: Any = None
        self._model_asked = False

    def start(self) -> bool:
        """Listen; False (said why) when another process serves this store already or
        the socket cannot be made, or the semantic layer is turned off here (a shell
        search would gain nothing). Searches then simply run in each shell process."""
        import fcntl
        import threading

        from . import embedding

        if embedding.turned_off():
            return False
        path = socket_path(self.root, create=True)
        if path is None:
            self.say("search server: no private folder for its socket; not serving")
            return False
        try:
            fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            self.say(f"search server: {path}.lock: {exc.strerror}; not serving")
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            self.say(f"search server: another process serves {path}; not serving")
            return False
        try:
            if _answers(path):  # a live server that holds no lock (an older cardmem)
                raise FileExistsError(17, "a live server answers there")
            try:
                os.unlink(path)  # a killed server's socket
            except FileNotFoundError:
                pass
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.bind(path)
                os.chmod(path, 0o600)  # the uid check on accept covers the moment between
                st = os.stat(path)
                sock.listen(16)
            except BaseException:
                sock.close()
                raise
        except OSError as exc:
            os.close(fd)
            self.say(f"search server: {path}: {exc.strerror or exc}; not serving")
            return False
        self.path, self._sock, self._lock_fd = path, sock, fd
        self._inode = (st.st_dev, st.st_ino)
        self._slots = threading.BoundedSemaphore(HANDLERS_MAX)
        self._thread = threading.Thread(target=self._accept, name="cardmem-searchd", daemon=True)
        self._thread.start()
        if embedding.cached():
            self._load_model()  # cheap from the cache: ready before the first question
        return True

    def stop(self) -> None:
        """Stop listening and remove the socket (if it is still ours). Idempotent."""
        sock, self._sock = self._sock, None
        if sock is None:
            return
        try:
            sock.shutdown(socket.SHUT_RDWR)  # wakes accept()
        except OSError:
            pass
        sock.close()
        try:
            st = os.stat(self.path)  # type: ignore[arg-type]
            if (st.st_dev, st.st_ino) == self._inode:
                os.unlink(self.path)  # type: ignore[arg-type]
        except OSError:
            pass
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
        if self._thread is not None:
            self._thread.join(2.0)

    def _accept(self) -> None:
        import threading

        while (sock := self._sock) is not None:
            try:
                conn, _ = sock.accept()
            except OSError:
                if self._sock is None:
                    return
                import time

                time.sleep(0.05)  # out of file descriptors, say: do not spin
                continue
            if not self._slots.acquire(blocking=False):
                _send(conn, {"ok": False, "error": "busy"})
                conn.close()
                continue
            threading.Thread(target=self._serve, args=(conn,), name="cardmem-searchd-conn",
                             daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(5.0)
            uid = _peer_uid(conn)
            if uid is not None and uid != os.getuid():
                return  # another user: no answer at all
            try:
                reply = self._answer(_read_line(conn))
            except Exception as exc:  # noqa: BLE001 - a bad request never stops the server
                reply = {"ok": False, "error": str(exc) or type(exc).__name__}
            _send(conn, reply)
        except Exception:  # noqa: BLE001 - the client went away
            pass
        finally:
            conn.close()
            self._slots.release()

    def _answer(self, line: bytes) -> dict[str, Any]:
        from ..cards.paths import CARD_TYPES
        from . import embedding

        req = json.loads(line)
        if not isinstance(req, dict):
            raise ValueError("request: not a JSON object")
        if req.get("v") != PROTOCOL:
            raise ValueError(f"request: protocol {req.get('v')!r}, this server speaks {PROTOCOL}")
        if req.get("root") != self.root:
            raise ValueError(f"request: root {req.get('root')!r} is not this server's store")
        query, limit = req.get("query"), req.get("limit", 10)
        card_type, project = req.get("type"), req.get("project")
        if not isinstance(query, str) or not query.strip():
            raise ValueError("query: is empty or not text")
        if type(limit) is not int or not 1 <= limit <= 1000:
            raise ValueError("limit: not a whole number from 1 to 1000")
        if card_type is not None and card_type not in CARD_TYPES:
            raise ValueError(f"type: not one of {', '.join(CARD_TYPES)}")
        if project is not None and not isinstance(project, str):
            raise ValueError("project: not text")
        # A shell process would load the model; until this one has it, it says so and
        # the client searches itself (same answer, its own cost).
        if embedding.turned_off():
            raise ValueError("semantic search is turned off in this server")
        if not embedding.loaded():
            self._load_model()
            raise ValueError(f"the model is not loaded here ({embedding.reason() or 'loading'})")
        res = self.search(query, limit, card_type, project)
        return {"ok": True, "doc": res.as_dict(), "empty_filter": res.empty_filter,
                "note": res.note}

    def _load_model(self) -> None:
        """Load the model in a thread (once): the server never makes a request wait for it."""
        import threading

        from . import embedding

        if not self._model_asked:
            self._model_asked = True
            threading.Thread(target=embedding.embedder, name="cardmem-searchd-model",
                             daemon=True).start()


def _answers(path: str) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(CONNECT_S)
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def _read_line(conn: socket.socket) -> bytes:
    buf = b""
    while b"\n" not in buf:
        chunk = conn.recv(1 << 16)
        if not chunk:
            break
        buf += chunk
        if len(buf) > REQUEST_MAX:
            raise ValueError(f"request: longer than {REQUEST_MAX} bytes")
    line = buf.split(b"\n", 1)[0]
    if len(line) > REQUEST_MAX:
        raise ValueError(f"request: longer than {REQUEST_MAX} bytes")
    return line


def _send(conn: socket.socket, reply: dict[str, Any]) -> None:
    try:
        conn.sendall(json.dumps(reply, ensure_ascii=False, default=str).encode() + b"\n")
    except OSError:
        pass
