"""`python -m cardmem.hooks.pretool [--store PATH]`, as cardmem installed it before the
script start: the PreToolUse hook, now hosts/pretool.py."""
import sys

from cardmem.hosts.pretool import main

if __name__ == "__main__":
    sys.exit(main())
