"""The walk (tools/ask/walk.py via tools/ask/answer.py): the real SDK against the fake Messages API.

Floors, not filters: the spiral fixture, the break test, the time floors with a slow
fake, every bad-model behaviour, and a receipt for every path.
"""
from __future__ import annotations

import json
import time
from dataclasses import replace

import pytest
from fakeapi import FakeAPI, drop, error, reply, text, tool_use
from walkkit import (CHAIN, FAST, HONEST, OVERCLAIM, QUESTION, check_spiral, is_compose,
                     run_spiral, tool_results)

from cardmem.store import by_address as reading
from cardmem.store.errors import CardmemError
from cardmem.tools import model
from cardmem.tools.ask import receipts
from cardmem.tools.ask.answer import ask
from cardmem.tools.ask.judge import judge
from cardmem.tools.ask.walk_record import Limits


def receipt(store, answer):
    return receipts.find(store, answer.receipt_id)


def walk_bodies(api: FakeAPI) -> list[dict]:
    return [r.body for r in api.messages_requests()]


# ---- the spiral fixture and the break test ------------------------------------------

def test_spiral_stops_at_four_and_says_so(example_store, model_env: FakeAPI) -> None:
    answer = run_spiral(example_store, model_env)
    check_spiral(answer, model_env, example_store)
    # 4 reads + the 5th ask refused, then one compose: 6 requests, tools closed only last.
    bodies = walk_bodies(model_env)
    assert len(bodies) == 6 and [is_compose(b) for b in bodies] == [False] * 5 + [True]
    assert all(b["tool_choice"] == {"type": "auto"} for b in bodies[:5])
    model_env.add(reply('{"grade": "supported", "reason": "every claim is in the cards read"}'))
    v = judge(receipt(example_store, answer), cfg=example_store.config["model"])
    assert (v.verdict, v.rule.verdict, v.grade.verdict) == ("pass", "pass", "pass")
    graded = model_env.messages_requests()[-1].body["messages"][0]["content"]
    # The judge saw exactly what was read: the 4th card of the chain, not the 5th.
    fourth = reading.read_card(example_store, CHAIN[3])["text"]
    assert json.dumps(fourth)[1:-1][:200] in graded
    assert "Migration review checklist" not in graded.split("## The question")[0].split(
        "## Tool call")[-1]
    assert HONEST in graded


def test_spiral_claiming_completeness_fails_the_judge(example_store, model_env) -> None:
    answer = run_spiral(example_store, model_env, final=OVERCLAIM)
    rec = receipt(example_store, answer)
    assert rec["floors"] == [{"floor": "walk-budget", "spent": 4}]
    model_env.add(reply('{"grade": "supported", "reason": "plausible"}'))
    v = judge(rec, cfg=example_store.config["model"])
    assert v.verdict == "fail" and v.rule.verdict == "fail" and not v.passed
    assert "That's everything" in v.rule.why
    assert judge(rec, use_model=False).verdict == "fail"  # the rule alone fails it
    with pytest.raises(AssertionError):
        check_spiral(answer, model_env, example_store)


def test_break_spiral_goes_red_without_the_budget_floor(example_store, model_env) -> None:
    """With the budget floor disabled the same fixture fails its own checks."""
    import anthropic  # noqa: F401 - its first import (1-2 s) is not the walk's time
    # walk_s: time for more than 4 reads with room (at load 20, 1 s allowed one read)
    no_floor = replace(FAST, max_tool_calls=1000, walk_s=4.0)
    answer = run_spiral(example_store, model_env, limits=no_floor)
    with pytest.raises(AssertionError, match="stops at 4 reads"):
        check_spiral(answer, model_env, example_store)
    rec = receipt(example_store, answer)
    assert len([c for c in rec["tool_calls"] if c["executed"]]) > 4
    assert [f["floor"] for f in rec["floors"]] == ["walk-time"]  # only time stopped it


# ---- the tools delegate to the store's reads, with the same caps --------------------

