"""AppWorld (supervisor + app agents): indentation-structured text blocks.

Block headers name the recipient (``Message to Spotify Agent``, ``Reply from Spotify Agent to
Supervisor``). ``Message to X`` is the supervisor's delegated message when it opens an app agent's
message loop, and otherwise an execution output returned to X (actor ``environment``, a tool
result). ``apis.<app>.<fn>(…)`` and ``send_message(…)`` calls inside response code are the
structured tool calls. The task block (``*** Task i/N (<id>) ***``) becomes the header's task.

Segment rule (withheld into the labels record, recorded in ``header.withheld``): the
``Evaluation`` block the harness appends after the last execution output (the benchmark's
verdict: ``success``, passed and failed requirements) — rule ``appworld.evaluation``. It is the
grader's, not anything an agent saw; left in the output it reads as a failed observation of the
agent's finishing call.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from auditor.core.json_text import json_value
from ingest.base import Facts, StepBuilder
from ingest.frameworks.common import Source, blocks, pack_raw, withhold
from ingest.frameworks.pycalls import calls_raw, find_calls, tool_of
from schemas.trace import ActorKind, StepKind, StepRefs, ToolInfo, TraceStep

_HEADER = re.compile(
    r"^(?P<indent> *)(?:"
    r"(?P<task>\*{5,} Task (?P<task_no>\d+/\d+) \((?P<task_id>[^)]+)\) +\*{5,})"
    r"|Response from (?P<resp>.+)"
    r"|(?P<exec>Code Execution Output)"
    r"|Entering (?P<enter>.+) message loop"
    r"|Exiting (?P<exit>.+) message loop"
    r"|Message to (?P<msg>.+)"
    r"|Reply from (?P<reply>.+) to (?P<reply_to>.+)"
    r"|(?P<eval>Evaluation)"
    r")\s*$"
)
_CALL = re.compile(r"(?<![\w.])(?P<name>apis\.\w+\.\w+|send_message)\s*\(")
ENV = "environment"
EVALUATION_RULE = "appworld.evaluation: the harness's verdict block (success, passes, failures) after the run"


class AppWorldFormat:
    name = "appworld"
    framework = "AppWorld"

    def sniff(self, head: str) -> str | None:
        if re.search(r"^\*{5,} Task \d+/\d+ \(", head, re.M) and "Response from Supervisor Agent" in head:
            return "a '*** Task i/N (id) ***' banner followed by 'Response from Supervisor Agent' blocks"
        return None

    def parse(self, source: Source, facts: Facts, b: StepBuilder) -> Iterator[TraceStep]:
        state = {"loop": False}

        def header(line: str) -> re.Match[str] | None:
            m = _HEADER.match(line)
            if m is None:
                return None
            indent = len(m.group("indent"))
            inner = m.group("msg") or m.group("reply") or (m.group("resp") and "send_message API" not in line)
            expected = 4 if state["loop"] and inner else 0
            if indent != expected:
                return None
            if m.group("enter"):
                state["loop"] = True
            elif m.group("exit"):
                state["loop"] = False
            return m

        last_supervisor: str | None = None
        opening = False  # the next 'Message to' opens an app agent's loop
        for blk in blocks(source.lines(), header):
            m = blk.match
            text = blk.text()
            raw = {"line": blk.line}
            if m is None:
                if text:
                    yield b.add(actor=ENV, actor_kind=ActorKind.environment, content=text, raw=raw)
                continue
            if m.group("eval"):
                # the JSON it holds (bounded: nesting past the decoder is kept as text), else its text
                verdict = json_value(text, text)
                withhold(facts, facts.labels, "evaluation", verdict, "evaluation", EVALUATION_RULE)
            elif m.group("task"):
                facts.task = text or None
                facts.metadata.update(task_id=m.group("task_id"), task_number=m.group("task_no"))
            elif m.group("enter"):
                opening = True
            elif m.group("exit"):
                continue
            elif m.group("resp") == "send_message API":
                refs = StepRefs(reply_to=last_supervisor) if last_supervisor else None
                yield b.add(
                    actor="send_message API",
                    actor_kind=ActorKind.tool,
                    kind=StepKind.tool_result,
                    content=text,
                    tool=ToolInfo(name="send_message"),
                    refs=refs,
                    raw=raw,
                )
            elif m.group("resp"):
                calls = find_calls(text, _CALL)
                step = b.add(
                    actor=m.group("resp"),
                    kind=StepKind.tool_call if calls else StepKind.message,
                    content=text,
                    tool=tool_of(calls),
                    raw=pack_raw(line=blk.line, calls=calls_raw(calls)),
                )
                if not state["loop"]:
                    last_supervisor = step.step_id
                yield step
            elif m.group("exec"):
                refs = StepRefs(reply_to=last_supervisor) if last_supervisor else None
                yield b.add(
                    actor=ENV,
                    actor_kind=ActorKind.environment,
                    kind=StepKind.tool_result,
                    content=text,
                    refs=refs,
                    raw=raw,
                )
            elif m.group("msg"):
                if opening and last_supervisor:
                    yield b.add(actor="Supervisor Agent", recipients=[m.group("msg")], content=text, raw=raw)
                else:
                    yield b.add(
                        actor=ENV,
                        actor_kind=ActorKind.environment,
                        recipients=[m.group("msg")],
                        kind=StepKind.tool_result,
                        content=text,
                        raw=raw,
                    )
                opening = False
            elif m.group("reply"):
                to = m.group("reply_to")
                # AppWorld calls the supervisor 'Supervisor Agent' in every other header.
                recipient = f"{to} Agent" if not to.endswith(" Agent") else to
                yield b.add(
                    actor=m.group("reply"), recipients=[recipient], content=text, raw={**raw, "to": to}
                )


FORMAT = AppWorldFormat()
