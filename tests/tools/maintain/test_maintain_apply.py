"""`maintain --apply` (M2) on planted corpus stores: each change one agent commit that
`cardmem revert` undoes, protected cards never changed (a proposal instead), the model's
fold through the fake Messages API."""
from __future__ import annotations

import json

import pytest
from gitremote import cli
from maintainkit import CORPUS, commit_as_person, corpus_store, git

from cardmem.store.cards import card as cardlib
from cardmem.store.maintain import findings
from cardmem.store.maintain.facts import sentences
from cardmem.tools.maintain import run

SNAPSHOTS = ("---\ntitle: Insta snapshots track failing tests\ntype: project\nproject: oxc\n---\n"
             "Snapshot tests use the insta crate; the snapshots record only the failing tests, not "
             "the passing ones. They live in tasks/coverage/snapshots and the conformance "
             "directories. After a change, review them with cargo insta review. The .snap files "
             "hold counts and .snap.md the detailed failures.\n\nCI checks snapshots.\n\n"
             "## History\n- 2026-10-01 · session aaa · Worked: cargo insta review -a accepts all\n")


@pytest.fixture
def corpus(tmp_path):
    return corpus_store(tmp_path / "store", ("oxc", "ruff"))


def files(store, rev: str = "HEAD") -> list[str]:
    return git(store, "show", "--name-only", "--format=", rev).split()


def texts(store) -> dict[str, str]:
    return {p.relative_to(store.root).as_posix(): p.read_text()
            for p in sorted(store.root.rglob("*.md")) if ".git" not in p.parts}


def assert_one_agent_commit(store, applied: dict, paths: list[str]) -> None:
    assert git(store, "rev-parse", "HEAD").strip() == applied["commit"]
    assert sorted(files(store)) == sorted(paths)
    author = git(store, "log", "-1", "--format=%ae")
    assert author.strip() == "agent@cardmem.invalid"
    body = git(store, "log", "-1", "--format=%B")
    assert body.startswith(applied["subject"]) and "Cardmem-Source: maintain" in body


@pytest.mark.corpus
def test_apply_merges_a_duplicate_in_one_commit_that_revert_undoes(corpus) -> None:
    (corpus.root / "projects/oxc/snapshots.md").write_text(SNAPSHOTS)
    commit_as_person(corpus)
    before = texts(corpus)
    code, out, err = cli("maintain", "--apply", "--json", "--only", "duplicate",
                         "--store", str(corpus.root))
    assert code == 0, err
    [done] = json.loads(out)["applied"]
    keep, other = "projects/oxc/snapshots", "projects/oxc/snapshot-testing"
    assert done["ids"] == [keep, other] and done["subject"] == f"maintain: merge {other} into {keep}"
    assert_one_agent_commit(corpus, done, [f"{keep}.md", f"{other}.md"])
    k = cardlib.load(corpus.root / f"{keep}.md", keep)
    o = cardlib.load(corpus.root / f"{other}.md", other)
    assert o.meta["status"] == "superseded" and o.meta["superseded_by"] == keep
    assert o.title in k.aliases  # the old name still finds the kept card
    assert cardlib.history(k.text)[0].startswith("2026-10-01 · session aaa")
    assert "Merged projects/oxc/snapshot-testing" in cardlib.history(k.text)[-1]
    # Said in other words is not said: every sentence of the other is in the kept card.
    assert "## Merged from projects/oxc/snapshot-testing" in k.text
    assert sentences(o.body) <= sentences(k.body)
    # other's frontmatter: two keys more, every other byte as it was
    assert o.text.replace("status: superseded\nsuperseded_by: projects/oxc/snapshots\n", "") \
        == before[f"{other}.md"]
    assert findings(corpus, {"duplicate"}) == []  # done: the next run finds nothing
    assert corpus.titled(o.title) == [(keep, "project")]  # remember finds the kept card
    code, _, err = cli("revert", done["commit"], "--store", str(corpus.root))
    assert code == 0, err
    assert texts(corpus) == before


