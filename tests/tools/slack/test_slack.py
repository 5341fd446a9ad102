"""`cardmem slack` end to end: the real slack_bolt/slack_sdk against a fake Slack Web API
(tests/fakeslack.py), signed Events API requests, and the fake Messages API."""
from __future__ import annotations

import time

import pytest
from fakeapi import reply
from fakeslack import BOT_USER, FakeSlack, direct_message, mention, post_event, signed_event
from slackkit import MARA, SECRET, Running, SocketMode, make_store

from cardmem.tools.ask import receipts
from cardmem.tools.slack.settings import SlackSettings

@pytest.fixture
def slack():
    with FakeSlack() as s:
        yield s


def run(tmp_path, slack, fake_api, monkeypatch, **store_kw) -> tuple[Running, object]:
    store = make_store(tmp_path, **store_kw)
    return Running(store, slack, fake_api, monkeypatch), store


def test_ack_lands_while_the_model_is_slow_then_the_threaded_reply(tmp_path, slack, fake_api,
                                                                     monkeypatch) -> None:
    slow, margin = 5.0, 2.0  # the model; the ack lands this much before it, whatever the load
    fake_api.add(reply("Mara Okonkwo approves it.", delay=slow))
    from cardmem.store import context

    built = []  # rung 1 is built once, for the ack line, and handed to ask
    real = context.question_context
    monkeypatch.setattr(context, "question_context", lambda *a, **k: built.append(a[1]) or real(*a, **k))
    srv, store = run(tmp_path, slack, fake_api, monkeypatch, walk_s=2 * slow, deadline_s=3 * slow)
    try:
        body = mention("Who approves a billing-service migration?", user=MARA)
        t0 = time.monotonic()
        status, _, took = srv.send(body)
        assert status == 200 and took < 3.0  # Bolt acks the HTTP request inside Slack's 3 s
        (reaction,) = slack.wait_for("reactions.add")
        line = slack.wait_for("chat.postMessage")[0]
        assert reaction.at - t0 < slow - margin and line.at - t0 < slow - margin
        assert reaction.args == {"channel": "C0GENERAL", "timestamp": body["event"]["ts"],
                                 "name": "eyes"}
        assert line.args["thread_ts"] == body["event"]["ts"]
        assert "`entities/billing-service`" in line.args["text"]  # from rung 1, no model
        srv.wait_done(1)
        first, second = slack.calls("chat.postMessage")
        assert second.args["text"] == "Mara Okonkwo approves it."
        assert second.args["thread_ts"] == body["event"]["ts"] and second.at - t0 >= slow
        assert slack.calls("auth.test")[0].token == "xoxb-test"
    finally:
        srv.stop()
    (rec,) = receipts.last(store, 5)
    assert rec["outcome"] == "composed"
    s = rec["slack"]
    assert (s["channel"], s["thread_ts"], s["user"], s["person"], s["kind"]) == (
        "C0GENERAL", body["event"]["ts"], MARA, "people/mara-okonkwo", "mention")
    assert s["ack_s"] < slow - margin and s["reply_s"] >= slow and s["reply"] == "posted"
    # The asker's person card was in the model's pile.
    pile = fake_api.messages_requests()[0].body["messages"][0]["content"]
    pile = pile if isinstance(pile, str) else pile[0]["text"]
    assert "## The asker (mara-okonkwo)" in pile and "Tech lead of the payments team" in pile
    assert "people/mara-okonkwo" in rec["rung1"]["addresses"]
    assert built == ["Who approves a billing-service migration?"] and s["rung1_s"] >= 0


