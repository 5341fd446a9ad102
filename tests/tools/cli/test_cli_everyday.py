"""The everyday commands of issue 31: rm, mv (links rewritten), list, recent, show by
title with a did-you-mean, map and list filtered, --type rule, ids checked as remember
makes them, unreadable cards named. In-process through clikit."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from gitremote import cli


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=True).stdout


def commits(root: Path) -> int:
    return int(git(root, "rev-list", "--count", "HEAD"))


def c(store, *args: str) -> tuple[int, str, str]:
    return cli(*args, "--store", str(store.root))


def test_mv_renames_and_rewrites_links_in_one_commit(store) -> None:
    c(store, "new", "reference/b", "--title", "Bee", "--body", "self [[reference/b]]")
    c(store, "new", "reference/a", "--body", "see [[reference/b]], [[reference/b|the B]], "
      "[[Bee]] and `[[reference/b]]` in code")
    c(store, "new", "reference/other", "--body", "nothing to see")
    before = commits(store.root)
    code, out, err = c(store, "mv", "reference/b", "reference/bee", "--json")
    assert code == 0, err
    assert json.loads(out) == {"old": "reference/b", "new": "reference/bee",
                               "commit": git(store.root, "rev-parse", "HEAD").strip(),
                               "relinked": ["reference/a", "reference/bee"]}
    assert commits(store.root) == before + 1
    a = (store.root / "reference" / "a.md").read_text()
    assert "see [[reference/bee]], [[reference/bee|the B]], [[Bee]] and `[[reference/b]]` in code" in a
    assert "self [[reference/bee]]" in (store.root / "reference" / "bee.md").read_text()
    assert not (store.root / "reference" / "b.md").exists()
    assert git(store.root, "status", "--porcelain") == ""
    assert "reference/other" not in git(store.root, "show", "--name-only", "HEAD")
    assert git(store.root, "log", "--follow", "--format=%s", "--", "reference/bee.md"
               ).splitlines()[-1] == "new: reference/b"


@pytest.mark.parametrize("args,code,said", [
    (["mv", "reference/none", "reference/x"], 1, "no such card"),
    (["mv", "reference/a", "reference/a"], 2, "already"),
    (["mv", "reference/a", "reference/taken"], 1, "already exists"),
    (["mv", "reference/a", "Reference/New One"], 2, "did you mean reference/new-one?"),
    (["rm", "reference/none"], 1, "no such card"),
    (["rm", "../x"], 2, "climbs out"),
])
def test_mv_and_rm_refuse_with_one_line_and_change_nothing(store, args, code, said) -> None:
    c(store, "new", "reference/a", "--body", "x")
    c(store, "new", "reference/taken", "--body", "y")
    before = commits(store.root)
    got, out, err = c(store, *args)
    assert got == code and said in err and err.count("\n") == 1, err
    assert commits(store.root) == before and out == ""


def test_rm_is_one_commit_and_names_the_cards_still_linking(store) -> None:
    c(store, "new", "reference/gone", "--title", "Gone", "--body", "x")
    c(store, "new", "reference/by-id", "--body", "[[reference/gone]]")
    c(store, "new", "reference/by-title", "--body", "[[gone]]")
    before = commits(store.root)
    code, out, err = c(store, "rm", "reference/gone")
    assert code == 0 and out.startswith("removed reference/gone in ")
    assert "2 cards still link to it: reference/by-id, reference/by-title" in err
    assert commits(store.root) == before + 1 and not (store.root / "reference/gone.md").exists()
    assert git(store.root, "log", "-1", "--format=%s") == "rm: reference/gone\n"
    assert c(store, "revert", "HEAD")[0] == 0 and (store.root / "reference/gone.md").exists()


def test_list_and_map_filter_by_type_and_project_rule_meaning_feedback(store) -> None:
    c(store, "new", "feedback/run-tests", "--body", "x")
    c(store, "remember", "Deploy", "--project", "Acme API", "--body", "make deploy")
    c(store, "new", "reference/note", "--body", "y")
    assert c(store, "list")[1] == "feedback/run-tests\nprojects/acme-api/deploy\nreference/note\n"
    assert c(store, "list", "--type", "rule")[1] == "feedback/run-tests\n"
    assert c(store, "list", "--project", "Acme API")[1] == "projects/acme-api/deploy\n"
    assert json.loads(c(store, "list", "--json")[1])["ids"][0] == "feedback/run-tests"
    code, out, _ = c(store, "map", "--type", "rule")
    assert code == 0 and out.startswith("feedback/run-tests  [feedback]")
    assert len(out.splitlines()) == 1
    code, out, _ = c(store, "map", "--project", "acme-api", "--json")
    assert [m["id"] for m in json.loads(out)] == ["projects/acme-api/deploy"]
    assert c(store, "map", "--type", "person")[1] == "no cards of type person\n"
    code, out, _ = c(store, "search", "tests", "--type", "rule", "--json")
    assert code == 0 and [r["id"] for r in json.loads(out)["results"]] == ["feedback/run-tests"]


def test_recent_lists_changed_cards_newest_first_deleted_too(store) -> None:
    c(store, "new", "reference/old", "--body", "x")
    c(store, "new", "reference/newer", "--body", "y")
    c(store, "rm", "reference/old")
    code, out, _ = c(store, "recent", "--json")
    assert code == 0
    found = [(e["id"], e["deleted"]) for e in json.loads(out)]
    assert found == [("reference/old", True), ("reference/newer", False)]
    assert c(store, "recent", "--since", "1d")[1].splitlines()[1].endswith(
        "reference/newer  [reference]  newer")
    code, _, err = c(store, "recent", "--since", "yesterday")
    assert code == 2 and err.startswith("cardmem: --since: expected like")
    # one check for every --since: receipts says it in the same words, with the same exit
    assert c(store, "receipts", "--since", "yesterday")[::2] == (code, err)
    assert c(store, "recent", "--since", " ")[0] == 2


def test_show_by_title_or_alias_with_a_did_you_mean(store) -> None:
    c(store, "remember", "Deploy steps", "--body", "make deploy")
    code, out, _ = c(store, "show", "deploy STEPS")
    assert code == 0 and "make deploy" in out
    code, _, err = c(store, "show", "deploy step")
    assert code == 1 and "did you mean reference/deploy-steps?" in err, err
    code, _, err = c(store, "show", "reference/deploy-step")
    assert code == 1 and "did you mean reference/deploy-steps?" in err, err
    code, _, err = c(store, "show", "zzz")
    assert code == 1 and "`cardmem list` shows the ids" in err


@pytest.mark.parametrize("given,meant", [("reference/with space", "reference/with-space"),
                                         ("Reference/UPPER", "reference/upper")])
def test_new_refuses_an_id_remember_would_not_make_and_suggests_one(store, given, meant) -> None:
    code, out, err = c(store, "new", given, "--body", "x")
    assert code == 2 and out == ""
    assert f"did you mean {meant}?" in err and err.count("\n") == 1, err
    assert c(store, "new", meant, "--body", "x")[0] == 0


def test_a_frontmatter_that_never_closes_is_unreadable_and_named(store) -> None:
    (store.root / "reference").mkdir(exist_ok=True)
    (store.root / "reference" / "open.md").write_text("---\ntitle: Deploy steps\ntype: reference\n"
                                                      "make deploy\n")
    git(store.root, "add", "-A")
    git(store.root, "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-qm", "hand")
    code, out, err = c(store, "map")
    assert "reference/open.md: skipped: frontmatter never closes" in err, err
    assert "reference/open" not in out
    code, out, err = c(store, "search", "deploy")
    assert code == 0 and "reference/open.md: unreadable, not searched: frontmatter never closes" in err
    code, out, err = c(store, "remember", "Deploy steps", "--body", "x")
    assert code == 0 and out == "created reference/deploy-steps\n"
    assert "reference/open.md could not be read, so its title was not looked at" in err, err


def test_a_broken_yaml_card_is_named_by_search_and_remember(store) -> None:
    (store.root / "reference").mkdir(exist_ok=True)
    (store.root / "reference" / "bad.md").write_text("---\ntitle: [Billing\n---\nbody\n")
    code, _, err = c(store, "search", "billing")
    assert "reference/bad.md: unreadable, not searched: bad YAML" in err, err
    code, _, err = c(store, "remember", "Billing", "--body", "x")
    assert code == 0 and "reference/bad.md could not be read" in err
    code, _, err = c(store, "remember", "Other", "--body", "x")
    assert code == 0 and err == ""  # a broken card that does not mention the title: no word


def test_snippets_carry_no_markdown_marks_of_the_card(store) -> None:
    c(store, "new", "reference/deploy", "--title", "Releases", "--body",
      "## Deploy\n\n**Important**: run the deploy with __care__ and a # in text")
    code, out, _ = c(store, "search", "deploy", "--json")
    snip = json.loads(out)["results"][0]["snippet"]
    assert "##" not in snip and "__" not in snip and snip.count("**") % 2 == 0, snip
    assert "**Deploy**" in snip and "Important" in snip and "# in text" in snip


def test_tags_and_aliases_on_new_and_remember(store) -> None:
    assert c(store, "new", "people/priya", "--aliases", "@priya, priya@example.com",
             "--tags", "billing", "--body", "x")[0] == 0
    card = store.read("people/priya")
    assert card.aliases == ["@priya", "priya@example.com"] and card.tags == ["billing"]
    c(store, "remember", "Deploy", "--tags", "ci", "--body", "one")
    c(store, "remember", "Deploy", "--tags", "ci, release", "--aliases", "shipping", "--body", "two")
    card = store.read("reference/deploy")
    assert card.tags == ["ci", "release"] and card.aliases == ["shipping"]
    assert "one" in card.body and "two" in card.body
    code, out, _ = c(store, "show", "shipping")
    assert code == 0 and "two" in out


def test_remember_reads_piped_text_and_refuses_an_empty_body(store) -> None:
    from clikit import run

    ran = run("remember", "Staging", "--store", str(store.root), input="staging DB is db2\n")
    assert ran.returncode == 0 and "staging DB is db2" in store.read("reference/staging").body
    before = commits(store.root)
    for args, given in ((["remember", "Empty"], ""), (["remember", "Blank", "--body", "  "], None)):
        ran = run(*args, "--store", str(store.root), input=given)
        assert ran.returncode == 2 and ran.stdout == ""
        assert ran.stderr.startswith("cardmem: remember: nothing to remember: give the text "
                                     "with --body TEXT, or pipe it in"), ran.stderr
    assert commits(store.root) == before


def test_new_and_remember_place_a_project_card_alike(store) -> None:
    assert c(store, "remember", "Deploy", "--project", "Acme API", "--body", "x")[1] == \
        "created projects/acme-api/deploy\n"
    assert c(store, "new", "release", "--project", "Acme API", "--body", "y")[1] == \
        "created projects/acme-api/release\n"
    assert store.read("projects/acme-api/release").type == "project"
    code, _, err = c(store, "new", "reference/ci", "--project", "acme-api", "--body", "z")
    assert code == 2 and "did you mean projects/acme-api/ci?" in err, err


def test_where_says_when_no_store_is_there_yet(tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here"
    code, out, err = cli("where", "--store", str(missing))
    assert code == 0 and out == f"{missing}\n"
    assert err == (f"cardmem: note: {missing} does not exist yet; `cardmem init {missing}` "
                   "makes it a store\n")
    assert json.loads(cli("where", "--json", "--store", str(missing))[1])["exists"] is False
    assert cli("init", str(missing))[0] == 0
    assert cli("where", "--store", str(missing))[2] == ""


def test_index_counts_add_up_with_unreadable_files(store) -> None:
    (store.root / "reference").mkdir(exist_ok=True)
    (store.root / "reference" / "bad.md").write_text("---\ntitle: [x\n---\nb\n")
    c(store, "new", "reference/good", "--body", "x")
    c(store, "index")
    code, out, _ = c(store, "index")
    assert code == 0
    assert out.startswith("index: 1 card, 1 unreadable (0 added, 0 updated, 0 removed, "
                          "2 unchanged)"), out


def test_a_query_in_another_language_is_not_spell_corrected_into_english(store) -> None:
    c(store, "new", "reference/migrations", "--title", "Migration approval",
      "--body", "Mara gives the approval for every production migration.")
    code, out, _ = c(store, "search", "qui approuve les migrations", "--json")
    assert code == 0 and json.loads(out)["corrected"] == {}, out
    code, out, _ = c(store, "search", "who gives approvel for migrations", "--json")  # English
    assert json.loads(out)["corrected"] == {"approvel": "approval"}, out


def test_doctor_says_each_check_once_when_cardmem_is_on_the_path_twice(store, monkeypatch) -> None:
    import importlib.metadata as md

    real = md.entry_points

    def twice(**kw):
        found = list(real(**kw))
        return found + found

    monkeypatch.setattr(md, "entry_points", twice)
    code, out, _ = c(store, "doctor")
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert len(lines) == len(set(lines)), out
    assert any("Claude Code" in ln for ln in lines)
