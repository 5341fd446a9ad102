"""Rung-1 assembly: fixed order, budget held, rules never invisible, project and names."""
from __future__ import annotations

import subprocess

import pytest

from cardmem.store.context import (Pile, find_person, named_cards, project_for,
                                   question_context, session_context)

ACTIVE_RULES = ["feedback/never-force-push-main", "feedback/no-friday-deploys",
                "feedback/no-secrets-in-cards", "feedback/prod-migrations-need-approval",
                "feedback/reversible-migrations", "feedback/run-tests-with-x",
                "feedback/small-prs", "feedback/stripe-test-mode-locally",
                "feedback/uv-lock-frozen-in-deploys"]


def exempt_chars(pile: Pile) -> int:
    """Characters of the title-only rule list: the only text allowed past the budget."""
    text = pile.text
    titled = {e["id"] for e in pile.left_out if "title only" in e["reason"]}
    if not titled:
        return 0
    head, sep, tail = text.partition("\n## Further rules, titles only")
    assert sep, "title-only rules go last, under their own heading"
    assert all(f"(`{i}`)" in tail for i in titled)
    note = f"({len(titled)} more rules: titles at the end.)\n"
    assert note in head
    return len(sep) + len(tail) + len(note)


@pytest.mark.parametrize("budget", [0, 1, 40, 200, 600])
def test_no_rule_is_ever_invisible(example_store, budget):
    pile = session_context(example_store, project="acme-api", budget=budget)
    for rid in ACTIVE_RULES:
        assert f"`{rid}`" in pile.text, rid
        assert rid in pile.addresses
    # The superseded rule is not presented as a rule in force.
    assert "feedback/pin-deps-with-pip-tools" not in pile.addresses


@pytest.mark.parametrize("budget", [0, 50, 300, 1000, 2500, 4000, 9000, 20000])
def test_budget_held_except_rule_titles(example_store, budget):
    pile = session_context(example_store, project="acme-api", budget=budget)
    assert len(pile.text) - exempt_chars(pile) <= budget
    if budget >= 2500:  # the sections after the rules are not pushed behind the titles
        assert pile.text.index("## Memory map") < pile.text.find("## Further rules") or \
            "## Further rules" not in pile.text


def test_question_pile_holds_budget_too(example_store):
    for budget in (0, 100, 1500, 5000):
        pile = question_context(example_store, "What does the billing service do?", "@priya",
                                budget=budget)
        assert len(pile.text) - exempt_chars(pile) <= budget
        for rid in ACTIVE_RULES:
            assert f"`{rid}`" in pile.text


def test_rules_degrade_full_then_description_then_title(example_store):
    full = session_context(example_store, budget=100_000)
    assert not [e for e in full.left_out if "rule" in e["reason"]]
    assert "uv run pytest -x -q tests/" in full.text  # a rule's body, whole
    mid = session_context(example_store, budget=4000)
    reasons = {e["id"]: e["reason"] for e in mid.left_out if "id" in e}
    assert any("description only" in r for r in reasons.values())
    tiny = session_context(example_store, budget=300)
    assert any("title only" in e["reason"] for e in tiny.left_out)


def test_fixed_order_of_sections(example_store):
    pile = session_context(example_store, project="acme-api", budget=30_000)
    heads = ["## Rules", "## User", "## Project acme-api", "## Memory map", "## Recent changes"]
    where = [pile.text.index(h) for h in heads]
    assert where == sorted(where)
    # Inside a section, cards come in id order (no ranking).
    proj = [a for a in pile.addresses if a.startswith("projects/")]
    assert proj == sorted(proj) and len(proj) == 7
    assert pile.addresses[:9] == ACTIVE_RULES
    assert "user/tomas" in pile.addresses


def test_left_out_is_counted_and_named(example_store):
    pile = session_context(example_store, project="acme-api", budget=3000)
    assert "cards left out" in pile.text
    assert "cardmem search" in pile.text and "read_card" in pile.text
    missing = 55 - len(pile.addresses)
    assert f"{missing} of 55 cards left out" in pile.text
    assert pile.as_dict()["left_out"] == pile.left_out


