"""The first hour, friction (issue 15): installing, the demo, the example store's
settings. In-process through CliRunner."""
from __future__ import annotations

import fnmatch
import shlex
import tomllib
from pathlib import Path

import pytest
from gitremote import cli

from cardmem.tools.cli import demo

REPO = Path(__file__).resolve().parents[2]


def test_the_example_store_ships_in_the_wheel_whole() -> None:
    """Every file of cards/ is package data of `cardmem.example`, which the demo reads."""
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "cardmem.example" in cfg["packages"]
    assert cfg["package-dir"]["cardmem.example"] == "cards"
    globs = cfg["package-data"]["cardmem.example"]
    files = [p.relative_to(REPO / "cards").as_posix() for p in (REPO / "cards").rglob("*")
             if p.is_file() and ".cardmem" not in p.parts and "__pycache__" not in p.parts]
    assert len(files) > 40
    missed = [f for f in files if not any(
        fnmatch.fnmatch(f, g) if "/" in g or "**" in g else ("/" not in f and fnmatch.fnmatch(f, g))
        for g in globs)]
    assert missed == []
    assert demo.example_store() == REPO / "cards"
    assert demo.EXAMPLE == demo.example_store()


def test_demo_prints_pasteable_commands_and_what_to_do_next(monkeypatch) -> None:
    monkeypatch.setattr(demo, "STEPS", [("remember", "remember", "Demo note", "--body",
                                         "cardmem demo ran here.")])
    code, out, _ = cli("demo")
    assert code == 0
    shown = next(line for line in out.splitlines() if line.startswith("$ cardmem remember"))
    assert shlex.split(shown[2:]) == ["cardmem", "remember", "Demo note", "--body",
                                      "cardmem demo ran here."]
    assert "created reference/demo-note" in out
    assert "cardmem demo --keep" in out and "cardmem init" in out
    assert "install claude-code" in out


def test_demo_keep_says_how_to_go_on_with_the_store(monkeypatch) -> None:
    monkeypatch.setattr(demo, "STEPS", [])
    code, out, _ = cli("demo", "--keep")
    assert code == 0
    line = next(x for x in out.splitlines() if "export CARDMEM_STORE=" in x)
    kept = Path(shlex.split(line.split("=", 1)[1])[0])
    try:
        assert (kept / "cardmem.toml").is_file() and (kept / ".git").is_dir()
        assert cli("map", "--store", str(kept))[0] == 0
    finally:
        import shutil

        shutil.rmtree(kept.parent, ignore_errors=True)


def test_the_example_settings_name_no_file_missing_from_the_repository() -> None:
    text = (REPO / "cards" / "cardmem.toml").read_text() + (REPO / "cards" / "README.md").read_text()
    assert "DESIGN" not in text or (REPO / "DESIGN.md").is_file()


def test_exit_codes_are_documented_and_kept(tmp_path: Path, monkeypatch) -> None:
    import re

    import click

    from cardmem.tools.cli import group as cli_module

    readme = (REPO / "docs" / "cards.md").read_text()
    table = dict(re.findall(r"^\| (\d+) \| (.+) \|$", readme, re.M))
    assert set(table) == {"0", "1", "2", "3", "4", "130"}
    store = tmp_path / "s"
    assert cli("init", str(store))[0] == 0
    assert cli("show", "reference/none", "--store", str(store))[0] == 1
    assert cli("show", "../x", "--store", str(store))[0] == 2
    assert cli("show", "--no-such-option", "--store", str(store))[0] == 2
    assert cli("nosuchcommand")[0] == 2

    @cli_module.cli.command("interrupted-for-test")
    def interrupted() -> None:
        raise click.exceptions.Abort()
    try:
        monkeypatch.setattr("sys.argv", ["cardmem", "interrupted-for-test"])
        with pytest.raises(SystemExit) as done:
            cli_module.main()
        assert done.value.code == 130
    finally:
        cli_module.cli.commands.pop("interrupted-for-test")


def _prose(text: str) -> str:
    """The README without code: fenced blocks, indented blocks and `inline code`."""
    import re

    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    text = "\n".join(line for line in text.splitlines() if not line.startswith("    "))
    return re.sub(r"`[^`]*`", "", text)


@pytest.mark.parametrize("page,terms", [
    ("docs/internals.md", ("rung 1", "pile")),
    ("docs/ask-and-slack.md", ("walk", "floor")),
    ("docs/hooks-and-rules.md", ("signal",)),
])
def test_the_docs_define_their_own_words_where_they_first_appear(page: str, terms) -> None:
    prose = _prose((REPO / page).read_text()).lower()
    for term in terms:
        first = prose.find(term)
        assert first >= 0, term
        assert prose[first - 2:first] == "**", f"{term!r} is first used undefined: " \
            f"{prose[first - 80:first + 80]!r}"
    assert "compound" not in prose or "compounding (filing signals" in prose


