"""`cardmem doctor` on cardmem.toml (issue 15): every wrong value, and unknown sections and
misspelt keys with a did-you-mean. In-process through CliRunner."""
from __future__ import annotations

import json
from pathlib import Path

from gitremote import cli


def test_doctor_reports_every_config_error_and_unknown_names(tmp_path: Path) -> None:
    s = tmp_path / "s"
    assert cli("init", str(s))[0] == 0
    (s / "cardmem.toml").write_text(
        '[walk]\nmax_tool_calls = "four"\ndeadline_s = -1\n'
        '[watch]\nquiet_sec = 3\n'
        '[modle]\nname = "x"\n'
        '[projects]\nacme = 3\n')
    code, out, _ = cli("doctor", "--json", "--store", str(s))
    assert code == 1
    msgs = {m["message"]: m for m in json.loads(out)}
    problems = [m for m, d in msgs.items() if not d["ok"]]
    warnings = [m for m, d in msgs.items() if d.get("warning")]
    assert any("[walk] max_tool_calls: expected int" in m for m in problems)
    assert any("[walk] deadline_s: must not be negative" in m for m in problems)
    assert any("[projects] acme: expected str" in m for m in problems)
    assert any("[watch] quiet_sec: unknown key; did you mean 'quiet_s'?" in m for m in warnings)
    assert any("[modle]: unknown section; did you mean 'model'?" in m for m in warnings)
    # a command still refuses on the first wrong value, as before
    code, _, err = cli("context", "--store", str(s))
    assert code == 1 and err.count("\n") == 1 and "[walk] max_tool_calls" in err, err


def test_doctor_passes_a_clean_config(tmp_path: Path) -> None:
    s = tmp_path / "s"
    assert cli("init", str(s))[0] == 0
    code, out, _ = cli("doctor", "--store", str(s))
    assert "cardmem.toml: valid" in out


def test_no_model_at_all_is_a_warning_not_a_failure(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    import os
    import shutil

    monkeypatch.setenv("PATH", os.path.dirname(shutil.which("git")))  # git, but no `claude`
    s = tmp_path / "s"
    assert cli("init", str(s))[0] == 0
    code, out, _ = cli("doctor", "--json", "--store", str(s))
    (line,) = [m for m in json.loads(out) if m["message"].startswith("model route:")]
    assert line.get("warning") is True and "learning, ask and judge need one" in line["message"]
