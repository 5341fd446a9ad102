"""The core commands of the CLI contract (DESIGN §10), run as a user runs them: the console
script's main in-process (tests/clikit.py), and as processes where the boundary is the point."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest
from clikit import Ran, run

REPO = Path(__file__).resolve().parents[3]


def _cli() -> list[str]:
    script = Path(sys.executable).with_name("cardmem")
    return [str(script)] if script.exists() else [sys.executable, "-m", "cardmem.tools.cli"]


CLI = _cli()


def cm(*args: str, input: str | None = None, env: dict[str, str] | None = None,
       ok: bool = True) -> Ran | subprocess.CompletedProcess:
    """`cardmem ARGS`, the console script's main in this process; with ok, it must succeed."""
    proc = run(*args, input=input, env=env, script=True)
    if ok:
        assert proc.returncode == 0, proc.stderr
    return proc


def cm_process(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`cardmem ARGS` as a process, where the boundary (exit code, stderr) is the point."""
    return subprocess.run([*CLI, *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def one_error_line(proc: Ran | subprocess.CompletedProcess, *parts: str) -> str:
    assert proc.returncode != 0
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("cardmem: "), proc.stderr
    for part in parts:
        assert part in proc.stderr, proc.stderr
    return proc.stderr


def g(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=True).stdout


def commits(root: Path) -> int:
    return int(g(root, "rev-list", "--count", "HEAD"))


def test_init_is_idempotent(tmp_path: Path) -> None:
    root = tmp_path / "s"
    assert cm("init", str(root)).stdout == f"initialized {root}\n"
    assert commits(root) == 1
    assert cm("init", str(root)).stdout == f"already a store: {root}\n"
    assert commits(root) == 1
    assert g(root, "status", "--porcelain") == ""


def test_init_adopts_an_existing_folder_of_cards(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    shutil.copytree(REPO / "cards" / "feedback", root / "feedback")
    (root / "todo.txt").write_text("not a card, but the user's file\n")
    cm("init", str(root))
    assert g(root, "status", "--porcelain") == ""
    tracked = g(root, "ls-files").split()
    assert "todo.txt" not in tracked and "feedback/run-tests-with-x.md" in tracked
    ids = [c["id"] for c in json.loads(cm("map", "--json", "--store", str(root)).stdout)]
    assert ids == sorted(f"feedback/{p.stem}" for p in (REPO / "cards" / "feedback").glob("*.md"))


def test_init_on_an_existing_repo_commits_only_its_own_files(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    g(root, "init", "-q")
    (root / "draft.md").write_text("my draft\n")
    cm("init", str(root))
    assert sorted(g(root, "ls-files").split()) == [".gitignore", "cardmem.toml"]
    assert g(root, "status", "--porcelain") == "?? draft.md\n"


def test_where_honours_store_option_and_environment(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert cm("where", "--store", str(a)).stdout == f"{a}\n"
    assert cm("where", env={"CARDMEM_STORE": str(b)}).stdout == f"{b}\n"
    assert cm("where", "--store", str(a), env={"CARDMEM_STORE": str(b)}).stdout == f"{a}\n"
    env = {"XDG_DATA_HOME": str(tmp_path / "xdg")}
    assert cm("where", env=env).stdout == f"{tmp_path / 'xdg' / 'cardmem'}\n"


def test_store_option_and_environment_for_writes(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    cm("init", str(a))
    cm("init", str(b))
    cm("new", "reference/via-env", "--body", "x", env={"CARDMEM_STORE": str(a)})
    cm("new", "reference/via-option", "--body", "y", "--store", str(b),
       env={"CARDMEM_STORE": str(a)})
    assert (a / "reference" / "via-env.md").exists()
    assert (b / "reference" / "via-option.md").exists()
    assert not (a / "reference" / "via-option.md").exists()
    # `init` with no PATH makes the store $CARDMEM_STORE names.
    c = tmp_path / "c"
    cm("init", env={"CARDMEM_STORE": str(c)})
    assert (c / "cardmem.toml").exists()


@pytest.fixture
def root(store) -> Path:
    return store.root


def test_new_show_and_refusals(root: Path) -> None:
    out = cm("new", "feedback/run-tests-with-x", "--title", "Run the tests with -x",
             "--body", "Stop at the first failure.", "--store", str(root))
    assert out.stdout == "created feedback/run-tests-with-x\n"
    shown = json.loads(cm("show", "feedback/run-tests-with-x", "--json", "--store", str(root)).stdout)
    assert shown["id"] == "feedback/run-tests-with-x"
    assert shown["type"] == "feedback"
    assert shown["title"] == "Run the tests with -x"
    assert shown["meta"]["created"] == date.today().isoformat()
    assert "Stop at the first failure." in shown["body"]
    text = (root / "feedback" / "run-tests-with-x.md").read_text()
    assert shown["text"] == text
    assert cm("show", "feedback/run-tests-with-x", "--store", str(root)).stdout == text
    # From standard input.
    cm("new", "reference/piped", "--body", "-", "--store", str(root), input="from stdin\n")
    assert "from stdin" in (root / "reference" / "piped.md").read_text()
    base = commits(root)
    one_error_line(cm("new", "feedback/run-tests-with-x", "--store", str(root), ok=False),
                   "already exists")
    err = cm("new", "../escape", "--store", str(root), ok=False)
    one_error_line(err, "climbs out of the store")
    assert err.returncode == 2
    one_error_line(cm("show", "reference/nothing-here", "--store", str(root), ok=False),
                   "card reference/nothing-here: no such card")
    assert commits(root) == base


def test_remember_with_the_text_as_a_second_argument_says_where_it_goes(root: Path) -> None:
    """`cardmem remember "Title" "text"` (the first thing people type) names --body; nothing
    is written."""
    base = commits(root)
    for args in (["Release process", "Cut from main."], ["Release", "process", "--body", "x"]):
        r = cm("remember", *args, "--store", str(root), ok=False)
        assert r.returncode == 2 and r.stdout == ""
        assert "unexpected extra argument" in r.stderr and "--body TEXT" in r.stderr, r.stderr
    assert commits(root) == base


def test_remember_creates_appends_and_protects(root: Path) -> None:
    s = ["--store", str(root)]
    assert cm("remember", "Deploy steps", "--body", "Run make deploy.", *s).stdout == \
        "created reference/deploy-steps\n"
    base = commits(root)
    assert cm("remember", "Deploy steps", "--body", "Then check the dashboard.", *s).stdout == \
        "appended to reference/deploy-steps\n"
    assert commits(root) == base + 1
    text = (root / "reference" / "deploy-steps.md").read_text()
    today = date.today().isoformat()
    assert f"## {today}\n\nThen check the dashboard.\n" in text
    assert text.index("Run make deploy.") < text.index("Then check the dashboard.")
    # A person's remember of a rule's title appends to that rule: no second copy beside it.
    cm("remember", "No Friday deploys", "--type", "feedback", "--body", "Rule one.", *s)
    out = cm("remember", "No Friday deploys", "--type", "feedback", "--body", "Rule two.", *s)
    assert out.stdout == "appended to feedback/no-friday-deploys\n"
    # The title is looked up across the store (and without case), not by a slug in one folder.
    out = cm("remember", "no friday  DEPLOYS", "--body", "Rule three.", *s)
    assert out.stdout == "appended to feedback/no-friday-deploys\n"
    text = (root / "feedback" / "no-friday-deploys.md").read_text()
    assert text.index("Rule one.") < text.index("Rule two.") < text.index("Rule three.")
    assert not (root / "feedback" / "no-friday-deploys-2.md").exists()
    # Two cards of one title: refused, naming both; nothing written.
    cm("new", "reference/friday", "--title", "No Friday deploys", *s)
    base = commits(root)
    one_error_line(cm("remember", "No Friday deploys", "--body", "x", *s, ok=False),
                   "2 cards have this title or alias (feedback/no-friday-deploys, "
                   "reference/friday)")
    assert commits(root) == base
    # A project card lands in its project's folder.
    out = cm("remember", "Local dev", "--project", "acme-api", "--body", "docker compose up", *s)
    assert out.stdout == "created projects/acme-api/local-dev\n"


def test_concurrent_remember_of_one_title_loses_nothing(root: Path) -> None:
    procs = [subprocess.Popen([*CLI, "remember", "Shared note", "--body", f"fact {i}",
                               "--store", str(root)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(4)]
    results = [(p.wait(60), p.stdout.read(), p.stderr.read()) for p in procs]
    assert all(rc == 0 for rc, _, _ in results), results
    text = (root / "reference" / "shared-note.md").read_text()
    assert all(f"fact {i}" in text for i in range(4))
    assert sorted(out.split()[0] for _, out, _ in results) == ["appended"] * 3 + ["created"]


EDITORS = {
    "append": "import sys; open(sys.argv[1], 'a').write('Edited by hand.\\n')",
    "nothing": "import sys",
    "break": "import sys; open(sys.argv[1], 'w').write('---\\ntitle: [broken\\n---\\nbody\\n')",
    "fail": "import sys; sys.exit(3)",
}


def _editor(tmp_path: Path, kind: str) -> dict[str, str]:
    script = tmp_path / f"editor-{kind}.py"
    script.write_text(EDITORS[kind])
    return {"EDITOR": f"{sys.executable} {script}"}


def test_edit(root: Path, tmp_path: Path) -> None:
    s = ["--store", str(root)]
    cm("new", "reference/page", "--body", "Original.", *s)
    path = root / "reference" / "page.md"
    base = commits(root)
    assert cm("edit", "reference/page", *s, env=_editor(tmp_path, "append")).stdout == \
        "committed reference/page\n"
    assert commits(root) == base + 1
    assert g(root, "log", "-1", "--format=%s") == "edit: reference/page\n"
    assert g(root, "show", "HEAD:reference/page.md").endswith("Edited by hand.\n")

    assert cm("edit", "reference/page", *s, env=_editor(tmp_path, "nothing")).stdout == \
        "unchanged reference/page\n"
    assert commits(root) == base + 1

    err = cm("edit", "reference/page", *s, env=_editor(tmp_path, "fail"), ok=False)
    one_error_line(err, "nothing committed")
    assert commits(root) == base + 1

    err = cm("edit", "reference/page", *s, env=_editor(tmp_path, "break"), ok=False)
    one_error_line(err, "bad YAML frontmatter", "left uncommitted")
    assert commits(root) == base + 1
    assert path.read_text() == "---\ntitle: [broken\n---\nbody\n"  # the person's text kept
    assert g(root, "status", "--porcelain") == " M reference/page.md\n"


def test_map_json(example_store) -> None:
    root = example_store.root
    entries = json.loads(cm("map", "--json", "--store", str(root)).stdout)
    assert len(entries) >= 40
    assert all(set(e) == {"id", "type", "title", "description"} for e in entries)
    by_id = {e["id"]: e for e in entries}
    assert by_id["feedback/run-tests-with-x"]["type"] == "feedback"
    assert "README" not in by_id
    text = cm("map", "--store", str(root)).stdout
    assert "feedback/run-tests-with-x  [feedback]" in text


def test_log_json_and_revert(root: Path) -> None:
    s = ["--store", str(root)]
    cm("remember", "Cache TTL", "--body", "The cache TTL is 5 minutes.", *s)
    cm("new", "reference/other", "--body", "x", *s)
    cm("remember", "Cache TTL", "--body", "Correction: it is 10 minutes.", *s)
    entries = json.loads(cm("log", "--json", *s).stdout)
    assert all(set(e) == {"commit", "author", "date", "message", "paths"} for e in entries)
    assert [e["paths"] for e in entries[:3]] == [["reference/cache-ttl.md"],
                                                 ["reference/other.md"],
                                                 ["reference/cache-ttl.md"]]
    assert entries[0]["message"].startswith("remember: reference/cache-ttl")
    assert "Cardmem-Source: cli" in entries[0]["message"]
    assert len(entries[0]["commit"]) == 40
    assert entries[-1]["message"].startswith("init:")
    one = json.loads(cm("log", "reference/cache-ttl", "--json", *s).stdout)
    assert [e["commit"] for e in one] == [entries[0]["commit"], entries[2]["commit"]]
    limited = json.loads(cm("log", "--limit", "1", "--json", *s).stdout)
    assert [e["commit"] for e in limited] == [entries[0]["commit"]]

    out = cm("revert", entries[0]["commit"], *s)
    assert out.stdout.startswith(f"reverted {entries[0]['commit']} in ")
    text = (root / "reference" / "cache-ttl.md").read_text()
    assert "5 minutes" in text and "10 minutes" not in text
    assert commits(root) == len(entries) + 1
    assert g(root, "status", "--porcelain") == ""
    one_error_line(cm("revert", "deadbeef", *s, ok=False), "commit deadbeef", "no such commit")


def test_revert_keeps_the_users_uncommitted_work(root: Path) -> None:
    s = ["--store", str(root)]
    cm("new", "reference/a", "--body", "a1", *s)
    cm("new", "reference/b", "--body", "b1", *s)
    sha = g(root, "rev-parse", "HEAD").strip()
    (root / "reference" / "a.md").write_text("a edited, not committed\n")
    (root / "reference" / "untracked.md").write_text("u\n")
    out = cm("revert", sha, *s)
    assert out.returncode == 0
    assert not (root / "reference" / "b.md").exists()
    assert (root / "reference" / "a.md").read_text() == "a edited, not committed\n"
    assert g(root, "status", "--porcelain") == " M reference/a.md\n?? reference/untracked.md\n"


def test_revert_that_conflicts_changes_nothing(root: Path) -> None:
    s = ["--store", str(root)]
    cm("new", "reference/a", "--body", "one", *s)
    first = g(root, "rev-parse", "HEAD").strip()
    cm("edit", "reference/a", *s, env={"EDITOR": f"{sys.executable} -c \"import sys; "
                                              f"open(sys.argv[1], 'w').write('two\\n')\""})
    head = g(root, "rev-parse", "HEAD").strip()
    before = (root / "reference" / "a.md").read_bytes()
    err = cm("revert", first, *s, ok=False)  # undoing the creation conflicts with the edit
    one_error_line(err)
    assert g(root, "rev-parse", "HEAD").strip() == head
    assert (root / "reference" / "a.md").read_bytes() == before
    assert g(root, "status", "--porcelain") == ""
    assert not (root / ".git" / "REVERT_HEAD").exists()


def test_errors_are_one_line(tmp_path: Path) -> None:
    """As processes: the exit code and the one stderr line are what a script sees."""
    missing = tmp_path / "missing"
    err = cm_process("map", "--store", str(missing))
    assert err.returncode == 1
    assert err.stderr == f"cardmem: store {missing}: does not exist; run `cardmem init {missing}`\n"
    plain = tmp_path / "plain"
    plain.mkdir()
    one_error_line(cm_process("new", "reference/x", "--store", str(plain)),
                   "is not a git repository")
    one_error_line(cm_process("show", "x", env={"CARDMEM_STORE": str(missing)}),
                   "does not exist")
    assert not missing.exists()


def test_demo_runs_and_shows_the_map(demo_without_a_key: Ran) -> None:
    proc = demo_without_a_key
    assert proc.returncode == 0, proc.stderr
    assert "feedback/run-tests-with-x" in proc.stdout
    assert "$ cardmem map" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