def test_unknown_asker_and_direct_message_are_answered(tmp_path, slack, fake_api,
                                                       monkeypatch) -> None:
    fake_api.add(reply("It runs on Postgres."), reply("Still Postgres."))
    srv, store = run(tmp_path, slack, fake_api, monkeypatch)
    try:
        srv.send(direct_message("what database does billing-service use?", user="UNEW0001"))
        srv.wait_done(1)
        srv.send(direct_message("and billing-service again?", user="UNEW0001"))
        srv.wait_done(2)
    finally:
        srv.stop()
    replies = [c.args["text"] for c in slack.calls("chat.postMessage")
               if not c.args["text"].startswith("Looking in memory")]
    assert replies[0].startswith("It runs on Postgres.") and "`slack: UNEW0001`" in replies[0]
    assert replies[1] == "Still Postgres."  # told once how to be filed
    recs = receipts.last(store, 5)
    assert [r["slack"]["person"] for r in recs] == [None, None]
    assert recs[0]["slack"]["kind"] == "dm" and recs[0]["asker"] == "slack:UNEW0001"
    assert "no person card answers to this name" in recs[0]["rung1"]["text"]
    # `cardmem judge` and `receipts` work on a Slack answer's receipt.
    from click.testing import CliRunner

    from cardmem.tools.cli.group import cli

    r = CliRunner().invoke(cli, ["judge", recs[0]["id"], "--rule-only", "--store", str(store.root)])
    assert r.exit_code == 4 and r.output.startswith(f"{recs[0]['id']}: ungraded\n  rule: pass")
    assert receipts.find(store, recs[0]["id"])["judge"][0]["verdict"] == "ungraded"
    listing = CliRunner().invoke(cli, ["receipts", "--store", str(store.root)]).output
    assert (f"    slack D0MARA thread {recs[0]['slack']['thread_ts']} user UNEW0001 (no person "
            "card): ack ") in listing and ", reply posted " in listing


def test_forged_stale_and_unsigned_requests_are_refused(tmp_path, slack, fake_api,
                                                        monkeypatch) -> None:
    srv, store = run(tmp_path, slack, fake_api, monkeypatch)
    try:
        body = mention("who is on call?")
        raw, headers = signed_event("not-the-secret", body)
        assert post_event(srv.url, raw, headers)[0] == 401
        assert srv.send(body, timestamp=int(time.time()) - 6 * 60)[0] == 401
        raw, headers = signed_event(SECRET, body)
        assert post_event(srv.url, raw + b" ", headers)[0] == 401  # body changed after signing
        assert post_event(srv.url, raw, {"Content-Type": "application/json"})[0] == 401
        status, text, _ = srv.send({"type": "url_verification", "token": "x",
                                    "challenge": "3eZbrw1aBm2rZgRNFdxV"})
        assert status == 200 and "3eZbrw1aBm2rZgRNFdxV" in text
        time.sleep(0.3)
    finally:
        srv.stop()
    assert slack.calls("reactions.add") == [] and fake_api.requests == []
    assert receipts.last(store, 5) == []


def test_retries_and_duplicates_are_answered_once(tmp_path, slack, fake_api, monkeypatch) -> None:
    fake_api.add(reply("Kwame owns the rota.", delay=0.5))
    srv, store = run(tmp_path, slack, fake_api, monkeypatch)
    try:
        body = mention("who owns the on-call rota?", event_id="Ev0RETRY01")
        assert srv.send(body)[0] == 200
        assert srv.send(body, retry=1)[0] == 200  # Slack's retry of the same event
        assert srv.send(body)[0] == 200  # a plain duplicate
        dup = dict(body, event_id="Ev0OTHER01")  # the same message under another event id
        assert srv.send(dup, retry=2)[0] == 200
        srv.wait_done(1)
        time.sleep(0.5)
    finally:
        srv.stop()
    assert len(srv.done) == 1 and len(fake_api.messages_requests()) == 1
    assert len(slack.calls("reactions.add")) == 1
    assert srv.server.answerer.counts == {"taken": 1, "duplicate": 3, "ignored": 0, "refused": 0,
                                          "busy": 0, "dropped": 0}
    assert len(receipts.last(store, 5)) == 1


