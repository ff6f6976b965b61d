"""The counterfactual strategy and its scoring code: step groups, leave-one-out and interaction
values checked against the naive one-prompt-at-a-time reference on the real local SmolLM2, and the
strategy naming the step the delivered answer was copied from."""

from __future__ import annotations

from itertools import combinations

import pytest

from scoring.attribution_scores import MAX_GROUPS, group_spans, score_groups
from tests.test_attribution_rules import assert_resolves, make

SCAFFOLD = "Task: What is the vault code?\nConversation:\n"
GROUPS = [
    "[0] Planner: We need the vault code for the report.\n",
    "[1] Searcher: I found it: the vault code is ZEBRA-42.\n",
    "[2] Checker: Noted, thanks.\n",
]
QUERY = "Final answer:"
ANSWER = " ZEBRA-42"


@pytest.mark.parametrize("n", [1, 5, MAX_GROUPS, MAX_GROUPS + 1, 40])
def test_group_spans_cover_every_step_once_in_order(n: int) -> None:
    spans = group_spans(n)
    assert [i for sp in spans for i in sp] == list(range(n))
    assert len(spans) == min(n, MAX_GROUPS)
    sizes = [len(sp) for sp in spans]
    assert max(sizes) - min(sizes) <= 1  # near-equal groups
    assert group_spans(0) == []


@pytest.mark.parametrize("n", [0, 21])
def test_score_groups_refuses_a_game_it_cannot_enumerate(n: int) -> None:
    with pytest.raises(ValueError, match=r"1\.\.20 groups"):
        score_groups(None, SCAFFOLD, ["x\n"] * n, QUERY, [ANSWER])


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.timeout(900)
def test_leave_one_out_and_interactions_match_the_naive_reference(smollm2) -> None:  # type: ignore[no-untyped-def]
    from scoring.prompts import PromptParts
    from scoring.scorer import naive_scores, tokenize_parts

    (game,) = score_groups(smollm2, SCAFFOLD, GROUPS, QUERY, [ANSWER])
    tok = tokenize_parts(
        smollm2.tokenizer, PromptParts(scaffold=SCAFFOLD, factors=GROUPS, queries=[QUERY], targets=[ANSWER])
    )
    full = 0b111
    masks = [
        full,
        *[full ^ (1 << g) for g in range(3)],
        *[full ^ (1 << g) ^ (1 << h) for g in range(3) for h in range(g + 1, 3)],
    ]
    (ref,) = naive_scores(smollm2.model, tok, masks, [0])
    v = dict(zip(masks, (ref.sum_logprob / ref.n_target_tokens).tolist(), strict=True))
    assert game.n_tokens == ref.n_target_tokens and abs(game.full - v[full]) < 1e-3
    for g in range(3):
        assert abs(game.loo[g] - (v[full] - v[full ^ (1 << g)])) < 1e-3
    assert set(game.pairs) == set(combinations(range(3), 2))  # three groups: every pair is in the top four
    for (g, h), value in game.pairs.items():
        expected = v[full] - v[full ^ (1 << g)] - v[full ^ (1 << h)] + v[full ^ (1 << g) ^ (1 << h)]
        assert abs(value - expected) < 1e-3
    # the group the answer is copied from supports it most
    assert max(range(3), key=lambda g: game.loo[g]) == 1 and game.loo[1] > 1.0


@pytest.mark.slow
@pytest.mark.model
@pytest.mark.timeout(900)
def test_counterfactual_names_the_step_the_delivered_answer_came_from(smollm2) -> None:  # type: ignore[no-untyped-def]
    from auditor.audit.attribution import attribute

    trace = make(
        [
            ("Planner", "We need the vault code for the report."),
            ("Clerk", "The weather today is mild and sunny."),
            ("Searcher", "I found it: the vault code is ZEBRA-42."),
            ("Checker", "Noted, thanks."),
            ("Planner", "FINAL ANSWER: ZEBRA-42"),
        ],
        task="What is the vault code?",
    )
    att = attribute(trace, "counterfactual", ground_truth="OTTER-7")
    assert (att.agent, att.step_id, att.model) == ("Searcher", "s2", "smollm2")
    assert att.used_ground_truth
    assert {c.step_id for c in att.steps} == {"s0", "s1", "s2", "s3"}  # the context, not the answer step
    assert att.steps[0].confidence > 0.5 and "leave-one-out support" in att.steps[0].signals[0]
    assert any(n.startswith("interaction of steps") for n in att.notes)
    assert_resolves(trace, att)
