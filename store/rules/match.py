"""Which rules a tool call touches, and why: the decision behind the PreToolUse hook.

A rule names what it governs in `applies_to` (store/rules/triggers.py compiles them):

- a command pattern, a shell-style glob (fnmatch: `*` also spans spaces) matched against
  each simple command of a Bash line (store/rules/shellsplit.py), its words joined by one space,
  and again with the program's directory dropped (`/usr/bin/git` as `git`);
- a path pattern (`path:` prefix, or any pattern with a `/`, a leading `*.` or a `.` and
  no space), matched against the file an edit or write tool names: a pattern without
  `/` against the file's name, one with `/` against the path relative to the session's
  folder and every trailing part of the absolute path (`migrations/**` matches
  `/repo/db/migrations/001.sql`);
- a tool pattern (`tool:` prefix), matched against the tool's name (`tool: mcp__github__*`).

A rule without `applies_to` may still be brought up, as a reminder only, when the call's
words clearly match its title, aliases and tags: `relevance` scores the share of the
rule's keyword weight (idf over all rules) found in the call, and the caller keeps a rule
at or above the threshold calibrated in tests/store/search/test_relevance.py.
"""
from __future__ import annotations

import os

from .shellsplit import simple_commands

EDIT_TOOLS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path",
              "NotebookEdit": "notebook_path"}
# Words that say how a rule is phrased, not what it is about.
STOP = frozenset("""a an and are as at be before after by do does don't dont for from if in
into is it its never no not of on or our please prefer should must always avoid use using
the this that to when with without we you your run make sure any all only ever""".split())
# Relevance from which a rule without applies_to reminds: the lowest with precision
# >= 0.9 on tests/store/search/relevance_set.py (bench/RESULTS.md); [rules] relevance_threshold.
THRESHOLD = 0.65
MIN_SHARED = 2  # keywords a call must share with a rule (an alias phrase counts as enough)


def classify(pattern: str) -> tuple[str, str]:
    """(kind, glob) of one applies_to item: kind is "bash", "path" or "tool"."""
    p = pattern.strip()
    for kind in ("bash", "path", "tool"):
        if p.lower().startswith(kind + ":"):
            return kind, p[len(kind) + 1:].strip()
    if " " not in p and ("/" in p or p.startswith("*.") or ("." in p.lstrip(".") and not
                                                            p.startswith("-"))):
        return "path", p
    return "bash", p


def command_strings(line: str) -> list[str]:
    """Each simple command of a Bash line as the text patterns are matched against."""
    return [" ".join(words) for words in simple_commands(line)]


def fnmatchcase(text: str, glob: str) -> bool:
    """fnmatch.fnmatchcase, without its regular expressions where they are not needed.
    fnmatch compiles one per pattern (and imports `re`): the dearest step of a hook's
    call. A pattern whose literal ends do not fit the text cannot match, and one whose
    only wildcard is `*` (most of them) is matched by finding its literal parts in order;
    fnmatch itself sees only the rest (bench/bench_tricks.py; bench/RESULTS.md, "Speed
    tricks, each against its plain alternative")."""
    head = len(glob)
    for i, ch in enumerate(glob):
        if ch in "*?[":
            head = i
            break
    if not text.startswith(glob[:head]):
        return False
    if head == len(glob):
        return text == glob
    # After the last wildcard or closing bracket everything is literal (an unclosed `[` is).
    tail = max(glob.rfind("*"), glob.rfind("?"), glob.rfind("]"), head) + 1
    if not text.endswith(glob[tail:]) or len(text) < head + len(glob) - tail:
        return False
    if "?" in glob or "[" in glob:
        from fnmatch import fnmatchcase as match

        return match(text, glob)
    tail = glob.rfind("*") + 1  # without `[`, a `]` is literal
    if not text.endswith(glob[tail:]) or len(text) < head + len(glob) - tail:
        return False
    at, end = head, len(text) - (len(glob) - tail)
    for part in glob[head:tail].split("*"):  # the literal runs between the stars
        if part:
            found = text.find(part, at, end)
            if found < 0:
                return False
            at = found + len(part)
    return True


def _bash_hit(globs: list[str], commands: list[list[str]]) -> tuple[str, str] | None:
    for words in commands:
        text = " ".join(words)
        short = " ".join([words[0].rsplit("/", 1)[-1], *words[1:]]) if "/" in words[0] else text
        for g in globs:
            if fnmatchcase(text, g) or fnmatchcase(short, g):
                return g, text
    return None


