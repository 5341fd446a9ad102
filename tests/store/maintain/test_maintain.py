"""Model-free maintenance findings on stores built from the agents-md corpus."""
from __future__ import annotations

import time

import pytest
from maintainkit import commit_as_person, corpus_store, git

from cardmem.store.maintain import Survey, findings
from cardmem.store.maintain.duplicates import DUPLICATE, card_pairs

PROJECTS = ("oxc", "ruff", "sentry-python", "temporal")


@pytest.fixture
def corpus(tmp_path):
    return corpus_store(tmp_path / "store", PROJECTS)


def kinds(fs):
    return sorted({f.kind for f in fs})


@pytest.mark.corpus
def test_the_whole_corpus_gives_no_findings_and_writes_nothing(tmp_path) -> None:
    store = corpus_store(tmp_path / "all")
    head = git(store, "rev-parse", "HEAD")
    assert findings(store) == []
    assert git(store, "rev-parse", "HEAD") == head
    assert git(store, "status", "--porcelain") == ""


@pytest.mark.corpus
def test_no_corpus_pair_reaches_the_duplicate_threshold_by_a_margin(tmp_path) -> None:
    store = corpus_store(tmp_path / "all")
    scores = [s for s, _, _ in card_pairs(Survey.of(store), threshold=0.0)]
    assert max(scores) < DUPLICATE - 0.05  # 0.49 (two short sentry-python path lists)


@pytest.mark.corpus
def test_broken_links_renamed_card_unknown_card_and_code_is_no_link(corpus) -> None:
    root = corpus.root
    git(corpus, "mv", "projects/oxc/testing.md", "projects/oxc/testing-overview.md")
    card = root / "projects/oxc/snapshot-testing.md"
    card.write_text(card.read_text() + "\nSee [[projects/oxc/testing|the testing notes]], "
                    "[[Testing: Quick Test Commands]] and [[projects/oxc/no-such-card]].\n\n"
                    "```toml\n[[tool.uv.index]]\n```\nand `[[not-a-link]]`.\n")
    commit_as_person(corpus)
    found = findings(corpus, {"broken-link"})
    assert [f.ids for f in found] == [["projects/oxc/snapshot-testing",
                                       "projects/oxc/testing-overview"],
                                      ["projects/oxc/snapshot-testing"]]
    assert "renamed to projects/oxc/testing-overview" in found[0].detail
    assert found[0].fix == {"card": "projects/oxc/snapshot-testing",
                            "target": "projects/oxc/testing", "new": "projects/oxc/testing-overview"}
    assert "[[projects/oxc/no-such-card]]" in found[1].detail


@pytest.mark.corpus
def test_a_card_refiled_in_other_words_is_a_duplicate(corpus) -> None:
    (corpus.root / "projects/oxc/snapshots.md").write_text(
        "---\ntitle: Insta snapshots track failing tests\ntype: project\nproject: oxc\n---\n"
        "Snapshot tests use the insta crate; the snapshots record only the failing tests, not "
        "the passing ones. They live in tasks/coverage/snapshots and the conformance "
        "directories. After a change, review them with cargo insta review. The .snap files "
        "hold counts and .snap.md the detailed failures.\n")
    commit_as_person(corpus)
    found = findings(corpus, {"duplicate"})
    assert [f.ids for f in found] == [["projects/oxc/snapshots", "projects/oxc/snapshot-testing"]]
    assert found[0].fix == {"keep": "projects/oxc/snapshots", "others": ["projects/oxc/snapshot-testing"]}


@pytest.mark.corpus
def test_the_same_words_in_another_project_are_no_duplicate(corpus) -> None:
    text = (corpus.root / "projects/oxc/snapshot-testing.md").read_text()
    (corpus.root / "projects/ruff/snapshot-testing.md").write_text(text.replace("oxc", "ruff"))
    commit_as_person(corpus)
    assert findings(corpus, {"duplicate"}) == []


@pytest.mark.corpus
def test_history_lines_that_repeat_each_other(corpus) -> None:
    p = corpus.root / "projects/ruff/development-guidelines.md"
    p.write_text(p.read_text() + "\n## History\n"
                 "- 2026-10-01 · session aaa · Worked: cargo dev generate-all regenerates the schemas\n"
                 "- 2026-10-02 · session bbb · Failed: the snapshot update missed a test\n"
                 "- 2026-10-09 · session ccc · Worked: the schemas regenerate with cargo dev generate-all\n"
                 "- 2026-10-10 · session ddd · Decision: max 12 workers in CI\n"
                 "- 2026-10-11 · session eee · Decision: max 16 workers in CI\n")
    commit_as_person(corpus)
    found = findings(corpus, {"duplicate"})
    assert len(found) == 1 and found[0].ids == ["projects/ruff/development-guidelines"]
    assert "session ccc" in found[0].detail and "session aaa" in found[0].detail


