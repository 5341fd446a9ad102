"""Nothing learned is lost: a failed extraction waits in the retry queue and a later
learner run files it, in one commit, where a fresh run would have; and unmatched signals
reach the project that taught them. The learner runs in-process (as with
CARDMEM_HOOK_FOREGROUND=1), against the fake API."""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from fakeapi import error, reply

from cardmem.hosts.learn import learn_logged
from cardmem.store.git import runner as git
from cardmem.store.learning import retry
from cardmem.store.cards.card import history
from cardmem.tools.learning.extract import render_excerpt


def transcript(path: Path, word: str, turns: int = 4) -> Path:
    """A session about `word`, long enough to be learned from (> 1,000 bytes)."""
    lines = []
    for i in range(turns):
        role = "user" if i % 2 == 0 else "assistant"
        text = (f"Turn {i} about the {word} widget: we tuned its cache and it worked. " * 4
                + ("My key is sk-ant-api03-" + "A" * 90 if i == 1 else ""))
        lines.append(json.dumps({
            "type": role, "uuid": f"{word}{i}", "isSidechain": False,
            "message": {"role": role, "content": [{"type": "text", "text": text}],
                        **({"id": f"msg_{word}_{i}"} if role == "assistant" else {})}}))
    path.write_text("\n".join(lines) + "\n")
    return path


def project_dir(tmp_path: Path, name: str) -> Path:
    d = tmp_path / name
    d.mkdir(exist_ok=True)
    subprocess.run(["git", "init", "-q", str(d)], check=True)
    return d


def learn(store, session: str, path: Path | None, cwd: Path | None = None,
          event: str = "stop") -> str:
    """One learner run; returns its hooks.log line."""
    payload = {"session_id": session, "hook_event_name": event}
    if path is not None:
        payload["transcript_path"] = str(path)
    if cwd is not None:
        payload["cwd"] = str(cwd)
    learn_logged(event, payload, str(store.root))
    return log_lines(store)[-1]


def log_lines(store) -> list[str]:
    return (store.root / ".cardmem" / "hooks.log").read_text().splitlines()


def about(word: str):
    return lambda body: word in json.dumps(body)


def calls_about(api, word: str) -> int:
    return sum(1 for r in api.messages_requests() if word in json.dumps(r.body))


def fail_500(api, word: str) -> None:
    api.add(error(500), error(500), error(500), when=about(word))  # the SDK retries twice


def age(store, session: str) -> None:
    """Let the backoff pass: the entry's next try is now due."""
    path = retry.entry_path(store.root, session)
    e = json.loads(path.read_text())
    e["next_try"] = time.time() - 1
    path.write_text(json.dumps(e))


def test_an_api_error_keeps_the_redacted_excerpt_for_retry(example_store, tmp_path, model_env):
    fail_500(model_env, "alpha")
    acme = project_dir(tmp_path, "acme-api")
    before = git.head(example_store.root)
    start = time.time()
    line = learn(example_store, "sess-alpha", transcript(tmp_path / "a.jsonl", "alpha"), acme)
    assert "stop/learn" in line and "extraction failed: HTTP 500: fake 500; kept for retry" in line
    assert git.head(example_store.root) == before
    e = retry.load(example_store.root, "sess-alpha")
    assert (e["session"], e["project"], e["cwd"], e["attempts"]) == \
        ("sess-alpha", "acme-api", str(acme), 1)
    assert e["last_error"] == "HTTP 500: fake 500"
    assert start - 1 <= e["first_failed"] <= time.time()
    assert e["next_try"] == pytest.approx(e["first_failed"] + 60)
    # Kept as the model saw it: redacted, the very excerpt it was sent.
    assert "sk-ant-api03-AAAA" not in json.dumps(e) and "REDACTED" in json.dumps(e)
    assert render_excerpt(e["turns"]) in model_env.messages_requests()[0].body[
        "messages"][0]["content"]
    # The session's end: nothing new, nothing due. No call, no commit.
    learn(example_store, "sess-alpha", tmp_path / "a.jsonl", acme, event="session-end")
    assert len(model_env.messages_requests()) == 3
    assert git.head(example_store.root) == before