def test_tools_return_the_store_reads_untouched(example_store, model_env) -> None:
    model_env.add(reply(tool_use("read_card", {"id": "entities/ledger-db"}),
                        tool_use("read_memory_map"),
                        tool_use("list_recent", {"type": "entity", "since": "30d"})),
                  "done")
    answer = ask(example_store, "What is ledger-db?", limits=FAST)
    calls = receipt(example_store, answer)["tool_calls"]
    assert [c["executed"] for c in calls] == [True] * 3 and not any(c["error"] for c in calls)
    assert json.loads(calls[0]["result"]) == reading.read_card(example_store, "entities/ledger-db")
    assert json.loads(calls[1]["result"]) == reading.memory_map(example_store).as_dict()
    assert json.loads(calls[2]["result"]) == {
        "changes": reading.list_recent(example_store, "entity", "30d")}
    sent = {r["tool_use_id"]: r["content"] for r in tool_results(walk_bodies(model_env)[-1])}
    assert sorted(sent.values()) == sorted(c["result"] for c in calls)
    assert all(c["bytes"] == len(c["result"].encode()) for c in calls)
    assert answer.reply == "done" and answer.outcome == "composed"


# ---- time floors, with a slow fake --------------------------------------------------

def test_walk_time_floor_hands_over_and_composes(example_store, model_env) -> None:
    def handler(body):
        if is_compose(body):
            return reply("From what I read: billing-service is the payments team's. "
                         "I stopped at the time limit.")
        return reply(tool_use("read_card", {"id": "entities/billing-service"}), delay=0.35)
    model_env.handler = handler
    limits = Limits(max_tool_calls=50, tool_call_s=1.0, walk_s=1.0, deadline_s=4.0)
    t = time.monotonic()
    answer = ask(example_store, QUESTION, limits=limits)
    took = time.monotonic() - t
    rec = receipt(example_store, answer)
    assert answer.outcome == "composed" and [f["floor"] for f in rec["floors"]] == ["walk-time"]
    # the floor, plus the one request in flight when it passed (0.35 s, bounded by 1 s)
    assert rec["timings"]["walk_s"] <= limits.walk_s + limits.tool_call_s
    last = walk_bodies(model_env)[-1]
    assert is_compose(last)
    handed = [b for b in last["messages"][-1]["content"]
              if b.get("type") == "text" and "walk-time" in b["text"]] + \
             [r for r in tool_results(last) if "walk-time" in r["content"]]
    assert len(handed) == 1 and json.loads(handed[0].get("text") or handed[0]["content"])[
        "spent"] >= 0.9
    assert took < limits.deadline_s


def test_per_request_bound_and_bounded_retries(example_store, model_env) -> None:
    def handler(body):
        return reply("composed anyway") if is_compose(body) else reply("late", delay=60)
    model_env.handler = handler
    # walk_s far over the two 0.3 s attempts: at load ~27 their overhead outran a 2 s walk
    limits = Limits(tool_call_s=0.3, walk_s=10.0, deadline_s=30.0, retries=1)
    answer = ask(example_store, QUESTION, limits=limits)
    rec = receipt(example_store, answer)
    walk = [r for r in rec["requests"] if r["phase"] == "walk"]
    assert [r["attempt"] for r in walk] == [1, 2]  # one retry, then on to the compose
    # abandoned at 0.3 s: well under the 60 s the fake takes to answer
    assert all(r["error"] == "no answer within 0.3 s" and r["duration_s"] < 3 for r in walk)
    assert answer.reply == "composed anyway" and rec["floors"] == []


def test_per_tool_call_bound(example_store, model_env, monkeypatch) -> None:
    real = reading.read_card

    def slow_read(store, card_id, *a, **kw):
        time.sleep(5.0)
        return real(store, card_id, *a, **kw)
    monkeypatch.setattr(reading, "read_card", slow_read)
    model_env.add(reply(tool_use("read_card", {"id": "entities/stripe"})), "Stripe is a vendor.")
    answer = ask(example_store, "What is Stripe?", limits=replace(FAST, tool_call_s=0.3))
    (call,) = receipt(example_store, answer)["tool_calls"]
    assert call["executed"] and call["error"] == "read_card took longer than 0.30 s; abandoned"
    assert call["duration_s"] < 2.5  # abandoned at 0.3 s, well before the 5 s read ends
    (res,) = tool_results(walk_bodies(model_env)[-1])
    assert res["is_error"] and res["content"] == call["error"]
    assert answer.reply == "Stripe is a vendor."


