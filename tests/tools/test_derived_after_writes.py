"""Derived state is current when a write returns: after an import, a review accept, a
revert, the watcher's commit of a hand edit or an update, `doctor` counts every rule,
`rules test` fires the new ones, and the rules file Claude Code loads holds them, without
waiting for some other rule to be written. Through the CLI (tests/clikit.py), real git."""
from __future__ import annotations

import json
import re
import subprocess

import pytest
from gitremote import cli
from importkit import with_person

from cardmem.store.rules import triggers

RULES = ("# Acme\n\n## Rules\n\n- Always run the tests with pytest -x\n"
         "- Never push straight to main\n- Use ruff format before committing\n")


def run(store, *args: str) -> tuple[int, str, str]:
    return cli(*args, "--store", str(store.root))


def rules_counted(store) -> int:
    code, out, err = run(store, "doctor")
    m = re.search(r"rules at the point of action: \d+ of (\d+) rules", out)
    assert m, out + err
    return int(m.group(1))


def fired(store, call: str, cwd) -> set[str]:
    code, out, err = run(store, "rules", "test", call, "--json", "--cwd", str(cwd))
    assert code == 0, err
    return {f["id"] for f in json.loads(out)["fired"]}


@pytest.fixture
def installed(store, tmp_path):
    """A store with one rule whose derived state exists (doctor built the trigger table,
    install wrote the rules file): the state an import must bring up to date."""
    with_person(store)
    code, _, err = run(store, "new", "feedback/no-force-push", "--title", "Never force push",
                       "--body", "Never run git push --force on a shared branch.")
    assert code == 0, err
    settings = tmp_path / "claude" / "settings.json"
    code, _, err = cli("install", "claude-code", "--settings", str(settings), "--mcp-config",
                       str(tmp_path / "claude.json"), "--store", str(store.root))
    assert code == 0, err
    assert rules_counted(store) == 1
    return store, settings.parent / "rules" / "cardmem.md"


def test_imported_rules_are_in_every_derived_table_at_once(installed, tmp_path) -> None:
    store, rules_file = installed
    md = tmp_path / "acme" / "CLAUDE.md"
    md.parent.mkdir()
    md.write_text(RULES)
    code, out, err = run(store, "import", "claude-md", str(md), "--project", "acme")
    assert code == 0, err
    ruff = "projects/acme/use-ruff-format-before-committing"
    assert rules_counted(store) == 4
    assert ruff in fired(store, "ruff format before committing", md.parent)
    text = rules_file.read_text()
    assert ruff in text and "projects/acme/never-push-straight-to-main" in text
    # and a rule the import touched again (its text changed upstream): current too
    md.write_text(RULES.replace("ruff format", "ruff format --check"))
    code, out, err = run(store, "import", "claude-md", str(md), "--project", "acme")
    assert code == 0 and "updated" in out, out + err
    assert "ruff format --check" in rules_file.read_text()


def test_an_accepted_proposal_and_a_revert_reach_the_tables_at_once(installed, tmp_path,
                                                                     monkeypatch) -> None:
    store, rules_file = installed
    md = tmp_path / "acme" / "CLAUDE.md"
    md.parent.mkdir()
    md.write_text(RULES)
    code, _, err = run(store, "import", "claude-md", str(md), "--project", "acme",
                       "--as-proposals")
    assert code == 0, err
    assert rules_counted(store) == 1  # proposals are not in force
    ruff = "projects/acme/use-ruff-format-before-committing"
    code, _, err = run(store, "review", "accept", ruff)
    assert code == 0, err
    assert rules_counted(store) == 2 and ruff in rules_file.read_text()
    assert ruff in fired(store, "ruff format before committing", md.parent)
    code, _, err = run(store, "revert", "HEAD")
    assert code == 0, err
    assert rules_counted(store) == 1 and ruff not in rules_file.read_text()


def test_a_watcher_commit_of_a_hand_made_rule_reaches_the_tables(installed) -> None:
    from cardmem.store.watch.watcher import Watcher

    store, rules_file = installed
    w = Watcher(store, autocommit=True, quiet_s=0.2, say=lambda _: None).start()
    try:
        card = store.root / "projects" / "acme" / "pin-versions.md"
        card.parent.mkdir(parents=True)
        card.write_text("---\ntitle: Pin versions in uv add\ntype: feedback\n---\n"
                        "Always pin versions.\n")
        assert w.wait_idle(20, commits=True)
    finally:
        w.stop()
    assert subprocess.run(["git", "-C", str(store.root), "status", "--porcelain"],
                          capture_output=True, text=True).stdout == ""
    assert "projects/acme/pin-versions" in rules_file.read_text()  # before anyone reads
    assert rules_counted(store) == 2


def test_an_update_that_brings_a_project_rule_reaches_the_tables(tmp_path) -> None:
    from gitremote import clone, git, make_remote

    bare, _ = make_remote(tmp_path, {"feedback/no-force-push": "Never force push.\n"})
    mine, theirs = clone(bare, tmp_path / "mine"), clone(bare, tmp_path / "theirs")
    settings = tmp_path / "claude" / "settings.json"
    code, _, err = cli("install", "claude-code", "--settings", str(settings), "--mcp-config",
                       str(tmp_path / "claude.json"), "--store", str(mine.root))
    assert code == 0, err
    assert rules_counted(mine) == 1
    theirs.new("projects/acme/pin-versions", title="Pin versions in uv add",
               card_type="feedback", body="Always pin versions.\n")
    git(theirs.root, "push", "-q", "origin", "main")
    code, _, err = run(mine, "update")
    assert code == 0, err
    assert "projects/acme/pin-versions" in (settings.parent / "rules" / "cardmem.md").read_text()
    assert triggers.load(str(mine.root)) is not None and rules_counted(mine) == 2


def test_a_rule_retired_by_any_writer_leaves_the_tables_at_once(installed, tmp_path) -> None:
    """maintain --apply and review retire rules by a status through Store.commit: the door
    every writer shares (here Store.update_text, as consolidation writes)."""
    store, rules_file = installed
    store.new("projects/acme/pin-versions", title="Pin versions", card_type="feedback",
              body="Always pin versions.\n")
    assert rules_counted(store) == 2 and "projects/acme/pin-versions" in rules_file.read_text()
    store.update_text("projects/acme/pin-versions",
                      lambda t: t.replace("type: feedback\n", "type: feedback\nstatus: superseded\n"),
                      "maintain: superseded", agent=True)
    assert triggers.load(str(store.root)) is not None
    assert rules_counted(store) == 1 and "projects/acme/pin-versions" not in rules_file.read_text()


def test_install_after_an_import_writes_every_rule(store, tmp_path) -> None:
    with_person(store)
    code, _, err = run(store, "new", "feedback/no-force-push", "--title", "Never force push",
                       "--body", "Never run git push --force on a shared branch.")
    assert code == 0, err
    assert rules_counted(store) == 1  # the index, its summary and the table exist
    md = tmp_path / "acme" / "CLAUDE.md"
    md.parent.mkdir()
    md.write_text(RULES)
    code, _, err = run(store, "import", "claude-md", str(md), "--project", "acme")
    assert code == 0, err
    settings = tmp_path / "claude" / "settings.json"
    code, out, err = cli("install", "claude-code", "--settings", str(settings), "--mcp-config",
                         str(tmp_path / "claude.json"), "--store", str(store.root))
    assert code == 0, err
    assert "rules: 4 rules written whole" in out
    assert "projects/acme/use-ruff-format-before-committing" in \
        (settings.parent / "rules" / "cardmem.md").read_text()
