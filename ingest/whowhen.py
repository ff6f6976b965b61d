"""Who&When records (failure attribution): one failed run per file, both subsets.

Algorithm-Generated (AG2/CaptainAgent): ``history`` entries carry the speaker in ``name``; ``role``
is only the chat role and stays in ``raw``. ``Computer_terminal`` replies that start with
``exitcode:`` are tool results of the code above them (no tool name is logged, so none is set).
Hand-Crafted (Magentic-One): the speaker and recipient are packed into ``role``
(``Orchestrator (-> WebSurfer)``); only those entries name a recipient.

Step ids are ``s<history index>`` — one step per history entry, in order — so the label
``mistake_step`` "12" is step ``s12`` (also stored as ``mistake_step_id``). The labels
(``mistake_agent``, ``mistake_step``, ``mistake_reason``, ``mistake_type``, ``labels``), the
grading (``is_correct`` / ``is_corrected``) and the correct answer (``ground_truth``) go to the
sidecar labels record, never into the steps (rule ``whowhen.labels``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from ingest.base import Facts, ImportedTrace, StepBuilder, head_text
from ingest.frameworks.common import withhold
from ingest.frameworks.magentic import kind_of, split_role
from ingest.jsonstream import JsonReader, top_level_kind
from schemas.trace import ActorKind, StepKind, TraceHeader, TraceStep

LABEL_KEYS = ("mistake_agent", "mistake_step", "mistake_reason", "mistake_type", "labels")
GRADING_KEYS = ("ground_truth", "groundtruth", "is_correct", "is_corrected")
LABEL_RULE = "whowhen.labels: attribution labels, grading and the correct answer beside the history"


def _step(entry: Any, n: int, where: str, b: StepBuilder) -> TraceStep:
    if not isinstance(entry, dict) or not isinstance(entry.get("content", ""), str):
        raise InputError(
            "a history entry must be an object with text 'content'", path=where, field=f"history[{n}]"
        )
    content = entry.get("content") or ""
    if entry.get("name"):
        actor = str(entry["name"])
        terminal = actor.lower() == "computer_terminal" and content.startswith("exitcode:")
        return b.add(
            actor=actor,
            actor_kind=ActorKind.tool if terminal else ActorKind.agent,
            kind=StepKind.tool_result if terminal else kind_of(content),
            content=content,
            raw={k: v for k, v in entry.items() if k not in ("content", "name")},
        )
    role = entry.get("role")
    if not isinstance(role, str) or not role.strip():
        raise InputError("a history entry needs 'name' or 'role'", path=where, field=f"history[{n}]")
    actor, recipients, _ = split_role(role)
    return b.add(
        actor=actor,
        actor_kind=ActorKind.human if actor == "human" else ActorKind.agent,
        recipients=recipients,
        kind=kind_of(content),
        content=content,
        raw={k: v for k, v in entry.items() if k != "content"},
    )


class WhoWhenImporter:
    name = "whowhen"
    description = "Who&When failure-attribution record (Algorithm-Generated or Hand-Crafted)"

    def detect(self, path: Path, head: bytes) -> str | None:
        text = head_text(head)
        if top_level_kind(head) != "object":
            return None
        if '"history"' in text and re.search(r'"(question|mistake_agent)"\s*:', text):
            return "a JSON object with 'history' and 'question'/'mistake_agent' (Who&When)"
        if re.match(r'\s*\{\s*"history"\s*:\s*\[\s*\{\s*"content"', text):
            return "a JSON object that opens with a 'history' list of {'content', 'role'} messages (Who&When)"
        return None

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        fields, first = self._fields(path)
        subset = "algorithm-generated" if isinstance(first, dict) and "name" in first else "hand-crafted"
        qid = fields.get("question_ID") or path.stem
        meta = {k: v for k, v in fields.items() if k not in (*LABEL_KEYS, *GRADING_KEYS, "question")}
        header = TraceHeader(
            trace_id=f"whowhen-{subset}-{qid}",
            source=str(path),
            framework="AG2" if subset == "algorithm-generated" else "Magentic-One",
            task=str(fields["question"]) if fields.get("question") is not None else None,
            metadata={**meta, "subset": subset},
        )
        where = str(path)

        def steps(facts: Facts) -> Iterator[TraceStep]:
            b = StepBuilder(where)
            with path.open("rb") as stream:
                reader = JsonReader(stream, where)
                for key in reader.members():
                    if key == "history":
                        for n, entry in enumerate(reader.array()):
                            yield _step(entry, n, where, b)
                    elif key in LABEL_KEYS or key in GRADING_KEYS:
                        what = "gold_answer" if key in ("ground_truth", "groundtruth") else key
                        withhold(facts, facts.labels, key, reader.value(), what, LABEL_RULE)
                reader.end()
            if "mistake_step" in facts.labels:
                facts.labels["mistake_step_id"] = _step_id(facts.labels["mistake_step"], b.n, where)

        yield ImportedTrace(importer=self.name, header=header, steps=steps)

    @staticmethod
    def _fields(path: Path) -> tuple[dict[str, Any], Any]:
        """The record's fields other than ``history``, and its first history entry."""
        fields: dict[str, Any] = {}
        first: Any = None
        with path.open("rb") as stream:
            reader = JsonReader(stream, str(path))
            for key in reader.members():
                if key == "history":
                    for entry in reader.array():
                        first = entry if first is None else first
                else:
                    fields[key] = reader.value()
            reader.end()
        if first is None:
            raise InputError("no 'history' entries", path=str(path), field="history")
        return fields, first


def _step_id(value: Any, steps: int, where: str) -> str:
    try:
        index = int(str(value).strip())
    except ValueError:
        raise InputError(
            f"mistake_step '{value}' is not an index", path=where, field="mistake_step"
        ) from None
    if not 0 <= index < steps:
        raise InputError(
            f"mistake_step {index} is outside the {steps} history entries", path=where, field="mistake_step"
        )
    return StepBuilder.id_for(index)


IMPORTER = WhoWhenImporter()
