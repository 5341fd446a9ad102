"""Contradictions: a cheap pass picks pairs, the model judges them (the fake Messages API,
and a fake `claude` for the Claude Code route), authority decides the loser."""
from __future__ import annotations

import json
import textwrap

import pytest
from fakeapi import claude_on_path, error
from maintainkit import commit_as_person, corpus_store, git

from cardmem.store.maintain import Survey
from cardmem.tools.maintain import run
from cardmem.tools.maintain.contradictions import candidates, judge_all

CHANGESETS = "projects/ai/changesets"
PLANTED = "projects/ai/changesets-optional"
PLANTED_TEXT = ("---\ntitle: Changesets are optional\ntype: project\nproject: ai\n---\n"
                "A changeset is optional for a production code PR: skip the changeset for small "
                "fixes, and use a `minor` changeset by default, from the workspace root.\n")


@pytest.fixture
def planted(tmp_path):
    """The ai project's real cards, and an agent's card that says the opposite of one."""
    store = corpus_store(tmp_path / "store", ("ai", "zod"))
    store.new(PLANTED, body=PLANTED_TEXT.split("---\n", 2)[2], title="Changesets are optional",
              project="ai", agent=True, source="mcp")
    return store


def conflict_only_for_the_planted_pair(body: dict) -> str:
    prompt = body["messages"][0]["content"]
    prompt = prompt if isinstance(prompt, str) else prompt[0]["text"]
    both = CHANGESETS + "\n" in prompt and PLANTED in prompt
    return json.dumps({"contradiction": both,
                       "why": "one requires a changeset for every PR, the other makes it optional"
                       if both else "different subjects"})


@pytest.mark.corpus
def test_the_cheap_pass_selects_the_planted_pair(planted) -> None:
    pairs = [(a, b) for _, a, b in candidates(Survey.of(planted))]
    assert (CHANGESETS, PLANTED) in pairs


@pytest.mark.corpus
def test_the_model_judges_and_a_persons_card_outranks_an_agents(planted, model_env) -> None:
    model_env.handler = conflict_only_for_the_planted_pair
    found, note = judge_all(Survey.of(planted))
    assert note is None
    [f] = found
    assert f.kind == "contradiction" and f.ids == [CHANGESETS, PLANTED]
    assert "optional" in f.detail and "a person's card outranks an agent's" in f.suggestion
    asked = [r for r in model_env.requests if r.path.endswith("/messages")]
    assert len(asked) == len(candidates(Survey.of(planted)))
    assert "contradict" in asked[0].body["system"]


@pytest.mark.corpus
def test_a_protected_rule_outranks_a_persons_project_card(planted, model_env) -> None:
    rule = "feedback/changesets-optional"
    (planted.root / "feedback").mkdir()
    (planted.root / "feedback/changesets-optional.md").write_text(
        PLANTED_TEXT.replace("type: project\nproject: ai\n", "type: feedback\n"))
    planted.new("reference/unrelated", body="nothing")  # a person's commit, newer
    commit_as_person(planted)

    def handler(body):
        prompt = body["messages"][0]["content"]
        prompt = prompt if isinstance(prompt, str) else prompt[0]["text"]
        return json.dumps({"contradiction": rule in prompt and CHANGESETS + "\n" in prompt,
                           "why": "x"})

    model_env.handler = handler
    found, _ = judge_all(Survey.of(planted))
    assert [f.ids for f in found] == [[rule, CHANGESETS]]
    assert "a protected card outranks" in found[0].suggestion


@pytest.mark.corpus
def test_apply_marks_the_loser_superseded_in_one_revertible_agent_commit(planted,
                                                                        model_env) -> None:
    model_env.handler = conflict_only_for_the_planted_pair
    before = (planted.root / f"{PLANTED}.md").read_text()
    [done] = run(planted, {"contradiction"}, apply=True).applied
    assert done["subject"] == f"maintain: {PLANTED} superseded by {CHANGESETS}"
    assert git(planted, "show", "--name-only", "--format=%ae", "HEAD").split() == \
        ["agent@cardmem.invalid", f"{PLANTED}.md"]
    assert "a person's card outranks an agent's" in git(planted, "log", "-1", "--format=%B")
    after = (planted.root / f"{PLANTED}.md").read_text()
    assert after == before.replace(
        "\n---\n", f"\nstatus: superseded\nsuperseded_by: {CHANGESETS}\n---\n", 1)
    assert run(planted, {"contradiction"}).findings == []  # a superseded card is no candidate
    planted.revert(done["commit"])
    assert (planted.root / f"{PLANTED}.md").read_text() == before


