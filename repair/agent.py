"""The LLM Repair Agent: a model proposes the change through the litellm gateway; it must parse as a patch.

The model sees the plan items, the controls' meanings, the workflow's surface and declared policy,
and (on later rounds) its own earlier patches with the reviewer's stated issues, never the
reviewer's reasoning. Its answer is one JSON object of attributed leaf changes; anything else is
sent back as a parse error for a bounded number of tries. The result goes through the same scope
check and the same independent rules Reviewer as the catalogue's patches.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from auditor.core.errors import ContractError
from repair.propose import Proposal, build_proposal
from schemas.controls import CONTROLS
from schemas.repair import RepairPatch, ReviewIssue
from schemas.report import RepairPlanItem
from worlds import Workflow

PARSE_TRIES = 3
SYSTEM = (
    "You are the Repair Agent. You change a workflow configuration (YAML) so that the controls named "
    "in a repair plan are enforced. You may change only paths under the plan items' surfaces. Answer "
    'with exactly one JSON object: {"changes": [{"path": "dotted.path", "value": <JSON value>, '
    '"plan_item_id": "...", "rationale": "..."}]}. No prose outside the JSON.'
)


class _Change(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1)
    value: Any
    plan_item_id: str = Field(min_length=1)
    rationale: str = Field(min_length=1)


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    changes: list[_Change] = Field(min_length=1)


def parse_answer(text: str | None) -> _Answer:
    """The first JSON object in the reply, validated as a patch; a clear error otherwise."""
    if not text:
        raise ContractError("the reply is empty")
    match = re.search(r"\{.*\}", text, re.S)
    if match is None:
        raise ContractError("the reply holds no JSON object")
    try:
        return _Answer.model_validate(json.loads(match.group(0)))
    except (json.JSONDecodeError, ValidationError) as exc:
        raise ContractError(f"the reply does not parse as a patch: {str(exc).splitlines()[0]}") from exc


def _brief(wf: Workflow, items: list[RepairPlanItem]) -> str:
    surface = {p: wf.get(p) for item in items for p in item.surface}
    plan = [
        {
            "plan_item_id": i.item_id,
            "control": i.control,
            "meaning": CONTROLS[i.control].meaning,
            "surface": i.surface,
        }
        for i in items
        if i.control in CONTROLS
    ]
    return (
        f"Repair plan:\n{json.dumps(plan, indent=1)}\n\nCurrent values at the surface:\n"
        f"{yaml.safe_dump(surface, sort_keys=False)}\nDeclared policy:\n{yaml.safe_dump(wf.get('policy') or {})}"
    )


def render(patch: RepairPatch) -> str:
    """A stored patch as the agent's own answer, to replay the conversation on a later round."""
    return json.dumps(
        {
            "changes": [
                {"path": c.path, "value": c.after, "plan_item_id": c.plan_item_id, "rationale": c.rationale}
                for c in patch.changes
            ]
        }
    )


def conversation(
    wf: Workflow, items: list[RepairPlanItem], history: list[tuple[str, list[ReviewIssue]]]
) -> list[dict[str, Any]]:
    """System, brief, then per earlier round: the agent's patch and the reviewer's stated issues."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": _brief(wf, items)},
    ]
    for answer, issues in history:
        messages.append({"role": "assistant", "content": answer})
        stated = [
            {"check": i.check, "path": i.path, "detail": i.detail, "expected": i.expected} for i in issues
        ]
        messages.append(
            {"role": "user", "content": "The reviewer rejected it. Issues:\n" + json.dumps(stated)}
        )
    return messages


def agent_propose(
    model: str,
    wf: Workflow,
    items: list[RepairPlanItem],
    history: list[tuple[str, list[ReviewIssue]]] | None = None,
    round_: int = 1,
) -> tuple[Proposal, str]:
    """One round of the LLM Repair Agent; returns the proposal and the answer it parsed from."""
    from auditor.core.llm import complete

    messages = conversation(wf, items, history or [])
    by_id = {i.item_id: i for i in items}
    for _ in range(PARSE_TRIES):
        reply = complete(model, messages, max_tokens=1024).content
        try:
            answer = parse_answer(reply)
            unknown = sorted({c.plan_item_id for c in answer.changes} - set(by_id))
            if unknown:
                raise ContractError(f"changes cite unknown plan items {unknown}; use {sorted(by_id)}")
        except ContractError as exc:
            messages += [
                {"role": "assistant", "content": reply or ""},
                {"role": "user", "content": f"{exc}. Answer again."},
            ]
            continue
        changes = {c.path: c.value for c in answer.changes}
        attribution = {c.path: (by_id[c.plan_item_id], c.rationale) for c in answer.changes}
        proposal = build_proposal(wf, changes, attribution, f"agent/{model}", round_)
        return proposal, render(proposal.patch)
    raise ContractError(f"the Repair Agent ({model}) gave no parseable patch in {PARSE_TRIES} tries")
