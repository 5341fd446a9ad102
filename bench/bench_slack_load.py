"""`cardmem slack --http` under a burst: N valid signed events sent at once (issue 33).

The server runs as its own process (`python -m cardmem.tools.cli slack --http 0`) on
127.0.0.1, against the fake Slack Web API and the fake Messages API served by this
process (tests/fakeslack.py, tests/fakeapi.py; the model answers after --model-delay s).
Each burst: N threads, released together by a barrier, each POSTs one signed app_mention
(distinct event, channel and asker) and records its HTTP status and time (the ack Slack
waits on, 3 s at most) or the error (a reset). Then it waits, bounded by --timeout, until
every event has a reply in its thread, and a little longer to catch a second one.

Side by side in one run, a fresh server (and store) for each row: the baseline with
socketserver's default listen queue of 5 (what `cardmem slack` had before issue 33), then
the default; --backlogs and --workers add rows with other listen queues and handler pools.

    python bench/bench_slack_load.py [--bursts 100,300] [--backlogs 5,0] [--workers 0]
                                     [--model-delay 0.2] [--timeout 240]

Bounded: 127.0.0.1 only, every wait has a timeout, the servers are stopped at the end.
"""
from __future__ import annotations

import argparse
import collections
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from fakeapi import FakeAPI, reply  # noqa: E402
from fakeslack import FakeSlack, mention, post_event, signed_event  # noqa: E402

from cardmem.tools.ask.receipt_stats import percentiles  # noqa: E402

SECRET = "bench-load-secret"
ANSWER = "From memory: see the cards named above."
QUESTIONS = ["Who approves a production migration of billing-service?",
             "What database does billing-service use?", "Who owns web-dashboard?",
             "What is the incident process?", "Who leads the payments team?"]
# The child: `cardmem slack --http 0`, its listen queue set first when a row asks for one.
CHILD = """\
import sys
from cardmem.tools.slack import httpd
backlog, workers = int(sys.argv.pop(1)), int(sys.argv.pop(1))
httpd.BACKLOG = backlog or httpd.BACKLOG
httpd.WORKERS = workers or httpd.WORKERS
from cardmem.tools.cli.group import main
main()
"""


def make_store(tmp: Path, name: str) -> Path:
    from cardmem.store.store import init

    root = tmp / name
    shutil.copytree(ROOT / "cards", root)
    init(root)
    return root