def test_a_redelivery_after_a_restart_is_not_answered_again(tmp_path, slack, fake_api,
                                                            monkeypatch) -> None:
    fake_api.add(reply("Kwame owns the rota."), reply("Answered twice."))
    store = make_store(tmp_path)
    body = mention("who owns the on-call rota?", event_id="Ev0RESTART1")
    srv = Running(store, slack, fake_api, monkeypatch)
    try:
        srv.send(body)
        srv.wait_done(1)
    finally:
        srv.stop()
    again = Running(store, slack, fake_api, monkeypatch)  # `cardmem slack` restarted
    try:
        assert again.server.answerer.recalled == 1
        assert again.send(body, retry=1)[0] == 200  # Slack's retry of the same event
        dup = dict(body, event_id="Ev0RESTART2")  # the same message under another id
        assert again.send(dup)[0] == 200
        time.sleep(0.5)
    finally:
        again.stop()
    assert again.server.answerer.counts == {"taken": 0, "duplicate": 2, "ignored": 0,
                                            "refused": 0, "busy": 0, "dropped": 0}
    assert len(fake_api.messages_requests()) == 1 and len(slack.calls("reactions.add")) == 1
    assert len(receipts.last(store, 5)) == 1


def test_only_the_last_hour_of_receipts_is_recalled(tmp_path) -> None:
    from datetime import datetime, timedelta, timezone

    from cardmem.tools.slack.answerer import Answerer

    store = make_store(tmp_path)
    now = datetime.now(timezone.utc)
    for age_min, ev in ((90, "Ev0OLD"), (30, "Ev0NEW")):
        receipts.append(store, {"id": receipts.new_id(now - timedelta(minutes=age_min)),
                                "slack": {"event_id": ev, "channel": "C1", "ts": ev}})
    receipts.append(store, {"id": receipts.new_id(now), "question": "from `cardmem ask`"})
    settings = SlackSettings.load({}, http=True, env={"SLACK_BOT_TOKEN": "xoxb-test",
                                                      "SLACK_SIGNING_SECRET": SECRET})
    answerer = Answerer(store, web=None, settings=settings, sdk=object())
    try:
        assert answerer.recalled == 1
        assert answerer.seen.add("event:Ev0OLD") and not answerer.seen.add("event:Ev0NEW")
        assert not answerer.seen.add("msg:C1:Ev0NEW")
    finally:
        answerer.close()


def test_a_retry_of_an_event_never_seen_is_answered(tmp_path, slack, fake_api, monkeypatch) -> None:
    fake_api.add(reply("Kwame."))
    srv, store = run(tmp_path, slack, fake_api, monkeypatch)
    try:
        srv.send(mention("who owns the on-call rota?"), retry=1)  # the first delivery was lost
        srv.wait_done(1)
    finally:
        srv.stop()
    (rec,) = receipts.last(store, 5)
    assert rec["slack"]["retry"] == 1 and rec["slack"]["reply"] == "posted"


def test_a_429_is_retried_after_retry_after(tmp_path, slack, fake_api, monkeypatch) -> None:
    fake_api.add(reply("Priya."))
    srv, store = run(tmp_path, slack, fake_api, monkeypatch)
    slack.rate_limit("chat.postMessage", retry_after=1, times=2)  # the ack line, then again
    try:
        srv.send(mention("who is Priya?"))
        srv.wait_done(1)
    finally:
        srv.stop()
    posts = slack.calls("chat.postMessage")
    assert [c.status for c in posts[:3]] == [429, 429, 200]
    assert posts[1].at - posts[0].at >= 1.0 and posts[2].at - posts[1].at >= 1.0
    assert posts[-1].args["text"] == "Priya." and posts[-1].status == 200
    (rec,) = receipts.last(store, 5)
    # The 429s held up the ack line and the reply, not the reaction before them.
    assert slack.calls("reactions.add")[0].at < posts[1].at
    assert rec["slack"]["reply"] == "posted" and rec["slack"]["ack_s"] < 1.0 + posts[1].at - posts[0].at


