"""The LLM Repair Agent through the gateway, on recorded replies: parsed as a patch, reviewed independently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.core.errors import InputError
from auditor.core.llm_providers import REPLAY
from repair.agent import parse_answer
from repair.service import propose_step, review_step
from repair.stream import load_repair
from tests.repair_support import open_audited_repair

GATE = "gates.action_entry.cumulative_check"


def _cassette(tmp_path: Path, name: str, replies: list[str]) -> str:
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(json.dumps({"content": r}) + "\n" for r in replies))
    return str(path)


def _answer(item: str, **values: object) -> str:
    changes = [
        {"path": f"{GATE}.{k}", "value": v, "plan_item_id": item, "rationale": "enforce the cap"}
        for k, v in values.items()
    ]
    return "Here is the patch:\n" + json.dumps({"changes": changes})


def test_agent_patch_is_reviewed_independently_and_revised_on_stated_issues(
    sqlite_store, tmp_path: Path
) -> None:
    repair_id = open_audited_repair(sqlite_store, "A1")
    item = load_repair(sqlite_store, repair_id).context.items[0].item_id
    cassette = _cassette(
        tmp_path,
        "revise",
        [_answer(item, enabled=True, cap_usd=60), _answer(item, enabled=True, cap_usd=40)],
    )
    propose_step(sqlite_store, repair_id, model=f"replay/{cassette}")
    state = review_step(sqlite_store, repair_id)
    assert [r.review.approved for r in state.rounds] == [False, True]
    assert all(r.patch.engine == f"agent/replay/{cassette}" for r in state.rounds)
    assert all(r.review.reviewer.startswith("rules-reviewer/") for r in state.rounds)
    second = REPLAY.requests[cassette][-1]
    assert "cap_within_policy" in second[-1]["content"] and second[-2]["role"] == "assistant"
    assert "rationale" not in second[-1]["content"]  # the reviewer's issues, not its reasoning


def test_unparseable_reply_goes_back_and_out_of_scope_reply_is_refused(sqlite_store, tmp_path: Path) -> None:
    repair_id = open_audited_repair(sqlite_store, "A1")
    item = load_repair(sqlite_store, repair_id).context.items[0].item_id
    widen = json.dumps(
        {
            "changes": [
                {"path": "policy.quarterly_cap_usd", "value": 400, "plan_item_id": item, "rationale": "x"}
            ]
        }
    )
    cassette = _cassette(tmp_path, "scope", ["I would enable the gate.", widen])
    with pytest.raises(InputError, match=r"policy\.quarterly_cap_usd"):
        propose_step(sqlite_store, repair_id, model=f"replay/{cassette}")
    assert "no JSON object" in REPLAY.requests[cassette][-1][-1]["content"]
    assert not load_repair(sqlite_store, repair_id).latest.scope.ok


def test_parse_answer_names_what_is_wrong() -> None:
    with pytest.raises(Exception, match="empty"):
        parse_answer("")
    with pytest.raises(Exception, match="does not parse as a patch"):
        parse_answer('{"changes": [{"path": "a"}]}')
    assert parse_answer('x {"changes": [{"path": "a", "value": 1, "plan_item_id": "p", "rationale": "r"}]} y')


def _review(verdicts: dict[str, str], approved: bool) -> str:
    dims = {
        d: {"verdict": v, "rationale": f"{d}: checked the diff against the plan", "issues": []}
        for d, v in verdicts.items()
    }
    return json.dumps({**dims, "approved": approved})


def test_llm_reviewer_judges_under_the_same_schema_and_must_agree_with_itself(
    sqlite_store, tmp_path: Path
) -> None:
    repair_id = open_audited_repair(sqlite_store, "A1")
    propose_step(sqlite_store, repair_id)  # the rules catalogue's patch
    names = ("risk_resolution", "plan_fidelity", "introduced_risk", "proportionality")
    cassette = _cassette(
        tmp_path,
        "reviewer",
        [
            "Looks fine overall.",  # no JSON: sent back
            _review({**dict.fromkeys(names, "pass"), "proportionality": "fail"}, approved=True),  # disagrees
            _review(dict.fromkeys(names, "pass"), approved=True),
        ],
    )
    state = review_step(sqlite_store, repair_id, reviewer_model=f"replay/{cassette}")
    review = state.latest.review
    assert review is not None and review.approved and review.reviewer == f"llm-reviewer/replay/{cassette}"
    requests = REPLAY.requests[cassette]
    assert len(requests) == 3
    brief = requests[0][1]["content"]
    assert '"before"' in brief and '"after"' in brief and "shared_cumulative_check" in brief
    assert "disagrees with its dimensions" in requests[2][-1]["content"]


def test_llm_reviewer_that_never_answers_validly_is_refused(sqlite_store, tmp_path: Path) -> None:
    from auditor.core.errors import ContractError

    repair_id = open_audited_repair(sqlite_store, "A1")
    propose_step(sqlite_store, repair_id)
    cassette = _cassette(tmp_path, "mute", ["ok", "fine", "approved"])
    with pytest.raises(ContractError, match="no valid review in 3 tries"):
        review_step(sqlite_store, repair_id, reviewer_model=f"replay/{cassette}")
    assert load_repair(sqlite_store, repair_id).latest.review is None  # nothing half-recorded
