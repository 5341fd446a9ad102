"""`cardmem import` of each kind, from fixtures written to each tool's documented format,
and the round trip: imported cards are found by search and sit in the session context
as their types imply. CLI in-process (CliRunner)."""
from __future__ import annotations

import json

import pytest
from gitremote import cli
from importkit import (PATHS, cards, commits, copy_fixtures, git, imp, person,  # noqa: F401
                       src, with_person)

from cardmem.store.context import question_context, session_context
from cardmem.store.maintain.links import find as broken_links
from cardmem.store.maintain.survey import Survey
from cardmem.tools.importers.claude_memory import guess_project


def test_help_ends_with_an_example() -> None:
    code, out, _ = cli("import", "--help")
    assert code == 0
    tail = out.rstrip().splitlines()
    assert tail[-5].strip() == "Example:" and tail[-1].strip().startswith("cardmem import")


def test_claude_md_splits_at_headings_rules_become_feedback_cards(person, src) -> None:
    code, out, err = imp(person, "claude-md", src / PATHS["claude-md"], "--project", "Acme API")
    assert code == 0, err
    got = cards(person)
    rules = {c.title: c for c in got.values() if c.type == "feedback"}
    assert len(rules) == 7  # 4 under "Code style", 3 under "Testing rules"
    sql = next(c for t, c in rules.items() if t.startswith("Keep SQL in"))
    assert sql.body == ("\nKeep SQL in `acme/db/queries/*.sql`, loaded by name;\n"
                        "  no string-built SQL anywhere\n")  # the item verbatim, bullet off
    assert sql.description == "Code style" and sql.project == "acme-api"
    assert "Don't mock the database: use the `pg` fixture, it runs in a transaction" in rules
    others = {c.title: c for c in got.values() if c.type != "feedback"}
    assert set(others) == {"Acme API", "Commands", "Architecture", "Deploy runbook"}
    assert all(c.type == "project" and c.id.startswith("projects/acme-api/")
               for c in others.values())
    assert "### Background jobs\n\nInvoices are rendered" in others["Architecture"].body
    assert others["Acme API"].body.strip().startswith("Billing and invoicing service")
    # one commit, the person's, naming the source; every card says where it came from
    assert commits(person) == 2
    log = git(person.root, "log", "-1", "--format=%an <%ae>%n%B")
    assert log.startswith("Tess Tester <tess@example.com>\nimport: 11 cards from claude-md")
    assert "Cardmem-Source: import\nCardmem-Import: claude-md " in log
    assert all(str(c.meta["source"]).startswith("claude-md:") and
               str(c.meta["source"]).endswith(tuple("abcdefghijklmnopqrstuvwxyz")) for c in
               got.values())
    assert "11 created" in out and "(project acme-api)" in out
    assert broken_links(Survey.of(person)) == []  # [[Deploy runbook]]: the section's card


