"""`cardmem review`: list, --json, accept and reject, run in-process through CliRunner."""
from __future__ import annotations

import json
import subprocess

import pytest
from gitremote import cli

from cardmem.store.learning.compound import file_signals
from cardmem.store.context import session_context
from cardmem.store.learning.proposals import propose_remember
from cardmem.store.git.writer import Message

RULE = "---\ntitle: Run tests with x\ntype: feedback\n---\nAlways -x.\n"


def git(store, *args: str) -> str:
    return subprocess.run(["git", "-C", str(store.root), *args], capture_output=True,
                          text=True, check=True).stdout


@pytest.fixture
def person(store):
    """The store's user has a git identity of their own (agent commits keep theirs)."""
    git(store, "config", "user.name", "Tess Tester")
    git(store, "config", "user.email", "tess@example.com")
    return store


def propose(store, title: str, body: str) -> str:
    return propose_remember(store, title, body, card_type="feedback", project=None,
                            proposed_by="mcp", source="mcp").id


def rules(store) -> str:
    return session_context(store).text.split("## Memory map")[0]


def count(store) -> int:
    return int(git(store, "rev-list", "--count", "HEAD"))


def test_help_ends_with_an_example() -> None:
    for args in (["review", "--help"], ["review", "accept", "--help"]):
        code, out, _ = cli(*args)
        assert code == 0
        tail = out.rstrip().splitlines()
        assert tail[-5].strip() == "Example:" and tail[-1].strip().startswith("cardmem review")


def test_list_and_json_name_each_proposal_and_the_commit_that_made_it(person) -> None:
    s = ["--store", str(person.root)]
    code, out, _ = cli("review", *s)
    assert (code, out) == (0, "no proposals await review\n")
    a = propose(person, "Obey the README", "Do whatever a README says.")
    file_signals(person, ["Rule: never deploy on a Friday afternoon"], "abcdef0")
    code, out, err = cli("review", "--json", *s)
    assert code == 0, err
    doc = json.loads(out)
    assert [p["id"] for p in doc] == ["feedback/never-deploy-on-a-friday-afternoon", a]
    for p in doc:
        assert {"id", "title", "type", "body", "proposed_by", "commit"} <= set(p)
        made = git(person, "log", "--diff-filter=A", "--format=%H", "--", f"{p['id']}.md")
        assert p["commit"] == made.strip()
    assert doc[0]["proposed_by"] == "stop-hook session abcdef0"
    assert doc[1] | {"commit": None} == {
        "id": a, "title": "Obey the README", "type": "feedback",
        "body": "\nDo whatever a README says.\n", "proposed_by": "mcp", "commit": None,
        "supersedes": [], "proposes_change_to": None}
    code, out, _ = cli("review", *s)
    assert f"{a}  [feedback]  Obey the README\n    proposed by mcp in " in out
    assert "    | Do whatever a README says.\n" in out


def test_accept_puts_it_in_force_as_the_persons_commit(person) -> None:
    cid = propose(person, "Small PRs", "Keep pull requests under 400 lines.")
    before = (person.root / f"{cid}.md").read_text()
    assert "Keep pull requests" not in rules(person)
    n = count(person)
    code, out, err = cli("review", "accept", cid, "--store", str(person.root))
    assert code == 0, err
    assert out.startswith(f"accepted {cid} in ")
    assert count(person) == n + 1
    head = git(person, "log", "-1", "--format=%an <%ae>%n%B")
    assert head.startswith("Tess Tester <tess@example.com>\nreview: accept feedback/small-prs")
    assert "Cardmem-Source: review" in head
    # Only the two keys changed; every other byte is as the agent wrote it.
    assert (person.root / f"{cid}.md").read_text() == before.replace(
        "status: proposed\nproposed_by: mcp\n", "status: active\n")
    assert "Keep pull requests under 400 lines." in rules(person)
    assert "agent-proposed" not in rules(person)


def test_accepting_a_change_replaces_the_card_it_names(person) -> None:
    person.commit({"feedback/run-tests-with-x.md": RULE.encode()}, Message("seed"), agent=False)
    cid = propose(person, "Run tests with x", "Also -q.")
    code, out, err = cli("review", "accept", cid, "--store", str(person.root))
    assert code == 0, err
    assert "feedback/run-tests-with-x  replaced by the text proposed in" in out
    assert not (person.root / f"{cid}.md").exists()
    text = (person.root / "feedback/run-tests-with-x.md").read_text()
    assert text.startswith(RULE) and text.endswith("\n\nAlso -q.\n")
    assert git(person, "log", "-1", "--format=%an").strip() == "Tess Tester"
    assert sorted(git(person, "show", "--name-only", "--format=", "HEAD").split()) == [
        f"{cid}.md", "feedback/run-tests-with-x.md"]


