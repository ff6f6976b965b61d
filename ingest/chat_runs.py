"""The runs a chat file holds, and each run's header: where the messages are and what lies beside.

A run is one conversation: a ``messages`` list (with any keys beside it: ``reward``, ``info``,
``task_id``, ``tools``, Anthropic's top-level ``system`` …), LangGraph's ``{"values": {"messages":
[...]}}``, τ-bench's ``traj``, or a bare list of messages. A document holds one run, or a list of
runs (τ-bench's ``historical_trajectories/*.json``: ``[{"task_id", "reward", "info", "traj"}]``).

Beside the messages: a numeric ``reward`` is the run's outcome (1.0 succeeded, anything else
failed; header ``metadata.outcome``), and then ``info`` (τ-bench: the user's hidden instruction,
the gold actions, the reward details) is grading, kept in the sidecar labels and never in the
steps. An explicit ``task`` text is the task; nothing else is read as one. Other keys go to the
header's ``metadata.fields`` untouched.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ingest.base import Facts, ImportedTrace, StepBuilder
from ingest.chat_langchain import kind_of, langchain_message
from ingest.chat_message import ChatMessage, Loc, Text, content_parts, role_message
from ingest.chat_steps import chat_steps
from ingest.frameworks.common import pack_raw
from schemas.trace import TraceHeader, TraceStep, WithheldItem

LIST_KEYS = ("messages", "traj")
GRADING_RULE = "chat.grading: 'info' beside a run's reward (task instruction, gold actions, reward details)"


@dataclass(frozen=True)
class Run:
    """One conversation in a document: its message list, where it sits, and the keys beside it."""

    messages: list[Any]
    at: str  # the path of the message list, e.g. "messages", "[3].traj", "values.messages"
    prefix: str  # the path of the run object itself: "" or "[3]."
    fields: dict[str, Any]
    key: str | None  # distinguishes runs within one file (list index, JSONL line)


def runs_of(doc: Any, path: str, line: int | None = None) -> list[Run]:
    """The runs of one JSON document (or one JSONL line)."""
    key = f"L{line}" if line is not None else None
    if isinstance(doc, list):
        if doc and all(isinstance(r, dict) and _list_key(r) for r in doc):
            return [
                _run(r, f"[{n}].", f"{key}-{n}" if key else str(n), path, line) for n, r in enumerate(doc)
            ]
        return [Run(doc, "", "", {}, key)]
    if isinstance(doc, dict):
        return [_run(doc, "", key, path, line)]
    where = Loc(path, "", line)
    raise where.error("expected a JSON object with 'messages', or a list of messages", "(document)")


def _list_key(r: dict[str, Any]) -> str | None:
    if "role" in r or kind_of(r):
        return None  # a message, not a run
    if isinstance(r.get("values"), dict) and "messages" in r["values"]:
        return "values.messages"
    return next((k for k in LIST_KEYS if k in r), None)


def _run(r: dict[str, Any], prefix: str, key: str | None, path: str, line: int | None) -> Run:
    which = _list_key(r)
    if which is None:
        raise Loc(path, prefix, line).error("no 'messages' list in this object", "messages")
    if which == "values.messages":
        messages, fields = (
            r["values"]["messages"],
            {
                **{k: v for k, v in r.items() if k != "values"},
                **{f"values.{k}": v for k, v in r["values"].items() if k != "messages"},
            },
        )
    else:
        messages, fields = r[which], {k: v for k, v in r.items() if k != which}
    if not isinstance(messages, list):
        raise Loc(path, prefix, line).error(f"'{which}' must be a list of messages", which)
    return Run(messages, f"{prefix}{which}", prefix, fields, key)


def chat_messages(run: Run, path: str, line: int | None) -> Iterator[ChatMessage]:
    """A run's messages, normalised; Anthropic's top-level ``system`` comes first."""
    system = run.fields.get("system")
    if system is not None:
        parts, _ = content_parts(system, Loc(path, "", line), "system")
        if not all(isinstance(p, Text) for p in parts):
            raise Loc(path, "", line).error("'system' may hold only text", "system")
        yield ChatMessage(None, "system", None, parts, {"role": "system", "field": "system"})
    loc = Loc(path, run.at, line)
    for n, m in enumerate(run.messages):
        if not isinstance(m, dict):
            raise loc.error("a message must be an object", f"[{n}]")
        yield langchain_message(m, n, loc) if kind_of(m) else role_message(m, n, loc)


def trace_of(
    importer: str, digest: str, run: Run, path: str, framework: str | None, line: int | None = None
) -> ImportedTrace:
    """The trace of one run: a stable id from the importer, the file digest and the run's place."""
    fields = {k: v for k, v in run.fields.items() if k != "system"}
    reward = fields.get("reward")
    labels: dict[str, Any] = {}
    withheld: list[WithheldItem] = []
    outcome = None
    if isinstance(reward, int | float) and not isinstance(reward, bool):
        outcome = {"value": "succeeded" if reward == 1 else "failed", "source": "reward", "detail": reward}
        fields.pop("reward")
        if "info" in fields:
            labels["info"] = fields.pop("info")
            where = f"source field '{run.prefix}info'"
            withheld.append(WithheldItem(what="grading:info", where=where, rule=GRADING_RULE))
    task = fields.pop("task") if isinstance(fields.get("task"), str) else None
    if framework is None and "traj" in run.at and "task_id" in fields and outcome:
        framework = "tau-bench"
    header = TraceHeader(
        trace_id="-".join(p for p in (importer, digest[:16], run.key) if p),
        source=f"{path}#{run.key}" if run.key else path,
        framework=framework,
        task=task,
        metadata=pack_raw(
            importer=importer,
            source_sha256=digest,
            line=line,
            messages=len(run.messages),
            outcome=outcome,
            fields=fields,
        ),
        withheld=withheld,
    )
    where = f"{path} line {line}" if line is not None else path

    def steps(_facts: Facts) -> Iterator[TraceStep]:
        return chat_steps(chat_messages(run, path, line), StepBuilder(where))

    return ImportedTrace(importer=importer, header=header, steps=steps, labels=labels or None)
