"""Chat messages carried by model-call spans, as step drafts, whichever convention wrote them.

OpenInference, OpenTelemetry GenAI and the Vercel AI SDK each write a model call's messages their
own way; their importers turn them into :class:`Message` and draft steps here, so that a role maps
to the same participant everywhere: ``user`` is a human, ``system`` (and ``developer``) the system
prompt, ``tool`` a tool result, anything else the model's (or its agent's) own turn.

A model call's input repeats the conversation so far. :class:`History` decides which input
messages are steps: all of the first model call's (what came before the trace began: no other
span shows it), and after that only the user and system turns not yet seen, counted by
occurrence so that a user who says "yes" twice is kept twice. Assistant turns and tool results of
later calls are the earlier calls' outputs and the tool spans' results, already steps.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from auditor.core.json_text import json_value
from schemas.trace import ActorKind, StepKind, ToolInfo

_SYSTEM = frozenset({"system", "developer"})
_HUMAN = frozenset({"user", "human"})
_TOOL = frozenset({"tool", "function", "ipython"})


@dataclass
class Call:
    """A tool call a message makes: its id, tool name and arguments as written."""

    id: str | None
    name: str
    arguments: Any


@dataclass
class Message:
    """One chat message: its role, text, the tool calls it makes, and for a tool result the call
    it answers (``call_id``) and the tool's name where the message gives it."""

    role: str | None
    text: str = ""
    calls: list[Call] = field(default_factory=list)
    call_id: str | None = None
    name: str | None = None


def arguments_of(value: Any) -> dict[str, Any] | str | None:
    """Tool arguments as ToolInfo holds them: a JSON object string becomes the object; any other
    string stays as written."""
    if isinstance(value, str):
        parsed = json_value(value)
        return parsed if isinstance(parsed, dict) else value
    return value if isinstance(value, dict) else None


def as_text(value: Any) -> str:
    """A text field as written; a structured value (a tool's JSON result) as JSON."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def call_draft(call: Call, actor: str, base: dict[str, Any]) -> dict[str, Any]:
    """A tool-call step draft; ``_call`` lets the result that answers it link back."""
    return {
        **base,
        "actor": actor,
        "kind": StepKind.tool_call,
        "content": as_text(call.arguments),
        "_call": call.id or call.name,
        "tool": ToolInfo(name=call.name, arguments=arguments_of(call.arguments), call_id=call.id),
    }


def role_of(m: Message) -> str:
    """The message's role in lower case ("" where the source gives none, or not as text)."""
    return m.role.lower() if isinstance(m.role, str) else ""


def is_tool_result(m: Message) -> bool:
    """Whether the message is a tool's result (a tool role, whichever name the convention uses)."""
    return role_of(m) in _TOOL


def message_drafts(
    m: Message, actor: str, base: dict[str, Any], tool_names: dict[str, str]
) -> Iterator[dict[str, Any]]:
    """Step drafts for one message. ``actor`` speaks the model's turns; ``tool_names`` (call id →
    tool name, filled as calls are drafted) names the tool a result comes from."""
    role = role_of(m)
    if role in _SYSTEM:
        yield {**base, "actor": "system", "actor_kind": ActorKind.system, "content": m.text}
    elif role in _HUMAN:
        yield {**base, "actor": "user", "actor_kind": ActorKind.human, "content": m.text}
    elif role in _TOOL:
        name = m.name or tool_names.get(m.call_id or "") or "tool"
        yield {
            **base,
            "actor": name,
            "actor_kind": ActorKind.tool,
            "kind": StepKind.tool_result,
            "content": m.text,
            "_link": m.call_id or name,
            "tool": ToolInfo(name=name, call_id=m.call_id),
        }
    else:
        if m.text or not m.calls:
            yield {**base, "actor": actor, "content": m.text}
        for call in m.calls:
            if call.id:
                tool_names[call.id] = call.name
            yield call_draft(call, actor, base)


class History:
    """Which input messages of a trace's model calls become steps (see the module's docstring).
    One per trace and pass; model calls are offered in time order."""

    def __init__(self) -> None:
        self.started = False
        self.seen: Counter[tuple[str, str]] = Counter()
        self.tool_names: dict[str, str] = {}

    def drafts(self, messages: list[Message], actor: str, base: dict[str, Any]) -> Iterator[dict[str, Any]]:
        first, self.started = not self.started, True
        counts: Counter[tuple[str, str]] = Counter()
        for m in messages:
            key = (role_of(m), m.text)
            counts[key] += 1
            if not first and key[0] not in _HUMAN | _SYSTEM:
                continue
            if counts[key] <= self.seen[key]:
                continue
            self.seen[key] = counts[key]
            yield from message_drafts(m, actor, base, self.tool_names)

    def note(self, messages: list[Message]) -> None:
        """Messages already made steps another way (an agent's input and instructions, drafted from
        the span that invoked it): a model call whose input repeats them drafts them no more."""
        for m in messages:
            self.seen[(role_of(m), m.text)] += 1

    def outputs(self, messages: list[Message], actor: str, base: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """A model call's output messages; they count as seen, so that the next call's input,
        which repeats them, does not draft them again."""
        self.started = True
        for m in messages:
            self.seen[(role_of(m), m.text)] += 1
            yield from message_drafts(m, actor, base, self.tool_names)
