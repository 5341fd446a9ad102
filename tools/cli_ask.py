"""`cardmem ask`, `cardmem receipts`, `cardmem judge`: thin shells over ask/receipts/judge.

Exit codes: 0 a composed reply (ask) or a passing verdict (judge); 3 no composed reply
(the on_deadline fallback was taken) or a failing/flagged verdict; 1 and one
`cardmem: <what>: <why>` line for errors, a missing model among them.
"""
from __future__ import annotations

from pathlib import Path

import click

from cardmem.store.errors import CardmemError

from .cli import emit_json, json_option, open_store, store_option

NO_ANSWER_EXIT = 3


@click.command()
@click.argument("question")
@click.option("--asker", help="Who asks: a handle, e-mail or name (matched to a person card).")
@json_option
@store_option
def ask(question: str, asker: str | None, as_json: bool, store_path: Path | None) -> None:
    """Answer QUESTION from memory: the pile at its addresses, then a metered walk."""
    from . import model
    from .ask import ask as run_ask

    store = open_store(store_path)
    try:
        answer = run_ask(store, question, asker=asker)
    except model.ModelUnavailable as exc:
        raise CardmemError("ask", f"needs a model: {exc.why}; everything else works without "
                                  "one") from None
    if as_json:
        emit_json(answer.as_dict())
    elif answer.reply is not None:
        click.echo(answer.reply)
    if answer.outcome != "composed":
        how = "a mechanical receipt instead" if answer.reply is not None else "silence"
        click.echo(f"cardmem: ask: no composed reply ({answer.reason}); on_deadline gave "
                   f"{how}; receipt {answer.receipt_id}", err=True)
        raise SystemExit(NO_ANSWER_EXIT)
    if not as_json and answer.receipt.get("walk"):  # the claude-code route: no walk
        click.secho(f"receipt {answer.receipt_id}: rung 1 only; walk {answer.receipt['walk']}",
                    err=True, dim=True)
    elif not as_json:
        floors = ", ".join(f["floor"] for f in answer.floors)
        click.secho(f"receipt {answer.receipt_id}: {answer.reads} reads of "
                    f"{answer.tool_calls} tool calls asked"
                    + (f", floor hit: {floors}" if floors else ""), err=True, dim=True)


@click.command()
@click.option("--last", "n", type=click.IntRange(min=1), default=10, show_default=True,
              help="The newest N receipts.")
@json_option
@store_option
def receipts(n: int, as_json: bool, store_path: Path | None) -> None:
    """What each answer read and spent, newest last."""
    from . import receipts as rc

    recs = rc.last(open_store(store_path), n)
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
        click.echo(f"{r['id']}  {outcome:<17} {runs}/{len(calls)} calls run  floors {floors:<22} "
                   f"{total if total is not None else '?'} s  {q[:70]}")
        if r.get("reason") and r.get("outcome") != "composed":
            click.echo(f"    {r['reason']}")


@click.command()
@click.argument("receipt_id", metavar="RECEIPT")
@click.option("--rule-only", is_flag=True, help="Only the model-free completeness rule.")
@json_option
@store_option
def judge(receipt_id: str, rule_only: bool, as_json: bool, store_path: Path | None) -> None:
    """Grade the reply of RECEIPT (an id, or `last`) against what it read."""
    from . import model, receipts as rc
    from .judge import judge as run_judge

    store = open_store(store_path)
    rec = rc.find(store, receipt_id)
    try:
        v = run_judge(rec, use_model=not rule_only, cfg=store.config.get("model"))
    except model.ModelUnavailable as exc:
        raise CardmemError("judge", f"the grade needs a model: {exc.why}; --rule-only works "
                                    "without one") from None
    if as_json:
        emit_json(v.as_dict())
    else:
        click.echo(f"{v.receipt_id}: {v.verdict}")
        click.echo(f"  rule: {v.rule.status}: {'; '.join(v.rule.reasons)}")
        if v.grade is not None:
            click.echo(f"  grade: {v.grade}" + (f": {v.grade_reason}" if v.grade_reason else ""))
    if not v.passed:
        raise SystemExit(NO_ANSWER_EXIT)
