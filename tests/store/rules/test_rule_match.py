"""The matcher behind rules at the point of action: compound lines, quoting, escapes,
wrappers, substitutions, here-documents, and file paths."""
from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cardmem.store.rules.match import classify, command_strings, governed
from cardmem.store.rules.shellsplit import simple_commands

FORCE = {"bash": ["git push --force*", "git push -f*"]}


@pytest.mark.parametrize("line", [
    "git push --force origin main",
    "touch X && git push --force origin main",
    "make test; git push -f",
    "git fetch || git push --force",
    "echo start | git push --force",
    "cd repo & git push --force",
    "echo $(git push --force)",
    "echo `git push --force`",
    "env GIT_TRACE=1 git push --force",
    "GIT_TRACE=1 git push --force",
    "sudo git push --force",
    "sudo -u deploy env A=1 nohup git push --force",
    "timeout 30 git push --force",
    "/usr/bin/git push --force",
    "git push \"--force\" origin",
    "git push '--force' origin",
    "git push --f\\orce origin",
    "git \\\n  push --force",
    "bash -c 'git push --force'",
    "sh -c \"cd x && git push -f\"",
    "eval git push --force",
    "(cd repo && git push --force)",
    "{ git push --force; }",
    "git push --force 2>&1 | tee log",
    "git push --force >/dev/null 2>&1",
    "if true; then git push --force; fi",
    "echo \"$(git push --force)\"",
    "cat <(git push --force)",
])
def test_compound_lines_reach_the_push(line):
    assert governed(FORCE, "Bash", {"command": line}, "/repo"), line


@pytest.mark.parametrize("line", [
    "git push origin main",
    "echo 'git push --force'",
    "echo \"git push --force\"",
    "git commit -m 'never git push --force'",
    "git log --grep='push --force'",
    "printf '%s\\n' git push --force",
    "git commit -F- <<'EOF'\ngit push --force\nEOF\necho done",
    "git commit -m \"$(cat <<'EOF'\ngit push --force is banned\nEOF\n)\"",
    "# git push --force\nls",
    "grep -r 'git push -f' docs/",
    "git pushx --force",
])
def test_quoted_text_comments_and_heredocs_are_not_commands(line):
    assert not governed(FORCE, "Bash", {"command": line}, "/repo"), line


def test_simple_commands_words():
    assert simple_commands("a=1 sudo env B=2 git push -f 'o r' && ls -la >out 2>&1") == [
        ["git", "push", "-f", "o r"], ["ls", "-la"]]
    assert simple_commands("echo $'it\\'s' \"a \\\"b\\\" $HOME\"") == [["echo", "it's", 'a "b" $HOME']]
    assert simple_commands("echo \"unterminated") == [["echo", "unterminated"]]
    assert simple_commands("") == [] and simple_commands("   ") == []
    assert command_strings("xargs -n1 rm -rf < list") == ["rm -rf"]


def test_deep_nesting_is_bounded():
    line = "echo " + "$(echo " * 50 + "x" + ")" * 50
    assert simple_commands(line)  # no recursion error, no hang


@pytest.mark.parametrize("item,kind", [
    ("git push --force*", "bash"), ("rm", "bash"), ("-rf", "bash"),
    ("migrations/**", "path"), ("*.tf", "path"), ("path: Makefile", "path"),
    ("bash: make deploy*", "bash"), ("tool: mcp__github__merge*", "tool"),
    ("infra/prod.tfvars", "path"), ("docker-compose.yml", "path"),
])
def test_classify(item, kind):
    assert classify(item)[0] == kind


@pytest.mark.parametrize("path,patterns,hit", [
    ("/repo/db/migrations/0042_add.sql", ["migrations/**"], True),
    ("/repo/migrations/0042_add.sql", ["migrations/*"], True),
    ("/repo/infra/main.tf", ["*.tf"], True),
    ("/repo/infra/main.tfvars", ["*.tf"], False),
    ("/repo/src/app.py", ["migrations/**", "*.tf"], False),
    ("/repo/db/migrations/x.sql", ["db/migrations/**"], True),
    ("/repo/db/migrations/x.sql", ["/repo/db/**"], True),
    ("/repo/.env", [".env"], True),
    ("/repo/config/.env.production", [".env*"], True),
    ("/other/notmigrations/x.sql", ["migrations/**"], False),
])
def test_paths(path, patterns, hit):
    for tool, key in (("Edit", "file_path"), ("Write", "file_path"), ("MultiEdit", "file_path"),
                      ("NotebookEdit", "notebook_path")):
        assert bool(governed({"paths": patterns}, tool, {key: path}, "/repo")) is hit, (tool, path)


def test_path_relative_to_the_session_folder():
    rule = {"paths": ["src/generated/*"]}
    assert governed(rule, "Edit", {"file_path": "/w/proj/src/generated/a.py"}, "/w/proj")
    assert not governed(rule, "Edit", {"file_path": "/w/proj/src/a.py"}, "/w/proj")
    assert not governed(rule, "Bash", {"command": "vim src/generated/a.py"}, "/w/proj")


def test_tool_patterns_and_odd_inputs():
    rule = {"tools": ["mcp__github__merge*"]}
    assert governed(rule, "mcp__github__merge_pull_request", {}, None)
    assert not governed(rule, "mcp__github__get_issue", {}, None)
    assert not governed(FORCE, "Bash", {"command": None}, None)
    assert not governed(FORCE, "Bash", {}, None)
    assert not governed({"paths": ["*.tf"]}, "Edit", {"file_path": 3}, None)


GLOB = "ab*?[]!-/. "


@st.composite
def glob_and_text(draw):
    """A glob, and a text that is random or the glob with its wildcards filled in (so
    that many pairs match)."""
    glob = draw(st.text(GLOB, max_size=8))
    if draw(st.booleans()):
        return glob, draw(st.text(GLOB, max_size=10))
    fill = [draw(st.text("ab]/ ", max_size=3)) if ch == "*" else
            draw(st.sampled_from("ab!-")) if ch in "?[" else ch for ch in glob]
    return glob, "".join(fill)


@settings(max_examples=3000, deadline=None)
@given(glob_and_text())
def test_the_glob_shortcut_agrees_with_fnmatch(pair):
    """rule_match.fnmatchcase skips fnmatch when the literal ends cannot fit: never
    wrongly (unclosed brackets, `]` and `[!` included)."""
    import fnmatch

    glob, text = pair

    from cardmem.store.rules.match import fnmatchcase

    assert fnmatchcase(text, glob) == fnmatch.fnmatchcase(text, glob)


@settings(max_examples=2000, deadline=None)
@given(st.text("ab*", max_size=8), st.text("ab", max_size=8))
@example("*ab*ba*", "aba")  # the literal runs between stars may not overlap
def test_star_only_globs_agree_with_fnmatch(glob, text):
    """The star-only path (no fnmatch at all), on a two-letter alphabet where literal runs
    repeat and overlap: the mixed-alphabet property above rarely draws that (a mutant
    letting the runs overlap passed its 3,000 examples)."""
    import fnmatch

    from cardmem.store.rules.match import fnmatchcase

    assert fnmatchcase(text, glob) == fnmatch.fnmatchcase(text, glob)
