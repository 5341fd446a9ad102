"""`cardmem export HOST [PATH]`: a thin command over store/rules/exports.py, in-process."""
from __future__ import annotations

import json

from clikit import run


def rule(store, name: str, body: str, applies_to: str = "") -> None:
    extra = f"applies_to: [{json.dumps(applies_to)}]\n" if applies_to else ""
    (store.root / "feedback").mkdir(exist_ok=True)
    (store.root / "feedback" / f"{name}.md").write_text(
        f"---\ntitle: {name}\ntype: feedback\n{extra}---\n{body}\n")


def test_help_names_the_hosts_and_ends_with_an_example() -> None:
    r = run("export", "--help")
    assert r.returncode == 0
    assert "agents-md" in r.stdout and "copilot-instructions" in r.stdout
    assert "Example:\n      cardmem export agents-md" in r.stdout


def test_export_writes_then_changes_nothing(store, tmp_path) -> None:
    rule(store, "small-prs", "Keep PRs small.")
    rule(store, "sql-style", "Upper-case SQL.", applies_to="path: db/**")
    folder = tmp_path / "repo"
    folder.mkdir()
    r = run("export", "cursor-rules", str(folder), "--store", str(store.root))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        f"written: {folder}/.cursor/rules/cardmem-feedback--sql-style.mdc",
        f"written: {folder}/.cursor/rules/cardmem.mdc",
        "2 rules in force: 1 whole in .cursor/rules/cardmem.mdc, 1 in files of their own by path"
        "; kept current as rules change"]
    again = run("export", "cursor-rules", str(folder), "--store", str(store.root), "--json")
    out = json.loads(again.stdout)
    assert [f["action"] for f in out["files"]] == ["unchanged", "unchanged"]
    assert out["shown"] == ["feedback/small-prs"] and out["scoped"] == ["feedback/sql-style"]


def test_bad_input_is_one_line_and_nothing_written(store, tmp_path) -> None:
    r = run("export", "agents-md", str(tmp_path / "nowhere"), "--store", str(store.root))
    assert r.returncode != 0 and r.stdout == ""
    assert r.stderr == (f"cardmem: PATH {tmp_path / 'nowhere'}: is not a folder (the "
                        "project's folder, where the host looks for its files)\n")
    assert not (tmp_path / "nowhere").exists()
    r = run("export", "claude-md", str(tmp_path), "--store", str(store.root))
    assert r.returncode == 2 and "'claude-md' is not one of 'agents-md'" in r.stderr
    (tmp_path / "AGENTS.md").write_text("<!-- cardmem:end -->\n")
    r = run("export", "agents-md", str(tmp_path), "--store", str(store.root))
    assert r.returncode == 1 and r.stderr.startswith("cardmem: AGENTS.md: holds a broken")
    assert (tmp_path / "AGENTS.md").read_text() == "<!-- cardmem:end -->\n"


def test_an_export_is_kept_current_by_every_write_that_changes_a_rule(store, tmp_path) -> None:
    """The export a person asked for is written again after each commit that touches a rule
    (store/derived.py's one after-commit step): only the block changes; a write that
    touches no rule leaves the file alone."""
    folder = tmp_path / "repo"
    folder.mkdir()
    mine = b"# Our notes\r\n\r\nKeep them \xc3\xa9 as they are.\r\n"
    (folder / "AGENTS.md").write_bytes(mine)
    at = ("--store", str(store.root))
    assert run("export", "agents-md", str(folder), *at).returncode == 0
    assert run("new", "feedback/small-prs", "--title", "Small PRs", "--body",
               "Keep PRs under 400 lines.", *at).returncode == 0
    text = (folder / "AGENTS.md").read_bytes()
    assert text.startswith(mine) and b"Keep PRs under 400 lines." in text
    (store.root / "feedback" / "small-prs.md").write_text(
        "---\ntitle: Small PRs\ntype: feedback\n---\nKeep PRs under 200 lines.\n")
    assert run("remember", "Unrelated note", "--type", "reference", "--body", "x", *at
               ).returncode == 0  # no rule touched: nothing rewritten, the edit not yet seen
    assert (folder / "AGENTS.md").read_bytes() == text
    assert run("rm", "feedback/small-prs", *at).returncode == 0
    after = (folder / "AGENTS.md").read_bytes()
    assert after.startswith(mine) and b"Small PRs" not in after and b"(0 rules)" in after


def test_an_export_whose_block_a_person_took_out_is_not_written_again(store, tmp_path) -> None:
    folder = tmp_path / "repo"
    (folder / ".cursor" / "rules").mkdir(parents=True)
    at = ("--store", str(store.root))
    assert run("export", "gemini-md", str(folder), *at).returncode == 0
    assert run("export", "cursor-rules", str(folder), *at).returncode == 0
    (folder / "GEMINI.md").write_text("# Only mine now\n")
    assert run("new", "feedback/tabs", "--title", "Tabs", "--body", "Indent with tabs.",
               *at).returncode == 0
    assert (folder / "GEMINI.md").read_text() == "# Only mine now\n"
    assert "Indent with tabs." in (folder / ".cursor" / "rules" / "cardmem.mdc").read_text()
    from cardmem.store.rules.exports import targets

    assert [t["host"] for t in targets(store.root)] == ["cursor-rules"]  # GEMINI.md forgotten


def test_a_failing_export_never_fails_the_write(store, tmp_path) -> None:
    folder = tmp_path / "repo"
    folder.mkdir()
    at = ("--store", str(store.root))
    assert run("export", "agents-md", str(folder), *at).returncode == 0
    broken = "<!-- cardmem:begin -->\nmine, half mended\n"
    (folder / "AGENTS.md").write_text(broken)  # the end line gone: export refuses to guess
    r = run("new", "feedback/tabs", "--title", "Tabs", "--body", "Indent with tabs.", *at)
    assert r.returncode == 0, r.stderr
    assert (folder / "AGENTS.md").read_text() == broken
    assert (store.root / "feedback" / "tabs.md").exists()


def test_one_rule_is_one_rule(store, tmp_path) -> None:
    """It said '1 rules in force'."""
    rule(store, "small-prs", "Keep PRs small.")
    r = run("export", "gemini-md", str(tmp_path), "--store", str(store.root))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1].startswith("1 rule in force: 1 whole in GEMINI.md")


def test_an_export_writes_nothing_while_another_writer_holds_the_lock(store, tmp_path) -> None:
    """An export writes its files and notes itself under the store's write lock, as
    `uninstall` (withdraw) and a commit's refresh do: while another writer holds it,
    nothing is written, and past lock_timeout_s the export says the store is busy (before,
    its files were written outside the lock, so a refresh or an uninstall under way could
    see its block written back after theirs)."""
    from cardmem.store.rules.exports import locked, targets

    rule(store, "small-prs", "Keep PRs small.")
    with (store.root / "cardmem.toml").open("a") as fh:
        fh.write("\n[store]\nlock_timeout_s = 0.3\n")
    folder = tmp_path / "repo"
    folder.mkdir()
    with locked(store.root):
        r = run("export", "agents-md", str(folder), "--store", str(store.root))
    assert r.returncode == 4 and r.stdout == ""
    assert r.stderr.startswith(f"cardmem: {store.root}: store busy")
    assert not (folder / "AGENTS.md").exists() and targets(store.root) == []
    r = run("export", "agents-md", str(folder), "--store", str(store.root))
    assert r.returncode == 0, r.stderr
    assert "Keep PRs small." in (folder / "AGENTS.md").read_text()
    assert [t["folder"] for t in targets(store.root)] == [str(folder.resolve())]
