"""The LLM Repair Reviewer (agent engine): a model judges the four dimensions under the rules
Reviewer's schema, through the litellm gateway.

It is independent of the Repair Agent: a separate conversation, shown the plan, the original
configuration's surface and the diff it recomputes itself from the two configurations, never the
agent's rationales. Its answer must parse into the four dimensions, and the overall approval must
agree with them (ReviewOK); a disagreeing or unparseable answer is sent back for a bounded number
of tries, then the review is refused rather than guessed.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from pydantic import ValidationError

from auditor.core.errors import ContractError
from schemas.controls import CONTROLS
from schemas.repair import RepairPatch, ReviewVerdict
from schemas.report import RepairPlanItem
from worlds import Workflow

TRIES = 3
DIMENSIONS = ("risk_resolution", "plan_fidelity", "introduced_risk", "proportionality")
SYSTEM = (
    "You are the Repair Reviewer. You judge a patch to a workflow configuration against a repair plan "
    "on four dimensions: risk_resolution (each plan item's control is in force at its surface and "
    "fails closed), plan_fidelity (every change serves a plan item, nothing undeclared), "
    "introduced_risk (no check weakened, no new way around a gate), proportionality (the change is "
    "no larger than the plan needs). Answer with exactly one JSON object: "
    '{"risk_resolution": {"verdict": "pass"|"fail", "rationale": "...", "issues": [{"check": "...", '
    '"path": "...", "detail": "..."}]}, "plan_fidelity": {...}, "introduced_risk": {...}, '
    '"proportionality": {...}, "approved": true|false}. Approve only when all four pass.'
)
_JSON = re.compile(r"\{.*\}", re.S)


def _brief(orig: Workflow, new: Workflow, items: list[RepairPlanItem]) -> str:
    plan = [
        {
            "item_id": i.item_id,
            "control": i.control,
            "meaning": CONTROLS[i.control].meaning if i.control in CONTROLS else None,
            "surface": i.surface,
            "rationale": i.rationale,
        }
        for i in items
    ]
    diff = [{"path": p, "before": orig.get(p), "after": new.get(p)} for p in orig.changed_paths(new)]
    return (
        "Repair plan:\n"
        + json.dumps(plan, indent=1)
        + "\nRepair surface: "
        + ", ".join(orig.repair_surface)
        + "\nChanges between the original and the patched configuration:\n"
        + json.dumps(diff, indent=1, default=str)
    )


def _parse(text: str | None, patch: RepairPatch, new: Workflow, model: str, round_: int) -> ReviewVerdict:
    match = _JSON.search(text or "")
    if match is None:
        raise ContractError("no JSON object in the answer")
    try:
        answer: Any = json.loads(match.group(0))
    except json.JSONDecodeError as exc:
        raise ContractError(f"the answer is not JSON: {exc.msg}") from exc
    if not isinstance(answer, dict) or any(not isinstance(answer.get(d), dict) for d in DIMENSIONS):
        raise ContractError(f"the answer needs the four dimensions {list(DIMENSIONS)} as objects")
    reviewer = f"llm-reviewer/{model}"
    key = json.dumps([patch.patch_id, new.digest(), round_, reviewer], sort_keys=True)
    try:
        return ReviewVerdict(
            review_id="rev-" + hashlib.sha256(key.encode()).hexdigest()[:16],
            patch_id=patch.patch_id,
            patched_digest=new.digest(),
            reviewer=reviewer,
            round=round_,
            approved=answer.get("approved") is True,
            **{d: {**answer[d], "checks": []} for d in DIMENSIONS},
        )
    except ValidationError as exc:
        raise ContractError(str(exc.errors()[0]["msg"])) from exc


def llm_review_patch(
    model: str,
    orig: Workflow,
    new: Workflow,
    patch: RepairPatch,
    items: list[RepairPlanItem],
    round_: int = 1,
) -> ReviewVerdict:
    """One review by the model; problems with its answer go back to it verbatim."""
    from auditor.core.llm import complete

    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": _brief(orig, new, items)},
    ]
    for _ in range(TRIES):
        reply = complete(model, messages, max_tokens=1024).content
        try:
            return _parse(reply, patch, new, model, round_)
        except ContractError as exc:
            messages += [
                {"role": "assistant", "content": reply or ""},
                {"role": "user", "content": f"Your review was refused: {exc}. Answer again."},
            ]
    raise ContractError(f"the Repair Reviewer ({model}) gave no valid review in {TRIES} tries")
