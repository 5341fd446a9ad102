"""A HOME, a store and a git project for running a real host CLI (Codex, Gemini CLI) with
cardmem's hooks, as a person would after `cardmem install HOST`."""
from __future__ import annotations

import subprocess
import time
from pathlib import Path

from hostkit import cardmem, host_env

from cardmem.store.git import runner as git

RULE_MARK = "QUOKKA-RULE-7731"
CARD_MARK = "WOMBAT-CARD-4412"
SIGNAL = "Decision: the frobnicator retries widget jobs five times before dead-lettering them"
PROMPT = "Set the frobnicator retry limit for widget jobs to five."


def base_world(tmp_path: Path) -> dict:
    """A HOME, a git project to work in and a store holding one rule (RULE_MARK in its
    title); nothing installed yet."""
    home, store, proj = tmp_path / "home", tmp_path / "store", tmp_path / "work" / "widgets"
    home.mkdir()
    proj.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    env = host_env(home, CARDMEM_STORE=str(store))
    cardmem("init", str(store), env=env)
    cardmem("new", "feedback/tabs-not-spaces", "--title", f"Indent with tabs ({RULE_MARK})",
            "--description", "Widgets code is indented with tabs.",
            "--body", "Always indent widgets code with tabs, never spaces.", env=env)
    return {"home": home, "store": store, "proj": proj, "env": env}


def make_world(tmp_path: Path, host: str) -> dict:
    world = base_world(tmp_path)
    store, env = world["store"], world["env"]
    # Session start carries the rules and a short digest; the entity card is the prompt's.
    (store / "cardmem.toml").write_text("[context]\nbudget_chars = 2000\n")
    (store / "feedback" / "no-force-push.md").write_text(
        "---\ntitle: Never force-push\ntype: feedback\napplies_to: [\"git push --force*\"]\n"
        "enforce: deny\n---\nForce-pushing rewrites history others have pulled.\n")
    for n in range(12):  # enough cards that session start shows only a digest of them
        cardmem("new", f"entities/service-{n}", "--title", f"Service {n}", "--body",
                f"Service {n} serves the dashboard its tiles.", env=env)
    cardmem("new", "entities/frobnicator", "--title", "Frobnicator", "--body",
            f"The frobnicator service pulls widget jobs from the queue and retries "
            f"failures ({CARD_MARK}).", env=env)
    subprocess.run(["git", "-C", str(store), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(store), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-qm", "cards"], capture_output=True)
    cardmem("install", host, env=env)
    return world


def extract(body: dict):
    """The learner's model call (tools/learning/extract.py) on the fake Messages API: the lesson."""
    from fakeapi import reply

    from cardmem.tools.learning.extract import SYSTEM

    assert body.get("system") == SYSTEM
    return reply(f"Here is what the session taught:\n{SIGNAL}\n")


def wait_for_commit(store: Path, before: str, timeout: float = 60) -> str:
    """The hook log, once the detached learner has committed (or the time is up)."""
    deadline = time.monotonic() + timeout
    while git.head(store) == before and time.monotonic() < deadline:
        time.sleep(0.25)
    log = (store / ".cardmem" / "hooks.log").read_text()
    assert git.head(store) != before, f"no commit after the session; hook log:\n{log}"
    return log
