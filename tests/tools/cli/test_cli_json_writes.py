"""Every command a script calls answers --json (issue 15): init, where, new, remember,
edit, revert, base attach/detach. In-process through CliRunner."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from gitremote import cli


def doc(*args: str):
    code, out, err = cli(*args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_write_commands_print_one_json_document(tmp_path: Path, monkeypatch) -> None:
    s = str(tmp_path / "s")
    made = doc("init", s)
    assert made["created"] is True and made["store"] == s and made["adopted"] == []
    assert doc("init", s)["created"] is False
    assert doc("where", "--store", s) == {"store": s, "exists": True}
    assert doc("new", "reference/deploy", "--title", "Deploy", "--store", s) == \
        {"id": "reference/deploy", "created": True}
    assert doc("remember", "Deploy", "--body", "make deploy", "--store", s) == \
        {"id": "reference/deploy", "created": False}
    assert doc("remember", "Staging", "--body", "db2", "--store", s) == \
        {"id": "reference/staging", "created": True}
    monkeypatch.setenv("EDITOR", f"{sys.executable} -c \"import sys; open(sys.argv[1], 'a')"
                                 ".write('more\\\\n')\"")
    monkeypatch.delenv("VISUAL", raising=False)
    assert doc("edit", "reference/deploy", "--store", s) == \
        {"id": "reference/deploy", "committed": True}
    monkeypatch.setenv("EDITOR", "true")
    assert doc("edit", "reference/deploy", "--store", s) == \
        {"id": "reference/deploy", "committed": False}
    head = json.loads(cli("log", "--limit", "1", "--json", "--store", s)[1])[0]["commit"]
    out = doc("revert", head[:10], "--store", s)
    assert out["reverted"] == head[:10] and len(out["commit"]) == 40
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\nquokka\n")
    assert doc("base", "attach", "docs", str(docs), "--store", s) == \
        {"name": "docs", "path": str(docs.resolve()), "documents": 1}
    assert doc("base", "detach", "docs", "--store", s)["detached"] is True
