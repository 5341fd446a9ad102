"""`python -m cardmem.hooks.claude_code [--store PATH] [--rules-file PATH] EVENT`, as cardmem
0.1.0 installed it: Claude Code's hooks, now in hosts/ (hosts/hook.py)."""
import sys

from cardmem.hosts.hook import main

if __name__ == "__main__":
    sys.exit(main(["--host", "claude", *sys.argv[1:]]))
