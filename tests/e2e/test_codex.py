"""End to end with the real Codex CLI (npm `@openai/codex`, pinned) against a fake
Responses API on 127.0.0.1.

A temporary HOME gets cardmem's hooks through `cardmem install codex`; `codex exec` runs in
a temporary git project (with `--dangerously-bypass-hook-trust`: Codex runs a new hook
only once the person has trusted it, which a test cannot click). Shown, with what reached
the model measured in characters:
1. the session-start memory (the rules) is in the model's first request;
2. the card the prompt is about, which session start left out, is added for the prompt;
3. a deny rule stops a command, the model reads the rule as the tool's output, and not
   even the part of the line before the match ran;
4. after the session the detached learner files the session's lesson as one commit.
"""
from __future__ import annotations

import json
import subprocess

from fakeapi import FakeAPI
from fakemodels import FakeModels
from hostworld import CARD_MARK, PROMPT, RULE_MARK, SIGNAL, extract, make_world, wait_for_commit

from cardmem.store.git import runner as git

DENIED = "touch ran-before-push && git push --force origin main"


def test_codex_session_reads_is_refused_and_teaches(tmp_path, codex):
    world = make_world(tmp_path, "codex")
    store, proj = world["store"], world["proj"]

    def answer(kind, body, n):
        return [("shell", DENIED)] if n == 1 else [("text", "Done: the retry limit is five.")]

    with FakeModels(answer) as fake, FakeAPI(handler=extract) as api:
        env = {**world["env"], "K": "fake-key", "ANTHROPIC_BASE_URL": api.base_url,
               "ANTHROPIC_API_KEY": "sk-ant-fake-e2e-key"}
        before = git.head(store)
        provider = (f'model_providers.fake={{name="fake",base_url="{fake.base_url}/v1",'
                    'env_key="K",wire_api="responses"}')
        proc = subprocess.run(
            [str(codex), "exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust",
             "-c", provider, "-c", "model_provider=fake", "-c", "model=gpt-5", PROMPT],
            cwd=proj, env=env, capture_output=True, text=True, timeout=300)  # as gemini's
        assert proc.returncode == 0, proc.stderr[-3000:]
        first, second = fake.model_requests("codex")[:2]
        sent = json.dumps(first)

        # 1. Session start: the rules reached the model's first request.
        assert RULE_MARK in sent and "Always indent widgets code with tabs" in sent
        memory = [t["text"] for item in first["input"] for t in item.get("content") or []
                  if isinstance(t, dict) and "# Memory (cardmem)" in str(t.get("text"))]
        assert memory and len(memory[0]) <= 7_500  # hosts/codex CAP
        # 2. Per prompt: the frobnicator card, left out at session start, came with the prompt.
        assert CARD_MARK not in memory[0]
        assert CARD_MARK in sent
        # 3. The deny rule: the model read the refusal as the command's output; nothing ran.
        out = [i["output"] for i in second["input"] if i.get("type") == "function_call_output"]
        assert out and "feedback/no-force-push" in out[0]
        assert "Force-pushing rewrites history" in out[0]
        assert not (proj / "ran-before-push").exists()
        # 4. The lesson, filed after the session by the detached learner.
        log = wait_for_commit(store, before)
    commit = git.log(store, limit=1)[0]
    assert commit.paths == ["entities/frobnicator.md"], commit.message
    assert SIGNAL.split(": ", 1)[1][:40] in (store / "entities" / "frobnicator.md").read_text()
    assert "prompt/codex" in log and "pre-tool-use/codex" in log and "deny feedback/no-force-push" in log
    print(f"\ncodex: session start {len(memory[0])} chars reached the model; "
          f"prompt card: {[l for l in log.splitlines() if 'prompt/codex' in l]}")