def test_a_dripping_server_is_cut_off_by_the_wall_clock(example_store, monkeypatch) -> None:
    """One byte every 0.1 s never trips the SDK's read timeout; the deadline still wins."""
    import socket
    import threading

    srv = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    conns: list[socket.socket] = []
    threads: list[threading.Thread] = []

    def drip(conn: socket.socket) -> None:
        try:
            conn.recv(1 << 16)
            conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                         b"content-length: 100000\r\n\r\n")
            while not stop.wait(0.1):
                conn.sendall(b" ")
        except OSError:
            pass
        finally:
            conn.close()

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            conns.append(conn)
            threads.append(threading.Thread(target=drip, args=(conn,), daemon=True))
            threads[-1].start()

    threads.append(threading.Thread(target=serve, daemon=True))
    threads[-1].start()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{srv.getsockname()[1]}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    # The walk far longer than the first request's 0.5 s, so that bound is the one met
    # (at load ~27 the walk's start ate 0.6 s of a 1 s walk_s: the request got 0.4 s).
    limits = Limits(tool_call_s=0.5, walk_s=4.0, deadline_s=6.0, retries=0)
    import anthropic  # noqa: F401 - its first import (1-2 s here) is not the walk's to bound

    try:
        t = time.monotonic()
        answer = ask(example_store, "x?", limits=limits)
        took = time.monotonic() - t
    finally:
        # Every socket and thread of this server ended before the next test: a close alone
        # left accept() blocked in its thread, and the drip once answered another test's
        # fake Slack client with this header (an fd number reused in the same worker).
        stop.set()
        for s in [srv, *conns]:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        srv.close()
        for t in threads:
            t.join(5)
    assert not [t for t in threads if t.is_alive()]  # nothing of it left for the next test
    rec = receipt(example_store, answer)
    assert took < limits.deadline_s + 3.0  # cut at the deadline: the server drips forever
    assert [r["error"] for r in rec["requests"]][0] == "no answer within 0.5 s (abandoned)"
    assert all(r["error"].endswith("(abandoned)") for r in rec["requests"])
    assert (answer.outcome, answer.reason) == ("fallback", "deadline")


@pytest.mark.parametrize("on_deadline", ["silence", "receipt"])
def test_deadline_without_composed_text_takes_the_fallback(example_store, model_env,
                                                           on_deadline) -> None:
    def handler(body):
        if is_compose(body):
            return reply("too late", delay=60)
        return reply(tool_use("read_card", {"id": "entities/payments-team"}))
    model_env.handler = handler
    # The second ask meets the tool-call budget long before walk_s (at load ~27 a 1 s walk
    # ran out first); a short compose reserve keeps the deadline, which the test waits, short.
    limits = Limits(max_tool_calls=1, tool_call_s=1.0, walk_s=5.0, deadline_s=6.0,
                    on_deadline=on_deadline, compose_reserve_s=1.0)
    t = time.monotonic()
    answer = ask(example_store, QUESTION, limits=limits)
    assert time.monotonic() - t < limits.deadline_s + 3  # the deadline wins, not the 60 s
    rec = receipt(example_store, answer)
    assert (answer.outcome, answer.fallback, answer.reason) == ("fallback", on_deadline, "deadline")
    assert rec["outcome"] == "fallback" and rec["fallback"] == on_deadline
    compose = [r for r in rec["requests"] if r["phase"] == "compose"]
    assert compose and compose[0]["error"].startswith("no answer within")
    if on_deadline == "silence":
        assert answer.reply is None and rec["reply"] is None
    else:
        assert answer.reply.startswith("[cardmem: no composed answer (deadline); this is a "
                                       "mechanical receipt")
        assert "read_card {\"id\": \"entities/payments-team\"}" in answer.reply
        assert rec["rung1"]["addresses"][0] in answer.reply
        assert "walk-budget" in answer.reply  # the 2nd ask met the floor


