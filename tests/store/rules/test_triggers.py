"""The trigger table: compiled from the active rules, stale when a rule file moves,
rebuilt after writes; only a person's rule may ask or deny."""
from __future__ import annotations

import json
import os
import subprocess

from conftest import GIT_ID

from cardmem.store.git import runner as git
from cardmem.store.rules import triggers

FORCE = ("---\ntitle: Never force-push\ntype: feedback\n"
         "applies_to: [\"git push --force*\", \"path: migrations/**\"]\nenforce: deny\n---\n"
         "History others pulled must not be rewritten.\n")


def write(store, cid, text):
    p = store.root / f"{cid}.md"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def commit_all(store, agent=False):
    env = {**os.environ, **(git.AGENT_ENV if agent else GIT_ID)}
    subprocess.run(["git", "-C", str(store.root), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(store.root), "commit", "-qm", "rules"], check=True, env=env)


def by_id(table):
    return {r["id"]: r for r in table["rules"]}


def test_compiles_applies_to_and_enforce(store):
    write(store, "feedback/no-force", FORCE)
    write(store, "feedback/yaml-block", "---\ntitle: Ask before terraform apply\ntype: feedback\n"
          "applies_to:\n  - terraform apply*\n  - \"*.tf\"\nenforce: ask\n---\nPlan first.\n")
    write(store, "feedback/plain", "---\ntitle: Run tests with pytest -x\ntype: feedback\n"
          "aliases: [pytest -x]\n---\nStop early.\n")
    write(store, "feedback/typo", "---\ntitle: Typo\ntype: feedback\napplies_to: rm -rf*\n"
          "enforce: block\n---\n")
    write(store, "feedback/proposed", "---\ntitle: Proposed\ntype: feedback\nstatus: proposed\n"
          "applies_to: [ls*]\nenforce: deny\n---\n")
    commit_all(store)
    t = triggers.build(store)
    r = by_id(t)
    assert r["feedback/no-force"]["enforce"] == "deny"
    assert r["feedback/no-force"]["bash"] == ["git push --force*"]
    assert r["feedback/no-force"]["paths"] == ["migrations/**"]
    assert r["feedback/yaml-block"] == {**r["feedback/yaml-block"], "enforce": "ask",
                                        "bash": ["terraform apply*"], "paths": ["*.tf"]}
    assert "kw_n" in r["feedback/plain"] and "kw_n" not in r["feedback/no-force"]
    assert r["feedback/typo"]["enforce"] == "remind"
    assert any("feedback/typo: enforce 'block'" in p for p in t["problems"])
    assert "feedback/proposed" not in r  # not in force until a person accepts it
    assert triggers.load(str(store.root)) is not None


def test_agent_rules_and_proposals_only_remind(store):
    write(store, "feedback/by-agent", FORCE)
    commit_all(store, agent=True)
    write(store, "feedback/proposed-by", FORCE.replace("enforce: deny", "enforce: deny\n"
                                                       "proposed_by: cardmem-agent"))
    r = by_id(triggers.build(store))
    assert r["feedback/by-agent"]["enforce"] == "remind"
    assert "cardmem agent" in r["feedback/by-agent"]["downgraded"]
    assert r["feedback/proposed-by"]["enforce"] == "remind"
    assert "proposed_by" in r["feedback/proposed-by"]["downgraded"]
    # A person's commit (review accept, or their own) makes a proposal theirs; a person's
    # edit of an agent's rule (committed or not yet) makes it theirs.
    commit_all(store)
    write(store, "feedback/by-agent", FORCE + "Edited by Tess.\n")
    r = by_id(triggers.build(store))
    assert r["feedback/by-agent"]["enforce"] == "deny"
    assert r["feedback/proposed-by"]["enforce"] == "deny"


def test_stale_when_a_rule_changes_appears_or_goes(store):
    write(store, "feedback/no-force", FORCE)
    commit_all(store)
    triggers.build(store)
    root = str(store.root)
    assert triggers.load(root) is not None
    write(store, "feedback/no-force", FORCE.replace("deny", "ask"))
    assert triggers.load(root) is None
    t, rebuilt = triggers.ensure(root)
    assert rebuilt and by_id(t)["feedback/no-force"]["enforce"] == "ask"
    write(store, "feedback/sub/new", FORCE)
    assert triggers.load(root) is None
    assert "feedback/sub/new" in by_id(triggers.ensure(root)[0])
    (store.root / "feedback" / "sub" / "new.md").unlink()
    assert triggers.load(root) is None
    (store.root / "cardmem.toml").write_text("[rules]\nrelevance_threshold = 0.9\n")
    assert triggers.load(root) is None
    assert triggers.ensure(root)[0]["threshold"] == 0.9


def test_a_write_through_the_store_rebuilds_the_table(store):
    triggers.build(store)
    store.new("feedback/no-force-push", title="Never force-push",
              meta={"applies_to": ["git push --force*"], "enforce": "deny"}, body="No.")
    t = triggers.load(str(store.root))
    assert t is not None and by_id(t)["feedback/no-force-push"]["enforce"] == "deny"


def test_rule_text_is_the_body_without_history(store):
    write(store, "feedback/no-force", FORCE + "\n## History\n- 2026-11-30 · added\n")
    assert triggers.rule_text(str(store.root), "feedback/no-force") == \
        "History others pulled must not be rewritten."
    assert triggers.rule_text(str(store.root), "feedback/gone") == ""


def test_the_file_is_read_in_two_parts_and_another_layout_is_rebuilt(store):
    write(store, "feedback/no-force", FORCE)
    write(store, "feedback/plain", "---\ntitle: Run tests with pytest -x\ntype: feedback\n"
          "aliases: [pytest -x]\n---\nStop early.\n")
    commit_all(store)
    triggers.build(store)
    path = store.root / ".cardmem" / triggers.NAME
    assert path.read_bytes().startswith(triggers.MAGIC)
    t = triggers.load(str(store.root))
    # the hot part is there at once; titles and problems only when asked for
    assert "rules" not in dict.keys(t) and "keywords" in dict.keys(t)
    assert by_id(t)["feedback/plain"]["title"] == "Run tests with pytest -x"
    assert t.get("problems") == [] and t.get("nothing", 1) == 1
    good = path.read_bytes()
    for bad in (b"{not json", good.replace(triggers.MAGIC, b"cardmem-triggers 3 py2.7\n"),
                good[:len(good) // 2], b""):
        path.write_bytes(bad)
        assert triggers.load(str(store.root)) is None
        t, rebuilt = triggers.ensure(str(store.root))
        assert rebuilt and by_id(t)["feedback/no-force"]["enforce"] == "deny"


def test_an_agent_proposal_enforces_only_once_a_person_accepts_it(store):
    from cardmem.store.learning import proposals
    from cardmem.store.git.writer import Message

    triggers.build(store)
    text = proposals.mark_proposed(FORCE, "mcp")
    store.commit({"feedback/no-force.md": text.encode()},
                 Message("proposal: feedback/no-force", source="mcp"), agent=True)
    t = triggers.load(str(store.root))
    assert t is not None and "feedback/no-force" not in by_id(t)  # status: proposed
    proposals.accept(store, "feedback/no-force")  # a person's commit, proposed_by removed
    t = triggers.ensure(str(store.root))[0]
    assert by_id(t)["feedback/no-force"]["enforce"] == "deny"
