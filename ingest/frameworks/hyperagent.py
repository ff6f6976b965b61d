"""HyperAgent (SWE-bench): a structured record whose ``trajectory`` is a list of log lines.

A step starts at ``HyperAgent_<instance> - INFO - <Speaker>'s Response: …`` or
``… - <Agent>-><Recipient>: …``; the lines without that prefix continue it. The Planner delegates
with ``Intern Name: <intern>`` (a handoff to that named intern); ``<tool>._run(…)`` inside an
``Action:`` block is a structured tool call.

Echoes: each ``Initialized HyperAgent instance`` in one process adds a logging handler, so after
the k-th (logged k times in a row) every record until the next comes out k times, back to back.
Those copies are one step: a record equal to the one before it (header and body) is dropped while
fewer than k copies of it have been read. A step an agent really repeats reads once per repeat
and k times each, so it survives.

Segment rules (withheld into the labels record, recorded in ``header.withheld``):
``other_data.patch`` (the gold SWE-bench patch) and ``other_data.hints_text`` (benchmark-side
hints) — rule ``hyperagent.other_data``; ``note`` (annotator text and votes) — rule ``mast.note``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from ingest.base import Facts, StepBuilder
from ingest.frameworks.common import Block, Source, blocks, mast_record, pack_raw
from ingest.frameworks.pycalls import calls_raw, find_calls, tool_of
from ingest.jsonstream import JsonReader
from schemas.trace import ActorKind, StepKind, TraceStep

_LINE = re.compile(r"^HyperAgent_(?P<inst>\S+) - (?P<level>[A-Z]+) - (?P<msg>.*)$")
_RESPONSE = re.compile(r"^(?P<who>[\w\-]+(?: [\w\-]+)*)'s Response: ?(?P<text>.*)$", re.S)
_ROUTE = re.compile(r"^(?P<src>[\w\-]+)->(?P<dst>[\w\-]+): ?(?P<text>.*)$", re.S)
_INTERN = re.compile(r"^Intern Name: *(?P<intern>.+?)\s*$", re.M)
_CALL = re.compile(r"(?<![\w.])(?P<name>\w+)\._run\s*\(")
_INIT = re.compile(r"^Initialized HyperAgent instance\b")
PATCH_RULE = "hyperagent.other_data: benchmark evaluation fields (gold patch, hints) beside the log"


def unechoed(records: Iterable[Block]) -> Iterator[Block]:
    """The log's records with the handler echoes dropped (module doc)."""
    handlers, copies, previous = 1, 0, None
    for blk in records:
        key = (blk.match.group("msg") if blk.match else None, blk.text())
        is_init = blk.match is not None and _INIT.match(blk.match.group("msg")) is not None
        if key == previous and (copies < handlers or is_init):
            copies += 1
            if is_init:
                handlers = copies
            continue
        previous, copies = key, 1
        if is_init:
            handlers = 1
        yield blk


class HyperAgentFormat:
    name = "hyperagent"
    framework = "HyperAgent"

    def sniff(self, head: str) -> str | None:
        if head.lstrip().startswith("{") and '"trajectory"' in head and "HyperAgent_" in head:
            return "a JSON record with a 'trajectory' of 'HyperAgent_<instance> - INFO -' lines"
        return None

    def parse(self, source: Source, facts: Facts, b: StepBuilder) -> Iterator[TraceStep]:
        def trajectory(reader: JsonReader) -> Iterator[TraceStep]:
            return self._steps((f"{line}\n" for line in reader.array()), b)

        def what(sub: str) -> str:
            return "reference_patch" if sub == "patch" else f"evaluation_field:{sub}"

        return mast_record(source, facts, trajectory, what, PATCH_RULE)

    def _steps(self, lines: Iterator[str], b: StepBuilder) -> Iterator[TraceStep]:
        for blk in unechoed(blocks(lines, _LINE.match)):
            if blk.match is None:
                yield b.add(actor="HyperAgent", actor_kind=ActorKind.system, content=blk.text())
                continue
            msg = blk.match.group("msg")
            raw = {"level": blk.match.group("level"), "trajectory_line": blk.line - 1}
            if resp := _RESPONSE.match(msg):
                text = blk.text(resp.group("text") + "\n")
                interns = list(dict.fromkeys(m.group("intern") for m in _INTERN.finditer(text)))
                calls = find_calls(text, _CALL)
                kind = StepKind.handoff if interns else StepKind.tool_call if calls else StepKind.message
                yield b.add(
                    actor=resp.group("who"),
                    recipients=interns or None,
                    kind=kind,
                    content=text,
                    tool=tool_of(calls),
                    raw=pack_raw(**raw, calls=calls_raw(calls)),
                )
            elif route := _ROUTE.match(msg):
                yield b.add(
                    actor=route.group("src"),
                    recipients=[route.group("dst")],
                    content=blk.text(route.group("text") + "\n"),
                    raw=raw,
                )
            else:
                yield b.add(
                    actor="HyperAgent", actor_kind=ActorKind.system, content=blk.text(msg + "\n"), raw=raw
                )


FORMAT = HyperAgentFormat()
