"""Unconsulted obligations: a policy, runbook or record available to a participant that it never
read before it acted.

Availability is only what the trace header states (``metadata.documents`` / ``policies`` /
``runbooks`` / ``records``: names, or objects with ``name`` and optional ``available_to``); a
document nobody declared is never assumed available. Acting means a tool call, a state write, a
handoff or a final output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from schemas import ActorKind, StepKind

if TYPE_CHECKING:
    from graph.model import InteractionGraph

DOCUMENT_KEYS = ("documents", "policies", "runbooks", "records")
ACTING_KINDS = frozenset({StepKind.tool_call, StepKind.state_write, StepKind.handoff, StepKind.final_output})


@dataclass(frozen=True, slots=True)
class UnconsultedObligation:
    """``participant`` acted at ``acted_step`` without having read ``document`` (read later at
    ``read_later_step``, or never)."""

    participant: str
    document: str
    declared_in: str
    acted_step: str
    edge_ref: str
    read_later_step: str | None


def declared_documents(metadata: dict[str, Any]) -> list[tuple[str, list[str] | None, str]]:
    """(name, available_to or None for everyone, metadata key) for every declared document."""
    out: list[tuple[str, list[str] | None, str]] = []
    for key in DOCUMENT_KEYS:
        items = metadata.get(key)
        if isinstance(items, dict):
            items = [{"name": k, **(v if isinstance(v, dict) else {})} for k, v in items.items()]
        for item in items if isinstance(items, list) else []:
            if isinstance(item, str):
                out.append((item, None, key))
            elif isinstance(item, dict) and isinstance(item.get("name") or item.get("id"), str):
                to = item.get("available_to")
                out.append(
                    (
                        item.get("name") or item["id"],
                        [str(x) for x in to] if isinstance(to, list) else None,
                        key,
                    )
                )
    return out


def find_unconsulted(ig: InteractionGraph) -> list[UnconsultedObligation]:
    """One obligation per (participant, declared document) not read before the first act."""
    declared = declared_documents(ig.trace.header.metadata)
    if not declared:
        return []
    first_read: dict[tuple[str, str], int] = {}
    for r in ig.doc_reads:
        first_read.setdefault((r.reader, r.document), ig.step_pos[r.step_id])
    first_act: dict[str, int] = {}
    for pos, step in enumerate(ig.trace.steps):
        if step.kind in ACTING_KINDS and step.actor_kind in (ActorKind.agent, ActorKind.human):
            first_act.setdefault(step.actor, pos)
    found = []
    for name, available_to, key in declared:
        for actor, act_pos in first_act.items():
            if available_to is not None and actor not in available_to:
                continue
            read_pos = first_read.get((actor, name))
            if read_pos is not None and read_pos < act_pos:
                continue
            step = ig.trace.steps[act_pos]
            later = ig.trace.steps[read_pos].step_id if read_pos is not None else None
            found.append(
                UnconsultedObligation(
                    actor, name, f"header.metadata.{key}", step.step_id, ig.step_edges[act_pos][0], later
                )
            )
    return found
