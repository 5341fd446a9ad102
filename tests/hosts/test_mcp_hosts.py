"""`cardmem install codex|gemini|cursor|copilot` registers `cardmem mcp` where each host keeps
its MCP servers, and `uninstall` takes exactly that out again, byte for byte:
Codex `[mcp_servers.cardmem]` in ~/.codex/config.toml, Gemini CLI `mcpServers` in its
settings.json (beside the hooks), Cursor ~/.cursor/mcp.json, Copilot CLI
~/.copilot/mcp-config.json (`type: local`, `tools: ["*"]`)."""
from __future__ import annotations

import json
import sys
import tomllib

import pytest
from click.testing import CliRunner

from cardmem.hosts.cli import install, uninstall
from cardmem.hosts.mcp_install import record_path, registered
from cardmem.hosts.settings import record_path as hooks_record

FILES = {"codex": ".codex/config.toml", "gemini": ".gemini/settings.json",
         "cursor": ".cursor/mcp.json", "copilot": ".copilot/mcp-config.json"}
# Each person's own file, formatted their way, with a server of their own.
THEIRS = {
    "codex": '# my codex\nmodel = "gpt-5"  # keep\n\n[mcp_servers.docs]\ncommand = "npx"\n'
             "args = ['-y', 'docs-mcp']\n\n[profiles.fast]\nmodel = 'gpt-5-mini'",
    "gemini": '{"theme": "Dracula",\n\t"mcpServers": {"docs": {"command": "npx", "args": ["docs"]}}}',
    "cursor": '{\n    "mcpServers": {"docs": {"command": "npx", "args": ["-y", "docs"], "env": {}}}\n}\n',
    "copilot": '{"mcpServers": {"docs": {"type": "http", "url": "https://x.test/mcp", '
               '"tools": ["*"]}}}',
}


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("COPILOT_HOME", raising=False)
    return tmp_path


def run(cmd, *args):
    r = CliRunner().invoke(cmd, list(args))
    assert r.exit_code == 0, r.output
    return r.output


def server(host, path):
    if host == "codex":
        return tomllib.loads(path.read_text())["mcp_servers"]
    return json.loads(path.read_text())["mcpServers"]


@pytest.mark.parametrize("host", FILES)
def test_install_registers_the_server_and_uninstall_gives_the_file_back(host, store, home):
    path = home / FILES[host]
    path.parent.mkdir(parents=True)
    path.write_text(THEIRS[host])
    out = run(install, host, "--store", str(store.root))
    assert f"registered the MCP server `cardmem` in {path}" in out
    servers = server(host, path)
    ours = servers["cardmem"]
    assert ours["command"] == sys.executable
    assert ours["args"] == ["-m", "cardmem.tools.cli", "mcp", "--store", str(store.root)]
    assert ours["env"] == {"CARDMEM_AGENT": "1"}
    assert "docs" in servers  # theirs is kept
    if host == "copilot":
        assert (ours["type"], ours["tools"]) == ("local", ["*"])
    if host == "codex":  # edited as text: every byte of theirs is still there, in order
        assert path.read_text().startswith(THEIRS[host] + "\n")
    assert registered(host) == ours
    assert record_path(path).stat().st_mode & 0o077 == 0  # it holds their servers' keys
    before = path.read_bytes()
    assert "already registered" in run(install, host, "--store", str(store.root))
    assert path.read_bytes() == before  # idempotent
    out = run(uninstall, host)
    assert f"removed the MCP server `cardmem` from {path}" in out
    assert path.read_text() == THEIRS[host]
    assert not record_path(path).exists() and registered(host) is None


@pytest.mark.parametrize("host", FILES)
def test_no_file_is_made_and_taken_away_again(host, store, home):
    run(install, host, "--store", str(store.root))
    assert (home / FILES[host]).exists()
    run(uninstall, host)
    assert not (home / FILES[host]).exists()


def test_gemini_hooks_and_server_share_settings_json_and_keep_their_own_records(store, home):
    path = home / FILES["gemini"]
    path.parent.mkdir(parents=True)
    path.write_text(THEIRS["gemini"])
    run(install, "gemini", "--store", str(store.root))
    data = json.loads(path.read_text())
    assert data["hooksConfig"] == {"enabled": True} and "cardmem" in data["mcpServers"]
    hooks_rec = json.loads(hooks_record(path).read_text())
    assert hooks_rec["original"] == THEIRS["gemini"]  # not overwritten by the server's record
    assert json.loads(record_path(path).read_text())["original"] != THEIRS["gemini"]
    run(uninstall, "gemini")
    assert path.read_text() == THEIRS["gemini"]
    assert not hooks_record(path).exists() and not record_path(path).exists()


@pytest.mark.parametrize("host", FILES)
def test_someone_elses_cardmem_server_is_refused_and_nothing_written(host, store, home):
    path = home / FILES[host]
    path.parent.mkdir(parents=True)
    theirs = ('[mcp_servers.cardmem]\ncommand = "/opt/fork/cardmem-server"\n' if host == "codex"
              else json.dumps({"mcpServers": {"cardmem": {"command": "/opt/fork/cardmem-server"}}}))
    path.write_text(theirs)
    r = CliRunner().invoke(install, [host, "--store", str(store.root)])
    assert r.exit_code != 0 and "is another server's entry" in str(r.exception)
    assert path.read_text() == theirs
    run(uninstall, host)  # not ours: left alone
    assert path.read_text() == theirs


