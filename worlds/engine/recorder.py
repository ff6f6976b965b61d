"""Records what happens in an episode as canonical trace steps, on a simulated clock.

Every act becomes one step with explicit recipients: a message names its one receiver, a tool call
names the tool, a tool result names the caller. Times come from the simulated clock, never the wall.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta
from typing import Any

from schemas.trace import ActorKind, StepKind, StepRefs, ToolInfo, TraceStep


class SimClock:
    """Simulated minutes since a fixed start; the only time a world knows."""

    def __init__(self, start: datetime) -> None:
        self.start = start
        self.minutes = 0.0

    def advance(self, minutes: float) -> None:
        self.minutes += minutes

    def jump_to_day(self, day: int, hour: int = 9) -> None:
        """Move to a later calendar day (contacts days apart); never backwards."""
        target = day * 1440 + hour * 60
        self.minutes = max(self.minutes, float(target))

    @property
    def now(self) -> datetime:
        return self.start + timedelta(minutes=self.minutes)

    def iso(self) -> str:
        return self.now.strftime("%Y-%m-%dT%H:%M:%SZ")


class Recorder:
    """Appends steps with gap-free indices and stable ids."""

    def __init__(self, clock: SimClock) -> None:
        self.clock = clock
        self.steps: list[TraceStep] = []
        self._calls = 0

    def _add(self, **fields: Any) -> TraceStep:
        index = len(self.steps)
        step = TraceStep(step_id=f"s{index:03d}", index=index, timestamp=self.clock.iso(), **fields)
        self.steps.append(step)
        return step

    def message(
        self,
        actor: str,
        to: str,
        text: str,
        *,
        kind: StepKind = StepKind.message,
        actor_kind: ActorKind = ActorKind.agent,
        reply_to: str | None = None,
        raw: dict[str, Any] | None = None,
    ) -> TraceStep:
        refs = StepRefs(reply_to=reply_to) if reply_to else None
        return self._add(
            actor=actor,
            actor_kind=actor_kind,
            recipients=[to],
            kind=kind,
            content=text,
            refs=refs,
            raw=raw or {},
        )

    def tool_call(
        self, actor: str, tool: str, arguments: dict[str, Any], text: str = ""
    ) -> tuple[TraceStep, str]:
        self._calls += 1
        call_id = f"call_{self._calls:03d}"
        content = text or f"{tool}({json.dumps(arguments, sort_keys=True, ensure_ascii=False)})"
        step = self._add(
            actor=actor,
            recipients=[tool],
            kind=StepKind.tool_call,
            content=content,
            tool=ToolInfo(name=tool, arguments=_json_numbers(arguments), call_id=call_id),
        )
        return step, call_id

    def tool_result(self, tool: str, caller: str, call_id: str, content: str, *, status: str) -> TraceStep:
        return self._add(
            actor=tool,
            actor_kind=ActorKind.tool,
            recipients=[caller],
            kind=StepKind.tool_result,
            content=content,
            tool=ToolInfo(name=tool, call_id=call_id),
            refs=StepRefs(call_id=call_id),
            raw={"status": status},
        )


def _json_numbers(value: Any) -> Any:
    """Arguments as the contract holds them: a NaN or infinite number an agent sent (the worlds
    test that gates fail closed on them) is recorded as its JSON spelling, a string, since the
    trace contract refuses numbers JSON cannot write; the step's content keeps the call as sent."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _json_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_numbers(v) for v in value]
    return value
