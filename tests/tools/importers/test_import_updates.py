"""`cardmem import` run again: idempotence, a changed source updating the cards it made
byte for byte, a person's later edits kept and reported; secrets, broken input,
proposals and dry runs. CLI in-process (CliRunner), real git."""
from __future__ import annotations

import json
import random
import string

import pytest
from gitremote import cli
from importkit import (PATHS, cards, commits, copy_fixtures, git, person,  # noqa: F401
                       src, with_person)
from importkit import imp as import_cli

from cardmem.store.cards import card as cardlib
from cardmem.store.context import session_context

KINDS = list(PATHS)


def imp(store, kind: str, path, *args: str) -> tuple[int, str, str]:
    return import_cli(store, kind, path, "--project", "acme-api", *args)


def snapshot(store) -> dict[str, bytes]:
    return {p.relative_to(store.root).as_posix(): p.read_bytes()
            for p in store.root.rglob("*.md") if ".git" not in p.parts}


@pytest.mark.parametrize("kind", KINDS)
def test_the_same_import_twice_changes_nothing(person, src, kind) -> None:
    code, _, err = imp(person, kind, src / PATHS[kind])
    assert code == 0, err
    # A person's own card (no `source:`) and a broken one, read before the imported ones:
    # passed over, not the end of the search for them (mutants made each skip a `break`:
    # every card made again)
    (person.root / "decisions").mkdir(exist_ok=True)
    (person.root / "decisions" / "a-first.md").write_text("---\ntitle: Mine\n---\nMine.\n")
    (person.root / "decisions" / "b-broken.md").write_text(
        "---\ntitle: [never closed\nsource: mine\n---\nBroken.\n")
    git(person.root, "add", "-A")
    git(person.root, "commit", "-qm", "a card of my own")
    before, n = snapshot(person), commits(person)
    code, out, err = imp(person, kind, src / PATHS[kind], "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["commit"] is None and {c["action"] for c in doc["cards"]} == {"unchanged"}
    assert (snapshot(person), commits(person)) == (before, n)


def test_dry_run_lists_what_it_would_write_and_writes_nothing(person, src) -> None:
    before, n = snapshot(person), commits(person)
    code, out, err = imp(person, "mcp-memory", src / PATHS["mcp-memory"], "--dry-run")
    assert code == 0, err
    assert "would create people/tess-tester" in out and "dry run, nothing written" in out
    assert (snapshot(person), commits(person)) == (before, n)


def test_a_changed_source_updates_its_cards_and_nothing_else(person, src) -> None:
    path = src / PATHS["claude-md"]
    imp(person, "claude-md", path)
    before = snapshot(person)
    text = path.read_text()
    path.write_text(text.replace("Services own transactions.", "Services own transactions "
                                 "and retries.").replace("3. Write a regression test",
                                                         "3. Always write a regression test"))
    code, out, err = imp(person, "claude-md", path)
    assert code == 0, err
    after = snapshot(person)
    changed = sorted(p for p in after if after[p] != before.get(p))
    assert changed == ["projects/acme-api/architecture.md",
                       "projects/acme-api/write-a-regression-test-before-fixing-a-bug.md"]
    arch_old, arch_new = (x["projects/acme-api/architecture.md"].decode() for x in (before, after))
    assert arch_new == arch_old.replace("Services own transactions.",
                                        "Services own transactions and retries.")
    # the rule's text changed, so its key did: paired with the card of its section
    rule = after["projects/acme-api/write-a-regression-test-before-fixing-a-bug.md"].decode()
    assert "title: Always write a regression test before fixing a bug" in rule
    assert rule.endswith("\n\nAlways write a regression test before fixing a bug\n")
    assert len(cards(person)) == 11  # not a twelfth
    assert "updated projects/acme-api/architecture (body)" in out
    assert git(person.root, "log", "-1", "--format=%an").strip() == "Tess Tester"
    code, out, _ = imp(person, "claude-md", path)  # and again: nothing more
    assert "11 unchanged" in out and "no commit" in out


def test_a_persons_later_edit_is_kept_and_reported(person, src) -> None:
    notes = src / PATHS["basic-memory"]
    imp(person, "basic-memory", notes)
    cid = "projects/acme-api/coffee-brewing-methods"
    person.update_text(cid, lambda t: t.replace("Notes from three months", "Notes from a year"),
                       "edit: by hand")
    note = notes / "coffee-brewing-methods.md"
    note.write_text(note.read_text().replace("tags: [coffee, brewing]", "tags: [coffee, brewing, "
                                             "home]").replace("French press #brewing",
                                                              "French press #brewing #taste"))
    code, out, err = imp(person, "basic-memory", notes, "--json")
    assert code == 0, err
    doc = json.loads(out)
    mine = [c for c in doc["cards"] if c["id"] == cid]
    assert {c["action"]: c["fields"] for c in mine} == {"updated": ["tags"], "kept": ["body"]}
    text = person.read(cid).text
    assert "Notes from a year" in text and "#taste" not in text  # the person's body stands
    assert "tags:\n- coffee\n- brewing\n- home\n" in text or "tags: [coffee, brewing, home]" in text
    code, out, _ = imp(person, "basic-memory", notes)
    assert f"kept your edit of {cid} (body): changed by a person" in out


def test_uncommitted_edits_are_not_touched(person, src) -> None:
    path = src / PATHS["mcp-memory"]
    imp(person, "mcp-memory", path)
    card = person.root / "entities/billing-team.md"
    card.write_text(card.read_text() + "- Moved to floor 3\n")
    path.write_text(path.read_text().replace("Weekly planning on Tuesdays",
                                             "Weekly planning on Wednesdays"))
    code, out, _ = imp(person, "mcp-memory", path)
    assert code == 0
    assert "kept your edit of entities/billing-team (body): has uncommitted edits" in out
    assert card.read_text().endswith("- Moved to floor 3\n") and "Tuesdays" in card.read_text()


def test_items_gone_from_the_source_are_reported_and_kept(person, src) -> None:
    notes = src / PATHS["basic-memory"]
    imp(person, "basic-memory", notes)
    (notes / "coffee-bean-origins.md").unlink()
    code, out, _ = imp(person, "basic-memory", notes)
    assert code == 0
    assert "gone from the source: projects/acme-api/coffee-bean-origins" in out
    assert person.exists("projects/acme-api/coffee-bean-origins")


def token() -> str:
    return "ghp_" + "".join(random.choices(string.ascii_letters + string.digits, k=36))


def test_secrets_are_redacted_unless_kept(person, tmp_path) -> None:
    secret = token()
    md = tmp_path / "CLAUDE.md"
    md.write_text(f"## Deploy\n\nPush with `GITHUB_TOKEN={secret}` set.\n")
    code, _, err = imp(person, "claude-md", md)
    assert code == 0
    assert "redacted 1 secret before writing: github-token" in err and secret not in err
    text = person.read("projects/acme-api/deploy").text
    assert secret not in text and "[REDACTED:" in text
    code, out, err = imp(person, "claude-md", md)  # redacting again gives the same card
    assert "1 unchanged" in out and "no commit" in out
    other = init_other(tmp_path)
    code, _, err = cli("import", "claude-md", str(md), "--store", str(other.root),
                       "--project", "acme-api", "--keep-secrets")
    assert code == 0
    assert "warning: keeping 1 secret as written, in git history too: github-token" in err
    assert secret not in err
    assert secret in other.read("projects/acme-api/deploy").text


def init_other(tmp_path):
    from cardmem.store.store import init

    return with_person(init(tmp_path / "other")[0])


def test_broken_json_lines_are_named_and_the_rest_imported(person, tmp_path) -> None:
    f = tmp_path / "memory.json"
    f.write_text('{"type":"entity","name":"Ada","entityType":"person","observations":["x"]}\n'
                 '{"type":"entity","name":"Bob",\n'
                 '{"type":"relation","from":"Ada"}\n'
                 '{"type":"entity","name":"Cy","entityType":"service","observations":"y"}\n'
                 '{"type":"entity","name":"Dee","entityType":"person","observations":[]}\n')
    code, out, err = imp(person, "mcp-memory", f)
    assert code == 1
    lines = err.splitlines()
    assert any(ln.startswith("cardmem: ") and "memory.json:2: skipped: not JSON" in ln
               for ln in lines)
    assert any("memory.json:3: skipped: a relation needs from, to and relationType" in ln
               for ln in lines)
    assert any("memory.json:4: skipped: entity 'Cy': observations is not a list" in ln
               for ln in lines)
    assert sorted(cards(person)) == ["people/ada", "people/dee"]
    assert "Traceback" not in err


def test_broken_frontmatter_names_the_file_and_the_rest_is_imported(person, src) -> None:
    notes = src / PATHS["basic-memory"]
    (notes / "broken.md").write_text("---\ntitle: [unclosed\n---\nbody\n")
    (notes / "binary.md").write_bytes(b"\x00\x01")
    code, out, err = imp(person, "basic-memory", notes)
    assert code == 1
    assert "broken.md: skipped: bad YAML frontmatter" in err
    assert "binary.md: skipped: binary content" in err
    assert len(cards(person)) == 4


def test_a_file_of_the_wrong_kind_imports_nothing(person, src) -> None:
    n = commits(person)
    code, out, err = imp(person, "claude-md", src / PATHS["mcp-memory"])
    assert code == 1
    assert "memory.json: skipped: is JSON, not a CLAUDE.md" in err
    assert "nothing imported" in err and commits(person) == n
    code, _, err = imp(person, "mcp-memory", src / PATHS["claude-md"])
    assert code == 1 and "CLAUDE.md:1: skipped: not JSON" in err and commits(person) == n
    code, _, err = imp(person, "basic-memory", src / PATHS["claude-md"])
    assert code == 1 and "is not a folder" in err


def test_an_index_entry_without_its_file_is_named(person, src) -> None:
    memory = src / PATHS["claude-memory"]
    (memory / "debugging.md").unlink()
    code, out, err = imp(person, "claude-memory", memory)
    assert code == 1
    assert "MEMORY.md:7: skipped: names debugging.md, which is not in the folder" in err
    assert len(cards(person)) == 5


def test_a_missing_path_or_kind_is_one_line(person, tmp_path) -> None:
    code, out, err = imp(person, "claude-md", tmp_path / "nope.md")
    assert code == 1 and err.count("\n") == 1 and "no such file or folder" in err
    code, _, err = cli("import", "obsidian", str(tmp_path), "--store", str(person.root))
    assert code == 2 and "'obsidian' is not one of 'claude-md'" in err


def test_as_proposals_files_rules_for_review(person, src) -> None:
    path = src / PATHS["claude-memory"]
    code, out, err = imp(person, "claude-memory", path, "--as-proposals")
    assert code == 0, err
    assert "proposed projects/acme-api/testing-with-pytest-x" in out
    assert "proposed user/tess-s-role" in out
    got = cards(person)
    assert got["projects/acme-api/testing-with-pytest-x"].meta["status"] == "proposed"
    assert got["projects/acme-api/release-freeze"].status == "active"  # not a rule
    code, out, _ = cli("review", "--json", "--store", str(person.root))
    assert {p["id"] for p in json.loads(out)} == {"projects/acme-api/testing-with-pytest-x",
                                                  "user/tess-s-role"}
    rules = session_context(person, project="acme-api").text.split("## Memory map")[0]
    assert "Testing with pytest -x" not in rules and "Release freeze" in rules
    code, _, err = cli("review", "accept", "projects/acme-api/testing-with-pytest-x",
                       "--store", str(person.root))
    assert code == 0, err
    n = commits(person)
    code, out, _ = imp(person, "claude-memory", path, "--as-proposals")
    assert "no commit" in out and commits(person) == n  # accepted: the same rule
    # a change to a rule in force is proposed beside it, once
    topic = path / "feedback_testing.md"
    topic.write_text(topic.read_text().replace("nine minutes", "twelve minutes"))
    code, out, _ = imp(person, "claude-memory", path, "--as-proposals")
    assert "proposed projects/acme-api/testing-with-pytest-x-proposed" in out
    live = person.read("projects/acme-api/testing-with-pytest-x").text
    assert "nine minutes" in live
    code, out, _ = imp(person, "claude-memory", path, "--as-proposals")
    assert "no commit" in out
    cardlib.parse(person.read("projects/acme-api/testing-with-pytest-x-proposed").text, "x")


def test_a_rule_with_a_code_block_stays_one_rule_and_huge_items_are_skipped(person,
                                                                           tmp_path) -> None:
    md = tmp_path / "CLAUDE.md"
    md.write_text("## Rules\n\n- Always pin versions:\n```\nuv add x==1.2\n```\n"
                  "- Never push to main\n")
    code, _, err = imp(person, "claude-md", md)
    assert code == 0, err
    pin = person.read("projects/acme-api/always-pin-versions").body
    assert pin == "\nAlways pin versions:\n```\nuv add x==1.2\n```\n"
    f = tmp_path / "memory.json"
    f.write_text(json.dumps({"type": "entity", "name": "Big", "entityType": "thing",
                             "observations": ["x" * 1100 * 1024]}) + "\n" +
                 json.dumps({"type": "entity", "name": "Small", "entityType": "thing",
                             "observations": ["ok"]}) + "\n")
    code, _, err = imp(person, "mcp-memory", f)
    assert code == 1 and "memory.json#Big: skipped: " in err
    assert person.exists("entities/small")


def test_an_agents_import_proposes_rules_as_the_agent(person, src, monkeypatch) -> None:
    monkeypatch.setenv("CARDMEM_AGENT", "1")
    code, out, err = imp(person, "mcp-memory", src / PATHS["mcp-memory"], "--keep-secrets")
    assert code == 0, err
    assert person.read("projects/acme-api/small-prs").meta["status"] == "proposed"
    assert git(person.root, "log", "-1", "--format=%ae").strip() == "agent@cardmem.invalid"


def test_a_card_a_person_deleted_is_not_made_again(person, src) -> None:
    path = src / PATHS["mcp-memory"]
    imp(person, "mcp-memory", path)
    git(person.root, "rm", "-q", "entities/billing-team.md")
    git(person.root, "commit", "-qm", "not a card I want")
    n = commits(person)
    code, out, err = imp(person, "mcp-memory", path)
    assert code == 0, err
    assert "kept your edit of entities/billing-team: deleted since it was imported" in out
    assert not person.exists("entities/billing-team") and commits(person) == n


def test_cardmems_own_rules_file_is_not_imported(person, tmp_path) -> None:
    from cardmem.store.rules.host_file import MARK

    f = tmp_path / "cardmem.md"
    f.write_text(f"{MARK}\n# Standing rules (cardmem memory)\n\n## Rules\n\n- Always x\n- Never y\n")
    code, _, err = imp(person, "claude-md", f)
    assert code == 1 and "is cardmem's own rules file" in err and cards(person) == {}


def test_windows_line_endings_make_the_same_cards(person, src, tmp_path) -> None:
    path = src / PATHS["claude-md"]
    imp(person, "claude-md", path)
    crlf = tmp_path / "crlf" / "CLAUDE.md"
    crlf.parent.mkdir()
    crlf.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    other = init_other(tmp_path)
    code, _, err = cli("import", "claude-md", str(crlf), "--store", str(other.root),
                       "--project", "acme-api")
    assert code == 0, err
    mine = {c.id: c.body for c in cards(person).values()}
    theirs = {c.id: c.body for c in cards(other).values()}
    assert mine == theirs and not any("\r" in b for b in theirs.values())


def test_text_before_the_title_is_kept(person, tmp_path) -> None:
    md = tmp_path / "CLAUDE.md"
    md.write_text("<!-- maintained by the platform team -->\n# Acme\n\nIntro.\n\n## Deploy\n\n"
                  "Run it.\n")
    code, _, err = imp(person, "claude-md", md)
    assert code == 0, err
    assert person.read("projects/acme-api/acme").body == \
        "\n<!-- maintained by the platform team -->\n\nIntro.\n"


def test_auto_memory_by_its_folder_its_index_or_its_project_folder_is_one_source(person,
                                                                                  src) -> None:
    memory = src / PATHS["claude-memory"]
    imp(person, "claude-memory", memory)
    for other in (memory / "MEMORY.md", memory.parent):
        code, out, err = imp(person, "claude-memory", other)
        assert code == 0, err
        assert "6 unchanged" in out and "no commit" in out


def test_a_card_past_the_commit_messages_fifty_lines_is_updated(person, tmp_path) -> None:
    """What an import wrote is read from its commits' files: the message names at most 50
    cards, and the 60th was once 'kept' as if no import had written it."""
    f = tmp_path / "memory.json"
    things = [{"type": "entity", "name": f"Thing {i:02d}", "entityType": "service",
               "observations": [f"fact {i}"]} for i in range(60)]
    f.write_text("".join(json.dumps(t) + "\n" for t in things))
    code, _, err = imp(person, "mcp-memory", f)
    assert code == 0, err
    f.write_text(f.read_text().replace('"fact 59"', '"fact fifty-nine"'))
    code, out, err = imp(person, "mcp-memory", f)
    assert code == 0, err
    assert "updated entities/thing-59 (body)" in out and "kept" not in out
    assert "fact fifty-nine" in person.read("entities/thing-59").body