def test_a_merge_moves_over_every_paragraph_with_a_sentence_the_kept_card_lacks() -> None:
    from cardmem.tools.maintain.consolidate import merged

    keep = "---\ntitle: Deploys\naliases: [ship it]\n---\nDeploy with make deploy from main.\n"
    other = ("---\ntitle: Shipping\naliases: [Deploys, releases]\n---\n# Shipping\n\n"
             "Deploy with make deploy from main.\n\nFrom main, make deploy deploys.\n\n"
             "Rollbacks need the on-call engineer.\n\n"
             "## History\n- 2026-10-01 · s1 · Failed: deploy on a Friday\n")
    k, o = merged(keep, other, "reference/deploys", "reference/shipping", "2026-12-01")
    assert k == ("---\ntitle: Deploys\naliases: [ship it, Shipping, releases]\n---\n"
                 "Deploy with make deploy from main.\n\n"
                 "## Merged from reference/shipping\n\nFrom main, make deploy deploys.\n\n"
                 "Rollbacks need the on-call engineer.\n\n"
                 "## History\n- 2026-10-01 · s1 · Failed: deploy on a Friday\n"
                 "- 2026-12-01 · maintain · Merged reference/shipping (a duplicate): its name, "
                 "aliases, history and 2 paragraph(s) it alone said\n")
    assert o == other.replace("---\n#", "status: superseded\nsuperseded_by: reference/deploys\n"
                                        "---\n#")
    # Nothing left to move: the History says so, no "0 paragraph(s)".
    k2, _ = merged(k, o, "reference/deploys", "reference/shipping", "2026-12-02")
    assert cardlib.history(k2)[-1].endswith("nothing else: the kept card says each of its "
                                            "sentences")


def test_a_merge_that_would_lose_a_sentence_is_not_made(monkeypatch) -> None:
    from cardmem.store.errors import CardmemError
    from cardmem.tools.maintain import consolidate

    monkeypatch.setattr(consolidate, "_paragraphs", lambda body: [])  # moves nothing
    keep = "---\ntitle: Deploys\n---\nDeploy with make deploy from main.\n"
    other = "---\ntitle: Shipping\n---\nRollbacks need the on-call engineer.\n"
    with pytest.raises(CardmemError, match="would lose 1 sentence"):
        consolidate.merged(keep, other, "reference/deploys", "reference/shipping", "2026-12-01")


@pytest.mark.corpus
def test_apply_points_a_link_at_the_card_git_saw_renamed(corpus) -> None:
    git(corpus, "mv", "projects/oxc/testing.md", "projects/oxc/testing-overview.md")
    p = corpus.root / "projects/oxc/snapshot-testing.md"
    p.write_text(p.read_text() + "\nSee [[projects/oxc/testing|the testing notes]] and "
                 "[[projects/oxc/no-such-card]].\n")
    commit_as_person(corpus)
    before = p.read_text()
    report = run(corpus, {"broken-link"}, apply=True)
    [done] = report.applied
    assert_one_agent_commit(corpus, done, ["projects/oxc/snapshot-testing.md"])
    assert p.read_text() == before.replace("[[projects/oxc/testing|", "[[projects/oxc/testing-overview|")
    assert [f.detail for f in findings(corpus, {"broken-link"})] == \
        ["[[projects/oxc/no-such-card]] names no card"]  # a guess is never applied
    code, _, err = cli("revert", done["commit"], "--store", str(corpus.root))
    assert code == 0 and p.read_text() == before


@pytest.mark.corpus
def test_without_apply_nothing_is_written_whatever_is_found(corpus) -> None:
    (corpus.root / "projects/oxc/snapshots.md").write_text(SNAPSHOTS)
    commit_as_person(corpus)
    head = git(corpus, "rev-parse", "HEAD")
    report = run(corpus, {"duplicate", "broken-link", "long-history"})
    assert report.findings and report.applied == []
    assert git(corpus, "rev-parse", "HEAD") == head and git(corpus, "status", "--porcelain") == ""


@pytest.mark.corpus
def test_a_protected_duplicate_becomes_a_proposal_and_the_rules_stay(tmp_path) -> None:
    corpus = corpus_store(tmp_path / "store", ("ruff",))
    (corpus.root / "feedback").mkdir()
    rule = SNAPSHOTS.replace("type: project\nproject: oxc\n", "type: feedback\n")
    (corpus.root / "feedback/snapshots.md").write_text(rule)
    (corpus.root / "feedback/snapshot-testing.md").write_text(
        (CORPUS / "oxc-project--oxc--snapshot-testing.md").read_text()
        .replace("type: project\nproject: oxc", "type: feedback"))
    commit_as_person(corpus)
    before = texts(corpus)
    [done] = run(corpus, {"duplicate"}, apply=True).applied
    assert done["subject"].startswith("maintain: propose: merge")
    assert sorted(done["proposals"]) == ["feedback/snapshot-testing-proposed",
                                         "feedback/snapshots-proposed"]
    assert_one_agent_commit(corpus, done, [f"{p}.md" for p in done["proposals"]])
    after = texts(corpus)
    assert {k: v for k, v in after.items() if k in before} == before  # no card changed
    code, out, _ = cli("review", "--json", "--store", str(corpus.root))
    listed = {p["id"]: p["proposes_change_to"] for p in json.loads(out)}
    assert listed == {"feedback/snapshots-proposed": "feedback/snapshots",
                      "feedback/snapshot-testing-proposed": "feedback/snapshot-testing"}
    # A second run does not propose the same again, and says why.
    report = run(corpus, {"duplicate"}, apply=True)
    assert report.applied == [] and any("already waits" in n for n in report.notes)
    # Accepting both proposals makes the merge a person's.
    for pid in done["proposals"]:
        assert cli("review", "accept", pid, "--store", str(corpus.root))[0] == 0
    o = cardlib.load(corpus.root / "feedback/snapshot-testing.md", "feedback/snapshot-testing")
    assert o.meta["status"] == "superseded"


