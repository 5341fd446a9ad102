"""Ack and reply latency of `cardmem slack` over 50 scripted questions (issue 18).

The whole production path runs: signed Events API requests to `cardmem slack --http`'s
Bolt app (in this process), the real slack_sdk posting to a fake Slack Web API, and the
real anthropic SDK walking against the fake Messages API, which answers each request
after a scripted 0.5–3 s (seeded). Questions arrive every --gap seconds, from 6 askers
(three with person cards), in the example store.

Two runs side by side on the same script: the baseline with one answer at a time
(`[slack] concurrency = 1`), then the default (4). Latencies count from the moment the
request was sent; ack = the first reaction or ack line in the thread, reply = the answer.
A third run, at 4, builds the rung-1 pile twice (for the ack line, and again in `ask`) as
before it was shared: the shared pile's saving, side by side, with the process's CPU time.

    python bench/bench_slack.py [--questions 50] [--gap 0.5] [--seed 18]
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fakeapi import FakeAPI, reply  # noqa: E402
from fakeslack import FakeSlack, mention, post_event, signed_event  # noqa: E402

from cardmem.store.store import init  # noqa: E402
from cardmem.tools.ask import receipts  # noqa: E402
from cardmem.tools.ask.receipt_stats import chart, percentiles  # noqa: E402

SECRET = "bench-secret"
QUESTIONS = [
    "Who approves a production migration of billing-service?",
    "Who is on call this week?",
    "What database does billing-service use?",
    "Who owns web-dashboard?",
    "What is the incident process?",
    "Who leads the payments team?",
    "How do we snapshot staging?",
    "Which Grafana dashboards matter for billing?",
    "What does the dashboard redesign change?",
    "Who do I ask about PagerDuty?",
]
ASKERS = ["UMARA001", "UJUN0001", "UKWAME01", "UNEW0001", "UNEW0002", "UNEW0003"]


def make_store(tmp: Path, concurrency: int, name: str = ""):
    root = tmp / f"store-{concurrency}{name}"
    shutil.copytree(ROOT / "cards", root)
    for uid, name in (("UMARA001", "mara-okonkwo"), ("UJUN0001", "jun-park"),
                      ("UKWAME01", "kwame-asante")):
        card = root / "people" / f"{name}.md"
        card.write_text(card.read_text().replace("type: person\n", f"type: person\nslack: {uid}\n", 1))
    toml = root / "cardmem.toml"
    toml.write_text(toml.read_text() + f'\n[slack]\nack = "both"\nconcurrency = {concurrency}\n')
    return init(root)[0]


def run(concurrency: int, n: int, gap: float, seed: int, tmp: Path, share: bool = True) -> dict:
    from cardmem.tools.ask import answer as ask_module
    from cardmem.tools.slack.server import SlackServer
    from cardmem.tools.slack.settings import SlackSettings

    rng = random.Random(seed)
    delays = [round(rng.uniform(0.5, 3.0), 3) for _ in range(n)]
    store = make_store(tmp, concurrency, "" if share else "-twice")
    real_ask = ask_module.ask
    if not share:  # the baseline: ask builds its own pile, as before it was handed one
        ask_module.ask = lambda *a, pile=None, **k: real_ask(*a, **k)
    with FakeSlack() as slack, FakeAPI() as api:
        by_question: dict[str, float] = {}

        def model(body: dict) -> object:  # one scripted delay per question, every request
            text = str(body["messages"][0]["content"])
            d = next((v for k, v in by_question.items() if k in text), 1.0)
            return reply("From memory: see the cards named above.", delay=d)

        api.handler = model
        os.environ.update(ANTHROPIC_BASE_URL=api.base_url, ANTHROPIC_API_KEY="sk-ant-bench")
        settings = SlackSettings.load(store.config["slack"], http=True, env={
            "SLACK_BOT_TOKEN": "xoxb-bench", "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": slack.base_url})
        done: list = []
        server = SlackServer.build(store, settings, http=True, on_done=done.append)
        port = server.listen(0)
        threading.Thread(target=server.serve_http, daemon=True).start()
        url = f"http://127.0.0.1:{port}/slack/events"
        sent: dict[str, float] = {}
        start, cpu = time.monotonic(), time.process_time()
        for i in range(n):
            q = f"{QUESTIONS[i % len(QUESTIONS)]} (#{i})"
            by_question[f"(#{i})"] = delays[i]
            body = mention(q, user=ASKERS[i % len(ASKERS)], channel=f"C{i % 3}")
            sent[body["event"]["ts"]] = time.monotonic()
            post_event(url, *signed_event(SECRET, body))
            time.sleep(max(0.0, start + (i + 1) * gap - time.monotonic()))
        end = time.monotonic() + 120
        while len(done) < n and time.monotonic() < end:
            time.sleep(0.05)
        server.stop()
        cpu = time.process_time() - cpu
        ask_module.ask = real_ask
        ack: dict[str, float] = {}
        replies: dict[str, float] = {}
        for c in slack.calls():
            if c.status != 200 or c.method not in ("reactions.add", "chat.postMessage"):
                continue
            ts = c.args.get("timestamp") or c.args.get("thread_ts")
            if ts not in sent:
                continue
            ack.setdefault(ts, c.at - sent[ts])
            if c.method == "chat.postMessage" and not c.args["text"].startswith("Looking in memory"):
                replies[ts] = c.at - sent[ts]
        recs = receipts.last(store, n + 5)
    return {"concurrency": concurrency, "answered": len(done), "delays": delays,
            "ack": percentiles(list(ack.values())), "reply": percentiles(list(replies.values())),
            "fallbacks": sum(r.get("outcome") != "composed" for r in recs),
            "receipts": len(recs), "wall_s": time.monotonic() - start, "cpu_s": cpu,
            "rung1_ack": percentiles([r["slack"]["rung1_s"] for r in recs
                                      if "rung1_s" in r.get("slack", {})]),
            "rung1_ask": percentiles([r["timings"]["rung1_s"] for r in recs
                                      if "rung1_s" in r.get("timings", {})])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--questions", type=int, default=50)
    ap.add_argument("--gap", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=18)
    a = ap.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as d:
        base = run(1, a.questions, a.gap, a.seed, Path(d))
        twice = run(4, a.questions, a.gap, a.seed, Path(d), share=False)
        new = run(4, a.questions, a.gap, a.seed, Path(d))
    m = percentiles(base["delays"])
    print(f"{a.questions} questions, one every {a.gap} s; model delay per request "
          f"p50 {m['p50']:.2f} p90 {m['p90']:.2f} max {m['max']:.2f} s; "
          f"load average {load:.1f} at start, {os.cpu_count()} CPUs")
    print("| measure | concurrency 1 (baseline) | concurrency 4 (default) | ratio |")
    print("|---|---|---|---|")
    for what in ("ack", "reply"):
        for p in ("p50", "p90", "p99", "max"):
            b, x = base[what][p], new[what][p]
            print(f"| {what} {p} | {b:.3f} s | {x:.3f} s | {x / b:.2f}× |")
    for k in ("answered", "receipts", "fallbacks"):
        print(f"| {k} | {base[k]} | {new[k]} | |")
    print("\nconcurrency 4: the rung-1 pile built twice (baseline) or once, shared with ask")
    print("| measure | built twice (baseline) | shared | ratio |")
    print("|---|---|---|---|")
    for what in ("ack", "reply"):
        for p in ("p50", "p90", "p99"):
            b, x = twice[what][p], new[what][p]
            print(f"| {what} {p} | {b:.3f} s | {x:.3f} s | {x / b:.2f}× |")
    for what in ("rung1_ack", "rung1_ask"):
        b, x = twice[what]["p50"], new[what]["p50"]
        print(f"| {what} p50 | {b:.4f} s | {x:.4f} s | |")
    print(f"| process CPU | {twice['cpu_s']:.2f} s | {new['cpu_s']:.2f} s | "
          f"{new['cpu_s'] / twice['cpu_s']:.2f}× |")
    print("\nreply latency, concurrency 4:")
    print("\n".join(chart(new["reply"]["values"])))
    print("ack latency, concurrency 4:")
    print("\n".join(chart(new["ack"]["values"])))


if __name__ == "__main__":
    main()