def test_a_timeout_keeps_the_excerpt_too(example_store, tmp_path, model_env):
    cfg = example_store.root / "cardmem.toml"
    cfg.write_text(cfg.read_text().replace("timeout_s = 30", "timeout_s = 0.5"))
    model_env.add(*[reply("Decision: too late", delay=2) for _ in range(3)])
    line = learn(example_store, "sess-slow", transcript(tmp_path / "s.jsonl", "slow"))
    assert "extraction failed: no answer within 0.5 s; kept for retry" in line
    assert retry.load(example_store.root, "sess-slow")["last_error"] == "no answer within 0.5 s"


def test_backoff_is_respected_and_the_backlog_lands_in_one_commit(example_store, tmp_path,
                                                                  model_env, monkeypatch, today):
    acme = project_dir(tmp_path, "acme-api")
    fail_500(model_env, "alpha")
    learn(example_store, "sess-alpha", transcript(tmp_path / "a.jsonl", "alpha"), acme)
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    line = learn(example_store, "sess-bravo", transcript(tmp_path / "b.jsonl", "bravo"))
    assert "no model: no ANTHROPIC_API_KEY set, and `claude` (Claude Code) is not on PATH" in line
    assert line.endswith("; kept for retry")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-test-key")
    model_env.add("Worked: bravo widgets frobnicate quux twice", when=about("bravo"))
    model_env.add("Knowledge: charlie widgets zorble at dawn", when=about("charlie"))
    before = git.head(example_store.root)
    # A fresh session: bravo (no model, so due at once) comes along; alpha is backing off.
    line = learn(example_store, "sess-charlie", transcript(tmp_path / "c.jsonl", "charlie"))
    assert calls_about(model_env, "alpha") == 3  # alpha's backoff was respected
    log = git.log(example_store.root, limit=2)
    assert log[1].commit == before  # one commit: the backlog's and the session's
    assert "Cardmem-Session: sess-bravo, sess-charlie" in log[0].message
    assert "bravo widgets frobnicate" in log[0].message and "charlie widgets zorble" in \
        log[0].message
    assert "backlog: 1 session(s) re-extracted, 1 waiting" in line
    assert retry.load(example_store.root, "sess-bravo") is None
    # Once alpha's wait is over, any run files it, where alpha's session would have.
    age(example_store, "sess-alpha")
    model_env.add("Knowledge: alpha widgets blorp the quux", when=about("alpha"))
    before = git.head(example_store.root)
    line = learn(example_store, "sess-delta", None)  # even a run with nothing of its own
    assert "skipped: no transcript_path; spool: ok: filed 1 signal(s) into " \
           "projects/acme-api/signals" in line
    assert git.log(example_store.root, limit=2)[1].commit == before
    card = example_store.read("projects/acme-api/signals")
    assert history(card.text) == [
        f"{today} · session sess-al · Knowledge: alpha widgets blorp the quux"]
    assert retry.retry_backlog(example_store.root)["waiting"] == 0
    # Nothing is extracted twice: not by the backlog, not by the sessions' own ends.
    calls = len(model_env.messages_requests())
    head = git.head(example_store.root)
    for sess, word in (("sess-alpha", "a"), ("sess-bravo", "b"), ("sess-charlie", "c")):
        learn(example_store, sess, tmp_path / f"{word}.jsonl", event="session-end")
    assert len(model_env.messages_requests()) == calls and git.head(example_store.root) == head


