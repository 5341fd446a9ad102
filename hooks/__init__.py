"""The old home of the hosts' adapters, kept so that settings written by cardmem 0.1.0 keep
working: `python -m cardmem.hooks.claude_code …`, `python -m cardmem.hooks.pretool …` and
`python -S …/hooks/pretool_start.py …` each run what moved to hosts/. `cardmem install`
rewrites such entries to the new paths (hosts/claude_code/install.py)."""