@pytest.mark.parametrize("on_deadline", ["silence", "receipt"])
def test_the_deadline_fork(tmp_path, slack, fake_api, monkeypatch, on_deadline) -> None:
    fake_api.handler = lambda body: reply("too late", delay=6.0)
    srv, store = run(tmp_path, slack, fake_api, monkeypatch, on_deadline=on_deadline,
                     deadline_s=3.0)
    try:
        srv.send(mention("who approves a billing-service migration?", user=MARA))
        srv.wait_done(1)
    finally:
        srv.stop(wait=False)
    (rec,) = receipts.last(store, 5)
    assert rec["outcome"] == "fallback" and rec["fallback"] == on_deadline
    texts = [c.args["text"] for c in slack.calls("chat.postMessage")]
    assert texts[0].startswith("Looking in memory") and "too late" not in " ".join(texts)
    if on_deadline == "silence":
        assert len(texts) == 1 and rec["slack"]["reply"] == "silence"
    else:
        assert len(texts) == 2 and rec["slack"]["reply"] == "posted"
        assert texts[1] == rec["reply"] and "people/mara-okonkwo" in texts[1]
    assert rec["slack"]["ack_s"] < 1.5  # inside half the deadline, whatever the fork


def test_one_slow_question_does_not_block_the_others(tmp_path, slack, fake_api,
                                                     monkeypatch) -> None:
    slow = 4.0  # the quick one must be answered in half that
    fake_api.handler = lambda b: (reply("slow answer", delay=slow) if "zebra" in str(b["messages"][0])
                                  else reply("quick answer"))
    srv, store = run(tmp_path, slack, fake_api, monkeypatch, walk_s=2 * slow)
    try:
        srv.send(mention("a zebra question about billing-service"))
        time.sleep(0.2)
        t0 = time.monotonic()
        srv.send(mention("a quick one about billing-service"))
        srv.wait_done(1)
        assert time.monotonic() - t0 < slow / 2
        srv.wait_done(2)
    finally:
        srv.stop()
    order = [r["reply"] for r in receipts.last(store, 5)]
    assert order == ["quick answer", "slow answer"]


def test_missing_tokens_are_one_clear_line() -> None:
    from cardmem.store.errors import CardmemError

    with pytest.raises(CardmemError) as e:
        SlackSettings.load({}, http=False, env={"SLACK_BOT_TOKEN": "xoxb-1"})
    assert str(e.value.why).startswith("SLACK_APP_TOKEN is not set (Socket Mode needs it")
    with pytest.raises(CardmemError, match="SLACK_SIGNING_SECRET is not set"):
        SlackSettings.load({}, http=True, env={"SLACK_BOT_TOKEN": "xoxb-1"})
    s = SlackSettings.load({"api_url": "http://127.0.0.1:9/api"}, http=False,
                           env={"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"})
    assert s.api_url == "http://127.0.0.1:9/api/" and s.ack == "reaction"
    assert BOT_USER  # the fake's bot id is what auth.test reports


def test_cli_refuses_without_tokens_in_one_line(tmp_path, monkeypatch) -> None:
    from click.testing import CliRunner

    from cardmem.store.errors import CardmemError
    from cardmem.tools.cli.group import cli

    store = make_store(tmp_path)
    for k in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"):
        monkeypatch.delenv(k, raising=False)
    with pytest.raises(CardmemError) as e:
        CliRunner().invoke(cli, ["slack", "--store", str(store.root)], catch_exceptions=False)
    assert str(e.value) == ("slack: SLACK_BOT_TOKEN is not set (Socket Mode needs it; README: "
                            "'Slack')")
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1")
    with pytest.raises(CardmemError, match="SLACK_SIGNING_SECRET is not set .the Events API"):
        CliRunner().invoke(cli, ["slack", "--http", "0", "--store", str(store.root)],
                           catch_exceptions=False)