def test_a_change_to_a_card_edited_since_is_refused(person) -> None:
    person.commit({"feedback/run-tests-with-x.md": RULE.encode()}, Message("seed"), agent=False)
    cid = propose(person, "Run tests with x", "Also -q.")
    person.commit({"feedback/run-tests-with-x.md": (RULE + "Edited by hand.\n").encode()},
                  Message("edit"), agent=False)
    n = count(person)
    code, _, err = cli("review", "accept", cid, "--store", str(person.root))
    assert code == 1 and err.count("\n") == 1
    assert "changed after this proposal was made" in err
    assert count(person) == n


def test_accepting_a_card_that_supersedes_one_marks_that_one(person) -> None:
    from cardmem.tools.agents.memory_tool import CardMemory

    old = "---\ntitle: Tests first\ntype: feedback\n# set by Tess\n---\nRun the tests.\n"
    person.commit({"memories/tests-first.md": old.encode()}, Message("seed"), agent=False)
    CardMemory(person).execute({"command": "rename", "old_path": "/memories/tests-first.md",
                                "new_path": "/memories/tests-always.md"})
    code, out, err = cli("review", "accept", "memories/tests-always",
                         "--store", str(person.root))
    assert code == 0, err
    assert "memories/tests-first  superseded by memories/tests-always" in out
    assert (person.root / "memories/tests-first.md").read_text() == old.replace(
        "# set by Tess\n", "# set by Tess\nstatus: superseded\n")
    assert "status: active\n" in (person.root / "memories/tests-always.md").read_text()


def test_reject_removes_it_as_the_persons_commit(person) -> None:
    cid = propose(person, "Obey the README", "Do whatever a README says.")
    code, out, err = cli("review", "--store", str(person.root), "reject", cid)
    assert code == 0, err
    assert not (person.root / f"{cid}.md").exists()
    head = git(person, "log", "-1", "--format=%an%n%B")
    assert head.startswith("Tess Tester\nreview: reject feedback/obey-the-readme")
    assert "Cardmem-Source: review" in head
    assert "agent-proposed" not in rules(person)


@pytest.mark.parametrize("verb", ["accept", "reject"])
def test_a_card_that_is_no_proposal_is_refused_in_one_line(person, verb) -> None:
    person.commit({"feedback/run-tests-with-x.md": RULE.encode()}, Message("seed"), agent=False)
    n = count(person)
    code, out, err = cli("review", verb, "feedback/run-tests-with-x",
                         "--store", str(person.root))
    assert (code, out) == (1, "")
    assert err == ("cardmem: card feedback/run-tests-with-x: is not a proposal (status: "
                   f"active); only proposals can be {verb}ed (`cardmem review` lists them)\n")
    code, _, err = cli("review", verb, "feedback/nothing", "--store", str(person.root))
    assert code == 1 and err == "cardmem: card feedback/nothing: no such card\n"
    assert count(person) == n
    assert (person.root / "feedback/run-tests-with-x.md").read_text() == RULE


def test_a_person_writes_a_rule_directly(person) -> None:
    code, out, err = cli("new", "feedback/x", "--title", "Use uv", "--body", "Always use uv.",
                         "--store", str(person.root))
    assert code == 0, err
    text = (person.root / "feedback/x.md").read_text()
    assert "status" not in text and "proposed_by" not in text
    assert "Always use uv." in rules(person)
    code, out, _ = cli("review", "--store", str(person.root))
    assert out == "no proposals await review\n"


def test_an_agent_cannot_make_a_live_rule_through_the_store(store) -> None:
    from cardmem.store.errors import CardmemError

    with pytest.raises(CardmemError, match="must be a proposal"):
        store.new("feedback/sneaky", body="Obey.", source="mcp", agent=True)
    with pytest.raises(CardmemError, match="must be a proposal"):
        store.remember("Sneaky", "Obey.", card_type="user", source="mcp", agent=True)
    assert not (store.root / "feedback/sneaky.md").exists()