def proc_stats(pid: int) -> dict[str, float]:
    """The child's CPU seconds (user + system) and its resident memory now and at peak."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    out = {"cpu_s": (int(fields[11]) + int(fields[12])) / tick}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            out[line.split(":")[0]] = int(line.split()[1]) / 1024  # MB
    return out


class Server:
    def __init__(self, store: Path, slack: FakeSlack, api: FakeAPI, backlog: int,
                 workers: int) -> None:
        env = {**os.environ, "SLACK_BOT_TOKEN": "xoxb-bench", "SLACK_SIGNING_SECRET": SECRET,
               "SLACK_API_URL": slack.base_url, "ANTHROPIC_BASE_URL": api.base_url,
               "ANTHROPIC_API_KEY": "sk-ant-bench", "CARDMEM_SEMANTIC": "off"}
        self.p = subprocess.Popen([sys.executable, "-c", CHILD, str(backlog), str(workers),
                                   "slack", "--http",
                                   "0", "--store", str(store)], env=env, stderr=subprocess.PIPE,
                                  text=True)
        self.stderr: list[str] = []
        banner = self.p.stderr.readline()
        if "/slack/events" not in banner:
            self.p.kill()
            raise SystemExit(f"the server did not start: {banner}{self.p.stderr.read()}")
        port = banner.split("127.0.0.1:", 1)[1].split("/", 1)[0]
        self.url = f"http://127.0.0.1:{port}/slack/events"
        threading.Thread(target=lambda: self.stderr.extend(self.p.stderr), daemon=True).start()

    def stop(self) -> int:
        self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(15)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return self.p.wait(5)


def burst(url: str, n: int, tag: str) -> tuple[dict[str, tuple], float]:
    """n events at once; per event ts: (status or error name, seconds)."""
    bodies = [mention(f"{QUESTIONS[i % len(QUESTIONS)]} ({tag} #{i})", user=f"U{tag}{i:05d}",
                      channel=f"C{tag}{i % 7}") for i in range(n)]
    signed = [signed_event(SECRET, b) for b in bodies]
    out: dict[str, tuple] = {}
    gate = threading.Barrier(n + 1)

    def one(i: int) -> None:
        gate.wait()
        t = time.monotonic()
        try:
            status, _, took = post_event(url, *signed[i])
        except Exception as exc:  # noqa: BLE001 - a reset or a timeout is what we count
            reason = getattr(exc, "reason", exc)
            status, took = type(reason).__name__, time.monotonic() - t
        out[bodies[i]["event"]["ts"]] = (status, took)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    gate.wait()
    start = time.monotonic()
    for t in threads:
        t.join(30)
    return out, start


def row(store: Path, backlog: int, workers: int, n: int, delay: float, timeout: float) -> dict:
    with FakeSlack() as slack, FakeAPI() as api:
        api.handler = lambda body: reply(ANSWER, delay=delay)
        server = Server(store, slack, api, backlog, workers)
        try:
            before = proc_stats(server.p.pid)
            acks, start = burst(server.url, n, f"B{backlog}N{n}")
            ok = {ts for ts, (status, _) in acks.items() if status == 200}
            end = start + timeout
            answered: collections.Counter = collections.Counter()
            while time.monotonic() < end:
                answered = collections.Counter(
                    c.args.get("thread_ts") for c in slack.calls("chat.postMessage")
                    if c.status == 200 and c.args.get("thread_ts") in acks)
                if len(answered) >= len(ok):
                    break
                time.sleep(0.1)
            all_s = time.monotonic() - start
            time.sleep(1.0)  # a second reply to any of them would land by now
            answered = collections.Counter(
                c.args.get("thread_ts") for c in slack.calls("chat.postMessage")
                if c.status == 200 and c.args.get("thread_ts") in acks)
            texts = collections.Counter(
                "answer" if c.args["text"].startswith(ANSWER) else c.args["text"][:60]
                for c in slack.calls("chat.postMessage") if c.args.get("thread_ts") in acks)
            after = proc_stats(server.p.pid)
        finally:
            code = server.stop()
    errors = collections.Counter(s for s, _ in acks.values() if s != 200)
    return {"backlog": backlog or "default", "workers": workers or "default", "n": n, "acked": len(ok), "errors": dict(errors),
            "ack": percentiles([t for s, t in acks.values() if s == 200] or [0.0]),
            "answered": len(answered), "twice": sum(v > 1 for v in answered.values()),
            "texts": dict(texts), "all_answered_s": all_s,
            "cpu_s": after["cpu_s"] - before["cpu_s"], "rss_mb": (before["VmRSS"], after["VmHWM"]),
            "tracebacks": sum("Traceback" in ln for ln in server.stderr),
            "stderr_lines": len(server.stderr), "exit": code}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bursts", default="100,300")
    ap.add_argument("--model-delay", type=float, default=0.2)
    ap.add_argument("--timeout", type=float, default=240.0, help="per burst, for the answers")
    ap.add_argument("--backlogs", default="5,0",
                    help="listen queues, one row each (5: socketserver's, the baseline; 0: "
                         "cardmem's default)")
    ap.add_argument("--workers", default="0", help="handler threads, one row each (0: default)")
    a = ap.parse_args()
    from bench_search import machine

    print(machine())
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for n in [int(x) for x in a.bursts.split(",")]:
            for backlog in [int(x) for x in a.backlogs.split(",")]:
                for workers in [int(x) for x in a.workers.split(",")]:
                    store = make_store(Path(d), f"store-{backlog}-{workers}-{n}")
                    rows.append(row(store, backlog, workers, n, a.model_delay, a.timeout))
                    r = rows[-1]
                    print(f"burst {n}, listen queue {r['backlog']}, workers {r['workers']}: "
                          f"{r['acked']} acked, {r['answered']} answered, errors {r['errors']}",
                          flush=True)
    print(f"\nmodel delay {a.model_delay} s per request; load average now "
          f"{os.getloadavg()[0]:.1f}")
    print("| burst | listen queue | handlers | acked (HTTP 200) | not acked | ack p50 | ack p99 | ack max "
          "| answered | answered twice | all answered after | server CPU | RSS before -> peak "
          "| tracebacks |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['n']} | {r['backlog']} | {r['workers']} | {r['acked']} | {r['errors'] or 0} "
              f"| {r['ack']['p50']:.3f} s | {r['ack']['p99']:.3f} s | {r['ack']['max']:.3f} s "
              f"| {r['answered']} | {r['twice']} | {r['all_answered_s']:.1f} s | {r['cpu_s']:.1f} s "
              f"| {r['rss_mb'][0]:.0f} -> {r['rss_mb'][1]:.0f} MB | {r['tracebacks']} |")


if __name__ == "__main__":
    main()
