"""Compounding: where signals go, protected types, duplicates, one commit, the spool."""
from __future__ import annotations

import json
import subprocess

from cardmem.store.git import runner as git
from cardmem.store.cards.card import history
from cardmem.store.learning.compound import file_signals
from cardmem.store.learning.matching import Matcher, is_duplicate
from cardmem.store.learning.spool import spool_dir
from cardmem.store.git.writer import write_lock

KEDA = "Decision: billing-service workers now scale on queue depth with KEDA, max 16"


def head(store) -> str | None:
    return git.head(store.root)


def test_signal_goes_to_the_card_it_clearly_belongs_to(example_store):
    m = Matcher(example_store.scan()[0])
    assert m.best(KEDA)[0] == "entities/billing-service"
    assert m.best("Decision: invoice numbers stay gapless per tenant in billing-v2")[0] == \
        "projects/billing-v2/invoice-numbering"
    # Words the store does not know point nowhere.
    assert m.best("Worked: quux frobnicated the zorblax")[0] is None


def test_filing_appends_history_lines_and_one_agent_commit(example_store, today):
    before = head(example_store)
    r = file_signals(example_store, [KEDA, "Worked: quux frobnicated the zorblax"],
                     "0a6a12f9-1111-2222", source="stop-hook")
    assert r.commit and r.commit != before
    commits = git.log(example_store.root, limit=2)
    assert commits[1].commit == before  # exactly one new commit
    c = commits[0]
    assert c.author == "cardmem-agent <agent@cardmem.invalid>"
    assert sorted(c.paths) == ["entities/billing-service.md", f"signals/{today}.md"]
    assert "Cardmem-Source: stop-hook" in c.message and "Cardmem-Session: 0a6a12f" in c.message
    assert "entities/billing-service  " + KEDA in c.message
    card = example_store.read("entities/billing-service")
    assert history(card.text)[-1] == f"{today} · session 0a6a12f · {KEDA}"
    day = example_store.read(f"signals/{today}")
    assert day.type == "signal"
    assert history(day.text) == [f"{today} · session 0a6a12f · Worked: quux frobnicated the zorblax"]


def test_only_added_lines_change(example_store):
    path = example_store.root / "entities" / "billing-service.md"
    old = path.read_bytes()
    file_signals(example_store, [KEDA], "s1")
    new = path.read_bytes()
    assert new.startswith(old) and new[len(old):].count(b"\n") == 1


def test_protected_types_are_never_appended(example_store, today):
    rule = example_store.root / "feedback" / "run-tests-with-x.md"
    old = rule.read_bytes()
    m = Matcher(example_store.scan()[0])
    line = "Decision: always run pytest with -x locally"  # (a `Rule:` is proposed instead)
    assert m.best(line)[0] == "feedback/run-tests-with-x"
    r = file_signals(example_store, [line], "abcdef0")
    assert rule.read_bytes() == old
    assert r.filed[0].card == f"signals/{today}"
    assert history(example_store.read(f"signals/{today}").text)[-1].endswith(
        "Decision: always run pytest with -x locally (resembles feedback/run-tests-with-x)")


def test_exact_and_near_duplicates_are_not_filed_twice(example_store):
    first = file_signals(example_store, [KEDA], "s1")
    assert first.commit
    sha = head(example_store)
    again = file_signals(example_store, [KEDA, KEDA.upper().replace("DECISION:", "Decision:"),
                                         KEDA.replace("16", "16.")], "s2")
    assert again.commit is None and head(example_store) == sha
    assert len(again.duplicates) == 3
    # Already in the example store's History (seeded), reworded slightly.
    near = "Knowledge: billing-service workers scale on queue depth via KEDA, min 4, max 12."
    assert file_signals(example_store, [near], "s3").duplicates
    # A different fact about the same card is filed.
    other = file_signals(example_store, ["Failed: KEDA max 20 overloaded ledger-db billing-service"], "s4")
    assert len(other.filed) == 1


def test_duplicate_helper():
    assert is_duplicate("Worked: x y z", ["worked:  X Y Z"])
    assert not is_duplicate("Worked: use anyio", ["Worked: drop pytest-asyncio entirely"])
    assert not is_duplicate("Knowledge: KEDA max 16 workers", ["Knowledge: KEDA max 12 workers"])


