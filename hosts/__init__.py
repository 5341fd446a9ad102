"""The hosts: the agents cardmem serves through their hooks (Claude Code, Codex, Gemini CLI,
Cursor, Copilot CLI). What every host shares lives here once; what is one host's, in its
own package.

hook.py           the one hook program: a host's payload in, the host's answer out
event.py          the payload read into one frozen Event, tools in the matcher's words
adapters.py       which module speaks which host's protocol
session_start.py  the rung-1 pile at session start, fitted to the host's cap
prompt.py         per-prompt cards, not shown twice in a session
pretool.py        rules at the point of action (started without site: pretool_start.py)
learn.py          the learner's host side, in its detached process (the learning itself:
                  tools/learning/)
install.py        install/uninstall for hosts that keep hooks in a JSON file (settings.py)
checks.py         what `cardmem doctor` checks of the installed hosts
cli.py            `cardmem hook|install|uninstall`; rules_cli.py `cardmem rules`
claude_code/ codex/ gemini/ cursor/ copilot/
                  each host's protocol.py (its fields and limits) and install spec
"""
