"""AG2 (MathChat on GSM-Plus): a structured record whose ``trajectory`` lists the chat messages.

Each message's ``content`` is a list of literal lines, joined with newlines. The speaker is
``name``: ``role`` is the chat role from the logging agent's point of view (inverted for the proxy)
and stays in ``raw``. The chat has no recipient field, so recipients stay unknown.

Segment rules (withheld into the labels record, recorded in ``header.withheld``): every
``other_data`` field — ``correct``, ``answer``, ``given`` (the grading) and ``seed_question``,
``seed_solution``, ``seed_answer`` (the gold solution) — rule ``ag2.other_data``; ``note``
(annotator text and votes) — rule ``mast.note``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from auditor.core.errors import InputError
from ingest.base import Facts, StepBuilder
from ingest.frameworks.common import Source, mast_record, pack_raw
from ingest.jsonstream import JsonReader
from schemas.trace import TraceStep

GOLD_RULE = "ag2.other_data: grading and gold-solution fields (correct, answer, given, seed_*) beside the log"


def message_text(content: Any) -> str:
    """AG2 stores a message as a list of literal lines; a plain string passes through."""
    if isinstance(content, list):
        return "\n".join(str(x) for x in content)
    return "" if content is None else str(content)


class AG2Format:
    name = "ag2"
    framework = "AG2"

    def sniff(self, head: str) -> str | None:
        if head.lstrip().startswith("{") and '"trajectory"' in head and '"mathproxyagent"' in head:
            return "a JSON record whose 'trajectory' messages carry AG2 agent names (mathproxyagent)"
        return None

    def parse(self, source: Source, facts: Facts, b: StepBuilder) -> Iterator[TraceStep]:
        def trajectory(reader: JsonReader) -> Iterator[TraceStep]:
            for n, message in enumerate(reader.array()):
                yield self._step(message, n, source, b)

        return mast_record(source, facts, trajectory, lambda sub: f"gold_or_grading:{sub}", GOLD_RULE)

    @staticmethod
    def _step(message: Any, n: int, source: Source, b: StepBuilder) -> TraceStep:
        if not isinstance(message, dict) or not (message.get("name") or message.get("role")):
            raise InputError(
                "an AG2 message needs a 'name' (or at least a 'role')",
                path=source.where,
                field=f"trajectory[{n}]",
            )
        extra = {k: v for k, v in message.items() if k not in ("content", "name")}
        return b.add(
            actor=str(message.get("name") or message["role"]),
            content=message_text(message.get("content")),
            raw=pack_raw(**extra),
        )


FORMAT = AG2Format()
