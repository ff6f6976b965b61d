"""OpenManus: a loguru log of one agent (``Manus``) whose tool use is explicit.

``✨ Manus's thoughts: …`` is a message; ``🛠️ Manus selected N tools`` and
``🧰 Tools being prepared: ['x']`` name the tools, and each ``🔧 Tool arguments: {json}`` line
becomes a structured tool call (name from the prepared list, arguments parsed). ``🎯 Tool 'x'
completed its mission! Result: …`` is the tool's result, linked back to its call. Other records
are the framework's (actor: the logger module; ``app.tool.*`` loggers are tools). LLM accounting
(``app.llm``) and tool-activation lines repeat what other records say and are counted, not stepped.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from typing import Any

from ingest.base import Facts, StepBuilder
from ingest.frameworks.common import Source, blocks, pack_raw
from ingest.frameworks.loguru import LOGURU, loguru_time
from schemas.trace import ActorKind, StepKind, StepRefs, ToolInfo, TraceStep

_THOUGHTS = re.compile(r"^✨ (?P<who>\S+)'s thoughts: ?(?P<text>.*)$", re.S)
_SELECTED = re.compile(r"^🛠️ (?P<who>\S+) selected (?P<n>\d+) tools? to use")
_PREPARED = re.compile(r"^🧰 Tools being prepared: (?P<names>\[.*\])\s*$")
_ARGUMENTS = re.compile(r"^🔧 Tool arguments: (?P<args>.*)$", re.S)
_ACTIVATING = re.compile(r"^🔧 Activating tool: '(?P<tool>[^']+)'")
_RESULT = re.compile(r"^🎯 Tool '(?P<tool>[^']+)' completed its mission! Result: ?(?P<text>.*)$", re.S)
_SPECIAL = re.compile(r"^🏁 Special tool '(?P<tool>[^']+)'")


def _arguments(text: str) -> dict[str, Any] | str:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text
    return value if isinstance(value, dict) else text


def _names(text: str) -> list[str]:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


class OpenManusFormat:
    name = "openmanus"
    framework = "OpenManus"

    def sniff(self, head: str) -> str | None:
        lines = re.findall(
            r"^\d{4}-\d{2}-\d{2} [\d:.]+ \| [A-Z]+ *\| app\.(?:agent|flow|llm|tool)[\w.]*:\w+:\d+ - ",
            head,
            re.M,
        )
        if len(lines) >= 2:
            return "loguru lines from OpenManus modules (app.agent.*, app.flow.*)"
        return None

    def parse(self, source: Source, facts: Facts, b: StepBuilder) -> Iterator[TraceStep]:
        agent = "Manus"
        prepared: list[str] = []
        calls: dict[str, str] = {}
        for blk in blocks(source.lines(), LOGURU.match):
            m = blk.match
            if m is None:
                yield b.add(actor="OpenManus", actor_kind=ActorKind.system, content=blk.text())
                continue
            msg, logger = m.group("msg"), m.group("where").split(":")[0]
            raw = pack_raw(
                line=blk.line, level=m.group("level"), logger=m.group("where"), prefix=m.group("prefix")
            )
            stamp = loguru_time(m)
            if logger == "app.llm":
                facts.count("llm_accounting")
            elif _ACTIVATING.match(msg):
                facts.count("tool_activation")
            elif thoughts := _THOUGHTS.match(msg):
                agent = thoughts.group("who")
                yield b.add(
                    timestamp=stamp, actor=agent, content=blk.text(thoughts.group("text") + "\n"), raw=raw
                )
            elif selected := _SELECTED.match(msg):
                agent, prepared = selected.group("who"), []
                yield b.add(timestamp=stamp, actor=agent, content=blk.text(msg + "\n"), raw=raw)
            elif names := _PREPARED.match(msg):
                prepared = _names(names.group("names"))
                facts.count("tools_prepared")
            elif args := _ARGUMENTS.match(msg):
                text = blk.text(args.group("args") + "\n")
                name = prepared.pop(0) if prepared else None  # unnamed: no structured tool
                step = b.add(
                    timestamp=stamp,
                    actor=agent,
                    kind=StepKind.tool_call,
                    content=text,
                    tool=ToolInfo(name=name, arguments=_arguments(text)) if name else None,
                    raw=raw,
                )
                if name:
                    calls[name] = step.step_id
                yield step
            elif result := _RESULT.match(msg):
                tool = result.group("tool")
                yield b.add(
                    timestamp=stamp,
                    actor=tool,
                    actor_kind=ActorKind.tool,
                    kind=StepKind.tool_result,
                    content=blk.text(result.group("text") + "\n"),
                    tool=ToolInfo(name=tool),
                    refs=StepRefs(reply_to=calls[tool]) if tool in calls else None,
                    raw=raw,
                )
            else:
                special = _SPECIAL.match(msg)
                tool_logger = logger.startswith("app.tool.")
                yield b.add(
                    timestamp=stamp,
                    actor=special.group("tool") if special else logger,
                    actor_kind=ActorKind.tool if special or tool_logger else ActorKind.system,
                    content=blk.text(msg + "\n"),
                    raw=raw,
                )


FORMAT = OpenManusFormat()
