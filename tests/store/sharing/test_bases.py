"""Attached bases: read-only folders searched by name, containment, git-clone updates."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from cardmem.store.sharing import bases
from cardmem.store.errors import CardmemError
from cardmem.store.store import Store, init
from gitremote import cli, git, head, snapshot


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = init(tmp_path / "store")[0]
    s.new("reference/own-card", body="A card of the store about kettles.\n")
    return s


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    write(root / "README.md", "# Docs\n\nStart with the quokka guide.\n")
    write(root / "guides/quokka.md", "# Quokka guide\n\nQuokkas live on Rottnest island.\n")
    write(root / "guides/fm.md", "---\ntitle: Frontmatter page\ntags: [ocelot]\n---\nOcelots.\n")
    write(root / "notes.txt", "not markdown: platypus\n")
    write(root / ".hidden/secret.md", "hidden wombat\n")
    return root


def search(store: Store, name: str, query: str) -> tuple[int, dict, str]:
    code, out, err = cli("search", query, "--base", name, "--json", "--store", str(store.root))
    return code, (json.loads(out) if code == 0 else {}), err


def ids(doc: dict) -> list[str]:
    return [r["id"] for r in doc["results"]]


def test_attach_list_search_detach(store: Store, docs: Path):
    before = snapshot(docs)
    code, out, err = cli("base", "attach", "docs", str(docs), "--store", str(store.root))
    assert code == 0 and "3 documents" in out, err

    code, out, _ = cli("base", "list", "--json", "--store", str(store.root))
    listed = json.loads(out)
    assert [(b["name"], b["path"], b["git"], b["present"]) for b in listed] == [
        ("docs", str(docs), False, True)]
    # Recorded in .cardmem/ (this machine's path), so nothing for git to commit.
    assert json.loads((store.root / ".cardmem/bases.json").read_text())["bases"]["docs"]["path"] \
        == str(docs)
    assert git(store.root, "status", "--porcelain") == ""

    code, doc, err = search(store, "docs", "quokka island")
    assert code == 0, err
    assert ids(doc)[0] == "guides/quokka" and doc["results"][0]["base"] == "docs"
    assert "guides/fm" in ids(search(store, "docs", "ocelot")[1])
    assert ids(search(store, "docs", "platypus")[1]) == []  # .md only
    assert ids(search(store, "docs", "wombat")[1]) == []  # hidden folders are not walked
    # A new document is searchable at the next search (the base's index refreshes itself).
    write(docs / "guides/new.md", "Numbats eat termites.\n")
    assert "guides/new" in ids(search(store, "docs", "numbats")[1])

    # The store's own search and its session-start context never see the base.
    code, out, _ = cli("search", "quokka", "--json", "--store", str(store.root))
    assert code == 0 and all(not r["id"].startswith("guides/")
                             for r in json.loads(out)["results"])
    code, out, err = cli("context", "--store", str(store.root))
    assert code == 0, err
    assert "Quokka" not in out and "quokka" not in out

    code, out, _ = cli("base", "detach", "docs", "--store", str(store.root))
    assert code == 0
    assert not (store.root / ".cardmem/bases/docs").exists()
    code, _, err = search(store, "docs", "quokka")
    assert code == 1 and "not attached" in err
    (docs / "guides/new.md").unlink()
    assert snapshot(docs) == before  # cardmem never wrote inside the base


def test_attach_refusals(store: Store, docs: Path, tmp_path: Path):
    def attach(name: str, path: Path) -> tuple[int, str]:
        code, _, err = cli("base", "attach", name, str(path), "--store", str(store.root))
        return code, err

    assert attach("Bad/Name", docs)[0] == 1
    code, err = attach("docs", tmp_path / "missing")
    assert code == 1 and "is not a folder" in err
    code, err = attach("inner", store.root / "reference")
    assert code == 1 and "inside the store" in err
    code, err = attach("outer", tmp_path)
    assert code == 1 and "contains the store" in err
    assert attach("docs", docs)[0] == 0
    code, err = attach("docs", docs)
    assert code == 1 and "already attached" in err
    code, _, err = cli("base", "detach", "nope", "--store", str(store.root))
    assert code == 1 and "not attached" in err and "docs" in err


def test_files_resolving_outside_the_base_are_skipped_with_a_warning(store: Store, docs: Path,
                                                                      tmp_path: Path):
    secret = write(tmp_path / "private/secret.md", "The narwhal password is hunter2.\n")
    os.symlink(secret, docs / "link-out.md")  # absolute symlink out
    os.symlink("../../private", docs / "guides/dir-out")  # a folder link out, relative
    os.symlink("../private/secret.md", docs / "hop.md")  # relative file link out
    os.symlink("hop.md", docs / "chain.md")  # a chain that ends outside
    os.symlink("guides/quokka.md", docs / "alias.md")  # stays inside: fine
    bases.attach(store, "docs", docs)

    code, doc, err = search(store, "docs", "narwhal password")
    assert code == 0
    assert ids(doc) == []
    for name in ("link-out.md", "dir-out", "hop.md", "chain.md"):
        assert name in err, err
    assert "resolves outside the base" in err
    assert "alias" not in err and "alias" in ids(search(store, "docs", "quokka")[1])

    # Reading by id: `..`, absolute paths and links out are refused, not followed.
    assert "Quokkas" in bases.read_document(store, "docs", "guides/quokka")
    for bad in ("../private/secret", "guides/../../private/secret", str(secret)[:-3],
                "link-out", "chain", "guides/dir-out/secret"):
        with pytest.raises(CardmemError) as exc:
            bases.read_document(store, "docs", bad)
        assert exc.value.what.startswith("base document")


def test_a_base_that_is_gone_is_a_clear_error(store: Store, docs: Path):
    bases.attach(store, "docs", docs)
    import shutil

    shutil.rmtree(docs)
    code, _, err = search(store, "docs", "quokka")
    assert code == 1 and "is gone" in err
    code, out, _ = cli("base", "list", "--store", str(store.root))
    assert code == 0 and "(gone:" in out


def test_a_base_replaced_by_a_link_is_refused(store: Store, docs: Path, tmp_path: Path):
    bases.attach(store, "docs", docs)
    elsewhere = tmp_path / "elsewhere"
    write(elsewhere / "x.md", "Wallaby notes.\n")
    docs.rename(tmp_path / "docs-moved")
    os.symlink(elsewhere, docs)
    code, _, err = search(store, "docs", "wallaby")
    assert code == 1 and "now resolves to" in err


# --- a base that is a git clone --------------------------------------------------------

@pytest.fixture
def docs_clone(tmp_path: Path, docs: Path) -> tuple[Path, Path, Path]:
    """(bare remote of the docs, the attached clone, a publisher's clone)."""
    bare = tmp_path / "docs.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    git(docs, "init", "-q", "-b", "main")
    git(docs, "add", "-A")
    git(docs, "commit", "-q", "-m", "docs")
    git(docs, "push", "-q", str(bare), "main")
    attached, publisher = tmp_path / "attached", tmp_path / "publisher"
    for d in (attached, publisher):
        subprocess.run(["git", "clone", "-q", str(bare), str(d)], check=True,
                       capture_output=True)
    return bare, attached, publisher


def test_update_and_rollback_a_git_base(store: Store, docs_clone):
    bare, attached, publisher = docs_clone
    assert cli("base", "attach", "docs", str(attached), "--store", str(store.root))[0] == 0
    old = head(attached)
    write(publisher / "guides/bilby.md", "Bilbies dig burrows.\n")
    git(publisher, "add", "-A")
    git(publisher, "commit", "-q", "-m", "bilby")
    git(publisher, "push", "-q", "origin", "main")
    assert ids(search(store, "docs", "bilbies")[1]) == []

    code, out, err = cli("update", "--base", "docs", "--store", str(store.root))
    assert code == 0 and "base docs:" in out, err
    assert head(attached) == head(publisher)
    assert "guides/bilby" in ids(search(store, "docs", "bilbies")[1])
    record = store.root / ".cardmem/bases/docs/updates.jsonl"
    assert json.loads(record.read_text().splitlines()[-1])["old"] == old

    code, _, err = cli("rollback", "--base", "docs", "--store", str(store.root))
    assert code == 0, err
    assert head(attached) == old and not (attached / "guides/bilby.md").exists()
    assert ids(search(store, "docs", "bilbies")[1]) == []
    assert git(attached, "status", "--porcelain") == ""


def test_a_git_base_updates_by_fast_forward_only(store: Store, docs_clone, tmp_path: Path):
    bare, attached, publisher = docs_clone
    bases.attach(store, "docs", attached)
    write(attached / "local.md", "a local commit in the base\n")
    git(attached, "add", "-A")
    git(attached, "commit", "-q", "-m", "local")
    write(publisher / "up.md", "upstream\n")
    git(publisher, "add", "-A")
    git(publisher, "commit", "-q", "-m", "up")
    git(publisher, "push", "-q", "origin", "main")
    before = head(attached)

    code, _, err = cli("update", "--base", "docs", "--store", str(store.root))
    assert code == 3 and "1 local commit(s)" in err and head(attached) == before
    code, _, err = cli("update", "--base", "docs", "--force", "--store", str(store.root))
    assert code == 1 and "fast-forward only" in err and head(attached) == before

    bases.attach(store, "plain", write(tmp_path / "plain/a.md", "a\n").parent)
    code, _, err = cli("update", "--base", "plain", "--store", str(store.root))
    assert code == 1 and "not a git clone" in err


# --- the first hour (issue 15) -----------------------------------------------------------

def test_a_link_out_is_named_once_not_on_every_search(store: Store, docs: Path, tmp_path: Path):
    secret = write(tmp_path / "private/secret.md", "narwhal\n")
    os.symlink(secret, docs / "link-out.md")
    code, _, err = cli("base", "attach", "docs", str(docs), "--store", str(store.root))
    assert code == 0 and "link-out.md" in err
    for _ in range(2):
        code, _, err = search(store, "docs", "quokka")
        assert code == 0 and "link-out" not in err, err
    (docs / "link-out.md").unlink()
    assert search(store, "docs", "quokka")[2] == ""
    os.symlink(secret, docs / "link-out.md")  # back again: said again, once
    assert "link-out.md" in search(store, "docs", "quokka")[2]
    assert "link-out.md" not in search(store, "docs", "quokka")[2]


def test_a_document_whose_frontmatter_does_not_parse_is_indexed_as_plain_text(
        store: Store, docs: Path):
    write(docs / "broken.md", "---\ntitle: [unclosed\n---\nThe echidna lays eggs.\n")
    code, _, err = cli("base", "attach", "docs", str(docs), "--store", str(store.root))
    assert code == 0 and err.count("broken.md") == 1 and "indexed as plain text" in err, err
    code, doc, err = search(store, "docs", "echidna")
    assert code == 0 and ids(doc) == ["broken"] and err == ""  # named once, at the read
    write(docs / "broken.md", "---\ntitle: [still unclosed\n---\nThe echidna lays two eggs.\n")
    code, doc, err = search(store, "docs", "echidna")
    assert ids(doc) == ["broken"] and err.count("broken.md") == 1  # changed: read, said again


def test_update_base_names_the_bases_rollback(store: Store, docs_clone):
    _bare, attached, publisher = docs_clone
    assert cli("base", "attach", "docs", str(attached), "--store", str(store.root))[0] == 0
    write(publisher / "guides/bilby.md", "Bilbies dig burrows.\n")
    git(publisher, "add", "-A")
    git(publisher, "commit", "-q", "-m", "bilby")
    git(publisher, "push", "-q", "origin", "main")
    code, out, err = cli("update", "--base", "docs", "--store", str(store.root))
    assert code == 0, err
    assert "`cardmem rollback --base docs` returns to" in out, out
