"""The redaction corpus (tests/secrets_corpus.py) through every path that redacts: the
redact function, MCP remember, the memory tool's create / str_replace / insert, and
the Stop hook's excerpt. No secret survives any of them; no non-secret is touched."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest

from cardmem.tools.learning.transcript import read_excerpt
from cardmem.tools.secrets.redact import redact, redact_with_counts
from secrets_corpus import FORMATS, RENDERINGS, cases, leaked, non_secrets

CASES = cases()
NON_SECRETS = non_secrets()


def test_corpus_is_large_enough():
    assert len(FORMATS) >= 100 and len(RENDERINGS) == 4
    assert len(CASES) == 4 * len(FORMATS)
    assert len(NON_SECRETS) >= 200


@pytest.mark.parametrize("fmt", FORMATS, ids=[f.name for f in FORMATS])
def test_no_secret_survives_in_any_rendering(fmt):
    for rendering, text in zip(RENDERINGS, fmt.renderings):
        out, counts = redact_with_counts(text)
        assert not leaked(fmt.value, out), f"{rendering}: {out!r}"
        assert counts, rendering
        assert redact(out) == out, f"{rendering}: not idempotent"
    if fmt.kind:
        # in prose, with no key name to go by, the shape alone is recognised
        assert f"[REDACTED:{fmt.kind}]" in redact(fmt.renderings[0])


@pytest.mark.seed(5)
def test_a_large_text_is_redacted_as_by_whole_scans(monkeypatch, rng):
    """Past 20,000 characters a token rule runs only around the long words it matches
    (redact._word_windows): every rendering of every format, each twice, between
    non-secrets, in one text, comes out as it does when every rule scans the whole text;
    and no secret survives."""
    from cardmem.tools.secrets import redact as r

    parts = [t for _, _, t in CASES] * 2 + NON_SECRETS
    rng.shuffle(parts)
    text = "\n".join(parts)
    assert len(text) > 20_000
    windowed = redact(text)
    for fmt, _, t in CASES:
        assert not leaked(fmt.value, windowed), fmt.name
    monkeypatch.setattr(r, "_word_windows", lambda *a: None)
    assert windowed == redact(text)


@pytest.mark.parametrize("text", NON_SECRETS, ids=range(len(NON_SECRETS)))
def test_non_secret_survives_unchanged(text):
    assert redact_with_counts(text) == (text, {})


def _batches(limit: int) -> list[str]:
    """The corpus texts joined into documents of at most `limit` characters."""
    out, cur = [], ""
    for _, _, text in CASES:
        if cur and len(cur) + len(text) + 1 > limit:
            out.append(cur)
            cur = ""
        cur += text + "\n"
    return out + [cur]


def _assert_nothing_leaked(*texts: str) -> None:
    blob = "\n".join(texts)
    survivors = [f"{f.name}/{r}" for f, r, _ in CASES if leaked(f.value, blob)]
    assert survivors == []


def _git_log(root: Path) -> str:
    return subprocess.run(["git", "-C", str(root), "log", "-p", "--all"], capture_output=True,
                          text=True, check=True).stdout


def test_mcp_remember_stores_no_secret(store):
    from mcp import Client

    from cardmem.tools.agents.mcp_server import build_server

    server = build_server(store)
    batches = _batches(15_000)

    async def go():
        async with Client(server) as client:
            for i, body in enumerate(batches):
                res = await client.call_tool("remember", {"title": f"Setup notes {i}", "body": body})
                assert not res.is_error, res.content[0].text

    anyio.run(go)
    cards = [p.read_text() for p in store.root.rglob("*.md") if ".git" not in p.parts]
    _assert_nothing_leaked(*cards, _git_log(store.root))


def test_memory_tool_writes_no_secret(store):
    from cardmem.tools.agents.memory_tool import memory_tool

    tool = memory_tool(store)
    batches = _batches(15_000)
    third = len(batches) // 3
    for i, body in enumerate(batches[:third]):
        tool.call({"command": "create", "path": f"/memories/c{i}.md", "file_text": body})
    for i, body in enumerate(batches[third : 2 * third]):
        tool.call({"command": "create", "path": f"/memories/s{i}.md", "file_text": "# notes\nTODO\n"})
        tool.call({"command": "str_replace", "path": f"/memories/s{i}.md", "old_str": "TODO",
                   "new_str": body})
    for i, body in enumerate(batches[2 * third :]):
        tool.call({"command": "create", "path": f"/memories/n{i}.md", "file_text": "# notes\n"})
        tool.call({"command": "insert", "path": f"/memories/n{i}.md", "insert_line": 1,
                   "insert_text": body})
    files = [p.read_text() for p in (store.root / "memories").glob("*.md")]
    assert len(files) == len(batches)
    _assert_nothing_leaked(*files, _git_log(store.root))


def test_stop_hook_excerpt_holds_no_secret_even_where_a_turn_is_cut(tmp_path):
    # Each secret straddles the 1,500-character cut of its turn: cut first and the
    # surviving half would no longer be recognised.
    lines = []
    for i, (fmt, _, text) in enumerate(CASES):
        at = text.index(fmt.value.splitlines()[0]) + min(len(fmt.value), 60) // 2
        pad = "The deploy went fine after the retry. " * 40
        turn = pad[: max(0, 1500 - at)] + text + " All good now."
        role = "user" if i % 2 == 0 else "assistant"
        lines.append(json.dumps({"type": role, "uuid": f"u{i}", "message": {
            "role": role, "content": [{"type": "text", "text": turn}],
            **({"id": f"msg_{i}"} if role == "assistant" else {})}}))
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n")
    turns = read_excerpt(path, max_turns=len(CASES), turn_chars=1500, redact=redact)
    assert len(turns) == len(CASES)
    _assert_nothing_leaked(*(t.text for t in turns))
    # the cut itself still happens, after redaction
    assert max(len(t.text) for t in turns) <= 1500