@pytest.mark.parametrize("text, why", [
    ("model = \n", "not valid TOML"),
    ('mcp_servers = { docs = { command = "npx" } }\n', "cannot add a [mcp_servers.cardmem] table"),
])
def test_codex_config_that_cannot_take_the_table_is_refused_untouched(text, why, store, home):
    path = home / FILES["codex"]
    path.parent.mkdir(parents=True)
    path.write_text(text)
    r = CliRunner().invoke(install, ["codex", "--store", str(store.root)])
    assert r.exit_code != 0 and why in str(r.exception)
    assert path.read_text() == text and not record_path(path).exists()


def test_codex_another_store_replaces_the_block_in_place(store, home, tmp_path, monkeypatch):
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    path = tmp_path / "codex-home" / "config.toml"
    path.parent.mkdir()
    path.write_text(THEIRS["codex"])
    run(install, "codex", "--store", str(store.root))
    other = tmp_path / "other store"
    run(install, "codex", "--store", str(other), "--init")
    text = path.read_text()
    assert text.count("[mcp_servers.cardmem]") == 1
    assert tomllib.loads(text)["mcp_servers"]["cardmem"]["args"][-1] == str(other)
    run(uninstall, "codex")
    assert path.read_text() == THEIRS["codex"]


def test_no_mcp_registers_nothing(store, home):
    run(install, "cursor", "--store", str(store.root), "--no-mcp")
    assert not (home / FILES["cursor"]).exists()


def test_the_registered_entry_starts_a_working_server(store, home):
    """What Cursor would start, started: the MCP server answers with cardmem's tools."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    run(install, "cursor", "--store", str(store.root))
    entry = json.loads((home / FILES["cursor"]).read_text())["mcpServers"]["cardmem"]

    async def tools():
        params = StdioServerParameters(command=entry["command"], args=entry["args"],
                                       env={**entry["env"], "HOME": str(home)})
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            return [t.name for t in (await s.list_tools()).tools]

    assert "search" in anyio.run(tools)


def test_doctor_says_when_the_server_is_missing_or_cannot_start(store, home):
    from cardmem.hosts.checks import check_host

    run(install, "copilot", "--store", str(store.root))
    assert check_host("copilot", store)[-1][0] is True  # hooks and server: all well
    path = home / FILES["copilot"]
    data = json.loads(path.read_text())
    data["mcpServers"]["cardmem"]["command"] = str(home / "gone" / "python")
    path.write_text(json.dumps(data))
    assert any(ok is False and "the MCP server cannot start" in m for ok, m in check_host("copilot", store))
    path.unlink()
    assert any(ok is None and "no cardmem MCP server in" in m for ok, m in check_host("copilot", store))


# The Codex block is text appended to the person's file: any valid file, any path, and the
# round trip must hold and the parse must give exactly their tables and our entry.
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st  # noqa: E402

from cardmem.hosts.codex import mcp_toml  # noqa: E402

KEYS = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
VALUES = st.one_of(st.integers(-10**6, 10**6), st.booleans(), st.text(max_size=20),
                   st.lists(st.text(max_size=5), max_size=3))


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, list):
        return "[" + ", ".join(mcp_toml._str(x) for x in v) + "]"
    return mcp_toml._str(v)


@hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(top=st.dictionaries(KEYS, VALUES, max_size=4),
       tables=st.dictionaries(KEYS, st.dictionaries(KEYS, VALUES, max_size=3), max_size=3),
       servers=st.lists(KEYS.filter(lambda k: k != "cardmem"), max_size=2, unique=True),
       comment=st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")), max_size=15),
       final_newline=st.booleans(), python=st.text(min_size=1, max_size=30),
       store=st.text(min_size=1, max_size=30))
def test_codex_block_round_trips_any_file_and_any_path(top, tables, servers, comment,
                                                       final_newline, python, store):
    lines = [f"# {comment}"] + [f"{k} = {toml_value(v)}" for k, v in top.items()]
    for name, body in tables.items():
        if name in top:
            continue
        lines += ["", f"[{name}]"] + [f"{k} = {toml_value(v)}" for k, v in body.items()]
    for name in servers:
        lines += ["", f"[mcp_servers.{name}]", 'command = "npx"']
    text = "\n".join(lines) + ("\n" if final_newline else "")
    theirs = tomllib.loads(text)
    want = {"command": python, "args": ["-m", "cardmem.tools.cli", "mcp", "--store", store],
            "env": {"CARDMEM_AGENT": "1"}}
    path = __import__("pathlib").Path("config.toml")
    added = mcp_toml.add(text, want, path)
    got = tomllib.loads(added)
    assert got["mcp_servers"]["cardmem"] == want
    got["mcp_servers"].pop("cardmem")
    if not got["mcp_servers"] and "mcp_servers" not in theirs:
        del got["mcp_servers"]
    assert got == theirs  # nothing of theirs changed in meaning ...
    assert added.startswith(text)  # ... or in bytes
    assert mcp_toml.add(added, want, path) == added  # idempotent
    assert mcp_toml.remove(added, text) == text


@pytest.mark.parametrize("host, hooks, mcp", [
    ("cursor", ".cursor/hooks.json", ".cursor/mcp.json"),
    ("codex", ".codex/hooks.json", ".codex/config.toml"),
    ("copilot", ".github/hooks/cardmem.json", ".github/mcp.json"),
    ("gemini", ".gemini/settings.json", ".gemini/settings.json"),
])
def test_a_projects_hooks_get_the_projects_server_not_the_users(host, hooks, mcp, store, home,
                                                                 tmp_path):
    proj = tmp_path / "proj"
    out = run(install, host, "--settings", str(proj / hooks), "--store", str(store.root))
    assert f"in {proj / mcp}" in out
    assert registered(host, settings=proj / hooks)["args"][-1] == str(store.root)
    assert not (home / FILES[host]).exists()  # the user's own file is not touched
    run(uninstall, host, "--settings", str(proj / hooks))
    assert not (proj / mcp).exists()
