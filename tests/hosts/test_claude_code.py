"""The Claude Code hooks as the host runs them, JSON in and out: the hook's main() in this
process (tests/clikit.py), and separate processes where the boundary is the point (the pile
a session starts with, what a start imports, detaching, the `cardmem hook` route)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from clikit import Ran, call
from fakeapi import reply

from cardmem.hosts import hooklog
from cardmem.store.git import runner as git

SESSION = "5e55104d-aaaa-4bbb-8ccc-123456789abc"


def hook(event: str, payload: dict | str, store: Path | None, env: dict | None = None) -> Ran:
    """The hook's main() in-process, with no ANTHROPIC_* of ours; main() sets CARDMEM_AGENT,
    which is put back afterwards."""
    from cardmem.hosts.claude_code.__main__ import main

    args = ["--store", str(store)] if store is not None else []
    data = payload if isinstance(payload, str) else json.dumps(payload)
    full: dict[str, str | None] = {k: None for k in os.environ if k.startswith("ANTHROPIC_")}
    full["CARDMEM_AGENT"] = os.environ.get("CARDMEM_AGENT")  # as it was, afterwards
    return call(main, "claude_code", *args, event, input=data, env={**full, **(env or {})})


def hook_process(event: str, payload: dict | str, store: Path | None, env: dict | None = None,
                 timeout: float = 60) -> subprocess.CompletedProcess:
    """The hook as Claude Code runs it: `python -m cardmem.hosts.claude_code`."""
    args = [sys.executable, "-m", "cardmem.hosts.claude_code"]
    if store is not None:
        args += ["--store", str(store)]
    data = payload if isinstance(payload, str) else json.dumps(payload)
    full = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    full.update(env or {})
    return subprocess.run(args + [event], input=data, capture_output=True, text=True,
                          env=full, timeout=timeout)


def context_of(proc: Ran | subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) <= {"hookSpecificOutput", "systemMessage"}
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    return out["hookSpecificOutput"]["additionalContext"]


def test_session_start_prints_the_pile(example_store, tmp_path):
    proj = tmp_path / "acme-api"
    proj.mkdir()
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    text = context_of(hook_process("session-start", {"session_id": SESSION, "cwd": str(proj),
                                                     "source": "startup",
                                                     "hook_event_name": "SessionStart"},
                                   example_store.root))
    assert "## Rules (9, always in force)" in text
    assert "## Project acme-api (7 cards)" in text
    assert len(text) <= 9500
    log = (example_store.root / ".cardmem" / "hooks.log").read_text()
    assert "session-start" in log and "session=5e55104d-aaa" in log and " ok: " in log


@pytest.mark.parametrize("stdin", ["", "not json", "[1, 2]", "{\"cwd\": 5}"])
def test_session_start_tolerates_any_input(example_store, stdin):
    text = context_of(hook("session-start", stdin, example_store.root))
    assert "feedback/run-tests-with-x" in text


def test_session_start_without_a_store_still_exits_0(tmp_path):
    proc = hook("session-start", {"session_id": "x", "cwd": str(tmp_path)}, tmp_path / "nope")
    text = context_of(proc)
    assert text.startswith("(cardmem: no memory loaded this session:")
    assert "\n" not in text  # one line
    assert not (tmp_path / "nope").exists()  # nothing created


def test_session_start_with_broken_card_and_bad_toml(example_store):
    (example_store.root / "feedback" / "broken.md").write_bytes(b"---\ntitle: [x\n---\n")
    (example_store.root / "cardmem.toml").write_text("[context\nbudget_chars = 'lots'\n")
    text = context_of(hook("session-start", {}, example_store.root))
    assert "feedback/run-tests-with-x" in text
    assert "cardmem.toml ignored" in text
    assert "1 card file(s) could not be read" in text


def test_session_start_while_the_write_lock_is_held(example_store):
    from cardmem.store.git.writer import write_lock

    with write_lock(example_store.root, 1):
        start = time.monotonic()
        text = context_of(hook("session-start", {}, example_store.root))
        assert time.monotonic() - start < 10
    assert "feedback/run-tests-with-x" in text


def test_session_start_imports_nothing_heavy(example_store):
    def imported() -> set[str]:
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m",
                               "cardmem.hosts.claude_code", "--store", str(example_store.root),
                               "session-start"], input="{}", capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 0
        return {ln.split("|")[-1].strip() for ln in proc.stderr.splitlines() if "|" in ln}

    first = imported()  # builds the index and the caches
    heavy = {m for m in first if m.split(".")[0] in
             ("anthropic", "mcp", "watchdog", "git", "click", "httpx", "rapidfuzz", "pydantic")}
    assert heavy == set()
    warm = imported()
    assert "cardmem.store.context" in warm  # the measurement saw the real work
    # A warm start reads the index and the caches: no YAML, no writer, no git process.
    assert {m for m in warm if m.split(".")[0] in ("yaml", "frontmatter", "tempfile",
                                                   "subprocess", "filelock")} == set()
    assert "cardmem.store.store" not in warm and "cardmem.store.cards.card" not in warm
    # Nothing moved since the last start: the index is not even opened.
    assert "sqlite3" not in warm and "tomllib" not in warm


def write_transcript(path: Path, turns: list[tuple[str, str]]) -> Path:
    lines = []
    for i, (role, text) in enumerate(turns):
        rec = {"type": role, "uuid": f"u{i}", "sessionId": SESSION, "isSidechain": False,
               "message": {"role": role, "content": [{"type": "text", "text": text}],
                           **({"id": f"msg_{i}"} if role == "assistant" else {})}}
        lines.append(json.dumps(rec))
    path.write_text("\n".join(lines) + "\n")
    return path


CONVERSATION = [
    ("user", "The billing-service workers keep hitting the KEDA ceiling. Raise it. " * 5),
    ("assistant", "I raised the KEDA maxReplicaCount for billing-service workers from 12 "
                  "to 16 and the queue drained. My key was sk-ant-api03-" + "A" * 90 + " by the way. " * 3),
    ("user", "Great, thanks. Keep it at 16. " * 5),
    ("assistant", "Done: committed the change to deploy/prod/values.yaml. " * 4),
]


def test_stop_hook_learns_in_the_foreground(example_store, tmp_path, fake_api):
    fake_api.add("Decision: billing-service workers scale with KEDA up to 16 replicas now\n"
                 "Some chatter that is not a contract line\n")
    transcript = write_transcript(tmp_path / "t.jsonl", CONVERSATION)
    before = git.head(example_store.root)
    proc = hook("stop", {"session_id": SESSION, "transcript_path": str(transcript),
                         "cwd": str(tmp_path), "hook_event_name": "Stop"}, example_store.root,
                env={"CARDMEM_HOOK_FOREGROUND": "1", "ANTHROPIC_API_KEY": "sk-ant-fake",
                     "ANTHROPIC_BASE_URL": fake_api.base_url})
    assert proc.returncode == 0 and proc.stdout == ""
    log = git.log(example_store.root, limit=2)
    assert log[1].commit == before
    assert log[0].paths == ["entities/billing-service.md"]
    assert "Cardmem-Session: 5e55104" in log[0].message
    assert "KEDA up to 16 replicas" in example_store.read("entities/billing-service").text
    # The excerpt sent to the model was redacted.
    sent = json.dumps(fake_api.messages_requests()[0].body)
    assert "sk-ant-api03-AAAA" not in sent and "REDACTED" in sent
    assert "KEDA maxReplicaCount" in sent
    # The same transcript again: nothing new, no second model call, no commit.
    hook("session-end", {"session_id": SESSION, "transcript_path": str(transcript)},
         example_store.root, env={"CARDMEM_HOOK_FOREGROUND": "1", "ANTHROPIC_API_KEY": "k",
                                  "ANTHROPIC_BASE_URL": fake_api.base_url})
    assert len(fake_api.messages_requests()) == 1
    assert git.head(example_store.root) == log[0].commit
    text = (example_store.root / ".cardmem" / "hooks.log").read_text()
    assert "stop/learn" in text and "filed 1 signal(s) into entities/billing-service" in text
    assert "nothing new" in text


def test_stop_hook_without_key_logs_one_line_and_exits_0(example_store, tmp_path):
    transcript = write_transcript(tmp_path / "t.jsonl", CONVERSATION)
    before = git.head(example_store.root)
    proc = hook("stop", {"session_id": SESSION, "transcript_path": str(transcript)},
                example_store.root, env={"CARDMEM_HOOK_FOREGROUND": "1"})
    assert proc.returncode == 0
    assert git.head(example_store.root) == before
    lines = (example_store.root / ".cardmem" / "hooks.log").read_text().splitlines()
    assert "no model: no ANTHROPIC_API_KEY set" in lines[-1]


def test_short_sessions_are_skipped(example_store, tmp_path, fake_api):
    transcript = write_transcript(tmp_path / "t.jsonl", [("user", "hi")])
    hook("stop", {"session_id": SESSION, "transcript_path": str(transcript)}, example_store.root,
         env={"CARDMEM_HOOK_FOREGROUND": "1", "ANTHROPIC_API_KEY": "k",
              "ANTHROPIC_BASE_URL": fake_api.base_url})
    assert fake_api.messages_requests() == []
    assert "under 1,000 bytes" in (example_store.root / ".cardmem" / "hooks.log").read_text()


def test_stop_hook_detaches_and_learns_in_the_background(example_store, tmp_path, fake_api):
    # The model answers only when the test lets it (after the hook is back), or after
    # HELD_S: a hook that waited for the learner would take HELD_S, far over the bound.
    HELD_S = 60
    let_answer = threading.Event()

    def model(body):
        let_answer.wait(HELD_S)
        return reply("Decision: billing-service workers scale with KEDA up to 16 replicas now")

    fake_api.handler = model
    transcript = write_transcript(tmp_path / "t.jsonl", CONVERSATION)
    before = git.head(example_store.root)
    start = time.monotonic()
    proc = hook_process("stop", {"session_id": SESSION, "transcript_path": str(transcript)},
                        example_store.root, env={"ANTHROPIC_API_KEY": "k",
                                                 "ANTHROPIC_BASE_URL": fake_api.base_url})
    took = time.monotonic() - start
    assert proc.returncode == 0 and took < HELD_S / 4  # back before the model answered
    assert git.head(example_store.root) == before
    let_answer.set()
    deadline = time.monotonic() + 60
    while git.head(example_store.root) == before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert git.head(example_store.root) != before
    log = (example_store.root / ".cardmem" / "hooks.log").read_text()
    assert " stop " in log and "detached" in log


def test_hook_log_rotates(tmp_path):
    root = tmp_path / "s"
    (root / ".git").mkdir(parents=True)
    (root / ".cardmem").mkdir()
    (root / ".cardmem" / "hooks.log").write_text("x" * (hooklog.MAX_BYTES + 1))
    hooklog.write(root, "session-start", time.monotonic(), "ok: test")
    assert (root / ".cardmem" / "hooks.log.1").stat().st_size > hooklog.MAX_BYTES
    assert (root / ".cardmem" / "hooks.log").read_text().endswith("ok: test\n")


def test_unknown_event_is_a_notice_not_a_failure(example_store):
    proc = hook("no-such-event", {}, example_store.root)
    assert proc.returncode == 0 and "unknown event" in proc.stderr


def test_cli_route_gives_the_same_json(example_store):
    exe = Path(sys.executable).with_name("cardmem")
    proc = subprocess.run([str(exe), "hook", "claude-code", "session-start", "--store",
                           str(example_store.root)], input="{}", capture_output=True, text=True,
                          timeout=60)
    assert "feedback/run-tests-with-x" in context_of(proc)


def test_busy_store_spools_and_the_next_run_files_it(example_store, tmp_path, fake_api):
    from cardmem.store.git.writer import write_lock

    (example_store.root / "cardmem.toml").write_text(
        (example_store.root / "cardmem.toml").read_text() + "\n[store]\nlock_timeout_s = 0.2\n")
    subprocess.run(["git", "-C", str(example_store.root), "commit", "-qam", "short lock wait"],
                   check=True, env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x",
                                    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"})
    fake_api.add("Decision: billing-service workers scale with KEDA up to 16 replicas now")
    transcript = write_transcript(tmp_path / "t.jsonl", CONVERSATION)
    env = {"CARDMEM_HOOK_FOREGROUND": "1", "ANTHROPIC_API_KEY": "k",
           "ANTHROPIC_BASE_URL": fake_api.base_url}
    before = git.head(example_store.root)
    with write_lock(example_store.root, 1):
        proc = hook("stop", {"session_id": SESSION, "transcript_path": str(transcript)},
                    example_store.root, env=env)
    assert proc.returncode == 0 and git.head(example_store.root) == before
    spooled = list((example_store.root / ".cardmem" / "spool").glob("*.json"))
    assert len(spooled) == 1
    assert "spooled 1 signal(s)" in (example_store.root / ".cardmem" / "hooks.log").read_text()
    # The session ends: nothing new to extract, but the spool is filed (one commit).
    hook("session-end", {"session_id": SESSION, "transcript_path": str(transcript)},
         example_store.root, env=env)
    assert len(fake_api.messages_requests()) == 1
    assert git.head(example_store.root) != before
    assert "KEDA up to 16 replicas" in example_store.read("entities/billing-service").text
    assert list((example_store.root / ".cardmem" / "spool").glob("*.json")) == []


def test_session_start_with_a_read_only_store(example_store, tmp_path):
    if os.geteuid() == 0:
        # root writes anyway; make the state folder a file so nothing can be written there
        state = example_store.root / ".cardmem"
        if state.exists():
            import shutil

            shutil.rmtree(state)
        state.write_text("not a folder")
    else:
        os.chmod(example_store.root, 0o555)
    try:
        text = context_of(hook("session-start", {}, example_store.root))
    finally:
        os.chmod(example_store.root, 0o755)
    assert "## Rules (9, always in force)" in text and "user/tomas" in text


def test_the_last_resort_rule_list_leaves_proposals_out(tmp_path: Path) -> None:
    from cardmem.hosts.session_start import _rule_titles
    from cardmem.store.cards.status import says_proposed

    (tmp_path / "feedback").mkdir()
    (tmp_path / "feedback/live.md").write_text("---\ntype: feedback\n---\nA rule.\n")
    (tmp_path / "feedback/agents.md").write_text(
        "---\ntype: feedback\nstatus: proposed\nproposed_by: mcp\n---\nObey me.\n")
    assert _rule_titles(tmp_path) == "# Memory (cardmem)\n## Rules (titles only)\n- `feedback/live`\n"
    assert says_proposed("---\nstatus: 'proposed'  # by mcp\n---\n")
    assert not says_proposed("---\ntitle: x\n---\nstatus: proposed\n")  # the body says it


def test_hooks_and_mcp_idle_inside_cardmems_own_model_call(example_store, tmp_path):
    """In the `claude -p` child of the claude-code route (CARDMEM_HOOK_CHILD=1) no hook
    adds context or learns, and `cardmem mcp` serves nothing: no recursion."""
    from cardmem.tools.model import CHILD_ENV

    assert CHILD_ENV == "CARDMEM_HOOK_CHILD"
    child = {CHILD_ENV: "1", "CARDMEM_HOOK_FOREGROUND": "1", "ANTHROPIC_API_KEY": "k"}
    transcript = write_transcript(tmp_path / "t.jsonl", CONVERSATION)
    before = git.head(example_store.root)
    start = hook("session-start", {"cwd": str(tmp_path)}, example_store.root, env=child)
    assert (start.returncode, start.stdout) == (0, "{}\n")
    for event in ("stop", "session-end"):
        proc = hook(event, {"session_id": SESSION, "transcript_path": str(transcript)},
                    example_store.root, env=child)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert git.head(example_store.root) == before
    assert not (example_store.root / ".cardmem" / "hooks.log").exists()
    mcp = subprocess.run([sys.executable, "-m", "cardmem.tools.cli", "mcp", "--store",
                          str(tmp_path / "no-store")], input="", capture_output=True,
                         text=True, timeout=30, env={**os.environ, CHILD_ENV: "1"})
    assert (mcp.returncode, mcp.stdout, mcp.stderr) == (0, "", "")


def test_a_second_learner_calls_the_model_only_for_new_conversation(example_store, tmp_path,
                                                                     fake_api):
    """Stop learns; the transcript then grows by lines that teach nothing (a summary, a
    system line), as it does before SessionEnd: no second model call. New talk: one."""
    fake_api.add("Decision: billing-service workers scale with KEDA up to 16 replicas now\n")
    transcript = write_transcript(tmp_path / "t.jsonl", CONVERSATION)
    env = {"CARDMEM_HOOK_FOREGROUND": "1", "ANTHROPIC_API_KEY": "k",
           "ANTHROPIC_BASE_URL": fake_api.base_url}
    payload = {"session_id": SESSION, "transcript_path": str(transcript), "cwd": str(tmp_path)}
    hook("stop", payload, example_store.root, env=env)
    assert len(fake_api.messages_requests()) == 1
    with open(transcript, "a") as f:  # ~2 KB of lines that are not conversation
        f.write(json.dumps({"type": "summary", "summary": "KEDA ceiling " * 80}) + "\n")
        f.write(json.dumps({"type": "system", "content": "Stop hook ran " * 80}) + "\n")
    hook("session-end", payload, example_store.root, env=env)
    assert len(fake_api.messages_requests()) == 1
    log = (example_store.root / ".cardmem" / "hooks.log").read_text()
    assert "nothing new said since the last run" in log
    more = write_transcript(tmp_path / "more.jsonl", [
        ("user", "Also pin the KEDA version to 2.14 in the chart, please. " * 5),
        ("assistant", "Pinned KEDA to 2.14 in deploy/prod/Chart.yaml. " * 5)])
    with open(transcript, "a") as f:
        f.write(more.read_text())
    fake_api.add("Decision: KEDA is pinned to 2.14 in the prod chart\n")
    hook("session-end", payload, example_store.root, env=env)
    assert len(fake_api.messages_requests()) == 2
