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
messages or are bookkeeping; they are counted in the header. ``.eval`` archives (zips of the same
JSON, see :mod:`ingest.inspect_eval`) are read directly, one sample member at a time.

A tool message's typed error (``error: {type, message}``: timeout, permission, file_not_found …)
marks its step failed: ``raw.status = "error"``, ``raw.error_type`` the type, ``raw.status_message``
the message (``raw.error`` keeps the record itself).

The sample's outcome goes to ``header.metadata.outcome``: an ``error`` or a ``limit`` that ended it
(the sample's own field, else its ``error`` / ``sample_limit`` event) is ``failed`` with that detail;
otherwise its scores decide when every scorer agrees: ``"C"``, ``True`` or 1 is ``succeeded``,
``"I"``, ``False`` or 0 is ``failed`` (the detail maps scorer to value). Partial, no-answer or other
values, or scorers that disagree, set no outcome: the full scores stay in the labels record. A log
with no samples is an input error, not an empty import.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from ingest.base import Facts, ImportedTrace, StepBuilder, head_text
from ingest.frameworks.common import pack_raw
from ingest.inspect_eval import EvalArchive, is_archive
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

    def near_miss(self, path: Path, head: bytes) -> str | None:
        """Why a zip archive, or a JSON object with an 'eval' key, was still not taken for a log."""
        if head.startswith(b"PK"):
            return "it is a zip archive, but an Inspect archive is named *.eval"
        if top_level_kind(head) == "object" and '"eval"' in head_text(head):
            return "it has an 'eval' key but no 'samples' or 'plan' and 'task' in its first 64 KiB"
        return None

    def open(self, path: Path) -> Iterator[ImportedTrace]:
        samples = self._archive_samples(path) if is_archive(path) else self._json_samples(path)
        count = 0
        for info, where, sample in samples:
            yield self._trace(path, info, count, where, sample)
            count += 1
        if count == 0:
            raise InputError(
                "the log holds 0 samples; nothing to import",
                path=str(path),
                hint="was the eval run with --no-log-samples, or stopped before any sample?",
            )

    @staticmethod
    def _json_samples(path: Path) -> Iterator[tuple[dict[str, Any], str, Any]]:
        info: dict[str, Any] = {}
        with path.open("rb") as stream:
            reader = JsonReader(stream, str(path))
            for key in reader.members():
                if key == "eval":
                    value = reader.value()
                    info = value if isinstance(value, dict) else {}
                elif key == "samples":
                    for n, sample in enumerate(reader.array()):
                        yield info, f"samples[{n}]", sample
            reader.end()

    @staticmethod
    def _archive_samples(path: Path) -> Iterator[tuple[dict[str, Any], str, Any]]:
        archive = EvalArchive(path)
        try:
            info = archive.header.get("eval")
            for name, sample in archive.sample_items():
                yield info if isinstance(info, dict) else {}, name, sample
        finally:
            archive.close()

    def _trace(self, path: Path, info: dict[str, Any], n: int, where: str, sample: Any) -> ImportedTrace:
        if not isinstance(sample, dict) or not isinstance(sample.get("messages", []), list):
            raise InputError("a sample must be an object with a 'messages' list", path=str(path), field=where)
        run = info.get("eval_id") or info.get("run_id") or "run"
        sid = f"{sample.get('id', n)}-{sample.get('epoch', 1)}"
        grading = {k: sample[k] for k in ("target", "scores") if k in sample}
        withheld = [
            WithheldItem(what=f"grading:{k}", where=f"{where}.{k}", rule=GRADING_RULE) for k in grading
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
                    where=f"{where}.events (event 'score')",
                    rule=SCORE_EVENTS_RULE,
                )
            )
        header = TraceHeader(
            trace_id=f"inspect-{run}-{sid}",
            source=f"{path}#{where}",
            framework="inspect_ai",
            task=content_text(sample["input"]) if isinstance(sample.get("input"), str) else None,
            metadata=pack_raw(
                task=info.get("task"),
                model=info.get("model"),
                sample_id=sample.get("id"),
                epoch=sample.get("epoch"),
                sample_metadata=sample.get("metadata"),
                outcome=outcome(sample),
            ),
            withheld=withheld,
        )
        model = str(info.get("model") or "assistant")
        return ImportedTrace(
            importer=self.name,
            header=header,
            labels=grading or None,
            steps=lambda facts: self._steps(sample, model, facts, StepBuilder(f"{path} {where}")),
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
                raw.update(tool_error(m.get("error")))
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
            listed = m.get("tool_calls") or []
            if not isinstance(listed, list):
                raise InputError(
                    f"a message's tool_calls is {type(listed).__name__}, not a list",
                    path=b.where,
                    field="messages.tool_calls",
                )
            tool_calls = [c for c in listed if isinstance(c, dict)]
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


def tool_error(error: Any) -> dict[str, Any]:
    """The status fields of a typed tool error (``{type, message}``); none for anything else."""
    if not isinstance(error, dict) or not error.get("type"):
        return {}
    return pack_raw(status="error", error_type=str(error["type"]), status_message=error.get("message"))


def _verdict(value: Any) -> str | None:
    """'succeeded' / 'failed' for a correct / incorrect score value; None for partial or unknown."""
    if value == "C" or value is True or (type(value) in (int, float) and value == 1):
        return "succeeded"
    if value == "I" or value is False or (type(value) in (int, float) and value == 0):
        return "failed"
    return None


def outcome(sample: dict[str, Any]) -> dict[str, Any] | None:
    """The sample's recorded outcome (see the module docstring), or None where the log does not decide."""
    for field in ("error", "limit"):
        value = sample.get(field)
        if value:
            detail = value.get("message", value) if isinstance(value, dict) and field == "error" else value
            return {"value": "failed", "source": f"sample.{field}", "detail": detail}
    events = sample.get("events")
    for event in events if isinstance(events, list) else []:
        kind = event.get("event") if isinstance(event, dict) else None
        if kind in _ENDINGS:
            error = event.get("error") if isinstance(event.get("error"), dict) else {}
            detail = (
                error.get("message")
                if kind == "error"
                else pack_raw(**{k: event.get(k) for k in ("type", "limit", "message")})
            )
            return {"value": "failed", "source": f"events.{kind}", "detail": detail}
    scores = sample.get("scores")
    if not isinstance(scores, dict) or not scores:
        return None
    values = {name: s.get("value") if isinstance(s, dict) else s for name, s in scores.items()}
    verdicts = {_verdict(v) for v in values.values()}
    if len(verdicts) != 1 or None in verdicts:
        return None
    return {"value": verdicts.pop(), "source": "sample.scores", "detail": values}


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
