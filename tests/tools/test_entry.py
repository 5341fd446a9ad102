"""The console script's lean `cardmem search` (tools/entry.py) against the click command
it stands in for: the same arguments must print the same bytes and exit the same way."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cardmem.tools import entry

SCRIPT = Path(sys.executable).with_name("cardmem")


def run(capfd, monkeypatch, argv: list[str], lean: bool) -> tuple[str, str, int]:
    monkeypatch.setattr(sys, "argv", ["cardmem", *argv])
    code = 0
    try:
        if lean:
            opts = entry.parse_search(argv[1:])
            assert opts is not None, f"the lean path refused {argv}"
            entry.search(opts)
        else:
            from cardmem.tools.cli.group import main

            main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capfd.readouterr()
    return out, err, code


CASES = [
    ["pytest fixtures"],
    ["pytets", "fixtrues"],  # typos: corrected, said so
    ["zxqv", "blorf"],  # nothing confident
    ["deploy", "--limit", "3"],
    ["--limit=2", "deploy"],
    ["migration", "--type", "feedback"],
    ["tests", "--type", "rule"],  # the word people use for feedback cards
    ["tests", "--type=Rules"],
    ["tests", "--project=acme-api", "--json"],
    ["--json", "on-call", "rota", "--limit", "1000"],
    ["--", "--not-an-option", "deploy"],
    ['"quoted" AND (NEAR) col:umn * émoji 🚀'],
    ["deploy", "--limit", "+4"],
    ["billing", "--limit", "5", "--limit", "2"],  # the last one wins, as in click
]


@pytest.mark.parametrize("args", CASES)
def test_lean_search_prints_what_the_click_command_prints(example_store, capfd, monkeypatch,
                                                          args) -> None:
    argv = ["search", "--store", str(example_store.root), *args]
    clicked = run(capfd, monkeypatch, argv, lean=False)
    lean = run(capfd, monkeypatch, argv, lean=True)
    assert clicked[2] == 0 and clicked[0]
    assert lean == clicked


def test_a_type_by_the_word_people_use_stays_on_the_lean_path() -> None:
    for word in ("rule", "Rules", "people", "signals"):
        opts = entry.parse_search(["deploy", "--type", word])
        assert opts is not None, word
    assert entry.parse_search(["deploy", "--type", "rule"])["card_type"] == "feedback"


def test_errors_read_the_same(tmp_path: Path, capfd, monkeypatch) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    for store in (tmp_path / "missing", plain):
        argv = ["search", "deploy", "--store", str(store)]
        clicked = run(capfd, monkeypatch, argv, lean=False)
        lean = run(capfd, monkeypatch, argv, lean=True)
        assert clicked[2] != 0 and clicked[1].startswith("cardmem: store ")
        assert lean == clicked


@pytest.mark.parametrize("args", [
    ["--help"], ["deploy", "--base", "docs"], ["deploy", "--limit", "0"],
    ["deploy", "--limit", "many"], ["deploy", "--limit"], ["deploy", "-x"], ["-"], [],
    ["deploy", "--store", ""], ["deploy", "--json=yes"], ["deploy", "--lim", "3"],
    ["deploy", "--type", ""], ["deploy", "--type", "feedbak"], [""], ["  ", "--json"],
])
def test_what_the_lean_path_does_not_understand_goes_to_click(args) -> None:
    assert entry.parse_search(args) is None


def test_the_installed_script_takes_both_paths(example_store) -> None:
    """As a user runs it: a search, a search click must handle, and another command."""
    root = str(example_store.root)
    lean = subprocess.run([str(SCRIPT), "search", "pytest", "fixtures", "--store", root],
                          capture_output=True, text=True, timeout=60)
    assert lean.returncode == 0 and lean.stdout.startswith("projects/acme-api/pytest-fixtures")
    bad = subprocess.run([str(SCRIPT), "search", "deploy", "--limit", "0", "--store", root],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--limit" in bad.stderr
    other = subprocess.run([str(SCRIPT), "map", "--store", root], capture_output=True,
                           text=True, timeout=60)
    assert other.returncode == 0 and "pytest-fixtures" in other.stdout
