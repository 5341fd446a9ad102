"""`cardmem import` matches an item to its card by identity (its anchor, else its text),
never by its place in the source: a card a person deleted stays deleted whatever else
moved, and an item gone from the source is reported with its card left as it is.
CLI in-process, real git."""
from __future__ import annotations

import json

from importkit import PATHS, git, person, src  # noqa: F401
from importkit import imp as import_cli

RULES = "projects/acme-api/"
DONT_MOCK = RULES + "don-t-mock-the-database-use-the-pg-fixture-it-runs-in-a-tran"
REGRESSION = RULES + "write-a-regression-test-before-fixing-a-bug"
PYTEST_X = RULES + "always-run-the-tests-with-pytest-x-locally-the-suite-is-slow"


def imp(store, path, *args: str) -> dict:
    code, out, err = import_cli(store, "claude-md", path, "--project", "acme-api", "--json",
                                *args)
    assert code == 0, err
    return json.loads(out)


def actions(doc: dict) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for c in doc["cards"]:
        out.setdefault(c["action"], set()).add(c["id"])
    return out


def delete(store, cid: str) -> None:
    """A person deletes a card and commits it."""
    git(store.root, "rm", "-q", cid + ".md")
    git(store.root, "commit", "-qm", f"no {cid}, thanks")


def files(store) -> dict[str, bytes]:
    return {p.relative_to(store.root).as_posix(): p.read_bytes()
            for p in store.root.rglob("*.md") if ".git" not in p.parts}


def test_a_deleted_rule_stays_deleted_when_another_is_removed_from_the_source(person,
                                                                               src) -> None:
    """The issue's sequence: it brought the deleted rule back, in force, under the removed
    rule's id, and did not report the removed one (rules were paired by position)."""
    path = src / PATHS["claude-md"]
    imp(person, path)
    delete(person, DONT_MOCK)
    path.write_text(path.read_text().replace("3. Write a regression test before fixing a bug\n",
                                             ""))
    before = files(person)
    doc = imp(person, path)
    assert not person.exists(DONT_MOCK)
    assert actions(doc).get("gone") == {REGRESSION}
    assert DONT_MOCK in actions(doc)["kept"]
    assert doc["commit"] is None and files(person) == before  # the removed rule's card as it was
    code, out, _ = import_cli(person, "claude-md", path, "--project", "acme-api")
    assert f"gone from the source: {REGRESSION}" in out


def test_a_card_deleted_and_not_yet_committed_is_not_made_again(person, src) -> None:
    path = src / PATHS["claude-md"]
    imp(person, path)
    (person.root / (DONT_MOCK + ".md")).unlink()  # by hand; no watcher has committed it
    path.write_text(path.read_text().replace("3. Write a regression test before fixing a bug\n",
                                             ""))
    doc = imp(person, path)
    assert not person.exists(DONT_MOCK) and doc["commit"] is None
    assert actions(doc).get("gone") == {REGRESSION}


def test_reordered_and_moved_rules_are_the_same_cards(person, src) -> None:
    path = src / PATHS["claude-md"]
    imp(person, path)
    delete(person, PYTEST_X)
    text = path.read_text()
    # the testing rules reversed, and one moved into the code style section
    text = text.replace("1. Always run the tests with `pytest -x` locally; the suite is slow\n"
                        "2. Don't mock the database: use the `pg` fixture, it runs in a "
                        "transaction\n3. Write a regression test before fixing a bug\n",
                        "1. Write a regression test before fixing a bug\n"
                        "2. Always run the tests with `pytest -x` locally; the suite is slow\n")
    text = text.replace("- Use `ruff format`; never hand-format imports\n",
                        "- Use `ruff format`; never hand-format imports\n- Don't mock the "
                        "database: use the `pg` fixture, it runs in a transaction\n")
    path.write_text(text)
    n = len(files(person))
    doc = imp(person, path)
    got = actions(doc)
    assert "created" not in got and "gone" not in got, got
    assert got["updated"] == {DONT_MOCK}  # its key (section) moved: recorded on the card
    assert PYTEST_X in got["kept"] and not person.exists(PYTEST_X)
    assert len(files(person)) == n
    assert "#code-style/" in person.read(DONT_MOCK).meta["source"]


def test_a_deleted_rule_reworded_upstream_is_not_made_again(person, src) -> None:
    path = src / PATHS["claude-md"]
    imp(person, path)
    delete(person, REGRESSION)
    path.write_text(path.read_text().replace("3. Write a regression test",
                                             "3. Always write a regression test"))
    doc = imp(person, path)
    assert "created" not in actions(doc) and doc["commit"] is None
    assert REGRESSION in actions(doc)["kept"]


def test_a_rule_edited_then_deleted_and_reworded_upstream_is_not_made_again(person,
                                                                           src) -> None:
    """Found by the import property test: a person edits a rule's card, then deletes it;
    the source rewords the rule a little. The item is still what the import last wrote
    into the card (not the person's last text), so it is not made again."""
    path = src / PATHS["claude-md"]
    imp(person, path)
    card = person.root / (REGRESSION + ".md")
    text = card.read_text()
    head, _, body = text.rpartition("\n---\n")  # the person's words in the body only
    card.write_text(head + "\n---\n" + body.replace(
        "Write a regression test before fixing a bug", "Pin every bug down first: a failing "
        "test, then the fix, then a note in the changelog about what broke and why"))
    git(person.root, "commit", "-qam", "my words")
    delete(person, REGRESSION)
    path.write_text(path.read_text().replace("3. Write a regression test before fixing a bug",
                                             "3. Write a regression test before fixing a bug,"
                                             " carefully"))
    doc = imp(person, path)
    assert "created" not in actions(doc) and doc["commit"] is None
    assert REGRESSION in actions(doc)["kept"]