def history_card(n: int) -> str:
    lines = "".join(f"- 2026-{1 + i // 28:02d}-{1 + i % 28:02d} · session s{i:03d} · "
                    f"Decision: the CI worker limit is {i + 1}\n" for i in range(n))
    return ("---\ntitle: CI workers\ntype: project\nproject: ruff\n---\n"
            "CI runs the test suite on several workers.\n\n## History\n" + lines)


@pytest.mark.corpus
def test_long_history_is_found_and_folded_by_the_model(corpus, model_env) -> None:
    p = corpus.root / "projects/ruff/ci-workers.md"
    p.write_text(history_card(45))
    commit_as_person(corpus)
    before = p.read_text()
    [f] = findings(corpus, {"long-history"})
    assert f.ids == ["projects/ruff/ci-workers"] and "45 lines" in f.detail
    model_env.fallback = "CI runs the test suite on 25 workers (the limit grew over time)."
    [done] = run(corpus, {"long-history"}, apply=True).applied
    assert_one_agent_commit(corpus, done, ["projects/ruff/ci-workers.md"])
    text = p.read_text()
    asked = [r for r in model_env.requests if r.path.endswith("/messages")]
    assert len(asked) == 1 and "limit is 25" in json.dumps(asked[0].body)
    # the card's text is what the model rewrites: a fold without it drops its facts
    assert "Current text:\\nCI runs the test suite on several workers." in json.dumps(
        asked[0].body)
    assert "limit is 26" not in json.dumps(asked[0].body)  # the kept lines are not folded
    assert text.split("---\n", 2)[2].startswith("CI runs the test suite on 25 workers")
    assert len(cardlib.history(text)) == 20
    folded = text.split("## Folded history\n", 1)[1]
    raw = before.split("## History\n", 1)[1].splitlines(True)
    assert folded.endswith("".join(raw[:25])) and raw[25] not in folded  # word for word
    assert text.split("---\n", 2)[1] == before.split("---\n", 2)[1]  # frontmatter as it was
    assert findings(corpus, {"long-history"}) == []
    assert cli("revert", done["commit"], "--store", str(corpus.root))[0] == 0
    assert p.read_text() == before


