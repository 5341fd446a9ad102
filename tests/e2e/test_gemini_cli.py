"""End to end with the real Gemini CLI (npm `@google/gemini-cli`, pinned) against a fake
Gemini API on 127.0.0.1 (GOOGLE_GEMINI_BASE_URL).

A temporary HOME gets cardmem's hooks through `cardmem install gemini` (which turns
`hooksConfig.enabled` on); `gemini -p` runs in a temporary git project. Shown, with what
reached the model measured in characters:
1. the session-start memory (the rules) is in the model's first request;
2. the card the prompt is about, which session start left out, comes with the prompt
   (BeforeAgent), found from the person's words only, not from the memory Gemini CLI
   prepends to the prompt;
3. a deny rule stops a command (BeforeTool), the model reads the rule as the tool's error,
   and not even the part of the line before the match ran;
4. after the session the detached learner files the session's lesson as one commit.
"""
from __future__ import annotations

import json
import subprocess

from fakeapi import FakeAPI
from fakemodels import FakeModels
from hostworld import CARD_MARK, PROMPT, RULE_MARK, extract, make_world, wait_for_commit

from cardmem.store.git import runner as git

DENIED = "touch ran-before-push && git push --force origin main"


def test_gemini_session_reads_is_refused_and_teaches(tmp_path, gemini_cli):
    world = make_world(tmp_path, "gemini")
    store, proj, home = world["store"], world["proj"], world["home"]
    settings = home / ".gemini" / "settings.json"
    data = json.loads(settings.read_text())
    assert data["hooksConfig"] == {"enabled": True}
    data["security"] = {"auth": {"selectedType": "gemini-api-key"}}
    settings.write_text(json.dumps(data, indent=2))

    def answer(kind, body, n):
        return [("shell", DENIED)] if n == 1 else [("text", "Done: the retry limit is five.")]

    with FakeModels(answer) as fake, FakeAPI(handler=extract) as api:
        env = {**world["env"], "GEMINI_API_KEY": "fake-key", "GOOGLE_GEMINI_BASE_URL": fake.base_url,
               "GEMINI_CLI_TRUST_WORKSPACE": "true", "ANTHROPIC_BASE_URL": api.base_url,
               "ANTHROPIC_API_KEY": "sk-ant-fake-e2e-key"}
        before = git.head(store)
        # -m: a named model skips Gemini CLI's router, whose classifier call is not faked
        # 300 s: a whole Node CLI run; at load ~25 one outran 120 s (the Claude Code runs have 180)
        proc = subprocess.run([str(gemini_cli), "-m", "gemini-2.5-flash", "--yolo", "-p", PROMPT],
                              cwd=proj, env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        first, second = fake.model_requests("gemini")[:2]
        texts = [p.get("text", "") for c in first["contents"] for p in c.get("parts", [])]

        # 1. Session start: the rules reached the model's first request.
        memory = [t for t in texts if "# Memory (cardmem)" in t]
        assert memory and RULE_MARK in memory[0] and "Force-pushing rewrites history" in memory[0]
        # 2. Per prompt: the frobnicator card, left out at session start, came with the prompt.
        assert CARD_MARK not in memory[0].split("</hook_context>")[0]
        assert any(CARD_MARK in t for t in texts)
        log = (store / ".cardmem" / "hooks.log").read_text()
        prompt_line = [line for line in log.splitlines() if "prompt/gemini" in line][0]
        assert "1 card(s)" in prompt_line and "entities/frobnicator" in prompt_line
        # 3. The deny rule: the model read the refusal as the tool's error; nothing ran.
        responses = [p["functionResponse"] for c in second["contents"] for p in c.get("parts", [])
                     if "functionResponse" in p]
        assert responses and "feedback/no-force-push" in json.dumps(responses[0])
        assert "Force-pushing rewrites history" in json.dumps(responses[0])
        assert not (proj / "ran-before-push").exists()
        # 4. The lesson, filed after the session by the detached learner.
        log = wait_for_commit(store, before)
    commit = git.log(store, limit=1)[0]
    assert commit.paths == ["entities/frobnicator.md"], commit.message
    assert "pre-tool-use/gemini" in log and "deny feedback/no-force-push" in log
    print(f"\ngemini: session start {len(memory[0])} chars reached the model; {prompt_line}")
