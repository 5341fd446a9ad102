"""The first hour, friction (issue 15): help, examples, did-you-mean, --version,
completion of card ids, plurals. In-process through CliRunner."""
from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from gitremote import cli

from cardmem.tools.cli.group import cli as group


def _commands(cmd: click.Command, ctx: click.Context, path: tuple[str, ...] = ()):
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            yield from _commands(sub, click.Context(sub, parent=ctx, info_name=name),
                                 (*path, name))
    if path:
        yield path


def _all_paths() -> list[tuple[str, ...]]:
    return list(_commands(group, click.Context(group, info_name="cardmem")))


@pytest.mark.parametrize("path", _all_paths(), ids=" ".join)
def test_every_commands_help_has_an_example(path: tuple[str, ...]) -> None:
    code, out, _err = cli(*path, "--help")
    assert code == 0
    assert "Example" in out, f"cardmem {' '.join(path)} --help has no example"
    assert "cardmem " + path[-1] in out or "cardmem " + " ".join(path) in out, out


@pytest.mark.parametrize("path", _all_paths(), ids=" ".join)
def test_no_help_text_speaks_the_internals_words(path: tuple[str, ...]) -> None:
    """"rung" and "pile" are words of docs/internals.md, not of a person's --help."""
    import re

    code, out, _err = cli(*path, "--help")
    assert code == 0
    assert not re.search(r"\brung|\bpiles?\b", out, re.I), out


def test_the_internal_hook_command_is_not_listed_but_still_runs() -> None:
    code, out, _ = cli("--help")
    assert code == 0 and " hook " not in out and " search " in out
    code, out, _ = cli("hook", "--help")
    assert code == 0 and "host hook" in out


@pytest.mark.parametrize("typo,meant", [("serach", "search"), ("remeber", "remember"),
                                        ("docter", "doctor")])
def test_a_mistyped_command_gets_a_did_you_mean(typo: str, meant: str) -> None:
    code, _out, err = cli(typo, "x")
    assert code == 2
    assert f"No such command '{typo}'" in err and f"Did you mean '{meant}'" in err, err


def test_a_mistyped_command_never_suggests_the_hidden_hook() -> None:
    code, _out, err = cli("hoko")
    assert code == 2 and "Did you mean" not in err, err


def test_version() -> None:
    from importlib.metadata import version

    code, out, _ = cli("--version")
    assert code == 0 and version("cardmem") in out


def test_optional_arguments_are_explained_in_help() -> None:
    code, out, _ = cli("log", "--help")
    assert code == 0 and "[ID]" in out and "without ID" in out, out


def _complete(args: list[str], incomplete: str, env: dict[str, str]) -> list[str]:
    from click.shell_completion import ShellComplete

    comp = ShellComplete(group, {}, "cardmem", "_CARDMEM_COMPLETE")
    return [c.value for c in comp.get_completions(args, incomplete)]


def test_shell_completion_offers_card_ids(tmp_path: Path, monkeypatch) -> None:
    store = tmp_path / "s"
    assert cli("init", str(store))[0] == 0
    assert cli("new", "feedback/run-tests", "--title", "Run tests", "--store", str(store))[0] == 0
    assert cli("new", "reference/deploy", "--title", "Deploy", "--store", str(store))[0] == 0
    monkeypatch.setenv("CARDMEM_STORE", str(store))
    assert _complete(["show"], "feed", {}) == ["feedback/run-tests"]
    assert sorted(_complete(["log"], "", {})) == ["feedback/run-tests", "reference/deploy"]
    assert _complete(["--store", str(store), "edit"], "ref", {}) == ["reference/deploy"]
    monkeypatch.setenv("CARDMEM_STORE", str(tmp_path / "none"))
    assert _complete(["show"], "", {}) == []  # no store: no candidates, no error


def test_one_card_is_one_card_not_one_cards(tmp_path: Path) -> None:
    store = tmp_path / "s"
    assert cli("init", str(store))[0] == 0
    assert cli("new", "reference/deploy", "--title", "Deploy", "--store", str(store))[0] == 0
    code, out, _ = cli("index", "--store", str(store))
    assert code == 0 and "1 card " in out and "1 cards" not in out, out
    code, out, _ = cli("context", "--store", str(store))
    assert code == 0 and "1 cards" not in out, out
    code, out, _ = cli("doctor", "--store", str(store))
    assert "1 cards" not in out and "card(s)" not in out, out
    (store / "feedback").mkdir()
    (store / "feedback" / "x.md").write_text("---\ntitle: X\ntype: feedback\n---\nDo x.\n")
    code, out, err = cli("install", "claude-code", "--settings", str(store.parent / "s.json"),
                         "--no-mcp", "--store", str(store))
    assert code == 0 and "1 rule written whole" in out and "rule(s)" not in out, out + err


def test_map_is_paged_on_a_terminal_only_when_longer_than_the_screen(tmp_path: Path,
                                                                      monkeypatch) -> None:
    import shutil

    from cardmem.tools.cli import terminal as cli_io

    store = tmp_path / "s"
    assert cli("init", str(store))[0] == 0
    for i in range(5):
        assert cli("new", f"reference/n{i}", "--title", f"N{i}", "--store", str(store))[0] == 0
    paged: list[str] = []
    monkeypatch.setattr(click, "echo_via_pager", lambda text: paged.append(text))
    monkeypatch.setattr(shutil, "get_terminal_size", lambda *a: __import__("os").terminal_size((80, 4)))
    code, out, _ = cli("map", "--store", str(store))  # not a terminal: printed
    assert code == 0 and out.count("\n") == 5 and paged == []
    monkeypatch.setattr(cli_io, "stdout_is_tty", lambda: True)
    code, out, _ = cli("map", "--store", str(store))
    assert code == 0 and out == "" and paged[0].count("\n") == 5 and "reference/n0" in paged[0]
    monkeypatch.setattr(shutil, "get_terminal_size", lambda *a: __import__("os").terminal_size((80, 40)))
    code, out, _ = cli("map", "--store", str(store))  # fits the screen: printed
    assert out.count("\n") == 5 and len(paged) == 1
