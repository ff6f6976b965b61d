"""Inspect AI eval logs in JSON form: one trace per sample (per epoch).

The log is streamed: ``eval`` (task, model, ids) is read first, then ``samples`` one at a time.
A sample's ``messages`` are the steps in order: ``user`` (human), ``system``, ``assistant`` (the
model; ``tool_calls`` make it a structured tool call, the first in ``tool``, all in ``raw``) and
``tool`` messages (the result of ``function``, linked by ``tool_call_id``). The sample's ``target``
and ``scores`` are grading and go to the labels record, and so do ``score`` events (intermediate
and final scoring).

From the sample's ``events``, what the messages do not hold becomes steps: an ``approval`` (the
approver's decision on a tool call, placed right after the call, or after its result for
``stage: result``), and the ``error`` and ``sample_limit`` that ended the sample (placed last). The
other events (model calls, tool executions, state and store changes, spans …) repeat the
messages or are bookkeeping; they are counted in the header. Binary ``.eval`` archives must be
converted first (``inspect log convert --to json``).
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from auditor.errors import InputError
from ingest.base import Facts, ImportedTrace, StepBuilder, head_text
from ingest.frameworks.common import pack_raw
from ingest.jsonstream import JsonReader, top_level_kind
from schemas.trace import ActorKind, StepKind, StepRefs, ToolInfo, TraceHeader, TraceStep, WithheldItem

GRADING_RULE = "inspect.scores: the sample's target and scores (grading)"
SCORE_EVENTS_RULE = "inspect.score_events: 'score' events in the sample's events (grading)"
_ENDINGS = ("error", "sample_limit")  # events that end a sample: steps after the last message
_ACTOR_KIND = {
    "user": ActorKind.human,
    "system": ActorKind.system,
    "assistant": ActorKind.agent,
    "tool": ActorKind.tool,
}


def content_text(content: Any) -> str:
    """A message's text: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(c.get("text", "")) for c in content if isinstance(c, dict) and c.get("type") in ("text", None)
        )
    return ""


class InspectLogImporter:
    name = "inspect"
    description = "Inspect AI eval log (JSON), one trace per sample"

    def detect(self, path: Path, head: bytes) -> str | None:
        if head.startswith(b"PK") and path.suffix == ".eval":
            return "an Inspect .eval archive"
        text = head_text(head)
        if (
            top_level_kind(head) == "object"
            and '"eval"' in text
            and ('"samples"' in text or '"plan"' in text)
            and '"task"' in text
        ):
            return "a JSON object with 'eval' (task, model) and 'samples' (Inspect AI log)"
        return None

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        if zipfile.is_zipfile(path):
            raise InputError(
                "binary .eval archives are not read directly",
                path=str(path),
                hint="convert it: inspect log convert --to json FILE",
            )
        info: dict[str, Any] = {}
        with path.open("rb") as stream:
            reader = JsonReader(stream, str(path))
            for key in reader.members():
                if key == "eval":
                    info = reader.value() or {}
                elif key == "samples":
                    for n, sample in enumerate(reader.array()):
                        yield self._trace(path, info, n, sample)
            reader.end()

    def _trace(self, path: Path, info: dict[str, Any], n: int, sample: Any) -> ImportedTrace:
        if not isinstance(sample, dict) or not isinstance(sample.get("messages", []), list):
            raise InputError(
                "a sample must be an object with a 'messages' list", path=str(path), field=f"samples[{n}]"
            )
        run = info.get("eval_id") or info.get("run_id") or "run"
        sid = f"{sample.get('id', n)}-{sample.get('epoch', 1)}"
        grading = {k: sample[k] for k in ("target", "scores") if k in sample}
        withheld = [
            WithheldItem(what=f"grading:{k}", where=f"samples[{n}].{k}", rule=GRADING_RULE) for k in grading
        ]
        events = sample.get("events")
        score_events = (
            [e for e in events if isinstance(e, dict) and e.get("event") == "score"]
            if isinstance(events, list)
            else []
        )
        if score_events:
            grading["score_events"] = score_events
            withheld.append(
                WithheldItem(
                    what="grading:score_events",
                    where=f"samples[{n}].events (event 'score')",
                    rule=SCORE_EVENTS_RULE,
                )
            )
        header = TraceHeader(
            trace_id=f"inspect-{run}-{sid}",
            source=f"{path}#samples[{n}]",
            framework="inspect_ai",
            task=content_text(sample["input"]) if isinstance(sample.get("input"), str) else None,
            metadata=pack_raw(
                task=info.get("task"),
                model=info.get("model"),
                sample_id=sample.get("id"),
                epoch=sample.get("epoch"),
                sample_metadata=sample.get("metadata"),
            ),
            withheld=withheld,
        )
        model = str(info.get("model") or "assistant")
        return ImportedTrace(
            importer=self.name,
            header=header,
            labels=grading or None,
            steps=lambda facts: self._steps(sample, model, facts, StepBuilder(f"{path} samples[{n}]")),
        )

    @staticmethod
    def _steps(sample: dict[str, Any], model: str, facts: Facts, b: StepBuilder) -> Iterator[TraceStep]:
        calls: dict[str, str] = {}
        after_call, after_result, endings = _placed_events(sample, facts)
        for m in sample.get("messages") or []:
            if not isinstance(m, dict):
                raise InputError("a message must be an object", path=b.where, field="messages")
            role = str(m.get("role") or "unknown")
            raw = pack_raw(**{k: v for k, v in m.items() if k not in ("content", "role", "tool_calls")})
            if role == "tool":
                call_id = m.get("tool_call_id")
                name = str(m.get("function") or "tool")
                yield b.add(
                    actor=name,
                    actor_kind=ActorKind.tool,
                    kind=StepKind.tool_result,
                    content=content_text(m.get("content")),
                    tool=ToolInfo(name=name, call_id=call_id),
                    refs=StepRefs(reply_to=calls.get(str(call_id)), call_id=call_id) if call_id else None,
                    raw=raw,
                )
                for _, event in after_result.pop(str(call_id), []):
                    yield _approval(b, event, calls)
                continue
            tool_calls = [c for c in m.get("tool_calls") or [] if isinstance(c, dict)]
            first = tool_calls[0] if tool_calls else None
            step = b.add(
                actor=model if role == "assistant" else role,
                actor_kind=_ACTOR_KIND.get(role, ActorKind.agent),
                kind=StepKind.tool_call if first else StepKind.message,
                content=content_text(m.get("content")),
                tool=ToolInfo(
                    name=str(first.get("function")), arguments=first.get("arguments"), call_id=first.get("id")
                )
                if first
                else None,
                raw=pack_raw(**raw, tool_calls=tool_calls if len(tool_calls) > 1 else None),
            )
            for c in tool_calls:
                calls[str(c.get("id"))] = step.step_id
            yield step
            for c in tool_calls:
                for _, event in after_call.pop(str(c.get("id")), []):
                    yield _approval(b, event, calls)
        # approvals of calls no message holds (in event order), then what ended the sample
        unplaced = [
            pair for placed in (after_call, after_result) for pairs in placed.values() for pair in pairs
        ]
        for _, event in sorted(unplaced, key=lambda pair: pair[0]):
            yield _approval(b, event, calls)
        for event in endings:
            yield _ending(b, event)


