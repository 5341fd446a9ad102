"""Secrets written through the CLI: redacted by default (as import and MCP do), said on
stderr by kind before the commit; --keep-secrets keeps them with a warning (never for an
agent, CARDMEM_AGENT=1); `doctor` names the cards that hold one."""
from __future__ import annotations

import subprocess

import pytest
from click.testing import CliRunner

from cardmem.tools.cli.group import cli
from cardmem.tools.cli.doctor import doctor

TOKEN = "ghp_" + "A1b2C3d4E5" * 4
PASSWORD_LINE = "DB_PASSWORD=Zq8vL2mN4pR7xW"


# A person with a git identity: a fresh machine's one-time identity warning is not what
# these tests are about (test_cli_first_hour.py tests it).
PERSON = {"GIT_AUTHOR_NAME": "Tess", "GIT_AUTHOR_EMAIL": "tess@example.com",
          "GIT_COMMITTER_NAME": "Tess", "GIT_COMMITTER_EMAIL": "tess@example.com"}


def run(store, *args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, [*args, "--store", str(store.root)],
                              env={**PERSON, **(env or {})}, catch_exceptions=False)


def card_text(store, cid: str) -> str:
    return (store.root / f"{cid}.md").read_text()


def history(store) -> str:
    return subprocess.run(["git", "-C", str(store.root), "log", "-p"], capture_output=True,
                          text=True, check=True).stdout


def test_a_person_keeping_secrets_is_warned_by_kind_and_the_text_is_kept(store):
    res = run(store, "new", "reference/deploy", "--body", f"token {TOKEN}\n{PASSWORD_LINE}\n",
              "--keep-secrets", env={"CARDMEM_AGENT": None})
    assert res.exit_code == 0, res.output
    warning = res.stderr.strip()
    assert warning.count("\n") == 0 and "github-token" in warning and "password" in warning
    assert warning.startswith("cardmem: warning: keeping 2 secrets as written")
    assert TOKEN not in res.stderr and "Zq8vL2mN4pR7xW" not in res.stderr
    assert TOKEN in card_text(store, "reference/deploy")


@pytest.mark.parametrize("keep", [False, True])
def test_the_secrets_line_comes_before_the_commit(store, monkeypatch, keep):
    """Said before anything is committed: a commit that then fails still had the line."""
    from cardmem.store.errors import CardmemError
    from cardmem.store.store import Store

    def refused(*_a, **_k):
        raise CardmemError("store", "refused for the test")

    from clikit import run as main_run

    monkeypatch.setattr(Store, "commit", refused)
    res = main_run("remember", "Deploy", "--body", f"use {TOKEN}", "--store", str(store.root),
                   *(["--keep-secrets"] if keep else []), env={**PERSON, "CARDMEM_AGENT": None})
    assert res.returncode == 1 and res.stderr.endswith("cardmem: store: refused for the test\n")
    assert ("keeping 1 secret" if keep else "redacted 1 secret") in res.stderr


@pytest.mark.parametrize("how", ["default", "old-flag", "agent", "agent-keeping"])
def test_a_person_by_default_or_an_agent_always_redacts(store, how):
    args = {"old-flag": ["--redact"], "agent-keeping": ["--keep-secrets"]}.get(how, [])
    env = {"CARDMEM_AGENT": "1"} if how.startswith("agent") else {"CARDMEM_AGENT": None}
    res = run(store, "remember", f"Deploy with {TOKEN}", "--body", PASSWORD_LINE, *args, env=env)
    assert res.exit_code == 0, res.output
    assert "redacted 2 secrets before writing" in res.stderr and TOKEN not in res.stderr
    res = run(store, "new", "reference/ci", "--title", "CI", "--body", f"use {TOKEN}", *args, env=env)
    assert res.exit_code == 0, res.output
    assert "[REDACTED:github-token]" in card_text(store, "reference/ci")
    res = run(store, "new", "reference/bot", "--title", "Bot", "--body", "the deploy bot",
              "--aliases", f"deploybot,{TOKEN}", "--tags", f"ci,{TOKEN}", *args, env=env)
    assert res.exit_code == 0, res.output  # frontmatter lists are screened like the body
    assert TOKEN not in card_text(store, "reference/bot")
    log = history(store)
    assert TOKEN not in log and "Zq8vL2mN4pR7xW" not in log


def test_clean_text_writes_without_a_word(store):
    res = run(store, "new", "reference/plain", "--body", "make deploy", env={"CARDMEM_AGENT": None})
    assert res.exit_code == 0 and res.stderr == ""


def test_doctor_names_cards_and_kinds_never_values(store):
    store.new("reference/clean", body="nothing here")
    store.new("reference/leaky", body=f"token {TOKEN}\n{PASSWORD_LINE}\n")
    res = CliRunner().invoke(doctor, ["--store", str(store.root)])
    assert res.exit_code == 1
    problems = [ln for ln in res.stdout.splitlines() if ln.startswith("PROBLEM")]
    assert len(problems) == 1, res.stdout
    assert "reference/leaky" in problems[0] and "github-token" in problems[0]
    assert "password" in problems[0]
    assert TOKEN not in res.stdout and "Zq8vL2mN4pR7xW" not in res.stdout


def test_hooks_and_mcp_entry_mark_the_caller_as_an_agent():
    from cardmem.hosts.claude_code.mcp_install import server_entry

    assert server_entry()["env"]["CARDMEM_AGENT"] == "1"


def test_a_vault_item_named_in_1password_is_no_secret():
    from cardmem.tools.secrets.redact import redact

    text = 'e.g. `<STRIPE_SECRET_KEY in 1Password: "Stripe live – billing">`'
    assert redact(text) == text


def test_every_door_for_outside_text_screens_it_as_the_cli_does(store, tmp_path):
    """The CLI's `new`, an import, an agent's remember (MCP, Slack) and the memory tool all
    write a secret as the same marker, and the CLI's import says so in `new`'s words."""
    from cardmem.tools.agents.memory_tool import memory_tool
    from cardmem.tools.agents.remember import remember

    body = f"Deploy with {TOKEN}\n{PASSWORD_LINE}\n"
    res = run(store, "new", "reference/by-cli", "--title", "Deploy", "--body", body,
              env={"CARDMEM_AGENT": None})
    assert res.exit_code == 0, res.output
    said = res.stderr
    assert said == ("cardmem: redacted 2 secrets before writing: github-token, password "
                    "(--keep-secrets keeps them)\n")
    screened = card_text(store, "reference/by-cli").split("---\n", 2)[2]
    assert TOKEN not in screened and "[REDACTED:github-token]" in screened
    got = remember(store, "Deploy by agent", body, by="mcp")
    assert got["redacted"] == {"github-token": 1, "password": 1}
    memory_tool(store).call({"command": "create", "path": "/memories/deploy.md",
                             "file_text": body})
    md = tmp_path / "CLAUDE.md"
    md.write_text(f"## Deploy\n\n{body}")
    res = run(store, "import", "claude-md", str(md), "--project", "acme",
              env={"CARDMEM_AGENT": None})
    assert res.exit_code == 0, res.output
    assert res.stderr == said
    for cid in (got["id"], "memories/deploy", "projects/acme/deploy"):
        assert screened.strip() in card_text(store, cid), cid
