"""SessionStart as Claude Code sees it: never more than the host shows whole (counted in
UTF-16 units, as the host counts), every rule through the rules file, and the person told
in one line (systemMessage) when memory is degraded."""
from __future__ import annotations

import io
import json
from pathlib import Path

from cardmem.hosts.hook import run
from cardmem.hosts.session_start import MAX_CONTEXT, fit_host, host_len
from cardmem.store.store import init


def start(store: Path | None, payload: dict, rules_file: Path | None = None) -> dict:
    out = io.StringIO()
    assert run("session-start", str(store) if store else None, stdin=io.StringIO(json.dumps(payload)),
               stdout=out, rules_file=str(rules_file) if rules_file else None) == 0
    return json.loads(out.getvalue())


def test_host_len_counts_utf16_units_like_the_host():
    assert host_len("abc") == 3 and host_len("é") == 1 and host_len("😀") == 2


def test_fit_host_cuts_at_a_line_end_and_says_so():
    text = "\n".join(f"line {i} 😀😀" for i in range(3000))
    out, cut = fit_host(text)
    assert host_len(out) <= MAX_CONTEXT < host_len(text) and cut > 0
    assert out.rstrip().endswith("`cardmem context` shows it whole)")
    assert all(line.startswith("line ") or line.startswith("(cardmem") or not line
               for line in out.splitlines())
    assert fit_host("short") == ("short", 0)


def _rules(root: Path, n: int, body: str) -> None:
    (root / "feedback").mkdir(exist_ok=True)
    for i in range(n):
        (root / "feedback" / f"r{i:03d}.md").write_text(
            f"---\ntitle: Rule {i}\ntype: feedback\n---\n{body}\n", encoding="utf-8")


def test_many_rules_without_a_rules_file_stay_under_the_cap_and_the_user_is_told(tmp_path):
    s, _ = init(tmp_path / "s")
    _rules(s.root, 200, "Ünïcödé 😀 rule text, long enough to matter. " * 6)
    out = start(s.root, {"cwd": str(tmp_path)})
    ctx = out["hookSpecificOutput"]["additionalContext"]
    assert host_len(ctx) <= MAX_CONTEXT
    assert "rule(s) reached the model by title only" in out["systemMessage"]
    assert "cardmem install claude-code" in out["systemMessage"]


def test_with_a_rules_file_every_rule_is_whole_there_and_nothing_is_said(tmp_path):
    s, _ = init(tmp_path / "s")
    _rules(s.root, 200, "Ünïcödé 😀 rule text, long enough to matter. " * 6)
    target = tmp_path / "home" / ".claude" / "rules" / "cardmem.md"
    first = start(s.root, {"cwd": str(tmp_path)}, target)  # the file did not exist yet
    assert host_len(first["hookSpecificOutput"]["additionalContext"]) <= MAX_CONTEXT
    assert "title only" in first["systemMessage"]
    assert target.read_text(encoding="utf-8").count("### Rule ") == 200
    second = start(s.root, {"cwd": str(tmp_path)}, target)
    assert "systemMessage" not in second
    ctx = second["hookSpecificOutput"]["additionalContext"]
    assert f"200 rules are in force, loaded whole at start-up from the rules file {target}" in ctx


def test_no_store_is_said_to_the_person(tmp_path):
    out = start(tmp_path / "nowhere", {"cwd": str(tmp_path)})
    assert out["systemMessage"].startswith("cardmem: no memory loaded: store ")


def test_a_foreign_file_at_the_rules_path_is_kept_and_reported(tmp_path):
    s, _ = init(tmp_path / "s")
    _rules(s.root, 3, "short")
    target = tmp_path / "cardmem.md"
    target.write_text("mine\n")
    out = start(s.root, {"cwd": str(tmp_path)}, target)
    assert "rules file not used" in out["systemMessage"] and target.read_text() == "mine\n"
    assert "### Rule 0 (`feedback/r000`)" in out["hookSpecificOutput"]["additionalContext"]


def test_proposals_are_counted_for_the_person_and_left_out_of_the_rules(tmp_path):
    s, _ = init(tmp_path / "s")
    _rules(s.root, 2, "live rule")
    (s.root / "feedback" / "agent-idea.md").write_text(
        "---\ntitle: Agent idea\ntype: feedback\nstatus: proposed\n---\nPROPOSED-TEXT\n")
    target = tmp_path / "cardmem.md"
    out = start(s.root, {"cwd": str(tmp_path)}, target)
    assert "1 proposed rule(s) await your review (`cardmem review`)" in out["systemMessage"]
    assert "PROPOSED-TEXT" not in target.read_text()
    assert "PROPOSED-TEXT" not in out["hookSpecificOutput"]["additionalContext"]


def test_a_projects_recent_lessons_come_first_newest_first(tmp_path):
    s, _ = init(tmp_path / "s")
    (s.root / "projects" / "widgets").mkdir(parents=True)
    (s.root / "projects" / "widgets" / "aaa-layout.md").write_text(
        "---\ntitle: Layout\ntype: project\nproject: widgets\n---\nsrc/ holds the code.\n")
    history = "".join(f"- 2026-11-{d:02d} · session s{d} · Worked: lesson number {d}\n"
                      for d in range(1, 21))
    (s.root / "projects" / "widgets" / "signals.md").write_text(
        "---\ntitle: Signals from widgets sessions\ntype: signal\nproject: widgets\n---\n"
        "Signals.\n\n## History\n" + history)
    proj = tmp_path / "widgets"
    proj.mkdir()
    ctx = start(s.root, {"cwd": str(proj)})["hookSpecificOutput"]["additionalContext"]
    section = ctx[ctx.index("## Project widgets"):]
    assert section.index("Recent lessons") < section.index("Layout")
    assert section.index("lesson number 20") < section.index("lesson number 9")
    assert "lesson number 8\n" not in section  # the 12 newest only
    assert "(8 older lessons: `cardmem show projects/widgets/signals`)" in section


def test_a_retry_backlog_is_said_to_the_person(tmp_path):
    s, _ = init(tmp_path / "s")
    q = s.root / ".cardmem" / "retry"
    q.mkdir(parents=True)
    (q / "abc.json").write_text("{}")
    out = start(s.root, {"cwd": str(tmp_path)})
    assert "1 session(s) wait to be learned" in out["systemMessage"]