def test_busy_lock_spools_and_next_run_files_first(example_store):
    sha = head(example_store)
    with write_lock(example_store.root, 1):
        r = file_signals(example_store, [KEDA, "Worked: quux frobnicated the zorblax"], "busy1",
                         lock_timeout_s=0.1)
    assert r.spooled and r.commit is None and not r.filed
    assert head(example_store) == sha
    files = list(spool_dir(example_store).glob("*.json"))
    assert len(files) == 1
    assert json.loads(files[0].read_text())["signals"][0] == KEDA
    # The next run, with a signal of its own, files the spooled ones first: one commit.
    r2 = file_signals(example_store, ["Knowledge: zorblax lives on port 9999"], "next22")
    assert r2.commit and r2.from_spool == 2
    assert [f.session for f in r2.filed] == ["busy1", "busy1", "next22"]
    assert list(spool_dir(example_store).glob("*.json")) == []
    log = git.log(example_store.root, limit=2)
    assert log[1].commit == sha
    assert "Cardmem-Session: busy1, next22" in log[0].message


def test_spool_survives_repeated_busy_runs(example_store):
    with write_lock(example_store.root, 1):
        for i in range(3):
            file_signals(example_store, [f"Knowledge: fact {i} about zorblax{i}"], f"run{i}",
                         lock_timeout_s=0.05)
    assert len(list(spool_dir(example_store).glob("*.json"))) == 3
    r = file_signals(example_store, [], "drain")
    assert r.from_spool == 3 and len(r.filed) == 3
    out = subprocess.run(["git", "-C", str(example_store.root), "status", "--porcelain"],
                         capture_output=True, text=True).stdout
    assert out == ""  # the commit left nothing half-written


def test_no_signals_no_commit(example_store):
    sha = head(example_store)
    r = file_signals(example_store, [], "quiet")
    assert r.commit is None and head(example_store) == sha


def test_the_index_answers_the_same_way(example_store):
    from cardmem.store.learning.matching import IndexMatcher, open_matcher

    m, idx = open_matcher(example_store)
    try:
        assert isinstance(m, IndexMatcher)
        scan = Matcher(example_store.scan()[0])
        for line in [KEDA, "Worked: make rollback SERVICE=acme-api restored the previous SHA",
                     "Rule: always run pytest with -x locally",
                     "Knowledge: Priya reviews migrations with EXPLAIN ANALYZE output",
                     "Worked: quux frobnicated the zorblax"]:
            assert m.best(line)[0] == scan.best(line)[0], line
        assert m.type_of("feedback/run-tests-with-x") == "feedback"
    finally:
        idx.close()


# --- `Rule:` signals are proposals --------------------------------------------------

def test_a_rule_signal_is_a_proposal_once_and_never_a_live_rule(example_store, today):
    from cardmem.store.context import session_context

    rules_before = session_context(example_store).text.split("## Memory map")[0]
    r = file_signals(example_store, ["Rule: always squash commits before merging to main",
                                     "Rule: Always squash commits before merging to main!",
                                     KEDA], "abcdef0-9999", source="stop-hook")
    cid = "feedback/always-squash-commits-before-merging-to-main"
    assert [f.card for f in r.filed if f.card.startswith("feedback/")] == [cid]
    c = git.log(example_store.root, limit=1)[0]
    assert c.author == "cardmem-agent <agent@cardmem.invalid>"  # one agent commit for all
    assert sorted(c.paths) == sorted([f"{cid}.md", "entities/billing-service.md",
                                      f"signals/{today}.md"])
    card = example_store.read(cid)
    assert card.type == "feedback" and card.status == "proposed"
    assert card.meta["proposed_by"] == "stop-hook session abcdef0"
    assert card.body.strip() == "always squash commits before merging to main"
    # The second wording is flagged on the day card, not proposed again.
    assert history(example_store.read(f"signals/{today}").text)[-1].endswith(
        f"(near-duplicate of {cid}; not proposed)")
    notice = ("(1 agent-proposed rule awaits a person's review (`cardmem review`); not in "
              "force until accepted.)\n\n")
    pile = session_context(example_store).text
    assert notice in pile
    assert pile.split("## Memory map")[0].replace(notice, "") == rules_before
    # The next session's extraction says it again: still one proposal.
    again = file_signals(example_store, ["Rule: always squash commits before merging to main"],
                         "fedcba0")
    assert not any(f.card and f.card.startswith("feedback/") for f in again.filed)
    assert sorted(p.stem for p in (example_store.root / "feedback").glob("always-squash*"))\
        == ["always-squash-commits-before-merging-to-main"]


