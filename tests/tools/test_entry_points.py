"""Every path cardmem hands to the outside still loads: the modules the installers write
into users' Claude Code settings, the console script and plugin entry points, and every
command of the CLI's lazy table. Stores installed before the CLI became a package keep
working without a reinstall."""
from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from importlib.metadata import entry_points

from cardmem.hosts.claude_code import install, mcp_install
from cardmem.tools.cli.group import LAZY, cli


def runnable(module: str) -> bool:
    """True when `python -m module` finds something to run."""
    spec = importlib.util.find_spec(module)
    if spec is None:
        return False
    if spec.submodule_search_locations is not None:  # a package runs its __main__
        return importlib.util.find_spec(module + ".__main__") is not None
    return True


def test_the_modules_written_into_settings_still_run() -> None:
    from cardmem.hosts import install as other_hosts

    written = [install.MODULE, "cardmem.hosts.pretool", other_hosts.HOOK_MODULE, mcp_install.MODULE,
               # as cardmem 0.1.0 wrote them (tests/hosts/test_previous_release.py runs them)
               "cardmem.hooks.claude_code", "cardmem.hooks.pretool"]
    assert all(runnable(m) for m in written), [m for m in written if not runnable(m)]
    assert mcp_install.server_entry()["args"][:2] == ["-m", "cardmem.tools.cli"]
    assert not runnable("cardmem.tools.no_such_cli")  # the check can fail


def test_python_m_cardmem_tools_cli_runs_the_cli() -> None:
    """The process boundary is the point: this is what an MCP host runs."""
    proc = subprocess.run([sys.executable, "-m", "cardmem.tools.cli", "--help"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "mcp" in proc.stdout and "search" in proc.stdout


def test_every_entry_point_and_lazy_command_loads() -> None:
    groups = ("console_scripts", "cardmem.commands", "cardmem.checks")
    eps = [ep for g in groups for ep in entry_points(group=g) if ep.value.startswith("cardmem.")]
    assert {ep.name for ep in eps} >= {"cardmem", "hook", "install", "uninstall", "rules"}
    for ep in eps:
        assert callable(ep.load()), ep.value
    for name, target in LAZY.items():
        module, attr = target.split(":")
        assert getattr(importlib.import_module(module), attr).name == name
    assert set(LAZY) <= set(cli.list_commands(None))  # type: ignore[arg-type]


def test_the_old_console_script_target_still_imports_and_options_stays_light() -> None:
    """`cardmem.tools.cli:main` was the console script before tools/entry.py (a wrapper
    pip wrote then imports it); importing cli.options alone does not load the group."""
    code = ("import sys\nimport cardmem.tools.cli.options\n"
            "print('cardmem.tools.cli.group' in sys.modules)\n"
            "from cardmem.tools.cli import cli, main\n"
            "from cardmem.tools.cli.group import cli as g\nprint(cli is g, callable(main))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.stdout.split() == ["False", "True", "True"], p.stderr
