"""`python -S …/hooks/pretool_start.py [--store PATH]`, as cardmem 0.1.0 installed Claude
Code's PreToolUse hook: runs hosts/pretool_start.py, the same fast start (no `site`)."""
import os  # frozen in the interpreter: found before sys.path is looked at
import sys

START = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "hosts",
                     "pretool_start.py")
HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0] or os.curdir) == HERE:
    del sys.path[0]  # hooks/ is a package, not a place for top-level names
if __name__ == "__main__":
    sys.argv[0] = START
    with open(START, encoding="utf-8") as f:
        code = compile(f.read(), START, "exec")
    exec(code, {"__name__": "__main__", "__file__": START})  # noqa: S102 - our own file