def test_a_rule_signal_that_repeats_a_live_rule_is_flagged_not_proposed(example_store, today):
    before = sorted(p.name for p in (example_store.root / "feedback").iterdir())
    r = file_signals(example_store, ["Rule: run the test suite with -x"], "abcdef0")
    assert sorted(p.name for p in (example_store.root / "feedback").iterdir()) == before
    assert r.filed[0].card == f"signals/{today}"
    assert r.filed[0].note == "(near-duplicate of feedback/run-tests-with-x; not proposed)"


# --- the project's signal card ---------------------------------------------------------

ZORB = "Worked: quux frobnicated the zorblax"


def test_unmatched_signal_from_a_project_session_lands_in_its_signal_card(example_store, today):
    before = head(example_store)
    r = file_signals(example_store, [KEDA, ZORB], "0a6a12f9", project="acme-api")
    assert [f.card for f in r.filed] == ["entities/billing-service", "projects/acme-api/signals"]
    assert git.log(example_store.root, limit=2)[1].commit == before  # one commit
    card = example_store.read("projects/acme-api/signals")
    assert (card.type, card.project, card.title) == \
        ("signal", "acme-api", "Signals from acme-api sessions")
    assert history(card.text) == [f"{today} · session 0a6a12f · {ZORB}"]
    assert not example_store.path(f"signals/{today}").exists()
    # Created once, then appended to, newest last, changing only the added line.
    old = example_store.path("projects/acme-api/signals").read_bytes()
    file_signals(example_store, ["Knowledge: the zorblax restarts nightly at 02:00"], "b2",
                 project="acme-api")
    new = example_store.path("projects/acme-api/signals").read_bytes()
    assert new.startswith(old) and new[len(old):].count(b"\n") == 1
    assert history(example_store.read("projects/acme-api/signals").text)[-1].endswith(
        "session b2 · Knowledge: the zorblax restarts nightly at 02:00")


def test_a_session_without_project_keeps_the_day_card(example_store, today):
    facts = ["the zorblax", "a quux", "port 9999 of the frob", "tuesday restarts"]
    for project, fact in zip((None, "", "../escape", ".hidden"), facts):
        r = file_signals(example_store, [f"Knowledge: {fact} is odd"], "s1", project=project)
        assert r.filed[0].card == f"signals/{today}", project
    assert not (example_store.root / "escape").exists()


def test_a_protected_match_from_a_project_session_goes_to_the_project_card(example_store):
    # (a `Decision:`: a `Rule:` line is proposed as a rule card instead)
    r = file_signals(example_store, ["Decision: always run pytest with -x locally"], "p1",
                     project="acme-api")
    assert r.filed[0].card == "projects/acme-api/signals"
    assert r.filed[0].note == "(resembles feedback/run-tests-with-x)"


def test_a_project_sessions_repeated_rule_is_flagged_on_the_project_card(example_store):
    r = file_signals(example_store, ["Rule: run the test suite with -x"], "p1",
                     project="acme-api")
    assert r.filed[0].card == "projects/acme-api/signals"
    assert r.filed[0].note == "(near-duplicate of feedback/run-tests-with-x; not proposed)"


def test_the_spool_keeps_the_project(example_store, today):
    with write_lock(example_store.root, 1):
        r = file_signals(example_store, [ZORB], "busyP", project="acme-api", lock_timeout_s=0.05)
    assert r.spooled
    assert json.loads(open(r.spooled).read())["project"] == "acme-api"
    # The next run is from a session with no project: the spooled batch keeps its own.
    r2 = file_signals(example_store, ["Knowledge: quux frobnicates on Tuesdays only"], "other")
    assert {(f.session, f.card) for f in r2.filed} == {
        ("busyP", "projects/acme-api/signals"), ("other", f"signals/{today}")}
