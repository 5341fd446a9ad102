"""`cardmem ask`, `cardmem receipts`, `cardmem judge`: thin shells over ask/receipts/judge.

Exit codes: 0 a composed reply (ask) or a passing verdict (judge); 3 no composed reply
(the on_deadline fallback was taken) or a failing verdict; 4 an ungraded verdict (the
grader could not be reached or parsed, or --rule-only); 1 and one `cardmem: <what>: <why>`
line for errors, a missing model for `ask` among them.
"""
from __future__ import annotations

import sys
from pathlib import Path

import click

from cardmem.store.errors import CardmemError

from .options import emit_json, json_option, open_store, since_option, store_option
from .. import model
from ..ask.answer import ask as run_ask
from ..ask import receipts as rc
from ..ask.receipt_stats import chart, since, distribution
from ..ask.receipt_plot import check_target, svg, write as write_plot
from cardmem.store.by_address import parse_since

NO_ANSWER_EXIT = 3
UNGRADED_EXIT = 4


@click.command()
@click.argument("question")
@click.option("--asker", help="Who asks: a handle, e-mail or name (matched to a person card).")
@click.option("--progress/--no-progress", default=None,
              help="Say each step on stderr (default: when stderr is a terminal).")
@json_option
@store_option
def ask(question: str, asker: str | None, progress: bool | None, as_json: bool,
        store_path: Path | None) -> None:
    """Answer QUESTION from memory: the model starts from the rules, the asker's card and
    the cards the question names, then may read up to 4 more cards (the walk).

    With `[judge] auto = true` in cardmem.toml the answer is judged in the background once
    it is printed; `cardmem receipts` shows the verdict.

    \b
    Example:
        cardmem ask "Who approves a billing migration?" --asker @priya
        cardmem ask "Where is the staging DB?" --json --progress
    """
    from ..ask.judge import later

    store = open_store(store_path)
    if progress is None:
        progress = sys.stderr.isatty()

    def say(step: str) -> None:
        click.secho(f"cardmem: ask: {step}", err=True, dim=True)

    outcome = "unavailable"
    try:
        try:
            answer = run_ask(store, question, asker=asker, progress=say if progress else None)
        except model.ModelUnavailable as exc:
            raise CardmemError("ask", f"needs a model: {exc.why}; everything else works "
                                      "without one") from None
        except CardmemError:
            outcome = "error"
            raise
    except CardmemError as exc:
        if as_json:  # a script reading stdout learns of the failure there too
            emit_json({"reply": None, "outcome": outcome, "error": str(exc)})
        raise
    if as_json:
        emit_json(answer.as_dict())
    elif answer.reply is not None:
        click.echo(answer.reply)
    if answer.outcome == "composed":
        sys.stdout.flush()  # delivered first; only then the judge is started
        later(store, answer.receipt_id)
    if answer.outcome != "composed":
        how = "a mechanical receipt instead" if answer.reply is not None else "silence"
        click.echo(f"cardmem: ask: no composed reply ({answer.reason}); on_deadline gave "
                   f"{how}; receipt {answer.receipt_id}", err=True)
        raise SystemExit(NO_ANSWER_EXIT)
    if not as_json and answer.receipt.get("walk"):  # the claude-code route: no walk
        click.secho(f"receipt {answer.receipt_id}: no walk ({answer.receipt['walk']})",
                    err=True, dim=True)
    elif not as_json:
        floors = ", ".join(f["floor"] for f in answer.floors)
        click.secho(f"receipt {answer.receipt_id}: {answer.reads} reads of "
                    f"{answer.tool_calls} tool calls asked"
                    + (f", floor hit: {floors}" if floors else ""), err=True, dim=True)


@click.command()
@click.option("--limit", "n", type=click.IntRange(min=1), default=10, show_default=True,
              help="The newest N receipts.")
@click.option("--last", "last", type=click.IntRange(min=1), hidden=True)  # the older name
@click.option("--stats", "show_stats", is_flag=True,
              help="Totals over every receipt: outcomes, floors, the judge's pass rate and "
                   "its most common failure reasons; ack and reply latency (p50/p90/p99, "
                   "with a chart), walk calls, deadlines missed, tokens and cost per reply.")
@since_option("Only receipts written", dest="since_")
@click.option("--plot", "plot_file", metavar="FILE",
              help="Also draw ack and reply latency and cost per reply as an SVG image into "
                   "FILE (.svg; open it in a browser). Implies --stats.")
@json_option
@store_option
def receipts(n: int, last: int | None, show_stats: bool, since_: str | None,
             plot_file: str | None, as_json: bool, store_path: Path | None) -> None:
    """What each answer read and spent, newest last, with the judge's verdicts.

    \b
    Example:
        cardmem receipts --limit 3
        cardmem receipts --stats --since 7d
        cardmem receipts --stats --since 7d --plot latency.svg
    """
    n = last or n
    target = check_target(plot_file) if plot_file is not None else None

    store = open_store(store_path)
    recs = list(rc.iter_all(store))
    if since_ is not None:
        recs = since(recs, parse_since(since_))
    if show_stats or target is not None:
        dist = distribution(recs)
        if target is not None:  # before any output: a failed write prints nothing else
            write_plot(target, svg(dist, _plot_heading(store.root, len(recs), since_)))
        _print_stats(rc.stats(recs), dist, as_json, target)
        return
    recs = recs[-n:]
    if as_json:
        emit_json(recs)
        return
    for r in recs:
        calls = r.get("tool_calls") or []
        floors = ",".join(f.get("floor", "?") for f in r.get("floors") or []) or "-"
        outcome = r.get("outcome", "?") + (f":{r['fallback']}" if r.get("fallback") else "")
        total = (r.get("timings") or {}).get("total_s")
        q = " ".join(str(r.get("question", "")).split())
        runs = sum(bool(c.get("executed")) for c in calls)
        judged = (r.get("judge") or [{}])[-1].get("verdict", "-")
        click.echo(f"{r['id']}  {outcome:<17} {runs}/{len(calls)} calls run  floors {floors:<22} "
                   f"{total if total is not None else '?'} s  judge {judged:<8} {q[:60]}")
        if r.get("reason") and r.get("outcome") != "composed":
            click.echo(f"    {r['reason']}")
        if isinstance(r.get("slack"), dict):
            sl = r["slack"]
            click.echo(f"    slack {sl.get('channel')} thread {sl.get('thread_ts')} user "
                       f"{sl.get('user')} ({sl.get('person') or 'no person card'}): ack "
                       f"{sl.get('ack_s', '-')} s, reply {sl.get('reply', '-')} "
                       f"{sl.get('reply_s', '-')} s")