@pytest.mark.corpus
def test_apply_never_changes_a_protected_loser_it_proposes(planted, model_env) -> None:
    (planted.root / "feedback").mkdir()
    for name in ("changesets-optional", "changesets-required"):
        text = PLANTED_TEXT.replace("type: project\nproject: ai\n", "type: feedback\n")
        if name.endswith("required"):
            text = ("---\ntitle: Every PR needs a changeset\ntype: feedback\n---\nNever skip the "
                    "changeset of a production code PR, not even for small fixes.\n")
        (planted.root / f"feedback/{name}.md").write_text(text)
    commit_as_person(planted)
    (planted.root / f"{PLANTED}.md").unlink()
    commit_as_person(planted)
    before = {p.name: p.read_text() for p in (planted.root / "feedback").iterdir()}

    def handler(body):
        prompt = body["messages"][0]["content"]
        prompt = prompt if isinstance(prompt, str) else prompt[0]["text"]
        return json.dumps({"contradiction": prompt.count("feedback/changesets-") == 2,
                           "why": "optional against required"})

    model_env.handler = handler
    [done] = run(planted, {"contradiction"}, apply=True).applied
    [pid] = done["proposals"]
    assert pid.startswith("feedback/changesets-") and pid.endswith("-proposed")
    assert {p.name: p.read_text() for p in (planted.root / "feedback").iterdir()
            if not p.name.endswith("-proposed.md")} == before
    proposal = (planted.root / f"{pid}.md").read_text()
    assert "proposed_by: maintain" in proposal and "status: superseded" in proposal


@pytest.mark.corpus
def test_a_failing_model_stops_the_pass_and_says_so(planted, model_env) -> None:
    model_env.fallback = error(400, "bad request")
    found, note = judge_all(Survey.of(planted))
    assert found == [] and note.startswith("contradiction: stopped after 0 of ")
    assert "HTTP 400" in note


@pytest.mark.corpus
def test_an_answer_that_is_not_json_stops_the_pass(planted, model_env) -> None:
    model_env.fallback = "They look fine to me."
    _, note = judge_all(Survey.of(planted))
    assert "not the JSON asked for" in note


@pytest.mark.corpus
def test_without_a_model_the_kind_is_skipped_and_nothing_is_asked(planted, monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    report = run(planted, {"contradiction"})
    assert report.findings == []
    assert report.notes[0].startswith("contradiction: skipped, no model (")


FAKE_CLAUDE = textwrap.dedent("""\
    #!{python}
    import json, os, sys
    text = sys.stdin.read()
    both = "projects/ai/changesets\\n" in text and "projects/ai/changesets-optional" in text
    with open(os.environ["FAKE_CLAUDE_LOG"], "a") as f:
        f.write(json.dumps(sys.argv[1:]) + "\\n")
    print(json.dumps({{"type": "result", "subtype": "success", "is_error": False,
                      "result": json.dumps({{"contradiction": both, "why": "opposite"}}),
                      "usage": {{"input_tokens": 5, "output_tokens": 5}}}}))
    """)


@pytest.mark.corpus
def test_the_claude_code_route_judges_too(planted, tmp_path, monkeypatch) -> None:
    claude_on_path(FAKE_CLAUDE, tmp_path / "bin", monkeypatch, tmp_path / "calls")
    found, note = judge_all(Survey.of(planted), limit=50)
    assert note is None and [f.ids for f in found] == [[CHANGESETS, PLANTED]]
    argv = json.loads((tmp_path / "calls").read_text().splitlines()[0])
    assert "-p" in argv and "--tools" in argv


@pytest.mark.corpus
def test_cards_alike_in_words_but_not_in_facts_go_to_the_judge_not_to_a_merge(tmp_path) -> None:
    from maintainkit import rate_limit_store

    from cardmem.store.maintain import Survey, findings
    from cardmem.tools.maintain.contradictions import candidates

    store = rate_limit_store(tmp_path / "s")
    assert [f for f in findings(store, {"duplicate"}) if len(f.ids) > 1] == []
    assert ["reference/api-v2-rate-limit", "reference/api-v3-rate-limit"] in [[a, b] for _, a, b in
                                                        candidates(Survey.of(store))]
