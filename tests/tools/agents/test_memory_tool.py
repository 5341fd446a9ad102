"""The memory-tool backend: the same answers as the SDK's local-filesystem tool, on cards.

Each scripted sequence runs through both the SDK's BetaLocalFilesystemMemoryTool and
ours; results (or error texts) and the resulting files must be equal. Hostile paths
must be refused with nothing written anywhere.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cardmem.tools.agents.memory_tool import CardMemory, MemoryToolError, memory_tool

from anthropic.lib.tools import ToolError
from anthropic.lib.tools._beta_builtin_memory_tool import (
    BetaLocalFilesystemMemoryTool,
)


def run(tool, command: dict) -> tuple[str, str]:
    try:
        return "ok", tool.call(command)
    except ToolError as exc:
        return "error", str(exc)


def files(folder: Path) -> dict[str, bytes | None]:
    """Every file (bytes) and folder (None) below folder, hidden ones left out."""
    out: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), folder) + "/"] = None
        for f in filenames:
            if not f.startswith("."):
                p = os.path.join(dirpath, f)
                out[os.path.relpath(p, folder)] = Path(p).read_bytes()
    return out


def git(store, *args: str) -> str:
    return subprocess.run(["git", "-C", str(store.root), *args], capture_output=True,
                          text=True, check=True).stdout


@pytest.fixture
def pair(tmp_path: Path, store):
    local = BetaLocalFilesystemMemoryTool(str(tmp_path / "local"))
    ours = memory_tool(store)
    return local, ours, tmp_path / "local" / "memories", store.root / "memories"


SEQUENCES = {
    "write-edit-read": [
        {"command": "view", "path": "/memories"},
        {"command": "create", "path": "/memories/coffee.md", "file_text": "# Coffee\n\nflat white\nno sugar\n"},
        {"command": "view", "path": "/memories/coffee.md"},
        {"command": "view", "path": "/memories/coffee.md", "view_range": [2, -1]},
        {"command": "view", "path": "/memories/coffee.md", "view_range": [1, 2]},
        {"command": "str_replace", "path": "/memories/coffee.md", "old_str": "flat white", "new_str": "cortado"},
        {"command": "insert", "path": "/memories/coffee.md", "insert_line": 0, "insert_text": "top line\n"},
        {"command": "insert", "path": "/memories/coffee.md", "insert_line": 5, "insert_text": "last line"},
        {"command": "insert", "path": "/memories/coffee.md", "insert_line": 2, "insert_text": "a\nb\n"},
        {"command": "view", "path": "/memories/coffee.md"},
        {"command": "str_replace", "path": "/memories/coffee.md", "old_str": "cortado\n", "new_str": ""},
        {"command": "view", "path": "/memories/coffee.md"},
    ],
    "folders": [
        {"command": "create", "path": "/memories/projects/acme.md", "file_text": "deploy on fridays: no"},
        {"command": "create", "path": "/memories/projects/beta/notes.md", "file_text": "one\ntwo"},
        {"command": "create", "path": "/memories/projects/beta/deep/x.md", "file_text": "deep"},
        {"command": "create", "path": "/memories/top.md", "file_text": ""},
        {"command": "view", "path": "/memories"},
        {"command": "view", "path": "/memories/projects"},
        {"command": "view", "path": "/memories/projects/"},
        {"command": "rename", "old_path": "/memories/projects/acme.md", "new_path": "/memories/acme.md"},
        {"command": "rename", "old_path": "/memories/projects/beta", "new_path": "/memories/archive/beta"},
        {"command": "view", "path": "/memories"},
        {"command": "delete", "path": "/memories/archive/beta/deep/x.md"},
        {"command": "view", "path": "/memories/archive"},
        {"command": "delete", "path": "/memories/archive"},
        {"command": "view", "path": "/memories"},
    ],
    "errors": [
        {"command": "create", "path": "/memories/a.md", "file_text": "same\nsame\n"},
        {"command": "create", "path": "/memories/a.md", "file_text": "again"},
        {"command": "view", "path": "/memories/missing.md"},
        {"command": "view", "path": "/memories/nofolder"},
        {"command": "str_replace", "path": "/memories/a.md", "old_str": "absent", "new_str": "x"},
        {"command": "str_replace", "path": "/memories/a.md", "old_str": "same", "new_str": "x"},
        {"command": "str_replace", "path": "/memories/missing.md", "old_str": "a", "new_str": "b"},
        {"command": "insert", "path": "/memories/a.md", "insert_line": 3, "insert_text": "x"},
        {"command": "insert", "path": "/memories/a.md", "insert_line": -1, "insert_text": "x"},
        {"command": "insert", "path": "/memories/missing.md", "insert_line": 0, "insert_text": "x"},
        {"command": "delete", "path": "/memories/missing.md"},
        {"command": "delete", "path": "/memories"},
        {"command": "create", "path": "/memories/b.md", "file_text": "b"},
        {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"},
        {"command": "rename", "old_path": "/memories/missing.md", "new_path": "/memories/c.md"},
        {"command": "rename", "old_path": "/memories", "new_path": "/memories/x"},
        {"command": "view", "path": "/memories"},
        {"command": "view", "path": "/memories/a.md"},
    ],
    "crlf-and-unicode": [
        {"command": "create", "path": "/memories/win.md", "file_text": "one\r\ntwo\r\n"},
        {"command": "insert", "path": "/memories/win.md", "insert_line": 1, "insert_text": "mid"},
        {"command": "view", "path": "/memories/win.md"},
        {"command": "create", "path": "/memories/ünï cödé.md", "file_text": "日本語\némoji 🎉\n"},
        {"command": "str_replace", "path": "/memories/ünï cödé.md", "old_str": "🎉", "new_str": "🚀"},
        {"command": "view", "path": "/memories"},
        {"command": "view", "path": "/memories/ünï cödé.md"},
    ],
}


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_same_results_and_files_as_the_sdk_local_tool(pair, name: str) -> None:
    local, ours, local_dir, our_dir = pair
    for command in SEQUENCES[name]:
        expected, got = run(local, command), run(ours, command)
        assert got == expected, command
    assert files(our_dir) == files(local_dir)


def test_each_change_is_one_agent_commit_with_a_readable_message(pair) -> None:
    _, ours, _, our_dir = pair
    store = ours.backend.store
    before = int(git(store, "rev-list", "--count", "HEAD"))
    for command in SEQUENCES["folders"]:
        run(ours, command)
    writes = [c for c in SEQUENCES["folders"] if c["command"] != "view"]
    log = git(store, "log", f"-{len(writes)}", "--format=%an|%s%n%b%x00").split("\0")
    entries = [e.strip() for e in log if e.strip()]
    assert int(git(store, "rev-list", "--count", "HEAD")) == before + len(writes)
    assert all(e.startswith("cardmem-agent|memory: ") for e in entries)
    assert all("Cardmem-Source: memory-tool" in e for e in entries)
    subjects = [e.split("\n")[0].split("|", 1)[1] for e in reversed(entries)]
    assert subjects[0] == "memory: create memories/projects/acme"
    assert "memory: rename memories/projects/beta -> memories/archive/beta" in subjects
    assert subjects[-1] == "memory: delete memories/archive/"
    # Nothing is left uncommitted: the work tree is the last commit.
    assert git(store, "status", "--porcelain", "--", "memories") == ""


def test_memories_are_cards_of_the_store(pair) -> None:
    from cardmem.store.by_address import memory_map, read_card

    _, ours, _, _ = pair
    store = ours.backend.store
    run(ours, {"command": "create", "path": "/memories/coffee.md",
               "file_text": "# The user's coffee\n\nflat white\n"})
    assert read_card(store, "memories/coffee")["title"] == "The user's coffee"
    assert [e["id"] for e in memory_map(store).entries] == ["memories/coffee"]
    from cardmem.store.search.query import search

    found = search(store, "flat white").as_dict()["results"]
    assert [r["id"] for r in found] == ["memories/coffee"]
    # and git can undo a memory write
    sha = git(store, "rev-parse", "HEAD").strip()
    store.revert(sha)
    assert not (store.root / "memories" / "coffee.md").exists()


def test_a_folder_view_lists_cards_only(pair) -> None:
    _, ours, _, our_dir = pair
    run(ours, {"command": "create", "path": "/memories/a.md", "file_text": "a"})
    (our_dir / "scratch.txt").write_text("not a card")
    (our_dir / ".hidden.md").write_text("hidden")
    listing = run(ours, {"command": "view", "path": "/memories"})[1]
    assert "/memories/a.md" in listing
    assert "scratch.txt" not in listing and ".hidden" not in listing


def test_secrets_are_redacted_before_they_are_written(pair) -> None:
    _, ours, _, our_dir = pair
    secret = "sk-ant-api03-" + "x7" * 20
    status, text = run(ours, {"command": "create", "path": "/memories/keys.md",
                              "file_text": f"the key is {secret}\n"})
    assert status == "ok" and "redacted" in text.lower()
    assert secret not in (our_dir / "keys.md").read_text()
    assert "[REDACTED:anthropic-key]" in (our_dir / "keys.md").read_text()
    run(ours, {"command": "str_replace", "path": "/memories/keys.md", "old_str": "the key",
               "new_str": f"password={secret}"})
    assert secret not in git(ours.backend.store, "log", "-p")


# --- hostile input -------------------------------------------------------------

HOSTILE = [
    "/memories/../cardmem.toml",
    "/memories/../feedback/rule.md",
    "/memories/notes/../../feedback/rule.md",
    "/memories/%2e%2e/feedback/rule.md",
    "/memories/%2E%2E/feedback/rule.md",
    "/memories/%252e%252e/feedback/rule.md",
    "/memories/a%2f..%2f..%2ffeedback%2frule.md",
    "/memories/..%5cfeedback%5crule.md",
    "/etc/passwd",
    "/memoriesx/rule.md",
    "memories/rule.md",
    "/memories/a\x00.md",
    "/memories/a%00.md",
    "/memories/.git/config.md",
    "/memories/.hidden.md",
    "/memories/a\\..\\b.md",
    "/memories//a.md",
    "/memories/./a.md",
    "/memories/notes.txt",
    "/memories/" + "x" * 300 + ".md",
]


def _tree(root: Path) -> dict[str, bytes]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".git", ".cardmem")]
        for f in filenames:
            p = Path(dirpath, f)
            out[str(p.relative_to(root))] = p.read_bytes() if not p.is_symlink() else b"link"
    return out


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory):
    """A store with a protected card, an outside file, and the memory tool on it.

    Shared by the refusal tests: each asserts that nothing changed, so none can spoil
    it for the next.
    """
    from cardmem.store.store import init
    from cardmem.store.git.writer import Message

    tmp_path = tmp_path_factory.mktemp("guarded")
    store = init(tmp_path / "store")[0]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("outside the store\n")
    store.commit({"feedback/rule.md": b"---\ntitle: A rule\n---\nkeep\n"},
                 Message("seed", source="test"), agent=False)
    tool = memory_tool(store)
    return store, tool, outside


@pytest.mark.parametrize("path", HOSTILE)
def test_hostile_paths_are_refused_and_nothing_changes(guarded, path: str) -> None:
    store, tool, outside = guarded
    head, tree, out_tree = git(store, "rev-parse", "HEAD"), _tree(store.root), _tree(outside)
    for command, args in [("view", {}), ("create", {"file_text": "pwned"}), ("delete", {}),
                          ("str_replace", {"old_str": "keep", "new_str": "pwned"}),
                          ("insert", {"insert_line": 0, "insert_text": "pwned"}),
                          ("rename", {"old_path": path, "new_path": "/memories/mine.md"})]:
        cmd = {"command": command, **args} | ({} if command == "rename" else {"path": path})
        status, text = run(tool, cmd)
        assert status == "error", (command, text)
        assert text and "Traceback" not in text
    assert git(store, "rev-parse", "HEAD") == head
    assert _tree(store.root) == tree and _tree(outside) == out_tree


@pytest.mark.parametrize("new_path", ["/memories/../feedback/rule2.md",
                                      "/memories/%2e%2e/x.md", "/tmp/x.md"])
def test_rename_cannot_move_a_memory_out(store, new_path: str) -> None:
    tool = memory_tool(store)
    assert run(tool, {"command": "create", "path": "/memories/a.md", "file_text": "a"})[0] == "ok"
    head = git(store, "rev-parse", "HEAD")
    assert run(tool, {"command": "rename", "old_path": "/memories/a.md",
                      "new_path": new_path})[0] == "error"
    assert git(store, "rev-parse", "HEAD") == head
    assert (store.root / "memories" / "a.md").read_text() == "a"


def test_symlinks_are_never_followed(tmp_path: Path, store) -> None:
    from cardmem.store.git.writer import Message

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("outside the store\n")
    store.commit({"feedback/rule.md": b"---\ntitle: A rule\n---\nkeep\n"},
                 Message("seed", source="test"), agent=False)
    tool = memory_tool(store)
    base = store.root / "memories"
    (base / "out").symlink_to(outside, target_is_directory=True)
    (base / "rule.md").symlink_to(store.root / "feedback" / "rule.md")
    (base / "escape.md").symlink_to(outside / "secret.md")
    tree, out_tree = _tree(store.root), _tree(outside)
    for command in [
        {"command": "view", "path": "/memories/out"},
        {"command": "view", "path": "/memories/out/secret.md"},
        {"command": "create", "path": "/memories/out/new.md", "file_text": "x"},
        {"command": "view", "path": "/memories/escape.md"},
        {"command": "str_replace", "path": "/memories/rule.md", "old_str": "keep", "new_str": "pwned"},
        {"command": "insert", "path": "/memories/rule.md", "insert_line": 0, "insert_text": "pwned"},
        {"command": "delete", "path": "/memories/out"},
        {"command": "rename", "old_path": "/memories/rule.md", "new_path": "/memories/mine.md"},
    ]:
        status, text = run(tool, command)
        assert status == "error" and "symbolic link" in text, (command, text)
    assert _tree(store.root) == tree and _tree(outside) == out_tree
    listing = run(tool, {"command": "view", "path": "/memories"})[1]
    assert "out" not in listing.split("\n", 1)[1] and "escape" not in listing


def test_a_memories_folder_that_is_a_link_out_is_refused(tmp_path: Path, store) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (store.root / "memories").symlink_to(elsewhere, target_is_directory=True)
    backend = CardMemory(store)
    with pytest.raises(MemoryToolError, match="symbolic link"):
        backend.execute({"command": "create", "path": "/memories/a.md", "file_text": "x"})
    assert list(elsewhere.iterdir()) == []


def test_sizes_are_capped(store) -> None:
    tool = memory_tool(store, max_file_bytes=1000)
    head = git(store, "rev-parse", "HEAD")
    status, text = run(tool, {"command": "create", "path": "/memories/big.md",
                              "file_text": "x" * 1001})
    assert status == "error" and "too large" in text and "1000" in text
    assert git(store, "rev-parse", "HEAD") == head
    assert run(tool, {"command": "create", "path": "/memories/ok.md", "file_text": "x" * 900})[0] == "ok"
    status, text = run(tool, {"command": "insert", "path": "/memories/ok.md", "insert_line": 1,
                              "insert_text": "y" * 200})
    assert status == "error" and "too large" in text
    assert (store.root / "memories" / "ok.md").read_text() == "x" * 900


def test_a_busy_store_is_said_not_raised(store) -> None:
    from cardmem.store.git.writer import write_lock

    store.config["store"]["lock_timeout_s"] = 0.2
    tool = memory_tool(store)
    with write_lock(store.root):
        status, text = run(tool, {"command": "create", "path": "/memories/a.md", "file_text": "x"})
    assert status == "error" and "busy" in text
    assert not (store.root / "memories" / "a.md").exists()


def test_untracked_files_in_a_deleted_folder_go_too(store) -> None:
    tool = memory_tool(store)
    run(tool, {"command": "create", "path": "/memories/d/a.md", "file_text": "a"})
    (store.root / "memories" / "d" / "loose.md").write_text("never committed")
    assert run(tool, {"command": "delete", "path": "/memories/d"}) == (
        "ok", "Successfully deleted /memories/d")
    assert not (store.root / "memories" / "d").exists()
    assert git(store, "status", "--porcelain") == ""


def test_importing_the_module_does_not_import_anthropic() -> None:
    code = ("import sys, cardmem.tools.agents.memory_tool as m; "
            "print('anthropic' in sys.modules)")
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_file_in_the_way_of_a_folder_is_said_not_raised(store) -> None:
    tool = memory_tool(store)
    run(tool, {"command": "create", "path": "/memories/a.md", "file_text": "a"})
    head = git(store, "rev-parse", "HEAD")
    status, text = run(tool, {"command": "create", "path": "/memories/a.md/b.md", "file_text": "b"})
    assert status == "error" and "/memories/a.md/b.md is inside a file" in text
    assert git(store, "rev-parse", "HEAD") == head
    assert (store.root / "memories" / "a.md").read_text() == "a"
