"""The rules file: every rule whole, current at session start, and only ever ours."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cardmem.store.rules import host_file as rules_file
from cardmem.store.context import session_context
from cardmem.store.index.pile_view import active_rules, holdings
from cardmem.store.store import Store, init


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s, _ = init(tmp_path / "store")
    return s


def rule(store: Store, cid: str, title: str, body: str, **meta: str) -> None:
    path = store.root / f"{cid}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    fm = "".join(f"{k}: {json.dumps(v)}\n" for k, v in {"title": title, "type": "feedback",
                                                          **meta}.items())
    path.write_text(f"---\n{fm}---\n{body}\n")


def rules_now(store: Store) -> list:
    return active_rules(holdings(store, None).rules)


def test_first_sync_writes_every_rule_whole_and_reports_all_changed(store, tmp_path):
    for i in range(30):
        rule(store, f"feedback/r{i:02d}", f"Rule {i}", f"Body of rule {i}. " * 20)
    target = tmp_path / "home" / ".claude" / "rules" / "cardmem.md"
    d = rules_file.sync(store.root, rules_now(store), target)
    assert d.ok and d.wrote and d.total == 30 and len(d.changed) == 30
    text = target.read_text()
    assert text.startswith(rules_file.MARK + "\n")
    for i in range(30):
        assert f"### Rule {i} (`feedback/r{i:02d}`)\n" + f"Body of rule {i}. " * 19 in text
    again = rules_file.sync(store.root, rules_now(store), target)
    assert again.ok and not again.wrote and again.changed == [] and again.removed == []


def test_changes_since_the_file_was_loaded_are_reported_then_written(store, tmp_path):
    rule(store, "feedback/a", "A", "alpha")
    rule(store, "feedback/b", "B", "beta")
    rule(store, "feedback/c", "C", "gamma")
    target = tmp_path / "cardmem.md"
    rules_file.sync(store.root, rules_now(store), target)
    rule(store, "feedback/b", "B", "beta, edited")  # edited
    (store.root / "feedback" / "c.md").unlink()  # removed
    rule(store, "feedback/d", "D", "delta")  # new
    os.utime(store.root / "feedback" / "a.md", ns=(1, 1))  # touched only: not a change
    d = rules_file.sync(store.root, rules_now(store), target)
    assert sorted(c.id for c in d.changed) == ["feedback/b", "feedback/d"]
    assert d.removed == ["feedback/c"] and d.wrote
    text = target.read_text()
    assert "beta, edited" in text and "delta" in text and "gamma" not in text
    assert rules_file.sync(store.root, rules_now(store), target).changed == []


def test_a_file_changed_behind_our_back_is_treated_as_unknown(store, tmp_path):
    rule(store, "feedback/a", "A", "alpha")
    target = tmp_path / "cardmem.md"
    rules_file.sync(store.root, rules_now(store), target)
    target.write_text(target.read_text().replace("alpha", "tampered"))
    d = rules_file.sync(store.root, rules_now(store), target)
    assert [c.id for c in d.changed] == ["feedback/a"] and d.wrote
    assert "alpha" in target.read_text()


def test_a_file_that_is_not_ours_is_never_overwritten_or_removed(store, tmp_path):
    rule(store, "feedback/a", "A", "alpha")
    target = tmp_path / "cardmem.md"
    target.write_text("my own notes\n")
    d = rules_file.sync(store.root, rules_now(store), target)
    assert not d.ok and "not written by cardmem" in d.error
    assert [c.id for c in d.changed] == ["feedback/a"]  # the caller shows them inline
    assert target.read_text() == "my own notes\n"
    assert not rules_file.remove(store.root, target) and target.exists()


def test_project_rules_are_grouped_and_counted(store, tmp_path):
    rule(store, "feedback/global", "Everywhere", "g")
    rule(store, "feedback/acme-only", "Acme only", "a", project="acme")
    rule(store, "projects/beta/feedback-x", "Beta only", "b")
    d = rules_file.sync(store.root, rules_now(store), tmp_path / "r.md")
    text = (tmp_path / "r.md").read_text()
    assert text.index("## Rules for every session (1)") < text.index("`feedback/global`") \
        < text.index("## Rules for project `acme` only (1)") < text.index("`feedback/acme-only`")
    assert "## Rules for project `beta` only (1)" in text
    assert d.by_project == {"acme": 1, "beta": 1}


def test_remove_deletes_our_file_and_its_empty_folder(store, tmp_path):
    rule(store, "feedback/a", "A", "alpha")
    target = tmp_path / "rules" / "cardmem.md"
    rules_file.sync(store.root, rules_now(store), target)
    assert rules_file.remove(store.root, target)
    assert not target.exists() and not target.parent.exists()
    assert str(target) not in json.loads((store.root / ".cardmem" / rules_file.STATE).read_text())


def test_refresh_rewrites_every_file_the_store_delivers_to(store, tmp_path):
    rule(store, "feedback/a", "A", "alpha")
    one, two = tmp_path / "one.md", tmp_path / "two.md"
    rules_file.deliver(store, one)
    rules_file.deliver(store, two)
    rule(store, "feedback/b", "B", "beta")
    assert all(d.wrote for d in rules_file.refresh(store))
    assert "beta" in one.read_text() and "beta" in two.read_text()


def _pile(store: Store, target: Path, budget: int = 9000, project: str | None = "acme"):
    return session_context(store, project=project, budget=budget, rules_file=target)


def test_a_thousand_rules_never_crowd_out_the_user_or_the_project(store, tmp_path):
    for i in range(1000):
        rule(store, f"feedback/r{i:04d}", f"Rule number {i}", "Do the thing carefully. " * 12)
    (store.root / "user").mkdir()
    (store.root / "user" / "me.md").write_text(
        "---\ntitle: Me\ntype: user\n---\nI am USER-MARK-1 and I like short answers.\n")
    (store.root / "projects" / "acme").mkdir(parents=True)
    (store.root / "projects" / "acme" / "layout.md").write_text(
        "---\ntitle: Layout\ntype: project\nproject: acme\n---\nPROJECT-MARK-2: code in src/.\n")
    target = tmp_path / "cardmem.md"
    rules_file.deliver(store, target)  # what install does
    pile = _pile(store, target)
    assert len(pile.text) <= 9000
    assert "USER-MARK-1" in pile.text and "PROJECT-MARK-2" in pile.text
    assert "1000 rules are in force, loaded whole at start-up from the rules file" in pile.text
    assert "Changed since" not in pile.text and pile.delivered.changed == []
    assert {f"feedback/r{i:04d}" for i in range(1000)} <= set(pile.addresses)
    text = target.read_text()
    assert all(f"(`feedback/r{i:04d}`)" in text for i in range(1000))  # every one listed
    whole = text.count("### Rule number")
    assert 200 < whole < 1000 and len(text) <= rules_file.LIMIT  # whole while they fit
    assert f"{1000 - whole} of them are listed there by title only" in pile.text
    assert pile.delivered.listed == 1000 - whole


def test_the_limit_is_a_setting_and_a_new_limit_rewrites_the_file(store, tmp_path):
    for i in range(50):
        rule(store, f"feedback/r{i:02d}", f"Rule {i}", "Words of the rule. " * 30)
    target = tmp_path / "cardmem.md"
    d = rules_file.sync(store.root, rules_now(store), target, limit=1_000_000)
    assert d.listed == 0 and target.read_text().count("### Rule") == 50
    d = rules_file.sync(store.root, rules_now(store), target, limit=10_000)
    assert d.wrote and 0 < d.listed < 50
    text = target.read_text()
    assert len(text) <= 10_000 and text.count("### Rule") == 50 - d.listed
    assert "are listed by title (and description) only, to keep this file within 10,000" in text


def test_changed_rules_fit_the_budget_and_the_rest_are_named(store, tmp_path):
    for i in range(300):
        rule(store, f"feedback/r{i:03d}", f"Rule number {i}", "Check twice before acting. " * 8)
    target = tmp_path / "cardmem.md"  # no file yet: every rule is "changed"
    pile = _pile(store, target)
    assert len(pile.text) <= 9000
    assert "### Changed since the rules file was loaded (300;" in pile.text
    assert "more changed rules (" in pile.text and "the file holds them from the next session" \
        in pile.text
    cut = [e for e in pile.left_out if "changed rule" in e["reason"]]
    assert cut and all(e["id"].startswith("feedback/r") for e in cut)
    # The file now holds them all: the next session needs none of that.
    nxt = _pile(store, target)
    assert "Changed since" not in nxt.text and nxt.delivered.changed == []


def test_without_a_rules_file_user_and_project_keep_their_share(store, tmp_path):
    for i in range(60):
        rule(store, f"feedback/r{i:02d}", f"Short rule {i}", "Keep it short. " * 4)
    (store.root / "user").mkdir()
    (store.root / "user" / "me.md").write_text(
        "---\ntitle: Me\ntype: user\n---\nI am USER-MARK-1.\n" + "More about me. " * 40 + "\n")
    (store.root / "projects" / "acme").mkdir(parents=True)
    (store.root / "projects" / "acme" / "layout.md").write_text(
        "---\ntitle: Layout\ntype: project\nproject: acme\n---\nPROJECT-MARK-2.\n"
        + "Project detail. " * 40 + "\n")
    pile = session_context(store, project="acme", budget=9000)
    head = pile.text.split("## Further rules, titles only")[0]
    assert "USER-MARK-1" in head and "More about me. " * 39 in head
    assert "PROJECT-MARK-2" in head and "Project detail. " * 39 in head


def test_a_rule_written_through_the_store_is_in_the_file_at_once(store, tmp_path):
    rule(store, "feedback/a", "A", "alpha")
    target = tmp_path / "cardmem.md"
    rules_file.deliver(store, target)
    store.new("feedback/new-rule", title="Never force-push", card_type="feedback",
              body="Ask a person first.")
    assert "Ask a person first." in target.read_text()
    # So the next session start finds the file current: nothing changed since it was loaded.
    assert rules_file.sync(store.root, rules_now(store), target).changed == []
    store.new("reference/howto", title="How to", body="Not a rule.")
    assert "Not a rule." not in target.read_text()


def test_a_touched_rule_updates_the_stamps_without_rewriting_the_file(store, tmp_path):
    rule(store, "feedback/a", "A", "alpha")
    target = tmp_path / "cardmem.md"
    rules_file.sync(store.root, rules_now(store), target)
    before = target.stat().st_mtime_ns
    st = (store.root / "feedback" / "a.md").stat()
    os.utime(store.root / "feedback" / "a.md", ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000))
    d = rules_file.sync(store.root, rules_now(store), target)
    assert not d.wrote and d.changed == [] and target.stat().st_mtime_ns == before
    state = json.loads((store.root / ".cardmem" / rules_file.STATE).read_text())
    assert state[str(target)]["rules"]["feedback/a"][0] == st.st_mtime_ns + 5_000_000


def test_past_the_limit_rules_step_down_to_descriptions_then_titles(store, tmp_path):
    for i in range(400):
        rule(store, f"feedback/r{i:03d}", f"Rule {i}", "Body words. " * 40,
             description=f"What rule {i} is about, in one line of ordinary length.")
    text, listed = rules_file.render(store.root, rules_now(store), limit=30_000)
    assert len(text) <= 30_000 and listed > 0
    lines = text.splitlines()
    kinds = ["whole" if ln.startswith("### Rule") else "described" if " — What rule" in ln
             else "title" for ln in lines if ln.startswith(("### Rule", "- Rule"))]
    assert len(kinds) == 400 and set(kinds) == {"whole", "described", "title"}
    assert kinds == sorted(kinds, key=["whole", "described", "title"].index)  # only down
