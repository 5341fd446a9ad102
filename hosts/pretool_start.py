"""Start the PreToolUse hook without `site`:  python -S …/hosts/pretool_start.py [--host HOST] [--store PATH]

`site` (site-packages, `.pth` files, an editable install's import finder) is most of a
Python process's start-up: about 60 of the 88 million instructions of `python -c pass` in
cardmem's own virtualenv. The PreToolUse hook runs before every tool call and needs
nothing outside the standard library and cardmem, so `cardmem install claude-code` starts
it with `python -S` and this script: it makes `cardmem` importable from the folder
holding this one (`hosts/`, `store/` and `tools/` are siblings in an installed tree and
in an editable one) and runs hosts/pretool.py. When they are not there, `site` runs
after all; so it does when the hook must rebuild its table, which reads cards with the
installed packages (hosts/pretool.py).
"""
import os  # frozen in the interpreter: found before sys.path is looked at
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0] or os.curdir) == HERE:
    del sys.path[0]  # this script's folder: hosts/ is a package, not a place for top-level names


def main() -> int:
    # cardmem is a namespace package over the folder holding hosts/, store/ and tools/:
    # site-packages/cardmem/ when installed, the source tree when installed editable.
    top = os.path.dirname(HERE)
    if "cardmem" not in sys.modules and os.path.isfile(os.path.join(top, "store", "rules", "triggers.py")):
        cardmem = type(sys)("cardmem")
        cardmem.__path__ = [top]  # what an import finder would have found
        sys.modules["cardmem"] = cardmem
    elif sys.flags.no_site:
        import site

        site.main()
    from cardmem.hosts import pretool

    return pretool.main()


if __name__ == "__main__":
    sys.exit(main())
