"""`python -m cardmem.hosts.claude_code [--store PATH] [--rules-file PATH] EVENT`: Claude
Code's hooks, as `cardmem install claude-code` writes them (hosts/hook.py does the work)."""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from cardmem.hosts.hook import main as hook

    return hook(["--host", "claude", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
