"""`cardmem ARGS` in this process, shaped like the subprocess a user starts.

A subprocess costs ~0.3-0.5 s (Python, click, the store's imports, again each time); this
runs the same `main()` the process would: the console script's (tools/entry.py, which
takes the lean path for `cardmem search`) or `python -m cardmem.tools.cli`'s
(tools/cli/group.py), with its own argv, environment, stdin, stdout and stderr, and its
exit code from SystemExit. main() turns errors into one stderr line, so its refusals are
what a user sees. An exception main() lets through is raised here: a traceback the
process would print fails the test either way.

Tests of the process boundary itself (entry points, hooks as the host runs them, exit
codes and signals, several processes at once) still start real processes.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass


@dataclass
class Ran:
    """What subprocess.run(..., capture_output=True, text=True) gives the fields tests read."""
    args: list[str]
    returncode: int
    stdout: str
    stderr: str


def run(*args: str, input: str | None = None, env: Mapping[str, str | None] | None = None,
        script: bool = False) -> Ran:
    """Run `cardmem ARGS` in-process. env's entries are set for the run (None unsets one);
    script: the console script's main (tools/entry.py) instead of `python -m
    cardmem.tools.cli`'s."""
    if script:
        from cardmem.tools.entry import main
    else:
        from cardmem.tools.cli.group import main
    return call(main, "cardmem", *args, input=input, env=env)


def call(main: Callable[[], object], prog: str, *args: str, input: str | None = None,
         env: Mapping[str, str | None] | None = None) -> Ran:
    """Run a process's main() here with sys.argv [prog, *args], env's entries set (None unsets
    one), input on stdin; its return value or SystemExit is the exit code. The environment is
    as it was afterwards, also for variables main() sets itself (LESS, the BLAS threads)."""
    from click.testing import CliRunner

    argv, environ = sys.argv, dict(os.environ)
    code = 0
    with CliRunner().isolation(input=input, env=dict(env or {})) as (out, err, _):
        sys.argv = [prog, *args]
        try:
            rc = main()
            code = rc if isinstance(rc, int) else 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if isinstance(exc.code, str):
                sys.stderr.write(exc.code + "\n")
        finally:
            sys.argv = argv
            os.environ.clear()
            os.environ.update(environ)
            sys.stdout.flush()
            sys.stderr.flush()
    return Ran([prog, *args], code, out.getvalue().decode(), err.getvalue().decode())
