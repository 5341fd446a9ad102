"""The first hour of a new user (issue 15): init, the size limit, remember's lookup,
broken cards, project keys and empty clones, run in-process through CliRunner."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from gitremote import cli


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=True).stdout


def one_line(code: int, err: str, *parts: str) -> None:
    assert code != 0
    assert err.count("\n") == 1 and err.startswith("cardmem: "), err
    for part in parts:
        assert part in err, err


# --- 1. init adopts notes only --------------------------------------------------------

def test_init_adopts_only_notes_and_keeps_the_rest_out(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    (root / "node_modules" / "pkg").mkdir(parents=True)
    (root / "node_modules" / "pkg" / "README.md").write_text("# vendored\n")
    (root / "ideas").mkdir()
    (root / "ideas" / "plan.md").write_text("# Plan\n")
    (root / "todo.md").write_text("# Todo\n")
    (root / ".env").write_text("AWS_SECRET_ACCESS_KEY=abc\n")
    (root / "photo.jpg").write_bytes(b"\xff\xd8" * 1000)
    (root / ".DS_Store").write_bytes(b"\0\0")
    code, out, err = cli("init", str(root))
    assert code == 0, err
    assert sorted(git(root, "ls-files").split()) == [
        ".gitignore", "cardmem.toml", "ideas/plan.md", "todo.md"]
    assert git(root, "status", "--porcelain") == ""
    assert "adopted 2 notes: ideas/plan.md, todo.md" in out
    left = next(ln for ln in out.splitlines() if ln.startswith("left out"))
    for name in (".env", ".DS_Store", "photo.jpg", "node_modules/"):
        assert name in left
    # a secret added later stays out of `git add -A` as well
    (root / ".env.local").write_text("TOKEN=x\n")
    assert git(root, "status", "--porcelain") == ""


@pytest.mark.parametrize("commits", [False, True])
def test_init_leaves_a_repository_inside_the_folder_out(tmp_path: Path, commits: bool) -> None:
    """A clone inside the notes folder is another repository's: `git add -A` failed on one
    with no commit yet ('does not have a commit checked out'), leaving a store with no
    commit, and committed one with commits as a gitlink (mode 160000)."""
    root = tmp_path / "notes"
    (root / "code" / "proj").mkdir(parents=True)
    (root / "todo.md").write_text("# Todo\n")
    (root / "code" / "proj" / "README.md").write_text("# Proj\n")
    subprocess.run(["git", "init", "-q", str(root / "code" / "proj")], check=True)
    if commits:
        subprocess.run(["git", "-C", str(root / "code" / "proj"), "-c", "user.name=a", "-c",
                        "user.email=a@a", "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    code, out, err = cli("init", str(root))
    assert code == 0, err
    assert sorted(git(root, "ls-files").split()) == [".gitignore", "cardmem.toml", "todo.md"]
    assert "code/proj/" in next(ln for ln in out.splitlines() if ln.startswith("left out"))
    assert git(root, "status", "--porcelain") == ""  # and stays out of a later `git add -A`


def test_init_of_an_empty_folder_says_nothing_of_adoption(tmp_path: Path) -> None:
    code, out, err = cli("init", str(tmp_path / "s"))
    assert code == 0 and out == f"initialized {tmp_path / 's'}\n"
    assert (tmp_path / "s" / ".gitignore").read_text() == ".cardmem/\n"


@pytest.mark.parametrize("args", [["init", ""], ["init", "--store", ""], ["--store", "", "init"],
                                  ["map", "--store", ""], ["--store", "", "map"]])
def test_an_empty_store_path_is_refused(tmp_path: Path, monkeypatch, args) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(*args)
    one_line(code, err, "empty")
    assert list(tmp_path.iterdir()) == []


def test_store_before_or_after_the_command(tmp_path: Path) -> None:
    root = tmp_path / "s"
    assert cli("--store", str(root), "init")[0] == 0
    assert cli("init", "--store", str(root))[1] == f"already a store: {root}\n"
    assert cli("--store", str(root), "new", "reference/a")[0] == 0
    assert json.loads(cli("--store", str(root), "map", "--json")[1])[0]["id"] == "reference/a"


def test_the_store_is_found_from_the_current_folder_as_git_finds_its_repo(
        tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "s"
    assert cli("init", str(root))[0] == 0
    assert cli("--store", str(root), "new", "reference/a", "--body", "found")[0] == 0
    (root / "reference" / "deeper").mkdir()
    monkeypatch.chdir(root / "reference" / "deeper")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "elsewhere"))
    code, out, err = cli("where")
    assert code == 0 and out.strip() == str(root), (out, err)
    assert json.loads(cli("map", "--json")[1])[0]["id"] == "reference/a"
    # a plain git repository without cardmem.toml is not a store: the default is used
    plain = tmp_path / "repo"
    plain.mkdir()
    git(plain, "init", "-q")
    monkeypatch.chdir(plain)
    assert cli("where")[1].strip() == str(tmp_path / "elsewhere" / "cardmem")
    # $CARDMEM_STORE still wins
    monkeypatch.chdir(root)
    monkeypatch.setenv("CARDMEM_STORE", str(tmp_path / "env"))
    assert cli("where")[1].strip() == str(tmp_path / "env")


# --- 3. cards over the size every reader skips are refused ------------------------------

@pytest.mark.parametrize("how", ["new", "remember", "append"])
def test_a_card_over_the_size_limit_is_refused_before_anything_is_written(
        tmp_path: Path, how: str) -> None:
    root = tmp_path / "s"
    assert cli("init", str(root))[0] == 0
    s = ["--store", str(root)]
    assert cli("remember", "Notes", "--body", "small", *s)[0] == 0
    before = (root / "reference" / "notes.md").read_bytes()
    head = git(root, "rev-parse", "HEAD")
    big = "word " * 220_000  # 1.1 MB
    args = {"new": ["new", "reference/big", "--body", big],
            "remember": ["remember", "Big", "--body", big],
            "append": ["remember", "Notes", "--body", big]}[how]
    code, out, err = cli(*args, *s)
    one_line(code, err, "bytes; the limit is 1,048,576", "nothing written")
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "status", "--porcelain") == ""
    assert (root / "reference" / "notes.md").read_bytes() == before
    assert not (root / "reference" / "big.md").exists()


# --- 4. remember finds the card of that title across the store --------------------------

def test_remember_appends_to_the_card_of_that_title_wherever_it_is(tmp_path: Path) -> None:
    root = tmp_path / "s"
    assert cli("init", str(root))[0] == 0
    s = ["--store", str(root)]
    assert cli("new", "projects/acme-api/deploying", "--title", "Deploying acme-api",
               "--body", "step 1", *s)[0] == 0
    code, out, err = cli("remember", "Deploying acme-api", "--body", "step 2", *s)
    assert (code, out) == (0, "appended to projects/acme-api/deploying\n"), err
    assert not (root / "reference" / "deploying-acme-api.md").exists()
    # an alias names the card too
    (root / "reference").mkdir()
    (root / "reference" / "ship.md").write_text("---\ntitle: Shipping\naliases: [release "
                                                 "train]\n---\nweekly\n")
    git(root, "add", "reference/ship.md")
    assert cli("remember", "Release train", "--body", "on Tuesdays", *s)[1] == \
        "appended to reference/ship\n"


def test_an_agent_remembering_a_rules_title_files_a_proposal_to_change_that_rule(
        tmp_path: Path) -> None:
    from cardmem.store.store import Store
    from cardmem.tools.agents.mcp_server import CardTools

    root = tmp_path / "s"
    assert cli("init", str(root))[0] == 0
    assert cli("new", "feedback/tests", "--title", "Run the tests with -x", "--body",
               "Always -x.", "--store", str(root))[0] == 0
    before = (root / "feedback" / "tests.md").read_bytes()
    out = CardTools(Store.open(root)).remember("Run the tests with -x", "and -q too",
                                               "reference")
    assert out["proposed"] is True and "change to feedback/tests" in out["note"]
    assert (root / "feedback" / "tests.md").read_bytes() == before
    assert not (root / "reference" / "run-the-tests-with-x.md").exists()


# --- 5. a broken card can be seen and fixed ------------------------------------------------

BROKEN = "---\ntitle: [unclosed\n---\nthe body\n"


def _broken_store(tmp_path: Path) -> Path:
    root = tmp_path / "s"
    assert cli("init", str(root))[0] == 0
    (root / "reference").mkdir()
    (root / "reference" / "bad.md").write_text(BROKEN)
    return root


def test_show_prints_a_broken_card_raw_and_the_problem_on_stderr(tmp_path: Path) -> None:
    root = _broken_store(tmp_path)
    code, out, err = cli("show", "reference/bad", "--store", str(root))
    assert (code, out) == (0, BROKEN)
    assert "bad YAML frontmatter" in err and err.count("\n") == 1
    data = json.loads(cli("show", "reference/bad", "--json", "--store", str(root))[1])
    assert data["text"] == BROKEN and "bad YAML" in data["error"]


def test_edit_opens_a_broken_card_and_commits_it_once_it_parses(tmp_path: Path,
                                                                 monkeypatch) -> None:
    root = _broken_store(tmp_path)
    fixer = tmp_path / "fix.sh"
    fixer.write_text("#!/bin/sh\nprintf -- '---\\ntitle: Fixed\\n---\\nthe body\\n' > \"$1\"\n")
    fixer.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(fixer))
    code, out, err = cli("edit", "reference/bad", "--store", str(root))
    assert (code, out) == (0, "committed reference/bad\n"), err
    assert git(root, "log", "-1", "--format=%s") .strip() == "edit: reference/bad"


def test_map_json_lists_a_broken_card_with_its_error_and_an_empty_store_says_so(
        tmp_path: Path) -> None:
    root = _broken_store(tmp_path)
    rows = json.loads(cli("map", "--json", "--store", str(root))[1])
    assert [(r["id"], "bad YAML" in r["error"]) for r in rows] == [("reference/bad", True)]
    empty = tmp_path / "e"
    assert cli("init", str(empty))[0] == 0
    assert cli("map", "--store", str(empty))[1].startswith("no cards yet")
    assert cli("map", "--json", "--store", str(empty))[1].strip() == "[]"


# --- 6. one project key everywhere ---------------------------------------------------------

def test_a_project_named_by_its_display_name_is_the_folders_project(tmp_path: Path) -> None:
    root = tmp_path / "s"
    assert cli("init", str(root))[0] == 0
    s = ["--store", str(root)]
    assert cli("remember", "Local dev", "--project", "Acme API", "--body", "docker compose up",
               *s)[1] == "created projects/acme-api/local-dev\n"
    assert cli("new", "projects/acme-api/deploy", "--body", "docker push", *s)[0] == 0
    text = (root / "projects" / "acme-api" / "local-dev.md").read_text()
    assert "type: project\n" in text and "project: acme-api\n" in text
    for name in ("Acme API", "acme-api"):
        found = json.loads(cli("search", "docker", "--project", name, "--json", *s)[1])
        ids = sorted(r["id"] for r in (found["results"] if isinstance(found, dict) else found))
        assert ids == ["projects/acme-api/deploy", "projects/acme-api/local-dev"], (name, ids)
        context = cli("context", "--project", name, *s)[1]
        assert "docker push" in context and "docker compose up" in context, name


# --- 7. no writes into what is no store; a missing git identity is said -----------------

def test_writes_into_an_empty_clone_are_refused_with_the_next_step(tmp_path: Path) -> None:
    bare, clone = tmp_path / "bare", tmp_path / "clone"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    subprocess.run(["git", "clone", "-q", str(bare), str(clone)], check=True,
                   capture_output=True)
    code, out, err = cli("new", "reference/a", "--body", "x", "--store", str(clone))
    one_line(code, err, "no cardmem.toml", f"cardmem init {clone}")
    assert sorted(p.name for p in clone.iterdir()) == [".git"]
    assert cli("init", str(clone))[0] == 0
    assert cli("new", "reference/a", "--body", "x", "--store", str(clone))[0] == 0


def test_no_git_identity_is_said_once_and_flagged_by_doctor(tmp_path: Path,
                                                              monkeypatch) -> None:
    for k in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME",
              "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(k, raising=False)
    root = tmp_path / "s"
    assert cli("init", str(root))[0] == 0
    s = ["--store", str(root)]
    code, out, err = cli("new", "reference/a", "--body", "x", *s)
    assert code == 0 and "git identity: none is set" in err and "cardmem@localhost" in err
    assert "git identity" not in cli("new", "reference/b", "--body", "y", *s)[2]
    code, out, err = cli("doctor", *s)
    line = next(ln for ln in out.splitlines() if "user.name" in ln)
    assert line.startswith("warning") and "cardmem <cardmem@localhost>" in line
    # with an identity, nothing is said
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Ann")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "ann@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Ann")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "ann@example.com")
    assert "git identity: set" in cli("doctor", *s)[1]


def test_a_context_budget_that_holds_nothing_says_so(tmp_path: Path) -> None:
    """`cardmem context --budget 50` printed nothing at all and exited 0: the cut was named
    only in --json's left_out."""
    root = tmp_path / "s"
    assert cli("init", str(root))[0] == 0
    code, out, err = cli("--store", str(root), "context", "--budget", "50")
    assert code == 0 and out == ""
    assert err.count("\n") == 1 and err.startswith("cardmem: context: "), err
    assert "budget of 50 characters" in err and "memory map" in err and "recent changes" in err