def _path_forms(path: str, cwd: str | None) -> tuple[str, list[str]]:
    """(file name, forms to match a pattern with `/` against)."""
    path = path.replace("\\", "/")
    forms = [path]
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        forms.append(path[len(cwd.rstrip("/")) + 1:])
    parts = path.strip("/").split("/")
    forms += ["/".join(parts[i:]) for i in range(1, len(parts))]
    return parts[-1], forms


def _path_hit(globs: list[str], path: str, cwd: str | None) -> tuple[str, str] | None:
    name, forms = _path_forms(path, cwd)
    for g in globs:
        g2 = g.lstrip("/") if g.startswith("/") and not g.startswith("//") else g
        if "/" not in g:
            if fnmatchcase(name, g):
                return g, path
        elif fnmatchcase(path, g) or any(fnmatchcase(f, g2) for f in forms):
            return g, path
    return None


def call_paths(tool: str, tool_input: dict) -> list[str]:
    key = EDIT_TOOLS.get(tool)
    value = tool_input.get(key) if key else None
    return [value] if isinstance(value, str) and value else []


def governed(rule: dict, tool: str, tool_input: dict, cwd: str | None,
             commands: list[list[str]] | None = None) -> tuple[str, str] | None:
    """(pattern, what it matched) if the rule's applies_to covers this call, else None."""
    if rule.get("tools"):
        for g in rule["tools"]:
            if fnmatchcase(tool, g):
                return f"tool: {g}", tool
    if tool == "Bash" and rule.get("bash"):
        if commands is None:
            commands = simple_commands(str(tool_input.get("command") or ""))
        return _bash_hit(rule["bash"], commands)
    if rule.get("paths"):
        for p in call_paths(tool, tool_input):
            hit = _path_hit(rule["paths"], p, cwd)
            if hit:
                return hit
    return None


# --- relevance (rules without applies_to) -----------------------------------------

def stem(word: str) -> str:
    """A light stem, the same at build and at hook time (no Porter tables to load)."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[:-len(suffix)]
    return word


def words(text: str) -> list[str]:
    """Lowercase alphanumeric words of text, 2+ characters, stop words out, stemmed."""
    out, cur = [], []
    for ch in text.lower() + " ":
        if ch.isalnum():
            cur.append(ch)
        elif cur:
            w = "".join(cur)
            cur = []
            if len(w) > 1 and w not in STOP and not w.isdigit():
                out.append(stem(w))
    return out


def call_text(tool: str, tool_input: dict, commands: list[list[str]] | None = None) -> str:
    """The words of a call that relevance looks at: a Bash line's commands, an edit's
    path, an MCP tool's name and string arguments (capped)."""
    if tool == "Bash":
        cmds = commands if commands is not None else \
            simple_commands(str(tool_input.get("command") or ""))
        return " ".join(" ".join(c) for c in cmds)[:4000]
    if tool in EDIT_TOOLS:
        return " ".join(call_paths(tool, tool_input))
    parts = [tool.replace("__", " ").replace("_", " ")]
    for v in tool_input.values():
        if isinstance(v, str):
            parts.append(v[:500])
    return " ".join(parts)[:4000]


def _starts(commands: list[list[str]]) -> list[str]:
    """Each simple command as lowercase text, `python -m` taken off (`python -m pip` runs pip)."""
    out = []
    for words in commands:
        w = [x.lower() for x in words]
        if len(w) > 2 and w[0].rsplit("/", 1)[-1].startswith("python") and w[1] == "-m":
            w = w[2:]
        out.append(" ".join(w) + " ")
    return out


