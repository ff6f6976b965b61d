"""Chat messages to canonical steps: who acted, and which call each tool result answers.

Naming follows the log: a message's ``name`` wins over its role; otherwise ``user`` is the human
"user", ``assistant`` the agent "assistant", ``system`` and ``developer`` the "system" (the role
stays in ``raw``), and any other role acts under its own name. A tool result is acted by the tool:
the result's own ``name`` where given, else the name of the call it answers (by call id), else
"tool". Recipients stay None: a chat log never says who a message was for.

A message becomes one step per part, in source order: each text part a ``message`` step (assistant
text beside tool calls comes first, as the message holds it), each call a ``tool_call`` step, each
result a ``tool_result`` step whose ``refs`` name the call's id and step. A model's recorded
reasoning (``thinking`` blocks) is a ``message`` step marked ``raw.block`` rather than raw-only:
it is what the model wrote before it acted, and an auditor must be able to quote it. A message with
no text, call or result (an image alone, an empty reply) is one empty ``message`` step so that its
turn is not lost. Call ids are matched first-come: τ-bench runs reuse one id for successive calls,
and parallel calls may share an id, so a result answers the earliest unanswered call with its id.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from ingest.base import StepBuilder
from ingest.chat_message import Call, ChatMessage, Result, Text
from schemas.trace import ActorKind, StepKind, TraceStep

ROLES = {
    "user": ("user", ActorKind.human),
    "human": ("user", ActorKind.human),
    "assistant": ("assistant", ActorKind.agent),
    "system": ("system", ActorKind.system),
    "developer": ("system", ActorKind.system),
}


class CallBook:
    """Calls made so far, by id (first-come) and, for id-less legacy function calls, by name."""

    def __init__(self) -> None:
        self.pending: dict[str, deque[tuple[str, str]]] = {}
        self.last: dict[str, tuple[str, str]] = {}
        self.by_name: dict[str, str] = {}

    def made(self, call: Call, step_id: str) -> None:
        if call.call_id is None:
            self.by_name[call.name] = step_id
            return
        key = str(call.call_id)
        self.pending.setdefault(key, deque()).append((step_id, call.name))
        self.last[key] = (step_id, call.name)

    def answer(self, result: Result) -> tuple[str | None, str | None]:
        """(the call's step id, the call's tool name) for a result, where the log links them."""
        if result.call_id is None:
            return (self.by_name.get(result.name), result.name) if result.name else (None, None)
        key = str(result.call_id)
        queue = self.pending.get(key)
        found = queue.popleft() if queue else self.last.get(key)
        return found if found else (None, None)


def chat_steps(messages: Iterable[ChatMessage], b: StepBuilder) -> Iterator[TraceStep]:
    """The steps of a conversation, in order."""
    book = CallBook()
    for m in messages:
        actor, kind = _speaker(m)
        here = {"message": m.index} if m.index is not None else {}
        first: dict[str, Any] = {**here, **m.raw}
        if m.omitted:
            first["parts_omitted"] = m.omitted
        if not m.parts:
            yield b.add(
                actor=actor,
                actor_kind=kind,
                kind=StepKind.message,
                content="",
                raw=first,
                timestamp=m.timestamp,
            )
            continue
        for i, part in enumerate(m.parts):
            raw = first if i == 0 else here
            yield _step(part, actor, kind, raw, book, b, m.timestamp)


def _speaker(m: ChatMessage) -> tuple[str, ActorKind]:
    actor, kind = ROLES.get(m.role, (m.role, ActorKind.agent))
    return (m.name or actor), kind


def _step(
    part: Text | Call | Result,
    actor: str,
    kind: ActorKind,
    raw: dict[str, Any],
    book: CallBook,
    b: StepBuilder,
    timestamp: str | None = None,
) -> TraceStep:
    if isinstance(part, Text):
        marks = {k: v for k, v in (("part", part.part), ("block", part.block)) if v is not None}
        return b.add(
            timestamp=timestamp,
            actor=actor,
            actor_kind=kind,
            kind=StepKind.message,
            content=part.text,
            raw={**raw, **part.raw, **marks},
        )
    if isinstance(part, Call):
        step = b.add(
            timestamp=timestamp,
            actor=actor,
            actor_kind=kind,
            kind=StepKind.tool_call,
            content=part.content,
            tool={"name": part.name, "arguments": part.arguments, "call_id": part.call_id},
            raw={**raw, "call": part.raw} if part.raw else raw,
        )
        book.made(part, step.step_id)
        return step
    reply_to, called = book.answer(part)
    tool = part.name or called
    return b.add(
        timestamp=timestamp,
        actor=tool or "tool",
        actor_kind=ActorKind.tool,
        kind=StepKind.tool_result,
        content=part.content,
        tool={"name": tool, "call_id": part.call_id} if tool else None,
        refs={"reply_to": reply_to, "call_id": part.call_id}
        if reply_to or part.call_id is not None
        else None,
        raw={**raw, **part.raw},
    )