def test_with_no_model_the_backlog_waits_and_is_filed_once_one_appears(example_store, tmp_path,
                                                                       model_env, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    for word in ("echo", "foxtrot"):
        learn(example_store, f"sess-{word}", transcript(tmp_path / f"{word}.jsonl", word))
    for _ in range(retry.MAX_ATTEMPTS + 1):  # many runs without a model spend no attempts
        learn(example_store, "sess-x", None)
    assert retry.retry_backlog(example_store.root)["waiting"] == 2
    assert retry.load(example_store.root, "sess-echo")["attempts"] == 0
    assert model_env.messages_requests() == []
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-test-key")
    model_env.add("Worked: the echo widget cache survives restarts", when=about("echo"))
    model_env.add("Worked: the foxtrot widget cache evicts by LRU", when=about("foxtrot"))
    before = git.head(example_store.root)
    learn(example_store, "sess-x", None)
    log = git.log(example_store.root, limit=2)
    assert log[1].commit == before and "Cardmem-Session: sess-echo, sess-foxtrot" in log[0].message
    assert retry.retry_backlog(example_store.root)["waiting"] == 0


def test_the_same_session_retried_by_its_next_run_is_one_call(example_store, tmp_path,
                                                               model_env):
    fail_500(model_env, "golf")
    path = transcript(tmp_path / "g.jsonl", "golf")
    learn(example_store, "sess-golf", path)
    first = retry.load(example_store.root, "sess-golf")["turns"]
    # The session goes on (a new 20-turn window), and the next Stop succeeds.
    transcript(path, "golf", turns=44)
    model_env.add("Decision: the golf widget cache moves to redis", when=about("golf"))
    learn(example_store, "sess-golf", path)
    assert len(model_env.messages_requests()) == 4  # 3 failed tries, then one call
    sent = model_env.messages_requests()[-1].body["messages"][0]["content"]
    assert first[0]["text"] in sent and "Turn 43 about the golf" in sent
    assert retry.load(example_store.root, "sess-golf") is None
    assert "moves to redis" in git.log(example_store.root, limit=1)[0].message


def test_too_many_attempts_are_given_up_and_said(example_store, tmp_path, model_env, monkeypatch):
    monkeypatch.setattr(retry, "MAX_ATTEMPTS", 2)
    fail_500(model_env, "hotel")
    learn(example_store, "sess-hotel", transcript(tmp_path / "h.jsonl", "hotel"))
    age(example_store, "sess-hotel")
    fail_500(model_env, "hotel")
    line = learn(example_store, "sess-x", None)
    assert "retry failed: HTTP 500: fake 500" in line
    given = [ln for ln in log_lines(example_store) if " retry/give-up " in ln]
    assert len(given) == 1 and "session=sess-hotel" in given[0]
    assert "gave up on session sess-hotel: 2 failed attempts" in given[0]
    assert "given-up" in given[0]
    assert retry.retry_backlog(example_store.root) == {
        "waiting": 0, "given_up": 1, "oldest_age_s": None, "last_error": None}
    kept = json.loads((example_store.root / ".cardmem/retry/given-up/sess-hotel.json").read_text())
    assert "hotel widget" in kept["turns"][0]["text"]


def test_a_full_queue_gives_up_the_oldest_and_says_so(example_store, tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setattr(retry, "MAX_ENTRIES", 1)
    learn(example_store, "sess-india", transcript(tmp_path / "i.jsonl", "india"))
    learn(example_store, "sess-juliet", transcript(tmp_path / "j.jsonl", "juliet"))
    given = [ln for ln in log_lines(example_store) if " retry/give-up " in ln]
    assert len(given) == 1 and "sess-india: queue full (2 > 1 entries)" in given[0]
    assert retry.load(example_store.root, "sess-juliet") is not None


def test_project_sessions_file_unmatched_signals_into_the_project_card(example_store, tmp_path,
                                                                       model_env, today):
    from cardmem.store.git.writer import write_lock

    web = project_dir(tmp_path, "web-dashboard")
    model_env.add("Knowledge: the kilo widget cache is warmed by a cron job", when=about("kilo"))
    learn(example_store, "sess-kilo", transcript(tmp_path / "k.jsonl", "kilo"), web)
    card = example_store.read("projects/web-dashboard/signals")
    assert (card.type, card.project) == ("signal", "web-dashboard")
    assert history(card.text)[-1].endswith("Knowledge: the kilo widget cache is warmed by a cron job")
    # No cwd, no project: the day card.
    model_env.add("Knowledge: the lima widget cache is warmed by hand", when=about("lima"))
    learn(example_store, "sess-lima", transcript(tmp_path / "l.jsonl", "lima"))
    assert "warmed by hand" in example_store.read(f"signals/{today}").text
    # A busy store spools the batch with its project; the next run files it there.
    cfg = example_store.root / "cardmem.toml"
    cfg.write_text(cfg.read_text() + "\n[store]\nlock_timeout_s = 0.2\n")
    model_env.add("Knowledge: the mike widget cache is cleared on deploy", when=about("mike"))
    with write_lock(example_store.root, 1):
        line = learn(example_store, "sess-mike", transcript(tmp_path / "m.jsonl", "mike"), web)
    assert "spooled 1 signal(s)" in line
    learn(example_store, "sess-x", None)
    assert "cleared on deploy" in example_store.read("projects/web-dashboard/signals").text


# A token the model hands back (it may rebuild one the excerpt's redaction cut, or read it
# from a tool result) is redacted before it is filed: on the learner's own path and on the
# backlog's retry path. Each test fails with that path's `redact(s.line)` taken out.
GITHUB_TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0" * 2


def history_text(store) -> str:
    """Every byte git keeps: each commit's message and patch, on every ref."""
    return subprocess.run(["git", "-C", str(store.root), "log", "--all", "-p", "--format=%B"],
                          capture_output=True, text=True, check=True).stdout


def test_a_token_in_the_models_lines_never_reaches_git(example_store, tmp_path, model_env):
    model_env.add(f"Knowledge: the november deploy uses {GITHUB_TOKEN} for pushes",
                  when=about("november"))
    line = learn(example_store, "sess-november", transcript(tmp_path / "n.jsonl", "november"))
    assert "ok: filed 1 signal(s)" in line, line
    text = history_text(example_store)
    assert "the november deploy uses" in text  # filed, and
    assert GITHUB_TOKEN not in text and GITHUB_TOKEN[:12] not in text  # redacted


def test_a_token_in_the_models_lines_on_the_retry_path_never_reaches_git(
        example_store, tmp_path, model_env):
    fail_500(model_env, "oscar")
    learn(example_store, "sess-oscar", transcript(tmp_path / "o.jsonl", "oscar"))
    age(example_store, "sess-oscar")
    model_env.add(f"Knowledge: the oscar deploy uses {GITHUB_TOKEN} for pushes",
                  when=about("oscar"))
    line = learn(example_store, "sess-x", None)  # the backlog's retry files it
    assert "backlog: 1 session(s) re-extracted" in line, line
    text = history_text(example_store)
    assert "the oscar deploy uses" in text
    assert GITHUB_TOKEN not in text and GITHUB_TOKEN[:12] not in text
    spooled = example_store.root / ".cardmem" / "spool"
    assert not any(GITHUB_TOKEN in p.read_text() for p in spooled.glob("*.json"))


def test_the_backlog_stops_at_its_first_failure(example_store, tmp_path, model_env):
    """The model is likely down for every entry: one failed retry ends the run, and the
    entries after it keep their attempts (no calls, no backoff spent on them)."""
    for word in ("papa", "quebec"):
        fail_500(model_env, word)
        learn(example_store, f"sess-{word}", transcript(tmp_path / f"{word}.jsonl", word))
    for word in ("papa", "quebec"):  # both due now, and the model still down
        age(example_store, f"sess-{word}")
        fail_500(model_env, word)
    calls = len(model_env.messages_requests())
    line = learn(example_store, "sess-x", None)
    assert "retry failed: HTTP 500: fake 500" in line, line
    attempts = sorted(retry.load(example_store.root, f"sess-{w}")["attempts"]
                      for w in ("papa", "quebec"))
    assert attempts == [1, 2]  # one retried, the other left for a later run
    assert len(model_env.messages_requests()) == calls + 3  # one entry's call, SDK retries


def test_merged_excerpts_drop_repeats_and_keep_the_newest_turns():
    from cardmem.tools.learning.backlog import merge_turns

    def turns(*words):
        return [{"role": "user", "text": w} for w in words]

    old, new = turns("a", "b", "c"), turns("c", "d")
    assert merge_turns(old, new, 10) == turns("a", "b", "c", "d")  # "c" once
    assert merge_turns(old, new, 3) == turns("b", "c", "d")  # the newest 3
    assert merge_turns(old + ["not a turn"], new, 0) == turns("a", "b", "c", "d")  # no cap