_Placed = dict[str, list[tuple[int, dict[str, Any]]]]


def _placed_events(sample: dict[str, Any], facts: Facts) -> tuple[_Placed, _Placed, list[dict[str, Any]]]:
    """Approvals by tool call id (before and after the result), the ending events, and a count of
    the rest in the header (``skipped_records``)."""
    after_call: _Placed = {}
    after_result: _Placed = {}
    endings: list[dict[str, Any]] = []
    events = sample.get("events")
    for n, event in enumerate(events if isinstance(events, list) else []):
        kind = event.get("event") if isinstance(event, dict) else None
        if kind == "approval":
            call = event.get("call")
            call_id = str(call.get("id")) if isinstance(call, dict) else ""
            placed = after_result if event.get("stage") == "result" else after_call
            placed.setdefault(call_id, []).append((n, event))
        elif kind in _ENDINGS:
            endings.append(event)
        elif kind != "score":  # score events are grading: in the labels record
            facts.count(f"event:{kind}")
    return after_call, after_result, endings


def _approval(b: StepBuilder, event: dict[str, Any], calls: dict[str, str]) -> TraceStep:
    """The approver's decision (``approve``, ``modify``, ``reject``, ``escalate``, ``terminate``) as
    its content, answering the tool call step; explanation and the call itself in ``raw``."""
    call = event.get("call") if isinstance(event.get("call"), dict) else {}
    call_id = call.get("id")
    approver = str(event.get("approver") or "approver")
    return b.add(
        timestamp=event.get("timestamp"),
        actor=approver,
        actor_kind=ActorKind.human if approver == "human" else ActorKind.system,
        content=str(event.get("decision") or ""),
        refs=StepRefs(reply_to=calls.get(str(call_id)), call_id=call_id) if call_id else None,
        raw=pack_raw(
            event="approval",
            stage=event.get("stage"),
            explanation=event.get("explanation"),
            call=call,
            modified=event.get("modified"),
            message=event.get("message"),
        ),
    )


def _ending(b: StepBuilder, event: dict[str, Any]) -> TraceStep:
    """An ``error`` (its message) or a ``sample_limit`` (its message) that ended the sample."""
    kind = str(event.get("event"))
    error = event.get("error") if isinstance(event.get("error"), dict) else {}
    text = error.get("message") if kind == "error" else event.get("message")
    return b.add(
        timestamp=event.get("timestamp"),
        actor="inspect",
        actor_kind=ActorKind.system,
        content=str(text or ""),
        raw=pack_raw(
            event=kind,
            type=event.get("type"),
            limit=event.get("limit"),
            traceback=error.get("traceback"),
        ),
    )


IMPORTER = InspectLogImporter()