def _plot_heading(root: Path, n: int, since_: str | None) -> str:
    from datetime import datetime

    when = f" since {since_}" if since_ else ""
    return (f"cardmem receipts of {Path(root).name}: {n} receipts{when} "
            f"(drawn {datetime.now().astimezone():%Y-%m-%d %H:%M})")


def _print_stats(st: dict, dist: dict, as_json: bool, plot: Path | None = None) -> None:
    if as_json:
        emit_json({**st, "distribution": {k: ({x: y for x, y in v.items() if x != "values"}
                                              if isinstance(v, dict) else v)
                                          for k, v in dist.items()},
                   **({"plot": str(plot)} if plot else {})})
        return
    j = st["judge"]
    click.echo(f"{st['receipts']} receipts: " + (", ".join(
        f"{n} {k}" for k, n in sorted(st["outcomes"].items())) or "none"))
    if st["floors"]:
        click.echo("floors hit: " + ", ".join(f"{k} {n}" for k, n in sorted(st["floors"].items())))
    rate = "-" if j["pass_rate"] is None else f"{j['pass_rate']:.0%}"
    click.echo(f"judged {j['judged']}: {j['pass']} pass, {j['fail']} fail, {j['ungraded']} "
               f"ungraded; pass rate {rate} (of those graded)")
    for r in j["failure_reasons"]:
        click.echo(f"  {r['count']:>4}  {r['reason']}")
    _print_distribution(dist)
    if plot is not None:
        click.echo(f"plot: {plot} (open it in a browser)")


def _print_distribution(d: dict) -> None:
    def row(name: str, p: dict, fmt: str = "{:.2f}", unit: str = " s") -> None:
        if p["n"]:
            f = lambda x: fmt.format(x) + unit  # noqa: E731
            click.echo(f"{name:<18} p50 {f(p['p50'])}  p90 {f(p['p90'])}  p99 {f(p['p99'])}  "
                       f"max {f(p['max'])}  (n={p['n']})")

    if not d["answers"]:
        return
    click.echo(f"{d['answers']} answers ({d['slack']} from Slack): {d['floors_hit']} hit a floor, "
               f"{d['deadlines_missed']} missed the deadline")
    row("ack latency", d["ack_s"])
    row("reply latency", d["reply_s"])
    row("walk calls/reply", d["walk_calls"], "{:.0f}", "")
    row("tokens/reply", d["tokens"], "{:.0f}", "")
    c = d["cost_usd"]
    if c["n"]:
        row("cost/reply", c, "${:.4f}", "")
        click.echo(f"{'cost total':<18} ${c['total']:.4f}"
                   + (f" ({c['unpriced']} answers of a model with no listed price)"
                      if c["unpriced"] else ""))
    for name, key in (("reply latency", "reply_s"), ("ack latency", "ack_s")):
        if d[key]["n"] > 1:
            click.echo(f"{name}:")
            for line in chart(d[key]["values"]):
                click.echo(line)


@click.command()
@click.argument("receipt_id", metavar="RECEIPT")
@click.option("--rule-only", is_flag=True,
              help="Only the model-free completeness rule (the verdict is then fail or "
                   "ungraded).")
@json_option
@store_option
def judge(receipt_id: str, rule_only: bool, as_json: bool, store_path: Path | None) -> None:
    """Grade the reply of RECEIPT (an id, or `last`) against what it read.

    Two checks: the completeness rule (no model) and the model's grade of each claim.
    The verdict (pass, fail or ungraded) is kept with the receipt; a re-judge adds one.

    \b
    Example:
        cardmem judge last
        cardmem judge 20261130T061200Z-a1b2c3 --rule-only --json
    """
    from ..ask.judge import judge as run_judge, keep

    store = open_store(store_path)
    v = run_judge(rc.find(store, receipt_id), use_model=not rule_only,
                  cfg=store.config.get("model"), by="cli")
    keep(store, v)
    if as_json:
        emit_json(v.as_dict())
    else:
        click.echo(f"{v.receipt_id}: {v.verdict}")
        click.echo(f"  rule: {v.rule.verdict}: {v.rule.why}")
        click.echo(f"  grade: {v.grade.verdict}: {v.grade.why}")
        for claim in v.grade.unsupported:
            click.echo(f"    unsupported: {claim}")
        for claim in v.grade.contradicted:
            click.echo(f"    contradicted: {claim}")
    if v.verdict != "pass":
        raise SystemExit(NO_ANSWER_EXIT if v.verdict == "fail" else UNGRADED_EXIT)
