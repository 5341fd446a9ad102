"""Stores for the maintenance tests, built from the agents-md corpus (real cards)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from corpora import CORPUS, need_corpus


def corpus_store(root: Path, only: tuple[str, ...] = ()):
    """A committed store of the corpus cards (`projects/<project>/<section>`), all of them
    or those of the given projects."""
    from cardmem.store.store import init

    root.mkdir(parents=True)
    for p in sorted(need_corpus().glob("*--*.md")):
        text = p.read_text()
        project = re.search(r"^project: *(.+)$", text, re.M).group(1).strip()
        if only and project not in only:
            continue
        d = root / "projects" / project
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy(p, d / p.name.split("--", 2)[2])
    assert any(root.glob("projects/*/*.md")), f"no corpus cards in {CORPUS}"
    return init(root)[0]


def git(store, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", "-C", str(store.root), *args], capture_output=True,
                          text=True, check=True, env={**os.environ, **(env or {})}).stdout


def commit_as_person(store, message: str = "person edit", when: str | None = None) -> None:
    env = {"GIT_AUTHOR_NAME": "Tess", "GIT_AUTHOR_EMAIL": "tess@example.com",
           "GIT_COMMITTER_NAME": "Tess", "GIT_COMMITTER_EMAIL": "tess@example.com"}
    if when:
        env.update(GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when)
    git(store, "add", "-A")
    git(store, "commit", "-q", "--allow-empty", "-m", message, env=env)


AGED = "projects/temporal/error-handling"


def aged_store(root):
    """temporal's real cards, AGED last changed (and verified) in 2025: a stale candidate."""
    store = corpus_store(root, ("temporal",))
    p = store.root / f"{AGED}.md"
    p.write_text(p.read_text() + "\nStill true in 2025.\n")
    commit_as_person(store, when="2025-01-10T12:00:00Z")
    return store


def card_text(title: str, body: str, card_type: str = "reference", **meta: str) -> str:
    head = "".join(f"{k}: {v}\n" for k, v in meta.items())
    return f"---\ntitle: {title}\ntype: {card_type}\n{head}---\n{body}\n"


def small_store(root: Path, cards: dict[str, str], corpus: tuple[str, ...] = ("ruff", "oxc")):
    """A committed store of the given cards (id -> text), a person's commit, beside the
    corpus cards of those projects (so that rarity, idf, means what it does in a store)."""
    store = corpus_store(root, corpus)
    for cid, text in cards.items():
        p = root / f"{cid}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    commit_as_person(store)
    return store


RATE = "Clients are throttled per key; bursts above the limit get status 429 and a Retry-After header."


def rate_limit_store(root: Path):
    """The issue's case: two cards alike in every word but their version and number."""
    return small_store(root, {
        f"reference/api-{v}-rate-limit": card_text(f"API {v} rate limit",
                                                   f"API {v} allows {n} requests/min. {RATE}")
        for v, n in (("v2", 100), ("v3", 500))})
