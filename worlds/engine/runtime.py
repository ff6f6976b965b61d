"""The episode runtime: deterministic tools with minute costs, a point-to-point bus, agent turns.

An agent's behaviour is a generator that yields actions (call a tool, send a message, emit a final
output) and receives each tool's result. The runtime executes the action, records it as trace
steps, charges the tool's simulated minutes, and delivers messages only to sender and receiver.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from schemas.trace import ActorKind, StepKind, TraceStep
from worlds.engine.recorder import Recorder


@dataclass(frozen=True)
class CallTool:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Send:
    to: str
    text: str
    handoff: bool = False


@dataclass(frozen=True)
class Final:
    """The act that leaves the workflow (a sent email, a public report, an answer to the requester)."""

    to: str
    text: str


Action = CallTool | Send | Final


@dataclass(frozen=True)
class ToolResult:
    ok: bool
    content: str
    data: dict[str, Any] = field(default_factory=dict)
    status: str = "ok"

    @staticmethod
    def json(data: dict[str, Any], *, ok: bool = True, status: str = "ok") -> ToolResult:
        return ToolResult(
            ok=ok, content=json.dumps(data, sort_keys=True, ensure_ascii=False), data=data, status=status
        )

    @staticmethod
    def error(code: str, message: str, **extra: Any) -> ToolResult:
        data = {"error": code, "message": message, **extra}
        return ToolResult(
            ok=False, content=json.dumps(data, sort_keys=True, ensure_ascii=False), data=data, status=code
        )


@dataclass(frozen=True)
class ToolSpec:
    """What an agent sees of a tool: its name, description and parameters (never the gates behind it)."""

    name: str
    description: str
    parameters: dict[str, str]
    cost_minutes: float


@dataclass(frozen=True)
class Tool:
    spec: ToolSpec
    run: Callable[[str, dict[str, Any]], ToolResult]


Behaviour = Generator[Action, ToolResult | None, None]


@dataclass(frozen=True)
class CallRecord:
    """One executed tool call: who, what, the result, and the two step ids that record it."""

    role: str
    name: str
    arguments: dict[str, Any]
    result: ToolResult
    call_step: str
    result_step: str


@dataclass
class Visible:
    """What one agent has seen: its own messages in and out, and its own tool results."""

    lines: list[str] = field(default_factory=list)
    step_ids: list[str] = field(default_factory=list)

    def add(self, step: TraceStep, line: str) -> None:
        self.lines.append(line)
        self.step_ids.append(step.step_id)

    def text(self) -> str:
        return "\n".join(self.lines)


class Runtime:
    """Executes agents' actions against tools and the bus, recording every act."""

    def __init__(self, recorder: Recorder) -> None:
        self.rec = recorder
        self.tools: dict[str, dict[str, Tool]] = {}
        self.minutes: dict[str, float] = {}
        self.visible: dict[str, Visible] = {}
        self.calls: list[CallRecord] = []
        self.finals: list[TraceStep] = []
        self.responders: dict[str, Callable[[str, str], str | None]] = {}
        self.message_minutes = 0.5
        self.current_call_step = ""

    def grant(self, role: str, tools: list[Tool]) -> None:
        self.tools[role] = {t.spec.name: t for t in tools}
        self.minutes.setdefault(role, 0.0)
        self.visible.setdefault(role, Visible())

    def specs(self, role: str) -> list[ToolSpec]:
        return [t.spec for t in self.tools.get(role, {}).values()]

    def _see(self, role: str, step: TraceStep, line: str) -> None:
        self.visible.setdefault(role, Visible()).add(step, line)

    def system(self, to: str, text: str, actor: str = "system") -> TraceStep:
        """A role card or runtime notice delivered to one participant."""
        step = self.rec.message(actor, to, text, actor_kind=ActorKind.system)
        self._see(to, step, f"[{actor}] {text}")
        return step

    def send(
        self, sender: str, to: str, text: str, *, handoff: bool = False, human: bool = False
    ) -> TraceStep:
        kind = StepKind.handoff if handoff else StepKind.message
        actor_kind = ActorKind.human if human else ActorKind.agent
        if not human:
            self.rec.clock.advance(self.message_minutes)
        step = self.rec.message(sender, to, text, kind=kind, actor_kind=actor_kind)
        self._see(sender, step, f"[me -> {to}] {text}")
        self._see(to, step, f"[{sender} -> me] {text}")
        return step

    def final(self, sender: str, to: str, text: str) -> TraceStep:
        step = self.rec.message(sender, to, text, kind=StepKind.final_output)
        self._see(sender, step, f"[me -> {to}] {text}")
        self.finals.append(step)
        return step

    def respond(self, sender: str, to: str, text: str) -> ToolResult | None:
        """Let a simulated counterparty (customer, reporter, requester) answer a message at once."""
        responder = self.responders.get(to)
        answer = responder(sender, text) if responder else None
        if answer is None:
            return None
        self.send(to, sender, answer, human=True)
        return ToolResult(ok=True, content=answer, status="reply")

    def call(self, role: str, name: str, arguments: dict[str, Any]) -> CallRecord:
        """Run one tool call for a role; an unknown tool is an error result, as a real runtime returns."""
        call_step, call_id = self.rec.tool_call(role, name, arguments)
        self.current_call_step = call_step.step_id
        tool = self.tools.get(role, {}).get(name)
        if tool is None:
            result = ToolResult.error("unknown_tool", f"no tool named {name!r} is available to {role}")
        else:
            self.rec.clock.advance(tool.spec.cost_minutes)
            self.minutes[role] = self.minutes.get(role, 0.0) + tool.spec.cost_minutes
            result = tool.run(role, arguments)
        res_step = self.rec.tool_result(name, role, call_id, result.content, status=result.status)
        self._see(role, call_step, f"[call {name}] {json.dumps(arguments, sort_keys=True)}")
        self._see(role, res_step, f"[{name} result] {result.content}")
        record = CallRecord(role, name, arguments, result, call_step.step_id, res_step.step_id)
        self.calls.append(record)
        return record

    def drive(self, role: str, behaviour: Behaviour, max_actions: int = 40) -> None:
        """Run one agent turn to its end; a runaway behaviour is cut off at max_actions."""
        reply: ToolResult | None = None
        for _ in range(max_actions):
            try:
                action = behaviour.send(reply)
            except StopIteration:
                return
            reply = None
            if isinstance(action, CallTool):
                reply = self.call(role, action.name, action.arguments).result
            elif isinstance(action, Send):
                self.send(role, action.to, action.text, handoff=action.handoff)
                reply = self.respond(role, action.to, action.text)
            elif isinstance(action, Final):
                self.final(role, action.to, action.text)
        behaviour.close()

    def calls_by(self, role: str | None = None, name: str | None = None) -> list[CallRecord]:
        return [
            c for c in self.calls if (role is None or c.role == role) and (name is None or c.name == name)
        ]