def test_recent_changes_and_map_come_from_the_store(example_store):
    pile = session_context(example_store, budget=100_000)
    assert "55 cards:" in pile.text and "10 feedback" in pile.text
    assert "init: cardmem store" in pile.text  # the one commit, from git log


def test_project_from_git_toplevel_and_mapping(example_store, tmp_path):
    repo = tmp_path / "acme-api"
    (repo / "src" / "deep").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert project_for(example_store, repo / "src" / "deep") == "acme-api"
    other = tmp_path / "checkout-7"
    other.mkdir()
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    assert project_for(example_store, other) == "checkout-7"
    toml = example_store.root / "cardmem.toml"
    toml.write_text(toml.read_text() + '\n[projects]\n"checkout-7" = "billing-v2"\n')
    example_store.__dict__.pop("config", None)
    assert project_for(example_store, other) == "billing-v2"
    pile = session_context(example_store, cwd=str(other), budget=100_000)
    assert "## Project billing-v2 (6 cards)" in pile.text
    assert "projects/billing-v2/overview" in pile.addresses
    assert not any(a.startswith("projects/acme-api/") for a in pile.addresses)


def test_project_without_cards_is_said(example_store):
    pile = session_context(example_store, project="nothing-here", budget=100_000)
    assert "## Project nothing-here\nNo cards for this project yet." in pile.text


def test_broken_card_is_a_notice_not_a_failure(example_store):
    (example_store.root / "entities" / "broken.md").write_text("---\ntitle: [unclosed\n---\nx\n")
    pile = session_context(example_store, budget=100_000)
    assert any("broken.md" in n for n in pile.notices)
    assert "could not be read" in pile.text


@pytest.mark.parametrize("asker", ["@priya", "priya", "Priya.Raman@ACME.example.com",
                                   "priya raman", "  PRIYA  RAMAN "])
def test_asker_matched_by_alias_any_case(example_store, asker):
    cards, _ = example_store.scan()
    assert find_person(cards, asker).id == "people/priya-raman"
    pile = question_context(example_store, "who runs ledger-db?", asker, budget=100_000)
    assert pile.addresses[0] == "people/priya-raman"
    assert pile.text.index("## The asker") < pile.text.index("## Rules")


def test_unknown_asker_is_said(example_store):
    pile = question_context(example_store, "anything?", "@nobody", budget=100_000)
    assert "@nobody: no person card answers to this name" in pile.text


def test_entities_named_whole_word_any_case(example_store):
    cards, _ = example_store.scan()
    ids = [c.id for c in named_cards(cards, "Who approves migrations for THE BILLING SERVICE and Stripe?")]
    assert "entities/billing-service" in ids and "entities/stripe" in ids
    # Glued to other letters it is not a name: "rebilling" names no billing card.
    assert [c.id for c in named_cards(cards, "is rebilling done? stripey?")] == []
    pile = question_context(example_store, "what does billing-svc own?", budget=100_000)
    named = pile.text.split("## Named in the question")[1]
    assert "entities/billing-service" in named.split("## Memory map")[0]
    assert pile.text.index("## Rules") < pile.text.index("## Named in the question") \
        < pile.text.index("## Memory map")


def test_index_backed_pile_equals_the_scanned_one(example_store, monkeypatch):
    from cardmem.store.index import pile_view as holdings

    for budget in (700, 4000, 100_000):
        indexed = session_context(example_store, project="acme-api", budget=budget)
        assert (example_store.root / ".cardmem" / "index.sqlite").exists()
        with monkeypatch.context() as m:
            m.setattr(holdings, "_open_index", lambda store: None)
            scanned = session_context(example_store, project="acme-api", budget=budget)
        assert indexed.text == scanned.text and indexed.addresses == scanned.addresses


