"""End to end with the real GitHub Copilot CLI (npm `@github/copilot`, pinned) against a
fake Chat Completions API on 127.0.0.1 (its own model provider: COPILOT_PROVIDER_BASE_URL,
COPILOT_OFFLINE, no GitHub sign-in).

Copilot CLI reads no hook's output at session start or per prompt: memory reaches it
through its instruction files. So a temporary HOME gets cardmem's hooks through
`cardmem install copilot --export PROJECT`, which also writes the rules into the project's
`.github/copilot-instructions.md` and keeps that file current; `copilot -p` runs there.
Shown, with what reached the model measured in characters:
1. the rules reach the model's first request, a rule made after the install included
   (the export was written again by the write that made it);
2. a deny rule stops a command (preToolUse), the model reads the rule as the tool's
   result, and not even the part of the line before the match ran;
3. after the session the detached learner takes the session, but Copilot CLI hides
   ANTHROPIC_API_KEY from its hooks (it keeps other variables: checked with 1.0.102), so
   the lesson waits in the retry queue, said in the log; the next learner run that has a
   model (here a Stop hook's, as another host's session would start) files it, one commit.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time

from fakeapi import FakeAPI
from fakemodels import FakeModels
from hostkit import cardmem
from hostworld import PROMPT, RULE_MARK, extract, make_world, wait_for_commit

from cardmem.store.git import runner as git

def learned(store, timeout: float = 120) -> str:
    """The hook log once both learners Copilot's stop and session-end hooks detached have
    logged their end."""
    deadline = time.monotonic() + timeout
    while True:
        log = (store / ".cardmem" / "hooks.log").read_text()
        if " stop/learn " in log and " session-end/learn " in log:
            return log
        assert time.monotonic() < deadline, f"learners not done in {timeout} s:\n{log}"
        time.sleep(0.1)


DENIED = "touch ran-before-push && git push --force origin main"
LATER = "NUMBAT-RULE-5150"


def test_copilot_session_reads_is_refused_and_teaches(tmp_path, copilot_cli):
    world = make_world(tmp_path, "copilot")
    store, proj, env = world["store"], world["proj"], world["env"]
    cardmem("install", "copilot", "--export", str(proj), env=env)
    cardmem("new", "feedback/changelog", "--title", f"Changelog entries ({LATER})", "--body",
            "Every user-visible change gets a changelog line.", env=env)
    instructions = (proj / ".github" / "copilot-instructions.md").read_text()
    assert RULE_MARK in instructions and LATER in instructions

    def answer(kind, body, n):
        return [("shell", DENIED)] if n == 1 else [("text", "Done: the retry limit is five.")]

    with FakeModels(answer) as fake, FakeAPI(handler=extract) as api:
        env = {**env, "COPILOT_PROVIDER_BASE_URL": f"{fake.base_url}/v1",
               "COPILOT_MODEL": "gpt-4.1", "COPILOT_PROVIDER_API_KEY": "fake-key",
               "COPILOT_OFFLINE": "true", "ANTHROPIC_BASE_URL": api.base_url,
               "ANTHROPIC_API_KEY": "sk-ant-fake-e2e-key"}
        before = git.head(store)
        proc = subprocess.run([str(copilot_cli), "-p", PROMPT, "--allow-all-tools",
                               "--no-auto-update", "--no-color"],
                              cwd=proj, env=env, capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
        first, second = fake.model_requests("copilot")[:2]

        # 1. The rules, from the instructions file cardmem keeps current, in the first request.
        texts = [m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
                 for m in first["messages"] if m.get("content")]
        memory = [t for t in texts if "Standing rules (cardmem memory)" in t]
        assert memory and RULE_MARK in memory[0] and LATER in memory[0]
        # 2. The deny rule: the model read the refusal as the tool's result; nothing ran.
        results = [m for m in second["messages"] if m.get("role") == "tool"]
        assert results and "feedback/no-force-push" in json.dumps(results)
        assert "Force-pushing rewrites history" in json.dumps(results)
        assert not (proj / "ran-before-push").exists()
        # 3. The session waits for a model (Copilot keeps the key from hooks), then is filed.
        log = learned(store)
        assert "no ANTHROPIC_API_KEY set" in log and "kept for retry" in log
        assert git.head(store) == before
        subprocess.run([sys.executable, "-m", "cardmem.hosts.hook", "--host", "copilot",
                        "--store", str(store), "stop"], input=json.dumps(
                            {"sessionId": "next", "cwd": str(proj)}), env=env, text=True,
                       capture_output=True, check=True, timeout=60)
        log = wait_for_commit(store, before)
    commit = git.log(store, limit=1)[0]
    assert commit.paths == ["entities/frobnicator.md"], commit.message
    assert "pre-tool-use/copilot" in log and "deny feedback/no-force-push" in log
    block = memory[0][memory[0].index("Standing rules"):]
    print(f"\ncopilot: the instructions block, {len(block)} chars, reached the model")
