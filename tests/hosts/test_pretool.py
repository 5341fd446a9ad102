"""The PreToolUse hook: deny, ask, remind or nothing; never in the way when it fails;
every firing counted; `cardmem rules test|stats` and doctor read the same table."""
from __future__ import annotations

import io
import json
import subprocess
import sys

from click.testing import CliRunner

from cardmem.hosts import firings, pretool
from cardmem.hosts.claude_code.checks import check_point_of_action
from cardmem.hosts.rules_cli import rules

RULES = {
    "feedback/no-force-push": ("Never force-push", "deny", '["git push --force*", "git push -f*"]',
                               "Force-pushing rewrites history others have pulled."),
    "feedback/migrations": ("Ask before touching migrations", "ask", '["path: migrations/**"]',
                            "Migrations run against production on deploy."),
    "feedback/deploy": ("Deploys go through make", "remind", '["make deploy*", "bash: ./deploy.sh*"]',
                        "Run `make deploy ENV=staging` first; production needs a ticket."),
}


def make_rules(store):
    for cid, (title, enforce, applies, body) in RULES.items():
        p = store.root / f"{cid}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"---\ntitle: {title}\ntype: feedback\napplies_to: {applies}\n"
                     f"enforce: {enforce}\n---\n{body}\n")
    (store.root / "feedback" / "pnpm.md").write_text(
        "---\ntitle: Use pnpm, not npm\ntype: feedback\naliases: [npm install]\n---\n"
        "The web app's lockfile is pnpm's.\n")


def call(store, payload) -> dict:
    out = io.StringIO()
    assert pretool.run(str(store.root), io.StringIO(json.dumps(payload)), out) == 0
    return json.loads(out.getvalue()) if out.getvalue() else {}


def bash(line, session="s1"):
    return {"hook_event_name": "PreToolUse", "tool_name": "Bash", "session_id": session,
            "tool_input": {"command": line}, "cwd": "/tmp"}


