"""The hooks' per-session notes (hosts/session_notes.py): the newest sessions kept, a note
that cannot be read is no failure."""
from __future__ import annotations

from cardmem.hosts import session_notes
from cardmem.hosts.pretool import _last, _remember_last
from cardmem.hosts.prompt import note_shown, shown


def test_the_newest_sessions_are_kept_and_odd_notes_go_first(tmp_path) -> None:
    path = str(tmp_path / "notes.json")
    data = {f"s{i}": {"at": i} for i in range(session_notes.MAX_SESSIONS + 5)}
    data["odd"] = "not a note"
    session_notes.save(path, data, lambda note: note["at"])
    kept = session_notes.load(path)
    assert len(kept) == session_notes.MAX_SESSIONS and "odd" not in kept
    assert "s0" not in kept and f"s{session_notes.MAX_SESSIONS + 4}" in kept


def test_both_hooks_read_back_what_they_noted_and_shrug_at_garbage(tmp_path) -> None:
    (tmp_path / ".cardmem").mkdir()
    _remember_last(str(tmp_path), "s1", "feedback/tests")
    assert _last(str(tmp_path), "s1") == "feedback/tests" and _last(str(tmp_path), "s2") is None
    note_shown(tmp_path, "s1", ["reference/a"])
    note_shown(tmp_path, "s1", ["reference/b"])
    assert shown(tmp_path, "s1") == {"reference/a", "reference/b"}
    for name in ("pretool-sessions.json", "shown-sessions.json"):
        (tmp_path / ".cardmem" / name).write_text('{"s1": 7, "s2": [')
    assert _last(str(tmp_path), "s1") is None and shown(tmp_path, "s1") == set()
    # a note of another shape (a hand edit, another version) is no last rule: once a KeyError
    # that failed the whole PreToolUse call open, rules and all
    (tmp_path / ".cardmem" / "pretool-sessions.json").write_text('{"s1": {"rule": "x"}}')
    assert _last(str(tmp_path), "s1") is None
    _remember_last(str(tmp_path), "s1", "feedback/x")  # a broken file is replaced, not kept
    assert _last(str(tmp_path), "s1") == "feedback/x"