def test_claude_md_of_the_user_is_global(person, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    home = tmp_path / "home" / ".claude"
    home.mkdir(parents=True)
    (home / "CLAUDE.md").write_text("## Preferences\n\n- Always answer in British English\n"
                                    "- Never use emoji in commit messages\n")
    code, _, err = imp(person, "claude-md", home / "CLAUDE.md")
    assert code == 0, err
    assert sorted(cards(person)) == ["feedback/always-answer-in-british-english",
                                     "feedback/never-use-emoji-in-commit-messages"]


def test_a_claude_md_import_says_the_file_would_reach_sessions_twice(person, tmp_path,
                                                                   monkeypatch) -> None:
    """The imported CLAUDE.md stays where Claude Code reads it, and cardmem's rules file
    (install claude-code) now holds the same rules: each rule twice in every session, the
    file's copy going stale as the cards change. The import says so, once, when it wrote
    something (found in the first hour at scale: 150 rules, 24 KB and 49 KB read twice)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    home = tmp_path / "home" / ".claude"
    home.mkdir(parents=True)
    (home / "CLAUDE.md").write_text("## Preferences\n\n- Always answer in British English\n")
    note = ("note: Claude Code still reads ~/.claude/CLAUDE.md: with cardmem installed, what "
            "was imported reaches each session twice, and the file's copy goes stale as the "
            "cards change; take the imported sections out of it\n")
    code, out, err = imp(person, "claude-md", home / "CLAUDE.md", "--dry-run")
    assert code == 0 and note not in out
    code, out, err = imp(person, "claude-md", home / "CLAUDE.md")
    assert code == 0, err
    assert out.endswith(note)
    code, out, err = imp(person, "claude-md", home / "CLAUDE.md")  # nothing new: no note
    assert code == 0 and note not in out and "no commit (nothing changed)" in out


def test_an_import_of_many_names_the_first_fifty_and_counts_the_rest(person, tmp_path
                                                                     ) -> None:
    """3,000 notes printed 3,000 `created` lines, scrolling away the lines a person must
    read (first hour at scale); --json still lists every card."""
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(60):
        (notes / f"note-{i:02d}.md").write_text(f"# Note {i:02d}\n\nAbout thing {i}.\n")
    code, out, err = imp(person, "basic-memory", notes, "--dry-run")
    assert code == 0, err
    assert out.splitlines()[50:] == ["and 10 more cards to write (--json lists every one)",
                                     f"import basic-memory {notes}: 60 created; dry run, "
                                     "nothing written"]
    code, out, err = imp(person, "basic-memory", notes)
    lines = out.splitlines()
    assert code == 0 and len(lines) == 52 and lines[0] == "created reference/note-00"
    assert lines[50] == "and 10 more cards written (--json lists every one)"
    assert len(cards(person)) == 60
    for i in range(60):
        (notes / f"note-{i:02d}.md").write_text(f"# Note {i:02d}\n\nAbout thing {i}, more.\n")
    code, out, err = imp(person, "basic-memory", notes, "--json")
    assert code == 0 and sum(o["action"] == "updated" for o in json.loads(out)["cards"]) == 60


def test_claude_memory_topics_become_cards_described_by_the_index(person, src) -> None:
    code, out, err = imp(person, "claude-memory", src / PATHS["claude-memory"],
                         "--project", "acme-api")
    assert code == 0, err
    got = {c.title: c for c in cards(person).values()}
    assert set(got) == {"Testing with pytest -x", "Tess's role", "Release freeze",
                        "Grafana dashboards", "Debugging notes", "Auto memory of acme-api"}
    assert got["Tess's role"].id == "user/tess-s-role" and got["Tess's role"].type == "user"
    rule = got["Testing with pytest -x"]
    assert (rule.type, rule.project) == ("feedback", "acme-api")
    # the index's one-line entry is the description (over the file's own)
    assert rule.description == "run pytest with -x, the integration suite takes 9 minutes"
    assert "**Why:** the integration suite" in rule.body
    debug = got["Debugging notes"]  # a topic file without frontmatter
    assert debug.type == "project" and debug.description == \
        "flaky DNS in CI, Celery visibility timeout"
    assert debug.body.lstrip().startswith("# Debugging notes\n\n## Flaky DNS test in CI")
    notes = got["Auto memory of acme-api"].body
    assert "refreshed from production every Monday" in notes and "[Grafana" not in notes


def test_claude_memory_project_from_the_folder_name(tmp_path) -> None:
    repo = tmp_path / "src" / "acme-api"
    repo.mkdir(parents=True)
    name = "-" + str(repo).strip("/").replace("/", "-").replace("_", "-").replace(".", "-")
    memory = tmp_path / "claude" / name / "memory"
    memory.mkdir(parents=True)
    assert guess_project(memory) == repo  # found again on this machine
    assert guess_project(memory.parent) == repo  # the project's folder: its memory/
    assert guess_project(tmp_path / "x" / "-home-tess-src-billing" / "memory") == "src-billing"


def test_basic_memory_notes_keep_title_tags_permalink_and_links_resolve(person, src) -> None:
    code, out, err = imp(person, "basic-memory", src / PATHS["basic-memory"])
    assert code == 0, err
    got = {c.title: c for c in cards(person).values()}
    assert set(got) == {"Coffee Brewing Methods", "Coffee Bean Origins",
                        "Proper Grinding Technique", "Ana Lima"}
    origins = got["Coffee Bean Origins"]
    assert origins.tags == ["coffee", "beans", "sourcing"]  # a comma-separated string
    assert origins.aliases == ["coffee-bean-origins"]
    assert "- used_in [[coffee-brewing-methods]]" in origins.body  # a permalink: an alias
    ana = got["Ana Lima"]
    assert (ana.id, ana.type, ana.aliases) == ("people/ana-lima", "person", ["people/ana-lima"])
    brewing = got["Coffee Brewing Methods"].body
    assert "- [technique] Water at 96°C extracts best" in brewing
    assert "- learned_from [[Ana Lima]]" in brewing
    # every relation resolves to an imported card but the one to a note never written
    broken = broken_links(Survey.of(person))
    assert [(f.ids, f.detail) for f in broken] == [
        (["people/ana-lima"], "[[Espresso Recipes]] names no card")]
    assert "people/ana-lima.md: [[Espresso Recipes]]" in out


def test_mcp_memory_entities_become_cards_with_links_both_ways(person, src) -> None:
    code, out, err = imp(person, "mcp-memory", src / PATHS["mcp-memory"])
    assert code == 0, err
    got = cards(person)
    assert {cid: c.type for cid, c in got.items()} == {
        "people/tess-tester": "person", "projects/acme-api/acme-api": "project",
        "entities/billing-team": "entity", "feedback/small-prs": "feedback"}
    tess = got["people/tess-tester"]
    assert (tess.title, tess.aliases) == ("Tess Tester", ["Tess_Tester"])
    assert tess.body.startswith("\n- Backend lead on the billing team\n")
    assert "- works_in [[Billing_Team]]" in tess.body and "- leads [[Acme_API]]" in tess.body
    team = got["entities/billing-team"]
    assert "- [[Tess_Tester]] works_in Billing_Team" in team.body  # the relation, inbound
    assert got["projects/acme-api/acme-api"].project == "acme-api"
    assert broken_links(Survey.of(person)) == []


def test_round_trip_search_and_context(person, src) -> None:
    for kind in ("claude-md", "claude-memory", "basic-memory", "mcp-memory"):
        code, _, err = imp(person, kind, src / PATHS[kind], "--project", "acme-api")
        assert code == 0, (kind, err)
    code, out, _ = cli("search", "grinding burr", "--json", "--store", str(person.root))
    assert code == 0
    assert json.loads(out)["results"][0]["id"] == "projects/acme-api/proper-grinding-technique"
    code, out, _ = cli("search", "visibility timeout", "--json", "--store", str(person.root))
    assert json.loads(out)["results"][0]["title"] == "Debugging notes"
    code, out, _ = cli("context", "--project", "acme-api", "--store", str(person.root),
                       "--budget", "20000")
    assert code == 0
    rules, rest = out.split("## User", 1)
    assert "Write a regression test before fixing a bug" in rules  # claude-md rules
    assert "Testing with pytest -x" in rules  # auto memory's feedback
    assert "Keep pull requests under 400 lines" in rules  # an MCP preference
    user, project = rest.split("## Project acme-api", 1)
    assert "Tess is the backend lead on the billing team" in user
    assert "Deploys go through `make deploy ENV=staging`" in project
    assert "Release freeze" in project
    pile = session_context(person, project="acme-api", budget=20000)
    assert "projects/acme-api/architecture" in pile.addresses
    # people and entities are not in a session's pile; a question naming them brings them
    assert "people/tess-tester" not in pile.addresses
    asked = question_context(person, "What does the Billing Team own?", asker="Tess_Tester")
    assert {"people/tess-tester", "entities/billing-team"} <= set(asked.addresses)


@pytest.mark.corpus
def test_real_agent_instruction_files_lose_no_line(tmp_path) -> None:
    """The corpus's sections of real AGENTS.md / CLAUDE.md files, put back together per
    repository: every line of every file lands in a card (a rule's bullet taken off)."""
    import collections

    from corpora import need_corpus

    from cardmem.store.cards import card as cardlib
    from cardmem.tools.importers import claude_md

    files = collections.defaultdict(list)
    for p in sorted(need_corpus().glob("*--*.md")):
        c = cardlib.load(p, p.stem)
        files[str(c.meta["source"])].append(c.body.strip("\n"))
    rules = 0
    for n, (source, bodies) in enumerate(sorted(files.items())):
        f = tmp_path / f"{n}.md"
        f.write_text(f"# {source}\n\n" + "\n\n".join(bodies) + "\n")
        parsed = claude_md.parse(f, "p")
        assert parsed.skipped == [] and parsed.drafts, source
        text = "\n".join(d.body for d in parsed.drafts)
        for line in f.read_text().splitlines()[1:]:
            bare = claude_md.ITEM.sub(r"\2", line)
            assert line in text or bare in text or line.lstrip("#").strip() in \
                {d.title for d in parsed.drafts} | {d.description for d in parsed.drafts}, \
                (source, line)
        rules += sum(d.type == "feedback" for d in parsed.drafts)
    assert len(files) >= 40 and rules >= 100


def test_claude_md_project_is_named_as_session_start_names_it(person, tmp_path) -> None:
    repo = tmp_path / "acme-api-v2"
    (repo / ".claude").mkdir(parents=True)
    git(repo.parent, "init", "-q", str(repo))
    (repo / ".claude" / "CLAUDE.md").write_text("## Deploy\n\nRun `make deploy`.\n")
    code, out, err = imp(person, "claude-md", repo / ".claude" / "CLAUDE.md")
    assert code == 0, err
    assert person.exists("projects/acme-api-v2/deploy")
    toml = person.root / "cardmem.toml"
    toml.write_text(toml.read_text() + '\n[projects]\n"acme-api-v2" = "Acme API"\n')
    git(person.root, "commit", "-qam", "map the folder")
    (repo / "AGENTS.md").write_text("## Release\n\nTag, then push.\n")
    code, out, err = imp(person, "claude-md", repo / "AGENTS.md")
    assert code == 0, err
    assert person.exists("projects/acme-api/release") and "(project acme-api)" in out


def test_a_folder_imports_its_claude_md_else_agents_md_else_dot_claude(tmp_path) -> None:
    """The order a folder's files are looked for in (a mutant took the last found)."""
    from cardmem.tools.importers import claude_md

    repo = tmp_path / "repo"
    (repo / ".claude").mkdir(parents=True)
    for name in ("CLAUDE.md", "AGENTS.md", ".claude/CLAUDE.md"):
        (repo / name).write_text(f"## Notes\n\nFrom {name}.\n")
    for name in ("CLAUDE.md", "AGENTS.md", ".claude/CLAUDE.md"):
        parsed = claude_md.parse(repo, "acme")
        assert parsed.origin == repo / name
        assert [d.body for d in parsed.drafts] == [f"From {name}.\n"]
        (repo / name).unlink()



def test_a_folder_holding_claude_md_and_agents_md_says_which_it_did_not_import(person, tmp_path
                                                                               ) -> None:
    """One file a run: the other's rules are named as not imported (exit 1, as any input
    given and not imported), never passed over in silence (they were: only CLAUDE.md's
    cards came, exit 0, and the run said nothing of AGENTS.md)."""
    repo = tmp_path / "both"
    repo.mkdir()
    (repo / "CLAUDE.md").write_text("## Deploy\n\nRun `make deploy`.\n")
    (repo / "AGENTS.md").write_text("## Release\n\nTag, then push.\n")
    code, out, err = imp(person, "claude-md", repo)
    assert code == 1, err  # as for any input given and not imported
    assert f"{repo / 'AGENTS.md'}: skipped: not imported: {repo / 'CLAUDE.md'} was" in err, err
    assert [c for c, _ in person.card_files() if c.endswith("/deploy")], out
    code, out, err = imp(person, "claude-md", repo / "AGENTS.md")
    assert code == 0, err
    assert [c for c, _ in person.card_files() if c.endswith("/release")], out

def test_a_file_without_headings_is_one_card_named_for_its_file_and_project(tmp_path) -> None:
    """(A mutant swapped the two names: "CLAUDE.md of None" for the user's own file.)"""
    from cardmem.tools.importers import claude_md

    f = tmp_path / "CLAUDE.md"
    f.write_text("Answer in British English.\n\n- Never use emoji.\n")
    for project, title in (("acme", "CLAUDE.md of acme"), (None, "CLAUDE.md")):
        [d] = claude_md.parse(f, project).drafts
        assert (d.title, d.body) == (title, f.read_text()), d


def test_prose_between_two_rule_lines_at_the_top_is_text_not_frontmatter(tmp_path) -> None:
    """A CLAUDE.md opening with `---`, a line of prose and `---` (a thematic break, not
    YAML): the prose is imported. It was taken for frontmatter and dropped (found by
    test_claude_md_properties.py); a real frontmatter (a YAML mapping) is still left out."""
    from cardmem.tools.importers import claude_md

    f = tmp_path / "CLAUDE.md"
    f.write_text("---\nRead the README first.\n---\n\n## Rules\n\n- Always run the tests\n"
                 "- Never push to main\n")
    drafts = claude_md.parse(f, None).drafts
    assert "Read the README first." in drafts[0].body, drafts
    assert len(drafts) == 3
    f.write_text("---\ndescription: house rules\n---\n\n## Rules\n\n- Always run the tests\n"
                 "- Never push to main\n")
    assert [d.title for d in claude_md.parse(f, None).drafts] == ["Always run the tests",
                                                                  "Never push to main"]