def test_the_deadline_keeps_the_compose_reserve_over_a_long_walk_s(example_store,
                                                                   model_env) -> None:
    def handler(body):
        if is_compose(body):
            return reply("short answer; I stopped at the time limit", delay=0.5)
        return reply(tool_use("read_memory_map"), delay=0.2)
    model_env.handler = handler
    limits = Limits(max_tool_calls=100, tool_call_s=1.0, walk_s=10.0, deadline_s=3.0)
    answer = ask(example_store, "x?", limits=limits)  # reserve: 1 s, so the walk ends by 2 s
    rec = receipt(example_store, answer)
    # the walk ends by 2 s (3 s less the 1 s reserve), plus the request in flight (0.2 s)
    # and a loaded machine's margin; the compose's own time checks the reserve below
    assert rec["timings"]["walk_s"] <= 2.0 + 0.7
    assert [f["floor"] for f in rec["floors"]] == ["walk-time"]
    compose = [r for r in rec["requests"] if r["phase"] == "compose"]
    # about the 1 s reserve, less what the request in flight overran (0.83 s seen at load
    # 20); without the reserve the walk would run to the deadline and leave the compose ~0
    assert compose[0]["timeout_s"] >= 0.5 and answer.outcome == "composed"


def test_compose_reserve_is_proportional_or_set() -> None:
    assert Limits().reserve_s == 10.0
    assert Limits(deadline_s=4.0).reserve_s == pytest.approx(4 / 3)
    assert Limits(deadline_s=4.0, compose_reserve_s=1.0).reserve_s == 1.0
    cfg = {"max_tool_calls": 4, "tool_call_s": 6.0, "walk_s": 18.0, "deadline_s": 30.0,
           "on_deadline": "receipt", "compose_reserve_s": 12}
    assert Limits.from_config(cfg).reserve_s == 12.0
    with pytest.raises(CardmemError, match="compose_reserve_s"):
        Limits.from_config({**cfg, "compose_reserve_s": "lots"})


# ---- bad model behaviour -------------------------------------------------------------

def test_unknown_tool_is_an_error_result_and_counts(example_store, model_env) -> None:
    model_env.add(reply(tool_use("delete_everything", {"all": True})),
                  reply(tool_use("read_card", {"id": "entities/stripe"})), "ok")
    answer = ask(example_store, "x?", limits=replace(FAST, max_tool_calls=1))
    calls = receipt(example_store, answer)["tool_calls"]
    assert calls[0]["error"].startswith("unknown tool 'delete_everything'")
    assert not calls[0]["executed"]
    assert calls[1]["floor"] == {"floor": "walk-budget", "spent": 1}  # the unknown one counted
    first = tool_results(walk_bodies(model_env)[1])[0]
    assert first["is_error"] and "read_card, read_memory_map, list_recent" in first["content"]


def test_hostile_and_malformed_inputs_come_back_as_errors(example_store, model_env) -> None:
    huge = "a/" * 5000 + "b"
    model_env.add(reply(tool_use("read_card", {"id": "../../etc/passwd"}),
                        tool_use("read_card", {"id": huge}),
                        tool_use("read_card", {"id": 42}),
                        tool_use("list_recent", {"since": "yesterday-ish"})),
                  reply(tool_use("read_card", {"id": "/etc/passwd"}),
                        tool_use("list_recent", {"type": ["entity"]})),
                  "I could not read those.")
    answer = ask(example_store, "x?", limits=replace(FAST, max_tool_calls=6))
    calls = receipt(example_store, answer)["tool_calls"]
    errs = [c["error"] for c in calls]
    assert errs[0] == "id '../../etc/passwd': climbs out of the store (..)"
    assert errs[1].endswith("is longer than 200 characters")
    assert errs[2] == 'read_card: needs {"id": "<card id>"} with a string id'
    assert errs[3].startswith("since 'yesterday-ish': expected like 7d")
    assert errs[4].endswith("is an absolute path; ids are relative to the store")
    assert errs[5] == "list_recent: type must be a string (or omitted)"
    assert calls[1]["input"]["chars"] > 10000 and len(calls[1]["input"]["cut_json"]) == 2000
    sent = tool_results(walk_bodies(model_env)[-1])
    assert len(sent) == 6 and all(r["is_error"] for r in sent)
    assert answer.outcome == "composed"


