"""Every command the README and docs/ show is one cardmem accepts (its command, subcommand
and options parse as written), and the README's quick start runs as written on a fresh
store. README stays a front door: short, and the internals' words stay in docs/internals."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest
from gitremote import cli

from cardmem.tools.cli.group import cli as group

REPO = Path(__file__).resolve().parents[3]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
COMMAND = re.compile(r"^(?:[A-Z_]+=\S+ )*cardmem (.*)$")


def shown_commands(page: Path) -> list[str]:
    """The `cardmem ...` lines of a page's code (fenced or indented blocks), env prefix and
    trailing comment left off."""
    found, fenced = [], False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if (fenced or line.startswith("    ")) and (m := COMMAND.match(line.strip())):
            found.append(m.group(1))
    return found


def _parse(cmd: click.Command, name: str, args: list[str], parent: click.Context | None) -> None:
    ctx = cmd.make_context(name, args, parent=parent)
    if isinstance(cmd, click.Group):
        rest = [*ctx._protected_args, *ctx.args]  # click keeps the subcommand's name apart
        if rest:
            sub_name, sub, sub_args = cmd.resolve_command(ctx, rest)
            assert sub is not None, rest
            _parse(sub, sub_name or rest[0], sub_args, ctx)


CASES = [(page.name, line) for page in PAGES for line in shown_commands(page)]


def test_the_pages_show_commands() -> None:
    names = {name for name, _ in CASES}
    assert "README.md" in names and len(names) >= 6 and len(CASES) > 40


@pytest.mark.parametrize("page,line", CASES, ids=[f"{p}: {c[:40]}" for p, c in CASES])
def test_every_shown_command_parses(page: str, line: str) -> None:
    args = shlex.split(line.replace("[", "").replace("]", ""), comments=True)
    try:
        _parse(group, "cardmem", args, None)
    except click.UsageError as exc:  # pragma: no cover - the failure's message
        pytest.fail(f"{page}: `cardmem {line}`: {exc.format_message()}")


def test_the_quick_start_runs_as_written(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text()
    block = readme.split("## Quick start", 1)[1].split("##", 1)[0]
    lines = [line.strip() for line in block.splitlines() if line.startswith("    ")]
    assert 8 <= len(lines) <= 12
    store = tmp_path / "notes"
    env = {"HOME": str(tmp_path), "CARDMEM_STORE": None}
    for line in lines:
        args = shlex.split(line.replace("~/notes", str(store)), comments=True)
        if args[0] == "export":
            env["CARDMEM_STORE"] = args[1].split("=", 1)[1]
            continue
        if args[1:3] == ["install", "claude-code"]:
            args += ["--settings", str(tmp_path / ".claude" / "settings.json")]
        from clikit import run

        ran = run(*args[1:], env=env)
        assert ran.returncode == 0, (line, ran.stderr)
    assert cli("search", "deploy", "--store", str(store))[0] == 0


def test_the_readme_is_a_front_door() -> None:
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    heads = re.findall(r"^## (.+)$", readme, re.M)
    assert heads[:3] == ["Install", "Quick start", "Claude Code"], heads
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (REPO / link).is_file(), link


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_rung_and_pile_are_words_of_the_internals_only(page: Path) -> None:
    if page.name == "internals.md":
        return
    text = page.read_text().lower()
    assert not re.search(r"\brungs?\b|\bpiles?\b", text), page.name
