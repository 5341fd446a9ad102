"""End to end: 150 rules of realistic length, a user card and a project card reach the
real Claude Code's first model request whole, and nothing reaches it as "Output too large".

Rule bodies are real text (bullet lines of the agents-md corpus, nobody here wrote them).
`cardmem install claude-code` writes every rule to ~/.claude/rules/cardmem.md, which
Claude Code loads at start-up; the SessionStart hook's context names the file, shows the
user and the project whole, and carries a rule added after install (the host read the
file before the hook ran) until the rewritten file carries it in the next session.
"""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from corpora import need_corpus
from fakeapi import FakeAPI, reply
from hostkit import cardmem, host_env

N_RULES = 150
USER_MARK = "QUOLL-USER-4471"
PROJECT_MARK = "NUMBAT-PROJECT-9902"
LATE_MARK = "BILBY-LATE-RULE-3318"


def corpus_bullets() -> list[str]:
    """Bullet lines of the corpus, 60-400 characters, in a fixed order."""
    out = []
    for f in sorted(need_corpus().glob("*.md")):
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.startswith("- ") and 60 <= len(line) <= 400:
                out.append(line[2:].strip())
    return out


def rule_cards(n: int) -> list[tuple[str, str, str]]:
    """(id, title, body) for n rules, each body ~300 characters of corpus text."""
    bullets = corpus_bullets()
    assert len(bullets) >= 3 * n, f"the corpus has {len(bullets)} usable bullet lines, need {3 * n}"
    out = []
    for i in range(n):
        body = " ".join(bullets[3 * i:3 * i + 3])[:320]
        words = re.findall(r"[A-Za-z]+", bullets[3 * i])[:6]
        out.append((f"feedback/rule-{i:03d}", f"Rule {i:03d}: {' '.join(words)}", body))
    return out


def write_card(store: Path, cid: str, meta: dict[str, str], body: str) -> None:
    path = store / f"{cid}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    fm = "".join(f"{k}: {json.dumps(v)}\n" for k, v in meta.items())
    path.write_text(f"---\n{fm}---\n{body}\n", encoding="utf-8")


def first_host_request(api: FakeAPI) -> str:
    """The first request of the session's main loop (the one with the Bash tool)."""
    for r in api.messages_requests():
        if "Bash" in {t.get("name") for t in r.body.get("tools") or []}:
            return json.dumps(r.body, ensure_ascii=False)
    raise AssertionError("no main-loop request reached the fake API")


def run_session(claude: Path, proj: Path, env: dict[str, str], api: FakeAPI) -> str:
    proc = subprocess.run([str(claude), "-p", "What are my rules?", "--output-format", "json"],
                          cwd=proj, env={**env, "ANTHROPIC_BASE_URL": api.base_url,
                                         "ANTHROPIC_API_KEY": "sk-ant-fake-e2e-key"},
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return first_host_request(api)


@pytest.mark.corpus
def test_150_rules_user_and_project_reach_the_first_request_whole(tmp_path, claude_code):
    home, store, proj = tmp_path / "home", tmp_path / "store", tmp_path / "work" / "widgets"
    home.mkdir()
    proj.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    env = host_env(home, CARDMEM_STORE=str(store), GIT_AUTHOR_NAME="Tess",
                   GIT_AUTHOR_EMAIL="tess@example.com", GIT_COMMITTER_NAME="Tess",
                   GIT_COMMITTER_EMAIL="tess@example.com")
    cardmem("init", str(store), env=env)
    rules = rule_cards(N_RULES)
    for cid, title, body in rules:
        write_card(store, cid, {"title": title, "type": "feedback"}, body)
    write_card(store, "user/me", {"title": "Tess", "type": "user"},
               f"Tess maintains the widgets service ({USER_MARK}); prefers short answers.")
    write_card(store, "projects/widgets/layout",
               {"title": "Widgets layout", "type": "project", "project": "widgets"},
               f"Code lives in src/widgets; tests in tests/ ({PROJECT_MARK}).")
    subprocess.run(["git", "-C", str(store), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(store), "commit", "-qm", "cards"], check=True, env=env)
    out = cardmem("install", "claude-code", env=env)
    rules_file = home / ".claude" / "rules" / "cardmem.md"
    assert f"{N_RULES} rules written whole to {rules_file}" in out
    # A rule saved by hand after install: the host loads the file before the hook runs.
    write_card(store, "feedback/late", {"title": f"Late rule {LATE_MARK}", "type": "feedback"},
               "Added after install: it must still reach this session.")

    with FakeAPI(fallback=reply("Noted.")) as api:
        body = run_session(claude_code, proj, env, api)
    assert "Output too large" not in body
    missing = [cid for cid, _, _ in rules if f"`{cid}`" not in body]
    assert not missing, f"{len(missing)} rules never reached the model, e.g. {missing[:5]}"
    for cid, _, text in rules[::15]:  # whole, not by title: their bodies too
        assert json.dumps(text, ensure_ascii=False)[1:-1] in body, cid
    assert USER_MARK in body and PROJECT_MARK in body
    assert LATE_MARK in body and "Added after install" in body
    assert "## Project widgets" in body
    assert LATE_MARK in rules_file.read_text()  # the next session loads it from the file

    # The next session: the file carries the late rule; the context no longer repeats it.
    with FakeAPI(fallback=reply("Noted.")) as api:
        body = run_session(claude_code, proj, env, api)
    assert "Changed since the rules file was loaded" not in body
    assert LATE_MARK in body and "feedback/late" in body
    log = (store / ".cardmem" / "hooks.log").read_text()
    assert "rules file current (151 rules, 0 changed)" in log

    # Uninstall leaves no rules behind.
    cardmem("uninstall", "claude-code", env=env)
    assert not rules_file.exists()
