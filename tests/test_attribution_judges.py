"""The paper's LLM-judge baselines through the real gateway, offline: a replayed model answers, and
the tests check the calls each strategy makes, how it parses replies, and failed judgements."""

from __future__ import annotations

import pytest

from auditor.audit.attribution import attribute
from auditor.audit.attribution.ensemble import EnsembleStrategy
from auditor.core.errors import InputError
from auditor.core.llm_providers import REPLAY
from tests.test_attribution_rules import GROUP_FAILED_RUN, assert_resolves, make

TRACE = make(GROUP_FAILED_RUN[1])  # 5 steps: s0 Lead, s1 Reviewer, s2 Coder, s3 terminal, s4 Reviewer


def replay(name: str, *contents: str) -> str:
    REPLAY.load(
        name, [{"content": c, "usage": {"prompt_tokens": 100, "completion_tokens": 10}} for c in contents]
    )
    return f"replay/{name}"


def test_all_at_once_parses_agent_and_step_and_sees_the_ground_truth_only_when_given() -> None:
    model = replay("aao", "Agent Name: Coder\nStep Number: 2\nReason for Mistake: wrong file name.")
    att = attribute(TRACE, "all_at_once", model=model, ground_truth="1350")
    assert (att.agent, att.step_id, att.model) == ("Coder", "s2", model)
    prompt = REPLAY.requests["aao"][0][-1]["content"]
    assert "The correct answer for the problem: 1350" in prompt and "Step 4 - Reviewer" in prompt
    assert_resolves(TRACE, att)
    model = replay("aao2", "Agent Name: Coder\nStep Number: 2")
    attribute(TRACE, "all_at_once", model=model)
    assert "correct answer" not in REPLAY.requests["aao2"][0][-1]["content"]


def test_step_by_step_stops_at_the_first_step_the_judge_calls_an_error() -> None:
    model = replay("sbs", "No. The task is stated.", "No, a restatement.", "Yes. The file name is misspelt.")
    att = attribute(TRACE, "step_by_step", model=model)
    assert (att.agent, att.step_id) == ("Coder", "s2")
    assert len(REPLAY.requests["sbs"]) == 3
    last = REPLAY.requests["sbs"][2]
    assert "Step 2 - Coder" in last[-1]["content"] and "Step 0 - Lead" in last[1]["content"]


def test_binary_search_halves_the_range_until_one_step_is_left() -> None:
    # 0..4: mid 2, "upper" keeps 0..2; mid 1, "lower" keeps 2..2
    model = replay("bs", "upper half", "The error is in the lower half.")
    att = attribute(TRACE, "binary_search", model=model)
    assert (att.agent, att.step_id) == ("Coder", "s2")
    assert len(REPLAY.requests["bs"]) == 2


def test_an_unparsable_reply_is_a_failed_judgement_not_a_guess() -> None:
    att = attribute(TRACE, "all_at_once", model=replay("bad", "I cannot tell."))
    assert att.agent is None and att.steps == []
    assert any("no valid step number" in n for n in att.notes)
    att = attribute(TRACE, "step_by_step", model=replay("bad2", "Maybe?"))
    assert att.agent is None and any("unparsable" in n for n in att.notes)


def test_judges_need_a_model() -> None:
    with pytest.raises(InputError):
        attribute(TRACE, "binary_search")


def test_ensemble_fuses_member_rankings() -> None:
    model = replay("ens", "Agent Name: Reviewer\nStep Number: 4")
    att = EnsembleStrategy({"rules": 1.0, "all_at_once": 0.5}).attribute(TRACE, model=model)
    assert att.step_id == "s2"  # the rules' first choice outweighs the judge's
    assert {c.step_id for c in att.steps} >= {"s2", "s4"}
    assert any(s.startswith("all_at_once rank 1") for c in att.steps for s in c.signals)
    assert_resolves(TRACE, att)