def test_deny_ask_remind_and_nothing(store):
    make_rules(store)
    out = call(store, bash("touch X && git push --force origin main"))["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny"
    reason = out["permissionDecisionReason"]
    assert "feedback/no-force-push" in reason and "git push --force origin main" in reason
    assert "Force-pushing rewrites history" in reason

    out = call(store, {"tool_name": "Edit", "session_id": "s1", "cwd": "/repo",
                       "tool_input": {"file_path": "/repo/db/migrations/0042.py"}})
    assert out["hookSpecificOutput"]["permissionDecision"] == "ask"
    assert "Migrations run against production" in out["hookSpecificOutput"]["permissionDecisionReason"]

    out = call(store, bash("make deploy ENV=prod"))["hookSpecificOutput"]
    assert "permissionDecision" not in out
    assert "production needs a ticket" in out["additionalContext"]

    assert call(store, bash("ls -la")) == {}
    assert call(store, bash("echo 'git push --force'")) == {}


def test_a_deny_is_not_downgraded_by_an_ask_on_the_same_call(store):
    """Both fire on one command line, in either order: the call is refused, and the ask's
    rule is neither the decision nor its reason."""
    make_rules(store)
    p = store.root / "feedback" / "ask-rm.md"
    p.write_text("---\ntitle: Ask before rm -rf\ntype: feedback\napplies_to: [\"rm -rf*\"]\n"
                 "enforce: ask\n---\nThe build folder holds the only copy of the assets.\n")
    for line in ("rm -rf build && git push --force origin main",
                 "git push --force origin main; rm -rf build"):
        fired = {f["id"]: f["action"] for f in
                 json.loads(CliRunner().invoke(rules, ["test", line, "--json", "--store",
                                                       str(store.root)]).output)["fired"]}
        assert fired == {"feedback/no-force-push": "deny", "feedback/ask-rm": "ask"}, fired
        out = call(store, bash(line))
        assert out["hookSpecificOutput"]["permissionDecision"] == "deny", (line, out)
        assert "refused by the user's rule `feedback/no-force-push`" in \
            out["hookSpecificOutput"]["permissionDecisionReason"]
        assert out["systemMessage"] == "cardmem: refused by rule feedback/no-force-push"


def test_relevance_reminds_once_in_a_row(store):
    make_rules(store)
    out = call(store, bash("npm install left-pad"))
    assert "lockfile is pnpm" in out["hookSpecificOutput"]["additionalContext"]
    assert call(store, bash("npm install left-pad")) == {}  # not twice in a row
    assert call(store, bash("npm install left-pad", session="s2"))  # another session


def test_every_firing_is_counted_and_shown(store):
    make_rules(store)
    call(store, bash("git push -f"))
    call(store, bash("git push -f"))
    call(store, bash("./deploy.sh"))
    c = firings.counts(str(store.root))
    assert c["feedback/no-force-push"]["deny"] == 2 and c["feedback/deploy"]["remind"] == 1
    r = CliRunner().invoke(rules, ["stats", "--store", str(store.root)])
    assert r.exit_code == 0 and "feedback/no-force-push" in r.output
    assert "never fired (1): feedback/migrations" in r.output
    r = CliRunner().invoke(rules, ["stats", "--json", "--store", str(store.root)])
    assert json.loads(r.output)["rules"]["feedback/deploy"]["remind"] == 1
    lines = [line for ok, line in check_point_of_action(store)]
    assert any("3 of 4 rules name what they govern (1 deny, 1 ask, 1 remind)" in x for x in lines)
    assert any("2 refusal(s), 0 question(s), 1 reminder(s)" in x for x in lines)
    assert "rules at the point of action: refused calls, by rule: feedback/no-force-push (2)" \
        in lines
    log = (store.root / ".cardmem" / "hooks.log").read_text()
    assert "pre-tool-use" in log and "deny feedback/no-force-push (Bash)" in log


def test_failures_let_the_call_through_and_are_logged(store, monkeypatch):
    make_rules(store)

    def boom(*a, **k):
        raise RuntimeError("table exploded")

    monkeypatch.setattr("cardmem.store.rules.match.decide", boom)
    assert call(store, bash("git push --force")) == {}
    log = (store.root / ".cardmem" / "hooks.log").read_text()
    assert "error: RuntimeError: table exploded; call let through" in log
    monkeypatch.undo()
    (store.root / ".cardmem" / "triggers.bin").write_text("{not json")
    assert call(store, bash("git push --force"))["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_garbage_input_and_no_store(tmp_path, store):
    out = io.StringIO()
    assert pretool.run(str(store.root), io.StringIO("not json"), out) == 0 and out.getvalue() == ""
    assert pretool.run(str(tmp_path / "nowhere"), io.StringIO(json.dumps(bash("ls"))), out) == 0
    assert out.getvalue() == ""
    assert call(store, {"tool_name": "Bash", "tool_input": "git push -f"}) == {}


def test_rules_test_says_what_fires_and_why(store):
    make_rules(store)
    r = CliRunner().invoke(rules, ["test", "touch x && sudo git push --force origin main",
                                   "--store", str(store.root)])
    assert r.exit_code == 0, r.output
    assert "simple commands: `touch x` | `git push --force origin main`" in r.output
    assert "deny   feedback/no-force-push: `git push --force*` matched" in r.output
    r = CliRunner().invoke(rules, ["test", "--path", "db/migrations/1.py", "--json",
                                   "--store", str(store.root)])
    assert [f["id"] for f in json.loads(r.output)["fired"]] == ["feedback/migrations"]
    r = CliRunner().invoke(rules, ["test", "ls", "--store", str(store.root)])
    assert "no rule fires" in r.output
    assert "Example:" in CliRunner().invoke(rules, ["test", "--help"]).output
    r = CliRunner().invoke(rules, ["test", "ls", "--store", str(store.root / "nope")])
    assert r.exit_code != 0


def test_the_hook_imports_almost_nothing(store):
    from cardmem.store.rules import triggers

    make_rules(store)
    triggers.build(store)  # a current table: the hook reads it and nothing else
    code = ("import sys, io, json; from cardmem.hosts import pretool; "
            f"sys.stdin = io.StringIO(json.dumps({bash('git push -f')!r})); pretool.main(['--store', "
            f"{str(store.root)!r}]); sys.stderr.write(' '.join(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    mods = set(done.stderr.split())
    assert "cardmem.store.rules.match" in mods
    assert not mods & {"click", "yaml", "sqlite3", "frontmatter", "anthropic", "subprocess",
                       "cardmem.store.index.pile_view", "cardmem.store.cards.card", "typing"}


def test_doctor_fails_on_a_malformed_enforce_and_names_downgrades(store):
    make_rules(store)
    (store.root / "feedback" / "typo.md").write_text(
        "---\ntitle: Typo\ntype: feedback\napplies_to: [rm -rf*]\nenforce: block\n---\nx\n")
    results = check_point_of_action(store)
    bad = [line for ok, line in results if not ok]
    assert bad == ["rules at the point of action: feedback/typo: enforce 'block' is not "
                   "remind, ask or deny; reminding"]


def test_the_installed_command_runs_without_site_json_or_re(store):
    """As Claude Code starts it: `python -S …/pretool_start.py`; an ungoverned call and a
    refusal import nothing beyond the hook (no site, json, re, pathlib), a stale table
    (a rule edited by hand) is rebuilt with site after all."""
    import os
    import shlex

    from cardmem.hosts.claude_code.install import command
    from cardmem.store.rules import triggers

    make_rules(store)
    triggers.build(store)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def run(payload, *extra):
        args = shlex.split(command("pre-tool-use", store.root))
        args[1:1] = list(extra)
        done = subprocess.run(args, input=json.dumps(payload), capture_output=True, text=True,
                              env=env, cwd=store.root.parent)
        assert done.returncode == 0, done.stderr
        return done

    quiet = run(bash("ls -la && git status"), "-X", "importtime")
    loaded = {line.rsplit("|", 1)[-1].strip() for line in quiet.stderr.splitlines()}
    assert quiet.stdout == "" and "cardmem.store.rules.match" in loaded
    assert not loaded & {"site", "json", "re", "fnmatch", "pathlib", "cardmem.hosts.hooklog"}
    deny = run(bash("touch X && sudo git push -f origin main"), "-X", "importtime")
    loaded = {line.rsplit("|", 1)[-1].strip() for line in deny.stderr.splitlines()}
    assert json.loads(deny.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert not loaded & {"site", "json", "re", "pathlib"}
    (store.root / "feedback" / "no-force-push.md").write_text(
        "---\ntitle: Never force-push\ntype: feedback\napplies_to: [\"git push -f*\"]\n"
        "enforce: ask\n---\nAsk first.\n")
    again = run(bash("git push -f"))
    assert json.loads(again.stdout)["hookSpecificOutput"]["permissionDecision"] == "ask"
    assert "trigger table rebuilt" in (store.root / ".cardmem" / "hooks.log").read_text()


def test_hookjson_reads_and_writes_as_json_does():
    from cardmem.hosts import hookjson

    value = {"a": [1, 2.5, "xé\n\"\\\x01", None, True, False, {"b": {}}, -0.0, 10**30],
             "tool_input": {"command": "git push --force 'x'"}}
    text = json.dumps(value)
    assert hookjson.loads(text) == value and hookjson.loads(f" \n{text}\n ") == value
    assert hookjson.dumps(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for v in (float("nan"), float("inf"), float("-inf")):  # as json writes them
        assert hookjson.dumps({"n": v}) == json.dumps({"n": v}, separators=(",", ":"))
    for bad in ("", "not json", '{"a": 1} x', '{"a":', "{'a': 1}", "[1,]"):
        try:
            hookjson.loads(bad)
        except ValueError:
            continue
        raise AssertionError(f"accepted {bad!r}")


def test_every_hosts_installed_pretool_command_stays_lean(store):
    """The same fast start for the other hosts' installed PreToolUse command (hosts/install.py):
    an ungoverned call and a refusal import no site, json, re or pathlib, and only the
    host's own adapter."""
    import os
    import shlex

    from cardmem.hosts.adapters import load
    from cardmem.hosts.install import command
    from cardmem.store.rules import triggers

    make_rules(store)
    triggers.build(store)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    calls = {"codex": ("Bash", "command"), "gemini": ("run_shell_command", "command"),
             "cursor": ("Shell", "command"), "copilot": ("bash", "command")}
    for host, (tool, field) in calls.items():
        for line, decided in (("ls -la", False), ("git push -f origin main", True)):
            args = shlex.split(command(host, "pre-tool-use", store.root))
            args[1:1] = ["-X", "importtime"]
            payload = {"session_id": "s", "cwd": "/tmp", "tool_name": tool,
                       "tool_input": {field: line}}
            if host == "cursor":  # its shell is answered at beforeShellExecution
                payload = {"hook_event_name": "beforeShellExecution", "conversation_id": "s",
                           "workspace_roots": ["/tmp"], "command": line}
            done = subprocess.run(args, input=json.dumps(payload), capture_output=True,
                                  text=True, env=env, cwd=store.root.parent)
            assert done.returncode == 0, done.stderr
            loaded = {x.rsplit("|", 1)[-1].strip() for x in done.stderr.splitlines()}
            said = done.stdout.strip() not in ("", load(host).EMPTY)  # Gemini: `{}` for nothing
            assert said == decided, (host, line, done.stdout)
            assert f"cardmem.hosts.{host}.protocol" in loaded
            assert not loaded & {"site", "json", "re", "pathlib", "dataclasses", "typing"}, host
            assert {f"cardmem.hosts.{h}.protocol" for h in calls if h != host}.isdisjoint(loaded)