def relevance(table: dict, text: str,
              commands: list[list[str]] | None = None) -> list[tuple[float, int, str]]:
    """(score, rule index, why) for rules without applies_to sharing words with text,
    best first. The score is the share of the rule's keyword weight the call carries.
    An alias scores 1 when a simple command of a Bash line starts with it (`pip install`
    is named by `pip install x`, not by `uv pip install x`), or, for other tools, when the
    call's text holds it whole."""
    index = table.get("keywords") or {}
    got: dict[int, list[str]] = {}
    score: dict[int, float] = {}
    for w in set(words(text)):
        hit = index.get(w)  # "weight rule rule ..." (store/rules/triggers.py)
        if hit:
            weight, *rules = hit.split(" ")
            for r in map(int, rules):
                got.setdefault(r, []).append(w)
                score[r] = score.get(r, 0.0) + float(weight)
    out = []
    kw = table["kw"]
    for r, shared in got.items():
        total, n = kw[r].split(" ")
        s = score[r] / (float(total) or 1)
        if len(shared) < min(MIN_SHARED, int(n)):
            s = 0.0
        out.append((round(s, 3), r, "shares " + ", ".join(sorted(shared))))
    by_first = table.get("aliases") or {}
    if by_first:
        if commands is not None:
            heads = [(c.split(" ", 1)[0], c) for c in _starts(commands)]
        else:
            low = " ".join(text.lower().split()).split(" ")
            heads = [(low[i], " ".join(low[i:]) + " ") for i in range(len(low))]
        for first, rest in heads:
            named = by_first.get(first)
            for entry in named.split("\n") if named else ():
                a, r = entry.rsplit("\t", 1)
                if rest.startswith(a + " "):
                    out.append((1.0, int(r), f"names its alias '{a}'"))
    out.sort(key=lambda x: (-x[0], x[1]))
    seen, best = set(), []
    for s, r, why in out:
        if r not in seen:
            seen.add(r)
            best.append((s, r, why))
    return best


# --- the decision -----------------------------------------------------------------

def project_of(cwd: str | None, mapping: dict[str, str]) -> str | None:
    """The session's project as store/context/session.py's project_for finds it (the nearest
    folder holding `.git`, else cwd; named through [projects]), with stat calls only."""
    if not cwd:
        return None
    here = os.path.realpath(cwd)
    folder, d = here, here
    while True:
        if os.path.exists(os.path.join(d, ".git")):  # git/head_file.is_repo, inlined: os only
            folder = d
            break
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    name = os.path.basename(folder)
    return mapping.get(folder) or mapping.get(name) or name or None


def _candidates(index: dict, tool: str, tool_input: dict,
                commands: list[list[str]] | None) -> list[int]:
    """The governed rules this call can concern (see triggers._candidates), in order."""
    found = set(index.get("tool", ()))
    if commands:
        found.update(index.get("bash_any", ()))
        by_program = index.get("bash", {})
        for words_ in commands:
            found.update(by_program.get(words_[0].rsplit("/", 1)[-1], ()))
    paths = call_paths(tool, tool_input)
    if paths:
        found.update(index.get("path_any", ()))
        for p in paths:
            name = p.rsplit("/", 1)[-1]
            if "." in name:
                found.update(index.get("path", {}).get(name[name.rindex("."):], ()))
    return sorted(found)


def decide(table: dict, tool: str, tool_input: dict, cwd: str | None,
           last: str | None = None, threshold: float | None = None) -> list[dict]:
    """The rules that fire for this call: [{"id", "title", "action", "why", "kind"}],
    refusals first, then questions, then reminders. `last`: the rule a relevance
    reminder named last in this session (not named twice in a row)."""
    if not isinstance(tool_input, dict):
        tool_input = {}
    commands = simple_commands(str(tool_input.get("command") or "")) if tool == "Bash" else None
    gov = table.get("governed") or {}
    here: list[str | None] = []  # the session's project, found when a rule has one

    def elsewhere(rule_project: str | None) -> bool:
        if rule_project and not here:
            here.append(project_of(cwd, table.get("projects") or {}))
        return bool(rule_project) and rule_project != here[0]

    out: list[dict] = []
    for r in _candidates(gov, tool, tool_input, commands):
        rule = gov["rules"][r]  # patterns, enforce, project; the rest only when it fires
        if elsewhere(rule.get("project")):
            continue
        hit = governed(rule, tool, tool_input, cwd, commands)
        if hit:
            full = table["rules"][r]
            out.append({"id": full["id"], "title": full["title"], "action": rule["enforce"],
                        "kind": "applies_to", "why": f"`{hit[0]}` matched `{hit[1]}`",
                        **({"downgraded": full["downgraded"]} if "downgraded" in full else {})})
    limit = table.get("threshold", THRESHOLD) if threshold is None else threshold
    fired = {f["id"] for f in out}
    for score, r, why in relevance(table, call_text(tool, tool_input, commands), commands):
        if score < limit:
            break
        rule = table["rules"][r]
        if rule["id"] in fired or rule["id"] == last or elsewhere(rule.get("project")):
            continue
        out.append({"id": rule["id"], "title": rule["title"], "action": "remind",
                    "kind": "relevance", "why": f"relevance {score:.2f}: the call {why}"})
        break  # one reminder by relevance per call: never in the way
    order = {"deny": 0, "ask": 1, "remind": 2}
    out.sort(key=lambda f: order[f["action"]])
    return out
