"""Delegations on behalf of a requester, found in one pass with per-participant indices.

A delegation is a handoff (or agent-to-agent message) from a participant that a human asked
something, to one other agent. Its window runs until the same pair's next delegation or the
delegator's next request, so a long trace costs one pass plus bisections, never a scan per step.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from schemas import ActorKind, StepKind, Trace, TraceStep


@dataclass
class Delegation:
    pos: int  # the handoff to the delegate
    delegator: str
    delegate: str
    requester: str
    requester_kind: ActorKind | None
    carriers: list[int]  # the handoff and the delegator's calls that wrap it
    reads: list[int]  # what the delegate read in the window
    replies: list[int]  # the delegate's steps back to the delegator
    answers: list[int]  # the delegator's steps to the requester after the handoff


@dataclass
class _Index:
    by_actor: dict[str, list[int]]
    reads_of: dict[str, list[int]]
    asks_to: dict[str, list[int]]
    result_of: dict[str, int]
    addressed: dict[tuple[str, str], list[int]]  # (actor, named recipient) → positions


def _is_handoff(s: TraceStep, agents: set[str]) -> bool:
    return (
        s.actor_kind is ActorKind.agent
        and s.kind in (StepKind.handoff, StepKind.message)
        and s.recipients is not None
        and len(s.recipients) == 1
        and s.recipients[0] != s.actor
        and s.recipients[0] in agents
    )


def _between(positions: list[int], lo: int, hi: int) -> list[int]:
    return positions[bisect_right(positions, lo) : bisect_left(positions, hi)]


def find_delegations(trace: Trace) -> list[Delegation]:
    steps = trace.steps
    agents = {s.actor for s in steps if s.actor_kind is ActorKind.agent}
    ix = _Index({}, {}, {}, {}, {})
    found: list[tuple[int, int]] = []  # (handoff position, position of the request it serves)
    last_ask: dict[str, int] = {}
    for pos, s in enumerate(steps):
        ix.by_actor.setdefault(s.actor, []).append(pos)
        for r in s.recipients or []:
            ix.addressed.setdefault((s.actor, r), []).append(pos)
        if s.kind is StepKind.tool_result:
            for r in s.recipients or []:
                ix.reads_of.setdefault(r, []).append(pos)
            cid = (s.refs.call_id if s.refs else None) or (s.tool.call_id if s.tool else None)
            if cid:
                ix.result_of.setdefault(cid, pos)
        elif s.kind is StepKind.document_read:
            ix.reads_of.setdefault(s.actor, []).append(pos)
        if _is_handoff(s, agents) and s.actor in last_ask:
            found.append((pos, last_ask[s.actor]))
        if s.actor_kind is ActorKind.human:
            for r in s.recipients or []:
                last_ask[r] = pos
                ix.asks_to.setdefault(r, []).append(pos)
    out: list[Delegation] = []
    next_of_pair: dict[tuple[str, str], int] = {}
    ends: list[int] = []
    for pos, _ in reversed(found):
        key = (steps[pos].actor, steps[pos].recipients[0])  # type: ignore[index]
        ends.append(next_of_pair.get(key, len(steps)))
        next_of_pair[key] = pos
    previous: dict[str, int] = {}
    for (pos, asked), end in zip(found, reversed(ends), strict=True):
        d = _delegation(steps, ix, pos, asked, end, max(asked, previous.get(steps[pos].actor, asked)))
        previous[steps[pos].actor] = pos
        if d is not None:
            out.append(d)
    return out


def _delegation(
    steps: list[TraceStep], ix: _Index, pos: int, asked: int, end: int, since: int
) -> Delegation | None:
    s = steps[pos]
    delegator, delegate = s.actor, s.recipients[0]  # type: ignore[index]
    asks = ix.asks_to.get(delegator, [])
    next_ask = asks[bisect_right(asks, pos)] if bisect_right(asks, pos) < len(asks) else len(steps)
    end = min(end, next_ask)
    reads = _between(ix.reads_of.get(delegate, []), pos, end)
    if not reads:
        return None
    requester = steps[asked].actor
    replies = [
        p
        for p in _between(ix.by_actor.get(delegate, []), pos, end)
        if delegator in (steps[p].recipients or [delegator])
    ]
    answers = _between(ix.addressed.get((delegator, requester), []), pos, next_ask)
    wrap = [
        p
        for p in _between(ix.by_actor.get(delegator, []), since, pos)
        if steps[p].kind is StepKind.tool_call
        and steps[p].tool is not None
        and ix.result_of.get(steps[p].tool.call_id or "", len(steps)) > pos  # type: ignore[union-attr]
    ]
    return Delegation(
        pos, delegator, delegate, requester, steps[asked].actor_kind, [*wrap, pos], reads, replies, answers
    )


def call_positions(trace: Trace) -> dict[str, int]:
    """Tool call id → position of the call (to cite the call that made a read)."""
    return {
        s.tool.call_id: p
        for p, s in enumerate(trace.steps)
        if s.kind is StepKind.tool_call and s.tool is not None and s.tool.call_id
    }