def test_same_card_repeatedly_counts_and_is_answered(example_store, model_env) -> None:
    ask_again = reply(tool_use("read_card", {"id": "entities/stripe"}))
    model_env.add(ask_again, reply(tool_use("read_card", {"id": "entities/stripe"})),
                  reply(tool_use("read_card", {"id": "entities/stripe"})), "Stripe.")
    answer = ask(example_store, "x?", limits=replace(FAST, max_tool_calls=2))
    calls = receipt(example_store, answer)["tool_calls"]
    assert [c["executed"] for c in calls] == [True, True, False]
    assert calls[1]["repeat_of"] == 1 and calls[1]["result"] == calls[0]["result"]
    assert calls[2]["floor"] == {"floor": "walk-budget", "spent": 2}


def test_many_calls_in_one_turn_each_count(example_store, model_env) -> None:
    ids = ["entities/stripe", "entities/ledger-db", "entities/acme-api", "entities/pagerduty",
           "entities/buildkite", "entities/jobs-queue", "entities/web-dashboard"]
    model_env.add(reply(*[tool_use("read_card", {"id": i}) for i in ids]), "Seven, read four.")
    answer = ask(example_store, "x?", limits=FAST)
    rec = receipt(example_store, answer)
    assert [c["executed"] for c in rec["tool_calls"]] == [True] * 4 + [False] * 3
    bodies = walk_bodies(model_env)
    assert len(bodies) == 2 and is_compose(bodies[1])  # the floor ends the walk
    results = tool_results(bodies[1])
    assert [json.loads(r["content"]) for r in results[4:]] == [
        {"floor": "walk-budget", "spent": 4}] * 3
    assert answer.reply == "Seven, read four."


def test_rate_limits_and_overload_are_retried_within_bounds(example_store, model_env) -> None:
    model_env.add(error(429), error(529, "Overloaded"), drop(), "answered")
    answer = ask(example_store, "x?", limits=replace(FAST, retries=3))
    reqs = receipt(example_store, answer)["requests"]
    errors = [r["error"] for r in reqs]
    assert reqs[0]["error"].startswith("HTTP 429") and reqs[1]["error"] == "HTTP 529: Overloaded"
    assert reqs[2]["error"].startswith("cannot reach the API")
    assert answer.reply == "answered" and errors[-1] is None
    # Seen once in CI: a fourth try also failed to reach the fake (likely the dripping
    # server's leaked listener, fixed, taking the connection); a fourth error may only be a
    # connection error, within the walk's tries (retries + 1), and the compose answers.
    assert errors == ["HTTP 429: fake 429", "HTTP 529: Overloaded", errors[2], None] or (
        errors[3].startswith("cannot reach the API") and len(reqs) == 5
        and [r["phase"] for r in reqs] == ["walk"] * 4 + ["compose"]), errors


def test_persistent_failure_ends_in_the_fallback(example_store, model_env) -> None:
    model_env.handler = lambda body: error(500)
    answer = ask(example_store, "x?", limits=replace(FAST, retries=1, on_deadline="receipt"))
    rec = receipt(example_store, answer)
    assert [(r["phase"], r["attempt"]) for r in rec["requests"]] == [
        ("walk", 1), ("walk", 2), ("compose", 1), ("compose", 2)]
    assert answer.outcome == "fallback" and answer.reason == "HTTP 500: fake 500 (after 2 tries)"
    assert answer.reply.startswith("[cardmem: no composed answer (HTTP 500")


def test_retry_after_beyond_the_time_left_is_not_waited(example_store, model_env) -> None:
    model_env.handler = lambda body: error(429, retry_after_ms=60_000)
    t = time.monotonic()
    answer = ask(example_store, "x?", limits=FAST)
    assert time.monotonic() - t < FAST.deadline_s  # not the 60 s asked for, nor till the end
    assert answer.outcome == "fallback" and "no time left to retry" in answer.reason


def test_auth_error_is_not_retried(example_store, model_env) -> None:
    model_env.add(error(401, "invalid x-api-key"))
    answer = ask(example_store, "x?", limits=FAST)
    rec = receipt(example_store, answer)
    assert len(rec["requests"]) == 1 and answer.outcome == "fallback"
    assert answer.reason == "HTTP 401: invalid x-api-key" and answer.reply is None


def test_refusal_is_no_answer(example_store, model_env) -> None:
    model_env.add(reply("I can't help with that.", stop_reason="refusal"))
    answer = ask(example_store, "x?", limits=replace(FAST, on_deadline="receipt"))
    assert answer.outcome == "fallback" and answer.reason == "the model refused"
    assert "I can't help" not in answer.reply and len(model_env.messages_requests()) == 1