@pytest.mark.corpus
def test_drift_against_the_projects_checkout(corpus, tmp_path) -> None:
    checkout = tmp_path / "sentry-python"
    for rel in ("sentry_sdk/integrations/__init__.py", "scripts/populate_tox/config.py",
                "scripts/split_tox_gh_actions/split_tox_gh_actions.py"):
        (checkout / rel).parent.mkdir(parents=True, exist_ok=True)
        (checkout / rel).write_text("")
    (corpus.root / "cardmem.toml").write_text(f'[projects]\n"{checkout}" = "sentry-python"\n')
    commit_as_person(corpus)
    found = findings(corpus, {"drift"})
    gone = {f.ids[0]: f.detail for f in found}
    card = "projects/sentry-python/adding-integrations-to-test-suite"
    assert "scripts/generate-test-files.sh" in gone[card]
    assert "split_tox_gh_actions.py" not in gone[card] and "config.py" not in gone[card]
    (checkout / "scripts/generate-test-files.sh").write_text("")
    assert card not in {f.ids[0] for f in findings(corpus, {"drift"})}
    assert not any(f.ids[0].startswith("projects/oxc/") for f in found)  # no checkout known


def test_drift_names_a_make_target_the_makefile_lost(store, tmp_path) -> None:
    checkout = tmp_path / "app"
    checkout.mkdir()
    (checkout / "Makefile").write_text("test:\n\tpytest\nlint:\n\truff .\n")
    from cardmem.store.maintain.checkouts import record

    record(store, "app", checkout)
    (store.root / "projects/app").mkdir(parents=True)
    (store.root / "projects/app/ci.md").write_text(
        "---\ntitle: CI\nproject: app\n---\nRun `make lint`, then `make typecheck`.\n")
    commit_as_person(store)
    [f] = findings(store, {"drift"})
    assert "`make typecheck`" in f.detail and "lint" not in f.detail


@pytest.mark.corpus
def test_stale_when_unchanged_for_long_while_the_project_moved_on(corpus) -> None:
    p = corpus.root / "projects/temporal/error-handling.md"
    p.write_text(p.read_text() + "\nStill true in 2025.\n")
    commit_as_person(corpus, when="2025-01-10T12:00:00Z")
    sv = Survey.of(corpus)
    from cardmem.store.maintain import stale

    found = stale.find(sv)
    assert [f.ids for f in found] == [["projects/temporal/error-handling"]]
    # verified since: not stale
    p.write_text(p.read_text().replace("---\n", "---\nlast_verified: "
                                       + time.strftime("%Y-%m-%d") + "\n", 1))
    commit_as_person(corpus, when="2025-01-11T12:00:00Z")
    assert stale.find(Survey.of(corpus)) == []


def test_drift_names_a_symbol_the_checkout_lost_in_one_git_grep(store, tmp_path,
                                                               monkeypatch) -> None:
    checkout = tmp_path / "app"
    (checkout / "src").mkdir(parents=True)
    (checkout / "src/config.py").write_text(
        "class FooBar:\n    def load_all(self):\n        return parse_config()\n")
    git(type("S", (), {"root": checkout}), "init", "-q")
    git(type("S", (), {"root": checkout}), "add", "-A")
    (checkout / "src/untracked.py").write_text("def load_everything(): pass\n")
    (store.root / "cardmem.toml").write_text(f'[projects]\n"{checkout}" = "app"\n')
    (store.root / "projects/app").mkdir(parents=True)
    (store.root / "projects/app/config.md").write_text(
        "---\ntitle: Config\nproject: app\n---\nCall `parse_config()` from `FooBar.load_all()`;"
        " `load_everything()` and class `OldWidget` read it too. Plain `print()`, `GitHub`,"
        " `RUST_LOG` and `os.path.join` are no symbols of ours.\n")
    (store.root / "projects/app/more.md").write_text(
        "---\ntitle: More\nproject: app\n---\n`FooBar` again, and `gone_helper(x)`.\n")
    commit_as_person(store)
    from cardmem.store.git import runner as gitlib

    greps = []
    real = gitlib.call
    monkeypatch.setattr(gitlib, "call", lambda root, args, *a, **k: (
        greps.append(args) if "grep" in args else None) or real(root, args, *a, **k))
    found = {f.ids[0]: f.detail for f in findings(store, {"drift"})}
    assert len(greps) == 1  # every symbol of every card of the project in one call
    assert "symbol `load_everything`" in found["projects/app/config"]  # untracked: not the code
    assert "symbol `OldWidget`" in found["projects/app/config"]
    for kept in ("parse_config", "FooBar", "load_all", "print", "GitHub", "RUST_LOG", "join"):
        assert f"`{kept}`" not in found["projects/app/config"]
    assert found["projects/app/more"].endswith("symbol `gone_helper`")
    from cardmem.store.maintain import drift

    monkeypatch.setattr(drift, "GREP_CHARS", 10)  # many names: a few calls, same answer
    assert {f.ids[0]: f.detail for f in findings(store, {"drift"})} == found
    assert len(greps) > 2
    # a plain folder (no git) is searched whole
    import shutil

    shutil.rmtree(checkout / ".git")
    found = {f.ids[0]: f.detail for f in findings(store, {"drift"})}
    assert "load_everything" not in found["projects/app/config"]
    assert "symbol `OldWidget`" in found["projects/app/config"]
