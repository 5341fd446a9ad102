"""`cardmem install|uninstall codex|gemini|cursor|copilot`: each host's own file, merged into,
backed up, idempotent, and given back byte for byte by uninstall."""
from __future__ import annotations

import json
import shlex

import pytest
from click.testing import CliRunner

from cardmem.hosts.cli import install, uninstall
from cardmem.hosts.install import installed, installed_store
from cardmem.hosts.settings import backup_path, record_path

HOSTS = ("codex", "gemini", "cursor", "copilot")
# A person's own file, formatted their way (tabs, key order, no final newline), with a
# hook of their own under one of the events cardmem uses.
THEIRS = {
    "codex": '{\n\t"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]},\n\t"x": 1}',
    "gemini": '{"theme": "Dracula", "hooksConfig": {"notifications": false},\n "hooks": {"BeforeTool": '
              '[{"matcher": "write_file", "hooks": [{"type": "command", "command": "./lint.sh"}]}]}}',
    "cursor": '{"version": 1, "hooks": {"stop": [{"command": "./audit.sh"}]}}',
    "copilot": '{"version": 1,   "hooks": {"preToolUse": [{"type": "command", "bash": "./policy.sh", "timeoutSec": 5}]}}',
}


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    """Install also registers the MCP server in the host's user file: keep it in tmp."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("COPILOT_HOME", raising=False)


def run(cmd, *args):
    r = CliRunner().invoke(cmd, list(args))
    assert r.exit_code == 0, r.output
    return r.output


@pytest.mark.parametrize("host", HOSTS)
def test_install_then_uninstall_gives_the_file_back_byte_for_byte(host, store, tmp_path):
    path = tmp_path / f"{host}.json"
    path.write_text(THEIRS[host])
    out = run(install, host, "--settings", str(path), "--store", str(store.root))
    assert "installed cardmem's hooks" in out and str(store.root) in out
    assert backup_path(path).read_text() == THEIRS[host]  # the original, aside
    ours = installed(host, path)
    assert ours and installed_store(host, path) == store.root
    assert record_path(path).stat().st_mode & 0o077 == 0  # it keeps their file, keys and all
    data = json.loads(path.read_text())
    assert THEIRS[host].split('"command": "')[-1].split('"')[0] in json.dumps(data) or \
        "./policy.sh" in json.dumps(data)  # their hook is still there
    before = path.read_bytes()
    assert "already installed" in run(install, host, "--settings", str(path), "--store",
                                      str(store.root))
    assert path.read_bytes() == before  # idempotent
    run(uninstall, host, "--settings", str(path))
    assert path.read_text() == THEIRS[host]
    assert not record_path(path).exists()


@pytest.mark.parametrize("host", HOSTS)
def test_install_into_no_file_makes_it_and_uninstall_takes_it_away(host, store, tmp_path):
    path = tmp_path / "deep" / "hooks.json"
    run(install, host, "--settings", str(path), "--store", str(store.root))
    data = json.loads(path.read_text())
    if host in ("cursor", "copilot"):
        assert data["version"] == 1
    if host == "gemini":
        assert data["hooksConfig"] == {"enabled": True}
    commands = [shlex.split(e.get("command") or e.get("bash")) for e in installed(host, path)]
    assert all(["--host", host] == c[c.index("--host"):c.index("--host") + 2] for c in commands)
    run(uninstall, host, "--settings", str(path))
    assert not path.exists()


def test_user_scope_by_default(store, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    for host, where in (("codex", ".codex/hooks.json"), ("gemini", ".gemini/settings.json"),
                        ("cursor", ".cursor/hooks.json"), ("copilot", ".copilot/hooks/cardmem.json")):
        out = run(install, host, "--store", str(store.root))
        assert str(tmp_path / where) in out and (tmp_path / where).exists()


def test_a_file_that_is_not_json_is_refused_and_left_alone(store, tmp_path):
    path = tmp_path / "hooks.json"
    path.write_text("{not json")
    r = CliRunner().invoke(install, ["codex", "--settings", str(path), "--store", str(store.root)])
    assert r.exit_code != 0 and "not valid JSON" in str(r.exception)  # the group says it in one line
    assert path.read_text() == "{not json" and not backup_path(path).exists()


def test_a_gemini_settings_file_with_comments_is_refused_saying_so(store, tmp_path):
    """Gemini CLI reads comments in its settings.json; cardmem writes plain JSON, so it
    refuses, and says it is the comment (it said 'not valid JSON; fix it or pass
    --mcp-config', of a file Gemini CLI reads well, naming an option that is no way out)."""
    path = tmp_path / ".gemini" / "settings.json"
    path.parent.mkdir()
    mine = '{\n  // my theme\n  "theme": "Dracula"\n}\n'
    path.write_text(mine)
    r = CliRunner().invoke(install, ["gemini", "--store", str(store.root)])
    assert r.exit_code != 0
    why = str(r.exception)
    assert "comment" in why and "line 2" in why and "--mcp-config" not in why, why
    assert path.read_text() == mine and not backup_path(path).exists()


def test_doctor_checks_each_installed_host(store, tmp_path, monkeypatch):
    from cardmem.hosts.checks import check_host, checks

    monkeypatch.setenv("HOME", str(tmp_path))
    assert checks(store) == []  # nothing installed: nothing to say
    run(install, "gemini", "--store", str(store.root))
    assert check_host("gemini", store) == [(True, f"Gemini CLI: hooks installed in "
                                                  f"{tmp_path / '.gemini' / 'settings.json'}")]
    path = tmp_path / ".gemini" / "settings.json"
    data = json.loads(path.read_text())
    del data["hooks"]["BeforeAgent"]
    data["hooks"]["SessionStart"][0]["hooks"][0]["command"] = \
        data["hooks"]["SessionStart"][0]["hooks"][0]["command"].replace(
            __import__("sys").executable, str(tmp_path / "gone" / "python"))
    path.write_text(json.dumps(data))
    found = checks(store)
    assert (False, f"Gemini CLI: prompt hook(s) missing in {path}; run `cardmem install gemini`") in found
    assert any(ok is False and "does not exist (a removed virtualenv?)" in m for ok, m in found)


def rule_card(store, name, body):
    (store.root / "feedback").mkdir(exist_ok=True)
    (store.root / "feedback" / f"{name}.md").write_text(
        f"---\ntitle: {name}\ntype: feedback\n---\n{body}\n")


@pytest.mark.parametrize("host,folder,file", [
    ("codex", ".codex", "AGENTS.md"), ("gemini", ".gemini", "GEMINI.md"),
    ("cursor", ".cursor", ".cursor/rules/cardmem.mdc"),
    ("copilot", ".github", ".github/copilot-instructions.md")])
def test_install_export_writes_the_hosts_rules_file_and_keeps_it_current(
        host, folder, file, store, tmp_path):
    """`install HOST --export`: the rules in the host's own file, beside the project's
    hooks file --settings names, then written again by the next rule change."""
    rule_card(store, "small-prs", "Keep PRs under 400 lines.")
    proj = tmp_path / "acme"
    hooks = proj / folder / ("hooks/cardmem.json" if host == "copilot" else "hooks.json")
    out = run(install, host, "--settings", str(hooks), "--store", str(store.root), "--export")
    assert f"rules: 1 rule in {proj / file}; kept current as rules change" in out
    assert "Keep PRs under 400 lines." in (proj / file).read_text()
    from clikit import run as cardmem

    r = cardmem("new", "feedback/tabs", "--title", "Tabs", "--body", "Indent with tabs.",
                "--store", str(store.root))
    assert r.returncode == 0, r.stderr
    assert "Indent with tabs." in (proj / file).read_text()


@pytest.mark.parametrize("host,folder,file", [
    ("codex", ".codex", "AGENTS.md"), ("cursor", ".cursor", ".cursor/rules/cardmem.mdc")])
def test_uninstall_ends_the_export_install_made(host, folder, file, store, tmp_path):
    """`uninstall HOST` takes out what `install HOST --export` wrote and forgets it: the
    next rule change writes nothing there; a person's own text around the block stays, and
    an export made by hand (`cardmem export`) is not install's to end."""
    from clikit import run as cardmem

    from cardmem.store.rules.exports import targets

    rule_card(store, "small-prs", "Keep PRs under 400 lines.")
    (store.root / "feedback" / "tests.md").write_text(
        "---\ntitle: Tests\ntype: feedback\napplies_to: ['src/**/*.py']\n---\nRun pytest.\n")
    proj, other = tmp_path / "acme", tmp_path / "other"
    other.mkdir()
    hooks = proj / folder / "hooks.json"
    theirs = "# Our project\n\nBuild with make.\n"
    if host == "codex":
        proj.mkdir()
        (proj / file).write_text(theirs)
    run(install, host, "--settings", str(hooks), "--store", str(store.root), "--export")
    kind = "agents-md" if host == "codex" else "cursor-rules"
    r = cardmem("export", kind, str(other), "--store", str(store.root))
    assert r.returncode == 0, r.stderr
    assert "Keep PRs under 400 lines." in (proj / file).read_text()
    if host == "cursor":  # the rule with path globs, in a file of its own
        assert list((proj / ".cursor" / "rules").glob("cardmem-*"))
    out = run(uninstall, host, "--settings", str(hooks))
    assert f"took the rules out of {proj / file}; no longer kept current" in out
    if host == "codex":
        assert (proj / file).read_text() == theirs
    else:
        assert not (proj / file).exists()
        assert not list((proj / ".cursor" / "rules").glob("cardmem-*"))
    assert [t["folder"] for t in targets(store.root)] == [str(other.resolve())]
    r = cardmem("new", "feedback/tabs", "--title", "Tabs", "--body", "Indent with tabs.",
                "--store", str(store.root))
    assert r.returncode == 0, r.stderr
    assert not (proj / file).exists() or "Indent with tabs." not in (proj / file).read_text()
    assert "Indent with tabs." in (other / ("AGENTS.md" if host == "codex" else file)).read_text()


def test_install_export_at_user_scope_and_its_refusals(store, tmp_path):
    rule_card(store, "small-prs", "Keep PRs under 400 lines.")
    run(install, "codex", "--store", str(store.root), "--export")  # Codex's own AGENTS.md
    assert "Keep PRs under 400 lines." in (tmp_path / ".codex" / "AGENTS.md").read_text()
    for host, args, why in (
            ("cursor", ["--export"], "--export: Cursor reads rules files from a project, not "
                                     "from your home; name the project's folder: --export DIR"),
            ("copilot", ["--export", str(tmp_path / "nowhere")],
             f"--export {tmp_path / 'nowhere'}: is not a folder"),
            ("claude-code", ["--export"], "--export: Claude Code loads every rule whole")):
        r = CliRunner().invoke(install, [host, "--store", str(store.root), *args])
        assert r.exit_code != 0 and str(r.exception).startswith(why), r.output


def test_doctor_brings_each_kept_export_up_to_date(store, tmp_path):
    from clikit import run as cardmem

    from cardmem.hosts.checks import check_exports

    rule_card(store, "small-prs", "Keep PRs under 400 lines.")
    proj = tmp_path / "acme"
    proj.mkdir()
    assert cardmem("export", "agents-md", str(proj), "--store", str(store.root)).returncode == 0
    assert check_exports(store) == [(True, f"export agents-md: {proj / 'AGENTS.md'} current")]
    rule_card(store, "small-prs", "Keep PRs under 200 lines.")  # edited by hand, not committed
    assert check_exports(store) == [
        (True, f"export agents-md: {proj / 'AGENTS.md'} brought up to date")]
    assert "under 200 lines" in (proj / "AGENTS.md").read_text()
    (proj / "AGENTS.md").unlink()
    [(ok, said)] = check_exports(store)
    assert ok is None and "no longer kept current" in said and check_exports(store) == []


def test_install_export_to_no_folder_writes_nothing(store, tmp_path):
    r = CliRunner().invoke(install, ["copilot", "--store", str(store.root),
                                     "--export", str(tmp_path / "nowhere")])
    assert r.exit_code != 0 and "is not a folder" in str(r.exception)
    assert not (tmp_path / ".copilot").exists()  # no hooks, no MCP server: nothing written


def test_doctor_says_when_cursors_shell_hook_is_gone(store, tmp_path):
    """Cursor's shell is answered at beforeShellExecution only (preToolUse leaves it there):
    without that entry no shell rule holds, though preToolUse still runs the same hook."""
    from cardmem.hosts.checks import check_host

    run(install, "cursor", "--store", str(store.root))
    path = tmp_path / ".cursor" / "hooks.json"
    data = json.loads(path.read_text())
    del data["hooks"]["beforeShellExecution"]
    path.write_text(json.dumps(data))
    assert (False, f"Cursor: beforeShellExecution hook(s) missing in {path}; run "
                   "`cardmem install cursor`") in check_host("cursor", store)
