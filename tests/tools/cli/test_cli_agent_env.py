"""An agent shelling out to `cardmem new` or `remember` (CARDMEM_AGENT=1: hooks and the MCP
server's entry set it, and what they start inherits it) writes as an agent, as `rm`, `mv`
and `import` already did: no live rule or user card (a proposal, or a refusal), and no
write over a person's unsaved edit. Both wrote as the person: a live rule, and a commit
that swept the person's unsaved lines in with the agent's."""
from __future__ import annotations

import subprocess

from clikit import run

# A person with a git identity: the one-time identity warning is not what these test.
PERSON = {"GIT_AUTHOR_NAME": "Tess", "GIT_AUTHOR_EMAIL": "tess@example.com",
          "GIT_COMMITTER_NAME": "Tess", "GIT_COMMITTER_EMAIL": "tess@example.com",
          "CARDMEM_AGENT": None}
AGENT = {**PERSON, "CARDMEM_AGENT": "1"}


def git(store, *args: str) -> str:
    return subprocess.run(["git", "-C", str(store.root), *args], capture_output=True,
                          text=True, check=True).stdout


def test_an_agent_s_new_rule_is_refused(store):
    r = run("new", "feedback/always-x", "--body", "Always do X.", "--store", str(store.root),
            env=AGENT)
    assert r.returncode != 0 and r.stderr.count("\n") == 1, r.stderr
    assert "agent" in r.stderr and "proposal" in r.stderr
    assert not (store.root / "feedback" / "always-x.md").exists()
    person = run("new", "feedback/always-x", "--body", "Always do X.", "--store",
                 str(store.root), env=PERSON)
    assert person.returncode == 0, person.stderr  # a person's is made


def test_an_agent_s_remembered_rule_is_a_proposal(store):
    r = run("remember", "Always X", "--type", "feedback", "--body", "Always do X.",
            "--store", str(store.root), env=AGENT)
    assert r.returncode == 0, r.stderr
    assert "proposal" in r.stdout and "cardmem review" in r.stdout
    [made] = [p for p in (store.root / "feedback").glob("*.md")]
    assert "status: proposed" in made.read_text()


def test_an_agent_s_remember_never_takes_a_person_s_unsaved_edit(store):
    assert run("remember", "Deploy steps", "--body", "make deploy", "--store",
               str(store.root), env=PERSON).returncode == 0
    card = store.root / "reference" / "deploy-steps.md"
    card.write_text(card.read_text() + "my unsaved note\n")
    head = git(store, "rev-parse", "HEAD")
    r = run("remember", "Deploy steps", "--body", "agent addition", "--store",
            str(store.root), env=AGENT)
    assert r.returncode != 0 and r.stderr.count("\n") == 1, r.stderr
    assert git(store, "rev-parse", "HEAD") == head  # nothing committed
    assert card.read_text().endswith("my unsaved note\n")  # the person's edit, as it was
    assert git(store, "status", "--porcelain").strip() == "M reference/deploy-steps.md"


def test_an_agent_s_remember_keeps_its_tags_and_aliases(store):
    """The agents' door once took no tags or aliases: `--tags` was dropped, unsaid."""
    r = run("remember", "Deploy steps", "--body", "make deploy", "--tags", "ops,release",
            "--aliases", "shipping", "--store", str(store.root), env=AGENT)
    assert r.returncode == 0, r.stderr
    text = (store.root / "reference" / "deploy-steps.md").read_text()
    assert "ops" in text and "release" in text and "shipping" in text, text


def test_an_agent_s_proposal_says_its_tags_were_not_kept(store):
    r = run("remember", "Always X", "--type", "feedback", "--body", "Always do X.",
            "--tags", "style", "--store", str(store.root), env=AGENT)
    assert r.returncode == 0, r.stderr
    assert "proposal" in r.stdout and "tags were not kept" in r.stdout, r.stdout
