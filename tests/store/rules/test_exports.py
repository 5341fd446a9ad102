"""`cardmem export`: the rules in force in a host's own files, in a marked block, within
the host's cap; a person's text around the block is never touched; a rerun changes nothing."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cardmem.store.errors import CardmemError
from cardmem.store.rules import exports
from cardmem.store.rules.host_file import block, current_rules
from cardmem.store.store import Store, init


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s, _ = init(tmp_path / "store")
    return s


def rule(store: Store, cid: str, title: str, body: str, **meta) -> None:
    path = store.root / f"{cid}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    fm = "".join(f"{k}: {json.dumps(v)}\n" for k, v in {"title": title, "type": "feedback",
                                                          **meta}.items())
    path.write_text(f"---\n{fm}---\n{body}\n")


def many(store: Store, n: int = 150, seed: int = 30) -> None:
    """n rules of 1 to 40 lines; every fifth governs paths, every seventh a command."""
    rng = random.Random(seed)
    for i in range(n):
        meta = {"description": f"Why rule {i} matters."}
        if i % 5 == 0:
            meta["applies_to"] = [f"path: src/mod{i}/**", "path: *.{sql,py}"]
        elif i % 7 == 0:
            meta["applies_to"] = [f"git push --force{i}*"]
        lines = [f"RULE-{i:03d}-LINE-{k} keep this exactly so, {'word ' * rng.randint(2, 12)}"
                 for k in range(rng.randint(1, 40))]
        rule(store, f"feedback/rule-{i:03d}", f"Rule {i}", "\n".join(lines), **meta)


def test_a_persons_text_is_kept_and_a_second_run_changes_nothing(store, tmp_path):
    rule(store, "feedback/small-prs", "Small PRs", "Keep PRs under 400 lines.",
         description="Reviewers read small diffs.")
    rule(store, "feedback/gone-soon", "Gone soon", "Soon removed.")
    project = tmp_path / "acme"
    project.mkdir()
    mine = "# Acme\r\n\r\nOur own notes \xe9\u2014 keep them.\r\n".encode() + b"\xff raw\n"
    (project / "AGENTS.md").write_bytes(mine)
    first = exports.export(store, "agents-md", project)
    assert first.files == [(project / "AGENTS.md", "written")]
    data = (project / "AGENTS.md").read_bytes()
    assert data.startswith(mine + b"\n")  # appended after the person's text, which is kept
    assert data.count(b"<!-- cardmem:begin") == 1 and data.endswith(b"<!-- cardmem:end -->\n")
    assert b"### Small PRs (`feedback/small-prs`)\n_Reviewers read small diffs._\nKeep PRs" in data
    assert exports.export(store, "agents-md", project).files == [
        (project / "AGENTS.md", "unchanged")]
    assert (project / "AGENTS.md").read_bytes() == data
    # A person adds text after the block; a rule goes: only the block changes.
    (project / "AGENTS.md").write_bytes(data + b"\n## After\nMore of mine.\n")
    (store.root / "feedback" / "gone-soon.md").unlink()
    exports.export(store, "agents-md", project)
    now = (project / "AGENTS.md").read_bytes()
    assert now.startswith(mine + b"\n") and now.endswith(b"<!-- cardmem:end -->\n\n## After\n"
                                                         b"More of mine.\n")
    assert b"Gone soon" not in now and b"Small PRs" in now


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=st.text(), after=st.text())
def test_any_text_around_the_block_is_kept_byte_for_byte(store, tmp_path, before, after):
    rule(store, "feedback/small-prs", "Small PRs", "Keep PRs under 400 lines.")
    folder = tmp_path / "any"
    folder.mkdir(exist_ok=True)
    path = folder / "GEMINI.md"
    path.unlink(missing_ok=True)
    exports.export(store, "gemini-md", folder)
    block_text = path.read_bytes()  # the block and its newline
    before, after = (t.replace("<!-- cardmem:", "<!-- x:") for t in (before, after))
    if before and not before.endswith("\n"):  # the block starts a line of its own
        before += "\n"
    path.write_bytes(before.encode() + block_text + after.encode())
    assert exports.export(store, "gemini-md", folder).files == [(path, "unchanged")]
    rule(store, "feedback/another", "Another", "A new rule.")
    exports.export(store, "gemini-md", folder)
    out = path.read_bytes()
    assert out.startswith(before.encode() + b"<!-- cardmem:begin")
    assert out.endswith(b"<!-- cardmem:end -->\n" + after.encode())
    assert out.count(b"### Another") == 1
    (store.root / "feedback" / "another.md").unlink()


@pytest.mark.parametrize("host", sorted(exports.HOSTS))
def test_at_150_rules_each_file_keeps_its_cap_with_whole_rules_the_rest_named(store, tmp_path,
                                                                             host):
    many(store)
    folder = tmp_path / host
    folder.mkdir()
    res = exports.export(store, host, folder)
    h = exports.HOSTS[host]
    ids = [f"feedback/rule-{i:03d}" for i in range(150)]
    # Every rule is in exactly one place: shown whole, in a file of its own, or left out.
    assert sorted(res.shown + res.scoped + res.left_out) == ids and res.total == 150
    assert res.left_out, "150 rules of up to 40 lines fit no host's cap whole"
    if h.scoped:  # every fifth rule governs paths: a file of its own, globs unbraced
        assert res.scoped == ids[::5]
        first = (folder / h.scoped / f"cardmem-feedback--rule-000{h.suffix}").read_text()
        assert "src/mod0/**,*.sql,*.py" in first.split("\n---\n", 1)[0]
    else:
        assert res.scoped == []
    written = {p: p.read_text() for p, a in res.files if a == "written"}
    for path, text in written.items():
        assert h.measure(text) <= h.cap, (path, h.measure(text))
    whole = {c.id: block(c) for c in current_rules(store)}
    everything = "".join(written.values())
    for cid in res.shown + res.scoped:
        assert whole[cid] in everything  # whole, as the Claude Code rules file has it
    for cid in res.left_out:
        n = cid[-3:]
        assert f"RULE-{n}-LINE" not in everything  # never cut mid-rule
    main = (folder / h.main).read_text()
    assert f"{len(res.left_out)} rules are left out to keep this file within {h.cap_said}: " \
           f"`{res.left_out[0]}`" in main
    named = sum(f"`{cid}`" in main for cid in res.left_out)
    assert named == len(res.left_out) or f"and {len(res.left_out) - named} more" in main
    assert exports.export(store, host, folder).files == [(p, "unchanged") for p, _ in res.files]


def test_cursor_gets_a_globs_rule_per_path_rule_and_copilot_an_applyto_file(store, tmp_path):
    rule(store, "feedback/sql-style", "SQL style", "Upper-case keywords.",
         description="Reviewers asked.", applies_to=["path: db/**/*.{sql,psql}", "git push*"])
    rule(store, "feedback/no-force", "No force pushes", "Never.", applies_to=["git push -f*"])
    rule(store, "feedback/plain", "Plain", "Always be kind.")
    res = exports.export(store, "cursor-rules", tmp_path)
    assert res.scoped == ["feedback/sql-style"]
    assert res.shown == ["feedback/no-force", "feedback/plain"]  # no path: always applied
    scoped = (tmp_path / ".cursor/rules/cardmem-feedback--sql-style.mdc").read_text()
    assert scoped.startswith('---\ndescription: "SQL style — Reviewers asked."\n'
                             "globs: db/**/*.sql,db/**/*.psql\nalwaysApply: false\n---\n"
                             "<!-- cardmem:begin")
    assert "Upper-case keywords." in scoped and "Always be kind" not in scoped
    main = (tmp_path / ".cursor/rules/cardmem.mdc").read_text()
    assert main.startswith("---\ndescription: \"Standing rules from the cardmem store\"\n"
                           "globs:\nalwaysApply: true\n---\n")
    assert "Upper-case keywords" not in main and "1 of them apply only to the files" in main
    res = exports.export(store, "copilot-instructions", tmp_path)
    path = tmp_path / ".github/instructions/cardmem-feedback--sql-style.instructions.md"
    assert path.read_text().startswith('---\napplyTo: "db/**/*.sql,db/**/*.psql"\n---\n')
    assert res.scoped == ["feedback/sql-style"]


def test_a_rule_that_loses_its_globs_loses_its_file_but_a_persons_words_stay(store, tmp_path):
    rule(store, "feedback/a", "A", "Rule A.", applies_to=["path: a/**"])
    rule(store, "feedback/b", "B", "Rule B.", applies_to=["path: b/**"])
    exports.export(store, "cursor-rules", tmp_path)
    folder = tmp_path / ".cursor/rules"
    b = folder / "cardmem-feedback--b.mdc"
    b.write_text(b.read_text() + "\nMy own note on b.\n")
    mine = folder / "cardmem-notes.mdc"  # a person's file with our prefix, no block
    mine.write_text("---\nalwaysApply: true\n---\nMine.\n")
    rule(store, "feedback/a", "A", "Rule A.")
    (store.root / "feedback" / "b.md").unlink()
    res = exports.export(store, "cursor-rules", tmp_path)
    assert (folder / "cardmem-feedback--a.mdc", "removed") in res.files
    assert not (folder / "cardmem-feedback--a.mdc").exists()
    assert b.read_text() == "\nMy own note on b.\n" and mine.read_text().endswith("Mine.\n")
    assert "Rule A." in (folder / "cardmem.mdc").read_text()


def test_a_broken_block_is_refused_and_nothing_is_written(store, tmp_path):
    rule(store, "feedback/a", "A", "Rule A.")
    broken = b"# Mine\n<!-- cardmem:begin (old) -->\nhalf a block\n"
    (tmp_path / "AGENTS.md").write_bytes(broken)
    with pytest.raises(CardmemError, match="AGENTS.md: holds a broken cardmem block"):
        exports.export(store, "agents-md", tmp_path)
    assert (tmp_path / "AGENTS.md").read_bytes() == broken


def test_a_file_whose_own_text_fills_the_cap_is_refused(store, tmp_path):
    rule(store, "feedback/a", "A", "Rule A.")
    full = ("x" * 99 + "\n") * 40  # 4,000 characters: Copilot's whole cap
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github/copilot-instructions.md").write_text(full)
    with pytest.raises(CardmemError, match="leaves no room within the 4,000 characters"):
        exports.export(store, "copilot-instructions", tmp_path)
    assert (tmp_path / ".github/copilot-instructions.md").read_text() == full


def test_only_the_projects_own_rules_join_the_stores(store, tmp_path):
    rule(store, "feedback/global", "Global", "Everywhere.")
    rule(store, "projects/acme/feedback/deploy", "Acme deploy", "Acme only.", project="acme")
    rule(store, "projects/zeta/feedback/deploy", "Zeta deploy", "Zeta only.", project="zeta")
    res = exports.export(store, "agents-md", tmp_path, project="acme")
    assert res.shown == ["feedback/global", "projects/acme/feedback/deploy"]
    assert "Zeta only" not in (tmp_path / "AGENTS.md").read_text()


def test_ending_an_export_leaves_a_broken_block_and_the_persons_text_alone(store, tmp_path):
    """`uninstall codex` ends the export `install codex --export` made. A person who cut
    the block's end line and wrote on below it keeps every word: the file is left as it
    is and said so (found by review: everything after the begin line was dropped)."""
    rule(store, "feedback/a", "A", "Rule A.")
    exports.export_and_keep(store, "agents-md", tmp_path, None, by="install codex")
    path = tmp_path / "AGENTS.md"
    text = path.read_text().replace("<!-- cardmem:end -->", "## Build\nRun make.")
    path.write_text(text)
    assert exports.withdraw(store.root, "install codex") == [(path, "left as it is: it holds a"
                                                              " broken cardmem block")]
    assert path.read_text() == text
    assert exports.targets(store.root) == []  # forgotten all the same: no longer kept current


def test_ending_an_export_waits_for_a_refresh_under_way(store, tmp_path, monkeypatch):
    """A commit's refresh (under the store's write lock, store/derived.py) that read the
    exports before `uninstall codex` ended this one must not write its block back after
    uninstall took it out: withdraw takes the same lock (found by review: it took none)."""
    import threading

    from cardmem.store.git.writer import write_lock

    rule(store, "feedback/a", "A", "Rule A.")
    exports.export_and_keep(store, "agents-md", tmp_path, None, by="install codex")
    path = tmp_path / "AGENTS.md"
    export, reading, go = exports.export, threading.Event(), threading.Event()

    def slow_export(*args, **kw):  # the refresh, between reading the exports and writing
        reading.set()
        assert go.wait(10)
        return export(*args, **kw)

    monkeypatch.setattr(exports, "export", slow_export)

    def commit_refresh() -> None:
        with write_lock(store.root):
            exports.refresh(store)

    refresh = threading.Thread(target=commit_refresh)
    refresh.start()
    assert reading.wait(10)
    withdraw = threading.Thread(target=exports.withdraw, args=(store.root, "install codex"))
    withdraw.start()
    withdraw.join(0.5)  # old code: done already, the block out and the export forgotten
    go.set()
    refresh.join(10)
    withdraw.join(10)
    assert not refresh.is_alive() and not withdraw.is_alive()
    assert not path.exists() or "cardmem:begin" not in path.read_text()
    assert exports.targets(store.root) == []
