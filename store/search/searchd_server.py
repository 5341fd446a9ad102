"""The search server (store/search/searchd.py has the client, the socket's place and the
protocol): a thread of a long-lived process that holds the model (`cardmem watch`,
`cardmem mcp`) answering `cardmem search` from the shell with the library's own search.

One server per store (an flock), the socket 0600 and the peer's uid checked; a request
is capped in size, answered on a thread of its own, and any bad one gets an error reply:
nothing a client sends stops the server.
"""
from __future__ import annotations

import json
import os
import socket

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

from .searchd import CONNECT_S, PROTOCOL, REQUEST_MAX, peer_uid, socket_path

HANDLERS_MAX = 8  # requests served at once (they take turns at the index anyway)


class IndexSearch:
    """query.search over one kept-open Index, one search at a time (`cardmem watch`'s; the
    MCP server passes its own CardTools.search_result)."""

    def __init__(self, store: Any) -> None:
        import threading

        self.store = store
        self._lock = threading.Lock()
        self._index: Any = None

    def __call__(self, query: str, limit: int, card_type: str | None,
                 project: str | None) -> Any:
        from ..index.db import Index
        from .query import search

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
            uid = peer_uid(conn)
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