def test_outside_git_the_project_is_the_folders_name_as_the_readme_says(tmp_path: Path) -> None:
    from cardmem.store.context import project_for
    from cardmem.store.store import init

    store = init(tmp_path / "s")[0]
    folder = tmp_path / "Acme API"
    (folder / "src").mkdir(parents=True)
    assert project_for(store, folder / "src") == "src"
    assert project_for(store, folder) == "acme-api"
    (folder / ".git").mkdir()
    assert project_for(store, folder / "src") == "acme-api"
    readme = " ".join((REPO / "docs" / "hooks-and-rules.md").read_text().split())
    assert "or, outside git, of the current folder" in readme


def test_an_interrupted_demo_leaves_no_store_behind(tmp_path: Path, monkeypatch) -> None:
    import tempfile

    made = tmp_path / "demo-tmp"

    def mkdtemp(prefix: str = "") -> str:
        made.mkdir()
        return str(made)

    def interrupted(*_a, **_k) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    monkeypatch.setattr(demo, "STEPS", [("map", "map")])
    monkeypatch.setattr(demo, "_step", interrupted)
    code, _, _ = cli("demo")
    assert code == 130
    assert not made.exists()


def test_the_demo_says_the_first_model_load_its_search_step_waits_on(tmp_path: Path,
                                                                     monkeypatch) -> None:
    """The steps run as children with stderr captured, so the tour itself says it."""
    from cardmem.tools.cli import progress

    monkeypatch.setattr(progress, "shown", lambda *a, **k: True)  # as on a terminal
    monkeypatch.setattr(demo, "STEPS", [("search", "search", "tests")])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "no-cache-yet"))
    monkeypatch.setenv("CARDMEM_SEMANTIC", "on")
    code, out, err = cli("demo")
    assert code == 0, err
    assert progress.MODEL_FIRST_LOAD in err


@pytest.mark.parametrize("args,code", [
    (["receipts", "--since", "yesterday"], 2),
    (["recent", "--since", "yesterday"], 2),
    (["log", "reference/none"], 1),
    (["show", "reference/none"], 1),
    (["rm", "reference/none"], 1),
    (["mv", "reference/none", "reference/x"], 1),
    (["new", "Reference/Upper"], 2),
    (["remember", "Empty", "--body", ""], 2),
    (["list", "--type", "nosuchtype"], 2),
    (["receipts", "--limit", "0"], 2),
])
def test_exit_codes_command_by_command_as_the_table_says(tmp_path: Path, args, code) -> None:
    store = tmp_path / "s"
    assert cli("init", str(store))[0] == 0
    got, out, err = cli(*args, "--store", str(store))
    assert got == code, err
    assert err.startswith(("cardmem: ", "Usage:", "Error:")) and "Traceback" not in err


def test_receipts_takes_limit_and_still_the_older_last(tmp_path: Path) -> None:
    store = tmp_path / "s"
    assert cli("init", str(store))[0] == 0
    for flag in ("--limit", "--last"):
        assert cli("receipts", flag, "2", "--json", "--store", str(store))[:2] == (0, "[]\n")
    code, out, _ = cli("receipts", "--help")
    assert "--limit" in out and "--last" not in out


def test_the_settings_init_writes_spell_out_every_default(tmp_path: Path) -> None:
    """Every section and key cardmem reads is in the cardmem.toml `init` writes, at its
    default (the docs say so: [store], [maintain], [projects], [slack] were missing)."""
    from cardmem.store import config

    import re

    store = tmp_path / "s"
    assert cli("init", str(store))[0] == 0
    text = (store / "cardmem.toml").read_text()
    assert tomllib.loads(text)  # valid as written; sections after [rules] commented out
    shown = re.sub(r"^# (\[\w+\]|\w+ = )", r"\1", text, flags=re.M)
    shown = shown.replace('"acme-api-checkout" = "acme-api"', "")  # [projects]' example
    assert tomllib.loads(shown) == config.DEFAULTS
    # a section appended to it, as the docs show, still reads
    (store / "cardmem.toml").write_text(text + '\n[projects]\n"app" = "acme-api"\n[store]\n'
                                        "lock_timeout_s = 3\n")
    assert config.load(store)["store"]["lock_timeout_s"] == 3
