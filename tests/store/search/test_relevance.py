"""Relevance of rules without applies_to, on the labelled set (precision is reported in
bench/RESULTS.md by bench/calibrate_relevance.py)."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).parent))

from relevance_set import CALLS, RULES  # noqa: E402

from cardmem.store.rules.match import THRESHOLD, decide  # noqa: E402
from cardmem.store.rules.triggers import compile_rules  # noqa: E402


def table(tmp_path):
    cards = []
    for cid, title, aliases, tags in RULES:
        p = tmp_path / f"{cid}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"---\ntype: feedback\n---\n{title}\n")
        cards.append(SimpleNamespace(id=cid, title=title, aliases=aliases, tags=tags, project=None))
    return compile_rules(tmp_path, cards, {})


def test_precision_at_the_threshold(tmp_path):
    t = table(tmp_path)
    tp = fp = 0
    for tool, inp, want in CALLS:
        got = decide(t, tool, inp, "/repo", threshold=THRESHOLD)
        assert len(got) <= 1  # one reminder by relevance per call, at most
        if got:
            assert got[0]["action"] == "remind" and got[0]["kind"] == "relevance"
            tp, fp = (tp + 1, fp) if got[0]["id"] == want else (tp, fp + 1)
    positives = sum(1 for *_, w in CALLS if w)
    precision, recall = tp / (tp + fp), tp / positives
    print(f"relevance at {THRESHOLD}: precision {precision:.2f}, recall {recall:.2f}")
    assert precision >= 0.9 and recall >= 0.3


def test_clear_cases(tmp_path):
    t = table(tmp_path)
    ids = lambda line: [f["id"] for f in decide(t, "Bash", {"command": line}, "/r")]  # noqa: E731
    assert ids("sudo apt-get install -y jq") == ["feedback/apt-ask"]
    assert ids("npm install left-pad") == ["feedback/pnpm"]
    assert ids("ls -la") == [] and ids("git status") == []
    # the same rule is not brought up twice in a row in a session
    assert ids("npm install a") == ["feedback/pnpm"]
    assert decide(t, "Bash", {"command": "npm install a"}, "/r", last="feedback/pnpm") == []


def test_project_rules_stay_in_their_project(tmp_path):
    t = table(tmp_path)
    t["rules"][[r["id"] for r in t["rules"]].index("feedback/pnpm")]["project"] = "web"
    (tmp_path / "web" / ".git").mkdir(parents=True)
    (tmp_path / "api" / ".git").mkdir(parents=True)
    assert decide(t, "Bash", {"command": "npm install"}, str(tmp_path / "web"))
    assert not decide(t, "Bash", {"command": "npm install"}, str(tmp_path / "api"))
