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
        "2 rules in force: 1 whole in .cursor/rules/cardmem.mdc, 1 in files of their own by path"]
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