def test_empty_reply_gets_one_compose_then_the_fallback(example_store, model_env) -> None:
    model_env.add(reply(), reply(text("")))
    answer = ask(example_store, "x?", limits=FAST)
    bodies = walk_bodies(model_env)
    assert [is_compose(b) for b in bodies] == [False, True]
    assert answer.outcome == "fallback" and answer.reason == "empty reply" and answer.reply is None


def test_tool_use_in_the_compose_is_ignored(example_store, model_env) -> None:
    model_env.add(reply(*[tool_use("read_card", {"id": "entities/stripe"})] * 5),
                  reply(text("Stripe charges cards; I hit the read limit."),
                        tool_use("read_card", {"id": "entities/ledger-db"})))
    answer = ask(example_store, "x?", limits=FAST)
    assert answer.reply == "Stripe charges cards; I hit the read limit."
    assert len(receipt(example_store, answer)["tool_calls"]) == 5


# ---- receipts on every path ------------------------------------------------------------

def test_every_path_writes_one_receipt(example_store, model_env, monkeypatch) -> None:
    before = len(list(receipts.iter_all(example_store)))
    model_env.add("plain answer")
    ok = ask(example_store, "Who is Mara?", asker="@priya", limits=FAST)
    with pytest.raises(CardmemError, match="question: is empty"):
        ask(example_store, "   ", limits=FAST)
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(model.ModelUnavailable):
        ask(example_store, "Who is Mara?", limits=FAST)
    recs = list(receipts.iter_all(example_store))[before:]
    assert [r["outcome"] for r in recs] == ["composed", "error", "unavailable"]
    first = recs[0]
    assert first["id"] == ok.receipt_id and first["reply"] == "plain answer"
    assert first["asker"] == "@priya" and "people/priya-raman" in first["rung1"]["addresses"]
    assert first["model"] and first["tokens"]["input"] > 0 and first["tokens"]["output"] > 0
    assert {"rung1_s", "walk_s", "total_s"} <= set(first["timings"])
    assert recs[2]["reason"].startswith("no ANTHROPIC_API_KEY set, and `claude`")
    assert len({r["id"] for r in recs}) == 3


def test_a_crash_in_the_walk_still_writes_its_receipt(example_store, model_env,
                                                      monkeypatch) -> None:
    from cardmem.tools.ask import walk

    def boom(*a, **kw):
        raise RuntimeError("disk on fire")
    monkeypatch.setattr(walk, "_text", boom)
    model_env.add(reply(tool_use("read_card", {"id": "entities/stripe"})), "x")
    with pytest.raises(RuntimeError):
        ask(example_store, "x?", limits=FAST)
    rec = receipts.last(example_store, 1)[0]
    assert rec["outcome"] == "error" and rec["reason"] == "disk on fire"
    assert rec["requests"] and rec["reply"] is None


def test_concurrent_receipts_do_not_tear(example_store) -> None:
    import threading

    big = "x" * 200_000
    ids = [receipts.new_id() for _ in range(16)]
    threads = [threading.Thread(target=receipts.append,
                                args=(example_store, {"id": i, "pad": big})) for i in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = [r["id"] for r in receipts.iter_all(example_store)]
    assert sorted(got) == sorted(ids)


def test_walk_modules_leave_anthropic_to_model_py() -> None:
    """No import of anthropic in these modules, and none at their import time."""
    import subprocess
    import sys
    from pathlib import Path

    tools = Path(__file__).resolve().parents[3] / "tools"
    for name in ("ask/walk", "ask/walk_record", "ask/walk_retry", "ask/walk_tools", "ask/answer",
                 "ask/judge", "ask/receipts", "cli/ask"):
        src = (tools / f"{name}.py").read_text()
        assert "import anthropic" not in src and "from anthropic" not in src, name
    code = ("import sys, cardmem.tools.ask.walk, cardmem.tools.ask.walk_record, cardmem.tools.ask.walk_retry, "
            "cardmem.tools.ask.walk_tools, cardmem.tools.ask.answer, cardmem.tools.ask.judge, "
            "cardmem.tools.cli.ask; print('anthropic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
