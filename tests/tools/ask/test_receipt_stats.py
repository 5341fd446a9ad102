"""`cardmem receipts --stats [--since]`: latency percentiles, walk calls, floors, deadlines,
tokens and cost per reply, and the terminal chart, over receipts as ask and slack write them."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cardmem.store.errors import CardmemError
from cardmem.tools.ask import receipts
from cardmem.tools.cli.group import cli
from cardmem.tools.ask.receipt_stats import chart, cost, distribution, percentiles


def run(store, *args: str):
    return CliRunner().invoke(cli, ["receipts", *args, "--store", str(store.root)],
                              catch_exceptions=False)


def slack_receipt(i: int, ack: float, reply: float | None, *, when: str = "2026-11-30T10:00:00+00:00",
                  **kw) -> dict:
    rec = {"id": f"20261130T1000{i:02d}Z-{i:06x}", "time": when, "question": f"q{i}",
           "outcome": "composed", "model": "claude-sonnet-4-6", "reply": "r",
           "tool_calls": [{"tool": "read_card"}] * (i % 3), "floors": [],
           "tokens": {"input": 1000, "output": 100}, "timings": {"total_s": 1.0},
           "slack": {"channel": "C1", "thread_ts": "1.1", "user": "U1", "ack_s": ack,
                     "reply_s": reply}}
    rec.update(kw)
    return rec


def test_percentiles_are_nearest_rank() -> None:
    p = percentiles([float(x) for x in range(1, 101)])
    assert (p["p50"], p["p90"], p["p99"], p["max"], p["n"]) == (50.0, 90.0, 99.0, 100.0, 100)
    assert percentiles([])["p50"] is None
    assert percentiles([3.0])["p99"] == 3.0


def test_cost_uses_the_longest_listed_prefix_and_never_guesses() -> None:
    assert cost("claude-sonnet-4-6", {"input": 1_000_000, "output": 1_000_000}) == 18.0
    assert cost("claude-opus-4-5-20251101", {"input": 1_000_000, "output": 0}) == 5.0
    assert cost("claude-opus-4-1", {"input": 1_000_000, "output": 0}) == 15.0
    assert cost("some-local-model", {"input": 5, "output": 5}) is None


def test_distribution_over_slack_and_ask_receipts() -> None:
    recs = [slack_receipt(i, 0.1 * i, 1.0 + i) for i in range(1, 11)]
    recs.append(slack_receipt(11, 0.2, None, outcome="fallback", fallback="silence",
                              reason="deadline", floors=[{"floor": "walk-time", "spent": 18}]))
    recs.append({"id": "20261130T100100Z-aaaaaa", "outcome": "composed",
                 "timings": {"total_s": 4.5}, "tool_calls": [], "model": "mystery",
                 "tokens": {"input": 10, "output": 10}})
    recs.append({"id": "20261130T100200Z-bbbbbb", "outcome": "unavailable"})
    d = distribution(recs)
    assert (d["receipts"], d["answers"], d["slack"]) == (13, 12, 11)
    assert d["ack_s"]["n"] == 11 and d["ack_s"]["max"] == pytest.approx(1.0)
    assert d["reply_s"]["n"] == 11 and d["reply_s"]["p50"] == 6.0  # 2..11 and the ask's 4.5
    assert (d["floors_hit"], d["deadlines_missed"]) == (1, 1)
    assert d["walk_calls"]["max"] == 2.0
    assert d["cost_usd"]["unpriced"] == 1 and d["cost_usd"]["n"] == 11
    assert d["cost_usd"]["p50"] == pytest.approx((1000 * 3 + 100 * 15) / 1e6)


def test_chart_is_a_histogram() -> None:
    lines = chart([1.0, 1.1, 1.2, 2.0, 3.0], buckets=4, width=8)
    assert len(lines) == 4 and lines[0].rstrip().endswith("3")
    assert "████████" in lines[0] and lines[1].rstrip().endswith(" 0")
    assert chart([]) == []


def test_the_command_prints_percentiles_chart_and_json(store) -> None:
    for i in range(1, 21):
        receipts.append(store, slack_receipt(i, 0.05 * i, 0.5 + 0.15 * i))
    receipts.append(store, slack_receipt(30, 9.0, 99.0, when="2020-01-01T00:00:00+00:00"))
    r = run(store, "--stats", "--since", "2026-01-01")
    assert r.exit_code == 0
    out = r.output
    assert "20 answers (20 from Slack): 0 hit a floor, 0 missed the deadline" in out
    assert "ack latency        p50 0.50 s  p90 0.90 s  p99 1.00 s  max 1.00 s  (n=20)" in out
    assert "reply latency:" in out and "█" in out
    assert "cost/reply" in out and "$0.0045" in out
    every = json.loads(run(store, "--stats", "--json").output)
    assert every["distribution"]["reply_s"]["max"] == 99.0 and "values" not in every["distribution"]["reply_s"]
    recent = json.loads(run(store, "--stats", "--json", "--since", "2026-01-01").output)
    assert recent["receipts"] == 20 and recent["distribution"]["ack_s"]["p90"] == pytest.approx(0.9)
    assert len(json.loads(run(store, "--json", "--since", "2026-01-01", "--last", "3").output)) == 3


def test_a_bad_since_is_one_clear_error(store) -> None:
    with pytest.raises(CardmemError, match="--since: expected like 7d"):
        run(store, "--stats", "--since", "yesterday-ish")