@pytest.mark.corpus
def test_without_a_model_the_fold_is_skipped_and_says_so(corpus, monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    (corpus.root / "projects/ruff/ci-workers.md").write_text(history_card(41))
    commit_as_person(corpus)
    head = git(corpus, "rev-parse", "HEAD")
    report = run(corpus, {"long-history"}, apply=True)
    assert report.applied == [] and report.notes[0].startswith("long-history: not folded, no model")
    assert git(corpus, "rev-parse", "HEAD") == head


@pytest.mark.corpus
def test_a_rewrite_with_a_history_section_is_refused(corpus, model_env) -> None:
    (corpus.root / "projects/ruff/ci-workers.md").write_text(history_card(41))
    commit_as_person(corpus)
    model_env.fallback = "New text.\n\n## History\n- nothing"
    report = run(corpus, {"long-history"}, apply=True)
    assert report.applied == [] and "History section" in report.notes[0]


@pytest.mark.corpus
def test_a_card_changed_once_in_a_run_waits_for_the_next_run(corpus) -> None:
    git(corpus, "mv", "projects/oxc/testing.md", "projects/oxc/testing-overview.md")
    (corpus.root / "projects/oxc/snapshots.md").write_text(
        SNAPSHOTS + "\nSee [[projects/oxc/testing]].\n")
    commit_as_person(corpus)
    first = run(corpus, {"broken-link", "duplicate"}, apply=True)
    assert [d["kind"] for d in first.applied] == ["broken-link"]
    assert any("left for the next run" in n for n in first.notes)
    second = run(corpus, {"broken-link", "duplicate"}, apply=True)
    assert [d["kind"] for d in second.applied] == ["duplicate"]
    assert run(corpus, {"broken-link", "duplicate"}).findings == []


@pytest.mark.corpus
def test_one_run_makes_at_most_max_changes_commits(corpus, monkeypatch) -> None:
    from cardmem.tools.maintain import consolidate

    monkeypatch.setattr(consolidate, "MAX_CHANGES", 1)
    git(corpus, "mv", "projects/oxc/testing.md", "projects/oxc/testing-overview.md")
    for name in ("a", "b"):
        (corpus.root / f"projects/ruff/{name}.md").write_text(
            f"---\ntitle: {name}\nproject: ruff\n---\nSee [[projects/oxc/testing]].\n")
    commit_as_person(corpus)
    report = run(corpus, {"broken-link"}, apply=True)
    assert len(report.applied) == 1 and report.applied[0]["ids"] == ["projects/ruff/a"]
    assert "1 finding(s) wait for the next run" in report.notes[-1]


def test_a_merge_moves_a_code_block_as_it_is() -> None:
    """A ```` fence holding a ``` line (or a ~~~ one holding ```) was closed early by the
    merge's own fence check: the block was cut at its blank lines and its shell comments
    made bold headings, so the sentence check refused the merge. The cards room's one
    fence rule keeps it whole and the duplicate merges."""
    from cardmem.tools.maintain.consolidate import merged

    code = ("````sh\n```\n# install the deps first\n\nnpm ci\n````\n\n"
            "~~~\n```\n# then build\n\nnpm run build\n~~~")
    keep = "---\ntitle: Build\n---\nBuild with npm.\n"
    other = f"---\ntitle: Building\n---\nBuild with npm.\n\n{code}\n"
    k, _ = merged(keep, other, "reference/build", "reference/building", "2026-12-01")
    assert code in k, k
    assert "**" not in k


def _links_store(root):
    """Cards a, b, c each linking to an old name, committed by a person (no corpus)."""
    from cardmem.store.store import init

    for name in ("a", "b", "c"):
        p = root / f"reference/{name}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"---\ntitle: Card {name}\n---\nSee [[reference/old-{name}]].\n")
    store = init(root)[0]
    commit_as_person(store)
    return store


def _relink(cid: str) -> "Finding":
    from cardmem.store.maintain import Finding

    name = cid.rsplit("/", 1)[1]
    return Finding("broken-link", [cid], "", "", fix={"card": cid, "target": f"reference/old-{name}",
                                                      "new": f"reference/new-{name}"})


def test_a_finding_left_for_the_next_run_does_not_stop_the_ones_after_it(tmp_path) -> None:
    """A finding whose card this run already changed waits; the findings after it are
    still applied (a mutant made the skip a `break`: the run stopped there)."""
    from cardmem.store.maintain import Survey
    from cardmem.tools.maintain.consolidate import consolidate

    store = _links_store(tmp_path / "store")
    notes: list[str] = []
    found = [_relink("reference/a"), _relink("reference/a"), _relink("reference/c")]
    applied = consolidate(Survey.of(store), found, notes)
    assert [d["ids"] for d in applied] == [["reference/a"], ["reference/c"]], notes
    assert "[[reference/new-c]]" in (store.root / "reference/c.md").read_text()
    assert any("left for the next run" in n for n in notes), notes


def test_a_change_that_fails_does_not_stop_the_ones_after_it(tmp_path, monkeypatch) -> None:
    """A merge refused (it would lose a sentence) is noted; the findings after it are
    still applied (a mutant made the refusal a `break`)."""
    from cardmem.store.maintain import Finding, Survey
    from cardmem.tools.maintain import consolidate

    monkeypatch.setattr(consolidate, "_paragraphs", lambda body: [])  # moves nothing
    store = _links_store(tmp_path / "store")
    notes: list[str] = []
    dup = Finding("duplicate", ["reference/a", "reference/b"], "", "",
                  fix={"keep": "reference/a", "others": ["reference/b"]})
    applied = consolidate.consolidate(Survey.of(store), [dup, _relink("reference/c")], notes)
    assert [d["ids"] for d in applied] == [["reference/c"]], notes
    assert any("not applied" in n and "would lose" in n for n in notes), notes
