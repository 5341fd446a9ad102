"""Ids are addresses inside the store: every unsafe id is refused with one clear message."""
from __future__ import annotations

from pathlib import Path

import pytest

from cardmem.store.cards import paths
from cardmem.store.errors import BadId


@pytest.mark.parametrize("card_id, why", [
    ("", "is empty"),
    ("   ", "is empty"),
    ("../outside", "climbs out of the store (..)"),
    ("feedback/../../etc/passwd", "climbs out of the store (..)"),
    ("/etc/passwd", "is an absolute path; ids are relative to the store"),
    ("C:/Windows/win", "is an absolute path; ids are relative to the store"),
    ("~/notes", "is an absolute path; ids are relative to the store"),
    ("feedback/a\x00b", "contains a NUL byte"),
    ("feedback\\rule", "contains a backslash; ids use /"),
    ("feedback/a\nb", "contains a control character"),
    ("feedback/a\tb", "contains a control character"),
    ("feedback/a\x1bb", "contains a control character"),
    ("feedback/a\x7fb", "contains a control character"),
    ("feedback/a\x85b", "contains a control character"),
    (".git/config", "names a hidden path; cards never live there"),
    ("feedback/.hidden", "names a hidden path; cards never live there"),
    (".cardmem/index", "names a hidden path; cards never live there"),
    ("feedback//rule", "has an empty or '.' path segment"),
    ("feedback/", "has an empty or '.' path segment"),
    ("./feedback/rule", "has an empty or '.' path segment"),
    ("a/" * 100 + "b", "is longer than 200 characters"),
])
def test_refused_ids(tmp_path: Path, card_id: str, why: str) -> None:
    with pytest.raises(BadId) as exc:
        paths.card_path(tmp_path, card_id)
    assert exc.value.why == why
    assert exc.value.exit_code == 2
    # One line, naming the id (shortened when long) and the reason.
    text = str(exc.value)
    assert "\n" not in text and "\x00" not in text
    assert text.endswith(why)


def test_long_id_is_shortened_in_the_message(tmp_path: Path) -> None:
    with pytest.raises(BadId) as exc:
        paths.card_path(tmp_path, "x" * 500)
    assert len(str(exc.value)) < 160


@pytest.mark.parametrize("card_id, expected", [
    ("feedback/run-tests-with-x", "feedback/run-tests-with-x.md"),
    ("feedback/run-tests-with-x.md", "feedback/run-tests-with-x.md"),
    ("projects/acme-api/deploy", "projects/acme-api/deploy.md"),
    ("people/mara-okonkwo", "people/mara-okonkwo.md"),
    ("reference/über-notes", "reference/über-notes.md"),
    ("top-level", "top-level.md"),
    ("a/" * 98 + "b", "a/" * 98 + "b.md"),
])
def test_good_ids(tmp_path: Path, card_id: str, expected: str) -> None:
    assert paths.card_path(tmp_path, card_id) == tmp_path / expected


def test_symlinked_file_outside_the_store_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "store", tmp_path / "outside"
    (root / "feedback").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    (root / "feedback" / "leak.md").symlink_to(outside / "secret.md")
    with pytest.raises(BadId) as exc:
        paths.card_path(root, "feedback/leak")
    assert exc.value.why == "resolves outside the store (symlink)"


def test_symlinked_parent_folder_outside_the_store_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "store", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    (root / "feedback").symlink_to(outside, target_is_directory=True)
    for cid in ("feedback/secret", "feedback/not-yet-there"):
        with pytest.raises(BadId) as exc:
            paths.card_path(root, cid)
        assert exc.value.why == "resolves outside the store (symlink)"


def test_symlink_inside_the_store_to_a_card_is_accepted(tmp_path: Path) -> None:
    root = tmp_path / "store"
    (root / "feedback").mkdir(parents=True)
    (root / "feedback" / "real.md").write_text("x")
    (root / "feedback" / "alias.md").symlink_to("real.md")
    assert paths.card_path(root, "feedback/alias") == root / "feedback" / "alias.md"


def test_symlink_to_a_non_md_file_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "store"
    (root / "feedback").mkdir(parents=True)
    (root / "cardmem.toml").write_text("")
    (root / "feedback" / "settings.md").symlink_to(root / "cardmem.toml")
    with pytest.raises(BadId) as exc:
        paths.card_path(root, "feedback/settings")
    assert exc.value.why == "does not resolve to a .md file"


def test_a_folder_named_like_a_card_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "store"
    (root / "feedback" / "x.md").mkdir(parents=True)
    with pytest.raises(BadId) as exc:
        paths.card_path(root, "feedback/x")
    assert exc.value.why == "is not a regular .md file"


def test_the_store_itself_behind_a_symlink_is_fine(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "feedback").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    assert paths.card_path(link, "feedback/rule") == link / "feedback" / "rule.md"


def test_store_refuses_through_read_and_new(store) -> None:
    """The Store's own entry points go through the same check."""
    with pytest.raises(BadId):
        store.read("../x")
    with pytest.raises(BadId):
        store.new(".git/config", body="x")
    assert not (store.root / ".git" / "config.md").exists()


def test_default_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CARDMEM_STORE", str(tmp_path / "s"))
    assert paths.default_store() == tmp_path / "s"
    monkeypatch.delenv("CARDMEM_STORE")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert paths.default_store() == tmp_path / "xdg" / "cardmem"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert paths.default_store() == tmp_path / "home" / ".local" / "share" / "cardmem"


@pytest.mark.parametrize("title, card_type, project, expected", [
    ("Run tests with -x", "feedback", None, "feedback/run-tests-with-x"),
    ("Mara Okonkwo", "person", None, "people/mara-okonkwo"),
    ("Deploy", "project", "Acme API", "projects/acme-api/deploy"),
    ("../../etc", "reference", None, "reference/etc"),
    ("???", "signal", None, "signals/card"),
])
def test_id_for(title: str, card_type: str, project: str | None, expected: str) -> None:
    cid = paths.id_for(title, card_type, project)
    assert cid == expected
    assert paths.normalize_id(cid) == cid


@pytest.mark.parametrize("project", ["..", ".", "a/../b", "x\x00y", "bad-\udcff", "a" * 300, ""])
def test_a_project_that_is_no_safe_segment_has_no_signals_card(project):
    """None, never an error: the learner then files into the day card."""
    assert paths.project_signals_id(project) is None


def test_a_project_signals_card_is_under_its_project():
    assert paths.project_signals_id("web-dashboard") == "projects/web-dashboard/signals"