def test_remember_is_off_by_default_then_files_and_proposes(tmp_path, slack, fake_api,
                                                            monkeypatch) -> None:
    fake_api.add(reply("I can only answer from memory."))
    srv, store = run(tmp_path, slack, fake_api, monkeypatch)
    try:
        srv.send(mention("remember Deploy steps: make deploy", user=MARA))
        srv.wait_done(1)
    finally:
        srv.stop()
    assert len(fake_api.messages_requests()) == 1 and not store.exists("reference/deploy-steps")

    srv, store = run(tmp_path / "on", slack, fake_api, monkeypatch,
                     slack_extra="remember = true\n")
    try:
        srv.send(mention("remember Deploy steps: make deploy, then watch the dashboard", user=MARA))
        srv.send(mention("remember rule Pair on prod deploys: never deploy alone", user="UNEW0009"))
        srv.send(mention("remember that the sky is blue", user=MARA))
        srv.wait_done(3)
    finally:
        srv.stop()
    assert len(fake_api.messages_requests()) == 1  # none of the three reached the model
    card = store.read("reference/deploy-steps")
    assert "make deploy, then watch the dashboard" in card.body
    assert "(said by people/mara-okonkwo, in Slack)" in card.body
    commit = store.log("reference/deploy-steps")[0]
    assert commit.message.endswith("Cardmem-Source: slack") and "agent" in commit.author
    rule = store.read("feedback/pair-on-prod-deploys")
    assert rule.meta["status"] == "proposed" and rule.meta["proposed_by"] == "slack"
    replies = {c.args["text"].split(":")[0] for c in slack.calls("chat.postMessage")
               if not c.args["text"].startswith("Looking")}
    assert {"Filed in `reference/deploy-steps`.", "Filed as a proposal", "Not filed"} <= replies
    recs = {r["question"]: r for r in receipts.last(store, 10)}
    assert recs["remember Deploy steps: make deploy, then watch the dashboard"]["outcome"] == "filed"
    assert recs["remember that the sky is blue"]["outcome"] == "error"
    assert all(r["slack"]["reply"] == "posted" for r in recs.values())


def test_socket_mode_end_to_end(tmp_path, slack, fake_api, monkeypatch) -> None:
    """Socket Mode with the real SocketModeHandler: apps.connections.open on the fake Web
    API with the app token, a WebSocket to tests/fakesocket.py, envelopes acked, the event
    answered in its thread once (a redelivered envelope is not answered again)."""
    store = make_store(tmp_path)
    fake_api.add(reply("Kwame Asante owns it."))
    with SocketMode(store, slack, fake_api, monkeypatch) as sm:
        body = mention("who owns the on-call rota?")
        first = sm.ws.send_event(body)
        again = sm.ws.send_event(body, retry=1)
        assert sorted(sm.ws.wait_acks(2)) == sorted([first, again])  # acked on two threads
        slack.wait_for("chat.postMessage", 2)
        sm.wait_done(1)
    done, t = sm.done, sm.thread
    opened = slack.calls("apps.connections.open")
    assert opened and {c.token for c in opened} == {"xapp-1-test"}
    assert len(done) == 1 and slack.calls("chat.postMessage")[-1].args == {
        "channel": "C0GENERAL", "thread_ts": body["event"]["ts"], "text": "Kwame Asante owns it."}
    assert not t.is_alive()
    (rec,) = receipts.last(store, 5)
    assert rec["slack"]["reply"] == "posted"


@pytest.mark.parametrize("bot,app,key,why", [
    ("xoxb-bad", "xapp-1", "k", "SLACK_BOT_TOKEN was refused by auth.test: invalid_auth"),
    ("xoxb-test", "xapp-bad", "k", "Socket Mode was refused: invalid_auth (SLACK_APP_TOKEN must"),
    ("xoxb-test", "xapp-1", None, "needs a model: no ANTHROPIC_API_KEY set"),
])
def test_refused_tokens_are_one_clear_line(tmp_path, slack, fake_api, monkeypatch, bot, app,
                                           key, why) -> None:
    from click.testing import CliRunner

    from cardmem.store.errors import CardmemError
    from cardmem.tools.cli.group import cli

    store = make_store(tmp_path)
    env = {"SLACK_BOT_TOKEN": bot, "SLACK_APP_TOKEN": app, "SLACK_API_URL": slack.base_url,
           "ANTHROPIC_BASE_URL": fake_api.base_url, "ANTHROPIC_API_KEY": key}
    with pytest.raises(CardmemError) as e:
        CliRunner().invoke(cli, ["slack", "--store", str(store.root)], env=env,
                           catch_exceptions=False)
    assert str(e.value).startswith(f"slack: {why}")
