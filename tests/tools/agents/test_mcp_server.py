"""The MCP server: every tool and every error, through the SDK's own client.

In-process tests use mcp.Client(server); one test starts `cardmem mcp` as a real stdio
subprocess and talks to it through the SDK's stdio client.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp import Client

from cardmem.store.git.writer import Message
from cardmem.tools.agents.mcp_server import build_server

TOOLS = {"search", "read_card", "memory_map", "list_recent", "remember"}


def call(store, name: str, args: dict[str, Any] | None = None, server=None):
    """One tool call in-process; returns the CallToolResult."""
    server = server or build_server(store)

    async def go():
        async with Client(server) as client:
            return await client.call_tool(name, args or {})

    return anyio.run(go)


def ok(result) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    data = json.loads(result.content[0].text)
    assert data == result.structured_content
    return data


def error_text(result) -> str:
    assert result.is_error, result
    text = result.content[0].text
    assert "Traceback" not in text and 'File "' not in text
    return text


def git(store, *args: str) -> str:
    return subprocess.run(["git", "-C", str(store.root), *args], capture_output=True,
                          text=True, check=True).stdout


def seed(store, files: dict[str, str]) -> None:
    store.commit({k: v.encode() for k, v in files.items()}, Message("seed", source="test"),
                 agent=False)


# --- the tool list ------------------------------------------------------------------

def test_five_tools_with_annotations_and_a_careful_remember(store) -> None:
    async def go():
        async with Client(build_server(store)) as client:
            return (await client.list_tools()).tools

    tools = {t.name: t for t in anyio.run(go)}
    assert set(tools) == TOOLS
    for name in TOOLS - {"remember"}:
        a = tools[name].annotations
        assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint) == (True, False, True)
    a = tools["remember"].annotations
    assert (a.read_only_hint, a.destructive_hint, a.idempotent_hint) == (False, False, False)
    assert "ONLY when the user explicitly asks" in tools["remember"].description
    props = tools["search"].input_schema["properties"]
    assert props["limit"]["default"] == 5 and tools["search"].input_schema["required"] == ["query"]
    assert set(tools["remember"].input_schema["properties"]["type"]["enum"]) >= {"feedback", "reference"}


# --- search -------------------------------------------------------------------------

def test_search_gives_the_index_answer(example_store) -> None:
    from cardmem.store.index import db as index
    from cardmem.store.search.query import search

    store = example_store
    got = ok(call(store, "search", {"query": "deploy", "limit": 3}))
    want = search(store, "deploy", limit=3).as_dict()
    assert [r["id"] for r in got["results"]] == [r["id"] for r in want["results"]]
    assert got["results"] and len(got["results"]) <= 3
    assert {r["confidence"] for r in got["results"]} <= {"high", "medium", "low"}
    assert got["no_confident_results"] == want["no_confident_results"]
    assert all(store.exists(r["id"]) for r in got["results"])


def test_search_filters_and_says_when_nothing_is_confident(example_store) -> None:
    got = ok(call(example_store, "search", {"query": "deploy", "type": "feedback"}))
    assert all(r["type"] == "feedback" for r in got["results"])
    nothing = ok(call(example_store, "search", {"query": "qqzzxxv wwkkjjh"}))
    assert nothing["no_confident_results"] is True


def test_search_sees_a_card_written_after_start(store) -> None:
    server = build_server(store)

    async def go():
        async with Client(server) as client:
            first = await client.call_tool("search", {"query": "zeppelin"})
            seed(store, {"reference/zeppelin.md": "---\ntitle: Zeppelin hangar\n---\nAirships.\n"})
            second = await client.call_tool("search", {"query": "zeppelin"})
            return first, second

    first, second = anyio.run(go)
    assert ok(first)["results"] == []
    assert [r["id"] for r in ok(second)["results"]] == ["reference/zeppelin"]


def test_warm_up_opens_the_index_but_never_builds_one(store) -> None:
    from cardmem.store.index import db as index
    from cardmem.store.search.query import search
    from cardmem.tools.agents.mcp_server import CardTools

    db = index.Index(store).db_path
    fresh = CardTools(store)
    fresh.warm()
    assert fresh._index is None and not db.exists()  # nothing indexed at start-up
    search(store, "anything").as_dict()  # now the store has an index file
    tools = CardTools(store)
    tools.warm()
    assert tools._index is not None and tools._index.db_path == db
    opened = tools._index
    # A card written after the warm-up is still found: the search checks freshness itself.
    seed(store, {"reference/zeppelin.md": "---\ntitle: Zeppelin hangar\n---\nAirships.\n"})
    assert [r["id"] for r in tools.search("zeppelin")["results"]] == ["reference/zeppelin"]
    assert tools._index is opened


def test_the_sdk_loads_with_the_gc_paused_then_frozen() -> None:
    import gc

    from cardmem.tools.agents.mcp_server import _sdk_import_gc

    assert gc.isenabled()
    try:
        with pytest.raises(RuntimeError):
            with _sdk_import_gc():
                assert not gc.isenabled()
                raise RuntimeError("the build failed")
        assert gc.isenabled() and gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("args,why", [({"query": "  "}, "query: is empty"),
                                      ({"query": "x", "limit": 0}, "greater than or equal to 1"),
                                      ({"query": "x", "limit": 500}, "less than or equal to 50"),
                                      ({}, "query\n  Field required")])
def test_search_refuses_bad_arguments_readably(store, args, why) -> None:
    assert why in error_text(call(store, "search", args))


# --- read_card ----------------------------------------------------------------------

def test_read_card_is_the_whole_card_with_its_last_history(store) -> None:
    from cardmem.store.by_address import read_card

    history = "".join(f"- 2026-11-{d:02d} · session {d} · Knowledge: item {d}\n" for d in range(1, 9))
    seed(store, {"entities/billing.md": "---\ntitle: Billing service\ntype: entity\n---\n"
                                        f"Owns invoices.\n\n## History\n{history}"})
    got = ok(call(store, "read_card", {"id": "entities/billing"}))
    assert got == read_card(store, "entities/billing")
    assert got["text"] == (store.root / "entities/billing.md").read_text()
    assert got["history"][-1].endswith("item 8") and len(got["history"]) == 5
    # `.md` on the id is accepted as well
    assert ok(call(store, "read_card", {"id": "entities/billing.md"}))["id"] == "entities/billing"


def test_read_card_caps_a_long_card_and_says_so(store) -> None:
    seed(store, {"reference/long.md": "# Long\n" + "word " * 4000})
    got = ok(call(store, "read_card", {"id": "reference/long"}))
    assert len(got["text"]) == 8000 and got["truncated_chars"] == len("# Long\n") + 20000 - 8000


@pytest.mark.parametrize("card_id,why", [
    ("../outside", "climbs out of the store"),
    ("/etc/passwd", "absolute path"),
    ("feedback/a\x00b", "NUL"),
    (".git/config", "hidden"),
    ("", "empty"),
    ("reference/missing", "no such card"),
])
def test_read_card_bad_ids_are_told(store, card_id: str, why: str) -> None:
    text = error_text(call(store, "read_card", {"id": card_id}))
    assert why in text


def test_read_card_refuses_a_link_out_and_a_card_too_large(tmp_path: Path, store) -> None:
    (tmp_path / "secret.md").write_text("outside\n")
    (store.root / "reference").mkdir()
    (store.root / "reference" / "link.md").symlink_to(tmp_path / "secret.md")
    assert "outside the store" in error_text(call(store, "read_card", {"id": "reference/link"}))
    (store.root / "reference" / "huge.md").write_bytes(b"# Huge\n" + b"x" * (1024 * 1024 + 1))
    assert "too large" in error_text(call(store, "read_card", {"id": "reference/huge"}))


def test_an_unexpected_failure_leaves_no_trace_for_the_model(store, monkeypatch) -> None:
    import cardmem.store.by_address as reading

    def boom(*a, **k):
        raise RuntimeError("internal detail /home/user/secret")

    monkeypatch.setattr(reading, "read_card", boom)
    text = error_text(call(store, "read_card", {"id": "reference/x"}))
    assert "internal detail" not in text and "RuntimeError" not in text


# --- memory_map and list_recent ------------------------------------------------------

def test_memory_map_is_count_capped_with_the_total(store) -> None:
    from cardmem.store.by_address import MAP_COUNT

    n = MAP_COUNT + 7
    seed(store, {f"reference/r{i:04d}.md": f"---\ntitle: R {i}\ndescription: d{i}\n---\nx\n"
                 for i in range(n)} | {"feedback/only.md": "---\ntitle: Only rule\n---\nx\n"})
    got = ok(call(store, "memory_map"))
    assert got["total"] == n + 1 and got["shown"] == MAP_COUNT and got["left_out"] == n + 1 - MAP_COUNT
    assert got["entries"][0] == {"id": "feedback/only", "type": "feedback", "title": "Only rule",
                                 "description": ""}
    only = ok(call(store, "memory_map", {"type": "feedback"}))
    assert [e["id"] for e in only["entries"]] == ["feedback/only"] and only["total"] == 1


def test_memory_map_filters_by_project(store) -> None:
    seed(store, {"projects/acme/deploy.md": "---\ntitle: Deploy\nproject: acme\n---\nx\n",
                 "projects/beta/deploy.md": "---\ntitle: Deploy\nproject: beta\n---\nx\n"})
    got = ok(call(store, "memory_map", {"project": "acme"}))
    assert [e["id"] for e in got["entries"]] == ["projects/acme/deploy"]


def test_list_recent_reads_git_newest_first(store) -> None:
    seed(store, {"reference/old.md": "# Old\n"})
    seed(store, {"feedback/new.md": "# New\n"})
    got = ok(call(store, "list_recent", {"since": "1d"}))
    assert [c["id"] for c in got["changes"]][:2] == ["feedback/new", "reference/old"]
    assert got["shown"] == len(got["changes"])
    typed = ok(call(store, "list_recent", {"type": "reference"}))
    assert [c["id"] for c in typed["changes"]] == ["reference/old"]


def test_list_recent_bad_since_is_told(store) -> None:
    assert "expected like 7d" in error_text(call(store, "list_recent", {"since": "last tuesday"}))


# --- remember -----------------------------------------------------------------------

def test_remember_is_an_agent_commit_from_mcp(store) -> None:
    got = ok(call(store, "remember", {"title": "Coffee order", "body": "Flat white, no sugar."}))
    assert got["id"] == "reference/coffee-order" and got["created"] is True
    assert "Flat white, no sugar." in (store.root / "reference/coffee-order.md").read_text()
    head = git(store, "log", "-1", "--format=%an <%ae>%n%B")
    assert head.startswith("cardmem-agent <agent@cardmem.invalid>")
    assert "Cardmem-Source: mcp" in head
    again = ok(call(store, "remember", {"title": "Coffee order", "body": "Oat milk on Mondays."}))
    assert again["id"] == "reference/coffee-order" and again["appended"] is True
    text = (store.root / "reference/coffee-order.md").read_text()
    assert "Flat white" in text and "Oat milk on Mondays." in text


def test_remember_never_changes_a_protected_card(store) -> None:
    original = "---\ntitle: Run tests with x\ntype: feedback\n---\nAlways -x.\n"
    seed(store, {"feedback/run-tests-with-x.md": original})
    got = ok(call(store, "remember", {"title": "Run tests with x", "body": "Also -q.",
                                      "type": "feedback"}))
    assert got["id"] == "feedback/run-tests-with-x-proposed" and got["created"] is True
    assert got["proposed"] is True
    assert "protected" in got["note"] and "feedback/run-tests-with-x" in got["note"]
    assert (store.root / "feedback/run-tests-with-x.md").read_text() == original


def test_remember_redacts_secrets_before_anything_is_written(store) -> None:
    token = "ghp_" + "A1b2C3d4E5" * 4
    got = ok(call(store, "remember", {"title": "Deploy token",
                                      "body": f"The CI token is {token} (rotate monthly)."}))
    assert got["redacted"] == {"github-token": 1} and "redacted" in got["note"]
    assert token not in (store.root / f"{got['id']}.md").read_text()
    assert token not in git(store, "log", "-p", "--all")


@pytest.mark.parametrize("args,why", [
    ({"title": " ", "body": "x"}, "title: is empty"),
    ({"title": "t" * 201, "body": "x"}, "title: too long"),
    ({"title": "Big", "body": "x" * 16_001}, "body: too large"),
    ({"title": "Empty", "body": "   "}, "body: is empty"),
    ({"title": "Typed", "body": "x", "type": "nonsense"}, "Input should be 'user'"),
])
def test_remember_refuses_bad_input_and_writes_nothing(store, args, why) -> None:
    head = git(store, "rev-parse", "HEAD")
    assert why in error_text(call(store, "remember", args))
    assert git(store, "rev-parse", "HEAD") == head
    assert git(store, "status", "--porcelain") == ""


def test_a_busy_store_is_told_to_the_model(store) -> None:
    from cardmem.store.git.writer import write_lock

    store.config["store"]["lock_timeout_s"] = 0.2
    server = build_server(store)
    with write_lock(store.root):
        text = error_text(call(store, "remember", {"title": "Later", "body": "x"}, server=server))
    assert "busy" in text
    assert not (store.root / "reference/later.md").exists()


# --- the real process ----------------------------------------------------------------

def _cardmem() -> list[str]:
    exe = Path(sys.executable).with_name("cardmem")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "cardmem.tools.cli"]


def test_cardmem_mcp_over_stdio(example_store, tmp_path: Path) -> None:
    from mcp.client.stdio import StdioServerParameters, stdio_client

    store = example_store
    cmd = _cardmem()
    params = StdioServerParameters(command=cmd[0], args=[*cmd[1:], "mcp", "--store",
                                                        str(store.root), "--verbose"],
                                   env=dict(os.environ))
    errlog = (tmp_path / "stderr.txt").open("w")

    async def go():
        async with Client(stdio_client(params, errlog=errlog)) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            found = await client.call_tool("search", {"query": "deploy", "limit": 2})
            first = json.loads(found.content[0].text)["results"][0]["id"]
            card = await client.call_tool("read_card", {"id": first})
            bad = await client.call_tool("read_card", {"id": "../../etc/passwd"})
            saved = await client.call_tool("remember", {"title": "Stdio check",
                                                        "body": "Written through stdio."})
            return names, found, card, bad, saved

    names, found, card, bad, saved = anyio.run(go)
    errlog.close()
    assert names == TOOLS
    assert not found.is_error and not card.is_error
    assert json.loads(card.content[0].text)["text"] == (store.root / f"{json.loads(card.content[0].text)['id']}.md").read_text()
    assert bad.is_error and "climbs out of the store" in bad.content[0].text
    assert json.loads(saved.content[0].text)["id"] == "reference/stdio-check"
    assert "Cardmem-Source: mcp" in git(store, "log", "-1", "--format=%B")
    log = (tmp_path / "stderr.txt").read_text()
    assert "search done in" in log  # --verbose logs go to stderr (stdout is the protocol)
    assert "warm-up: " in log  # the background warm-up ran beside the handshake


def test_cardmem_mcp_without_a_store_says_so(tmp_path: Path) -> None:
    cmd = _cardmem()
    proc = subprocess.run([*cmd, "mcp", "--store", str(tmp_path / "nowhere")],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"cardmem: store {tmp_path / 'nowhere'}: does not exist; run `cardmem init {tmp_path / 'nowhere'}`"]


def test_cardmem_mcp_writes_nothing_but_protocol_to_stdout(store) -> None:
    """With stdin at EOF the server exits; its log lines went to stderr, stdout stayed empty."""
    proc = subprocess.run([*_cardmem(), "mcp", "--store", str(store.root), "--verbose"],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert f"cardmem mcp: serving {store.root} on stdio" in proc.stderr


def test_search_and_read_an_attached_base(store, tmp_path: Path) -> None:
    from cardmem.store.sharing.bases import attach

    docs = tmp_path / "docs"
    (docs / "guides").mkdir(parents=True)
    (docs / "guides" / "zebra.md").write_text("# Zebra crossings\n\nStripes for walkers.\n")
    (docs / "out.md").symlink_to("/etc/hostname")
    attach(store, "handbook", docs)
    found = ok(call(store, "search", {"query": "zebra crossings", "base": "handbook"}))
    assert [r["id"] for r in found["results"]] == ["guides/zebra"]
    assert found["results"][0]["base"] == "handbook"
    doc = ok(call(store, "read_card", {"id": "guides/zebra", "base": "handbook"}))
    assert "Stripes for walkers." in doc["text"]
    assert "resolves outside the base" in error_text(
        call(store, "read_card", {"id": "out", "base": "handbook"}))
    assert "not attached to this store" in error_text(
        call(store, "search", {"query": "x", "base": "nope"}))
    # The cards themselves are not searched when a base is named, nor the base otherwise.
    assert ok(call(store, "search", {"query": "zebra crossings"}))["results"] == []


# --- agent-written rules are proposals ---------------------------------------------

def test_remember_of_a_rule_is_a_proposal_left_out_of_the_session(store) -> None:
    from cardmem.store.context import session_context

    got = ok(call(store, "remember", {"title": "Always push to main",
                                      "body": "Push straight to main, skip review.",
                                      "type": "feedback"}))
    assert got["id"] == "feedback/always-push-to-main" and got["proposed"] is True
    text = (store.root / "feedback/always-push-to-main.md").read_text()
    assert "status: proposed\nproposed_by: mcp\n" in text
    assert git(store, "log", "-1", "--format=%an").strip() == "cardmem-agent"
    pile = session_context(store).text
    assert "Push straight to main" not in pile and "Always push to main" not in pile.split(
        "## Memory map")[0]
    assert "(1 agent-proposed rule awaits a person's review (`cardmem review`)" in pile


def test_a_contradicting_copy_of_a_rule_is_a_change_proposal_not_a_rule(store) -> None:
    from cardmem.store.context import session_context

    seed(store, {"feedback/run-tests-with-x.md":
                 "---\ntitle: Run tests with x\ntype: feedback\n---\nAlways -x.\n"})
    for body in ("Never use -x.", "Really, never."):
        got = ok(call(store, "remember", {"title": "Run tests with x", "body": body,
                                          "type": "feedback"}))
    # Each write proposes a change of its own; the live rule is never touched.
    assert got["id"] == "feedback/run-tests-with-x-proposed-2"
    pile = session_context(store).text
    assert "## Rules (1, always in force)" in pile and "never" not in pile.lower()
    assert "2 agent-proposed rules await a person's review" in pile
    proposal = (store.root / "feedback/run-tests-with-x-proposed.md").read_text()
    assert "proposes_change_to: feedback/run-tests-with-x\n" in proposal
    assert proposal.endswith("Always -x.\n\n## " + proposal.split("## ")[-1])


def test_remember_of_the_user_card_is_a_proposal_too(store) -> None:
    got = ok(call(store, "remember", {"title": "Me", "body": "I like risky deploys.",
                                      "type": "user"}))
    assert got["id"] == "user/me" and got["proposed"] is True
    assert "status: proposed" in (store.root / "user/me.md").read_text()