def test_rules_are_current_even_when_the_index_is_not(example_store):
    import os

    session_context(example_store, budget=100_000)  # builds the index and its summary
    fb = example_store.root / "feedback"
    (fb / "brand-new.md").write_text("---\ntitle: A rule saved a second ago\ntype: feedback\n"
                                     "---\nUse it.\n")
    rule = fb / "small-prs.md"
    text = rule.read_text().replace("title: Keep pull requests small and reviewable",
                                    "title: Keep PRs tiny")
    st = rule.stat()
    rule.write_text(text)
    os.utime(rule, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    (fb / "no-friday-deploys.md").unlink()
    pile = session_context(example_store, budget=100_000)
    assert "A rule saved a second ago (`feedback/brand-new`)" in pile.text
    assert "Keep PRs tiny (`feedback/small-prs`)" in pile.text
    assert "feedback/no-friday-deploys" not in pile.addresses
    assert "## Rules (9, always in force)" in pile.text


def test_recent_changes_follow_head(example_store):
    from cardmem.store.git.head_file import head as _head

    session_context(example_store, budget=100_000)  # fills the recent-changes cache
    subprocess.run(["git", "-C", str(example_store.root), "pack-refs", "--all"], check=True)
    head = subprocess.run(["git", "-C", str(example_store.root), "rev-parse", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    assert _head(example_store.root) == head  # read from packed-refs, no git process
    example_store.new("reference/fresh-note", title="Fresh note", body="x")
    pile = session_context(example_store, budget=100_000)
    assert "new: reference/fresh-note (reference/fresh-note)" in pile.text
    assert "Fresh note (`reference/fresh-note`)" in pile.text  # most recently changed


def test_body_cut_matches_the_card_parser(example_store):
    from cardmem.store.index.pile_view import body_of

    cards, _ = example_store.scan()
    for c in cards:
        assert body_of(c.text) == c.body, c.id
    from cardmem.store.cards.card import CardProblem, parse

    for text in ["no frontmatter\n", "---\nno key, a rule on top\n",
                 "---\nNote to self: a rule on top, then a label\n",
                 "\ufeff---\r\na: 1\r\n---\r\nbody\r\n", "---\n---\n",
                 "---\ntitle: x\n...\nafter dots\n"]:
        assert body_of(text) == parse(text, "x").body, repr(text)
    with pytest.raises(CardProblem, match="never closes"):  # unreadable: in no pile at all
        parse("---\nunclosed: yes\n", "x")


def test_counts_follow_the_index_when_it_moves(example_store):
    from cardmem.store.index.db import Index

    assert "55 cards:" in session_context(example_store, budget=100_000).text
    assert "55 cards:" in session_context(example_store, budget=100_000).text  # sealed summary
    (example_store.root / "entities" / "new-thing.md").write_text("---\ntitle: New thing\n---\n")
    with Index(example_store) as idx:  # another command (search, the watcher) indexes it
        idx.refresh()
    assert "56 cards:" in session_context(example_store, budget=100_000).text


@pytest.mark.parametrize("undo", ["revert", "rm"])
def test_a_card_just_taken_out_is_not_named_in_the_map(example_store, undo):
    """A card made, indexed (a search), then taken out by cardmem itself: the pile's map
    named it as most recently changed and counted it, from the index, until something
    else refreshed the index."""
    from cardmem.store.index.db import Index

    example_store.new("reference/fresh-note", title="Fresh note", body="x")
    with Index(example_store) as idx:
        idx.refresh()
    assert "Fresh note (`reference/fresh-note`)" in session_context(example_store).text
    if undo == "revert":
        example_store.revert("HEAD")
    else:
        from cardmem.store.moves import remove

        remove(example_store, "reference/fresh-note")
    for _ in range(2):  # the first pile, and the next one from the sealed summary
        text = session_context(example_store).text
        assert "Fresh note" not in text.split("## Recent changes")[0]
        assert "55 cards:" in text


def test_an_empty_store_s_map_says_0_cards(store):
    """A new store's piles said `0 cards: .` and `(0 cards: )`."""
    assert "## Memory map\n0 cards.\n" in session_context(store, budget=100_000).text
    assert "## Memory map (0 cards)" in question_context(store, "what is new?").text