def test_deletions_are_found_past_the_commit_messages_fifty_lines(person, tmp_path) -> None:
    """An import commit's message names at most 50 cards; the 60th, deleted, stays so."""
    md = tmp_path / "CLAUDE.md"
    md.write_text("## Rules\n\n" + "".join(f"- Always keep rule number {i:02d} of sixty "
                                           f"in mind ({'x' * (i % 7)})\n" for i in range(60)))
    imp(person, md)
    last = RULES + "always-keep-rule-number-59-of-sixty-in-mind-xxx"
    assert person.exists(last)
    delete(person, last)
    md.write_text(md.read_text().replace("- Always keep rule number 00 of sixty in mind ()\n",
                                         ""))
    doc = imp(person, md)
    assert not person.exists(last) and "created" not in actions(doc)
    assert actions(doc)["gone"] == {RULES + "always-keep-rule-number-00-of-sixty-in-mind"}


def test_of_two_sections_of_one_name_the_removed_one_is_gone(person, tmp_path) -> None:
    """Repeated headings get keys in order (notes, notes-2): the second, left alone, is
    still its own card when the first is removed, not written over the first's."""
    md = tmp_path / "CLAUDE.md"
    md.write_text("## Notes\n\nThe staging database is reset on Mondays.\n\n"
                  "## Notes\n\nInvoices are rendered by a Celery worker.\n")
    imp(person, md)
    first, second = RULES + "notes", RULES + "notes-2"
    before = files(person)
    md.write_text("## Notes\n\nInvoices are rendered by a Celery worker.\n")
    doc = imp(person, md)
    assert actions(doc) == {"gone": {first}, "updated": {second}}  # its key is `notes` now
    assert person.read(first).body.strip() == "The staging database is reset on Mondays."
    assert person.read(second).body.strip() == "Invoices are rendered by a Celery worker."
    assert {p: b for p, b in files(person).items() if p != second + ".md"} == \
        {p: b for p, b in before.items() if p != second + ".md"}


def test_a_card_deleted_after_its_yaml_was_broken_is_not_made_again(person, src) -> None:
    """A person breaks a rule card's frontmatter (it no longer parses), then deletes the
    card: its last version cannot say which item it was, so the import reads the version
    it last wrote itself. Committed deletion and one not yet committed alike."""
    path = src / PATHS["claude-md"]
    imp(person, path)
    for cid, commit in ((DONT_MOCK, True), (REGRESSION, False)):
        card = person.root / (cid + ".md")
        card.write_text(card.read_text().replace("title:", "title: [unclosed", 1))
        git(person.root, "commit", "-qam", f"broke {cid}")
        if commit:
            delete(person, cid)
        else:
            card.unlink()
    doc = imp(person, path)
    assert not person.exists(DONT_MOCK) and not person.exists(REGRESSION)
    assert "created" not in actions(doc) and doc["commit"] is None
    assert {DONT_MOCK, REGRESSION} <= actions(doc)["kept"]


def test_two_reworded_items_near_one_card_take_it_once(tmp_path) -> None:
    """By rewording, one card per item and one item per card, the closest pair first (a
    mutant's `or` gave one card to both items, and an item the worse of two cards)."""
    from types import SimpleNamespace

    from cardmem.tools.importers.identity import Known, match
    from cardmem.tools.importers.model import Draft

    rule = "Always run the whole test suite with pytest before every push"
    card = Known("x#old", SimpleNamespace(body=rule, id="rules/old"))
    nearer = Draft("a", "a", "feedback", rule.replace("whole ", ""))  # ratio 0.95
    near = Draft("b", "b", "feedback", rule.replace("every", "each"))  # 0.94
    got = match({"x#a": nearer, "x#b": near}, [card], "x#")
    assert list(got) == ["x#a"] and got["x#a"] is card, got
    other = Known("x#other", SimpleNamespace(body="Please a" + rule[1:], id="rules/other"))
    got = match({"x#a": nearer}, [other, card], "x#")  # 0.89 and 0.95 near it
    assert got == {"x#a": card}, got  # the nearer card, the other left free


def test_a_deleted_card_whose_source_a_person_removed_is_no_trouble(person, src) -> None:
    """A person takes an imported card as theirs (its `source:` line removed), then deletes
    it: the next import runs (a mutant's `or` read the missing source: a traceback)."""
    imp(person, src / PATHS["claude-md"])
    p = person.root / f"{REGRESSION}.md"
    p.write_text("".join(ln for ln in p.read_text().splitlines(True)
                         if not ln.startswith("source:")))
    git(person.root, "commit", "-qam", "mine now")
    delete(person, REGRESSION)
    doc = imp(person, src / PATHS["claude-md"])
    assert doc["cards"], doc
