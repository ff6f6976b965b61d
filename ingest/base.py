"""The importer protocol and what every importer hands back: traces whose steps stream on demand.

An importer turns one source file into one or more :class:`ImportedTrace`. A trace's steps are
produced by re-reading its source each time ``steps()`` is called, so a huge log is never held in
memory and the same trace can be validated in one pass and appended in the next.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from auditor.core.errors import InputError
from ingest.strictjson import head_problem
from schemas.trace import LabelsRecord, TraceHeader, TraceStep, WithheldItem

HEAD_BYTES = 64 * 1024


class Importer(Protocol):
    """One source format. ``detect`` looks at the head of a file; ``open`` yields its traces."""

    name: str
    description: str

    def detect(self, path: Path, head: bytes) -> str | None:
        """A short reason when the file looks like this format, else None."""
        ...

    def open(self, path: Path) -> Iterator[ImportedTrace]: ...


@dataclass
class Facts:
    """What a parse learned beside the steps: task text, metadata, withheld segments."""

    task: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    withheld: list[WithheldItem] = field(default_factory=list)
    labels: dict[str, Any] = field(default_factory=dict)

    def count(self, key: str) -> None:
        """Count a skipped kind of record (noise lines), kept in the header metadata."""
        skipped = self.metadata.setdefault("skipped_records", {})
        skipped[key] = skipped.get(key, 0) + 1


class StepBuilder:
    """Assigns gap-free indexes and stable ids (``s<index>``) as a parser emits steps."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.n = 0

    @staticmethod
    def id_for(index: int) -> str:
        return f"s{index}"

    def add(self, **fields: Any) -> TraceStep:
        fields = {k: v for k, v in fields.items() if v is not None}
        try:
            step = TraceStep(step_id=self.id_for(self.n), index=self.n, **fields)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            message = first["msg"].removeprefix("Value error, ")
            raise InputError(f"step {self.n}: {message}", path=self.where, field=loc or None) from exc
        self.n += 1
        return step


StepsFactory = Callable[[Facts], Iterator[TraceStep]]


class ImportedTrace:
    """One trace from a source: header, sidecar labels, and steps streamed from the source."""

    def __init__(
        self,
        *,
        importer: str,
        header: TraceHeader,
        steps: StepsFactory,
        labels: dict[str, Any] | None = None,
        step_count: int | None = None,
    ) -> None:
        """``step_count`` given means the source was already validated and ``header`` is final."""
        self.importer = importer
        self._base = header
        self._factory = steps
        self._labels = dict(labels or {})
        self._header: TraceHeader | None = header if step_count is not None else None
        self.step_count = step_count

    def steps(self) -> Iterator[TraceStep]:
        """A fresh pass over the steps (re-reads the source; memory stays flat)."""
        return self._contracted(self._factory(Facts()))

    def _contracted(self, steps: Iterator[TraceStep]) -> Iterator[TraceStep]:
        """The steps, a value the step contract refuses reported as the input's error: an importer
        builds a step's parts (its tool call, its references) from the source's values, and a
        call id that is an object, or a tool name that is a number, is the file's mistake."""
        n = 0  # the index of the step being read
        try:
            for step in steps:
                yield step
                n += 1
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"])
            field = f"{exc.title}.{loc}" if loc else exc.title
            raise InputError(
                f"step {n}: the {self.importer} importer read a value the trace contract refuses: {first['msg']}",
                path=self._base.source or self._base.trace_id,
                field=field,
                hint="docs/input.md says what the fields of a step may hold (Ids: a tool call's name and ids)",
            ) from exc

    def scan(self) -> TraceHeader:
        """Validate every step once (unique ids, gap-free indexes) and complete the header."""
        if self._header is not None:
            return self._header
        facts = Facts()
        seen: set[str] = set()
        count = 0
        where = self._base.source or self._base.trace_id
        for step in self._contracted(self._factory(facts)):
            if step.step_id in seen:
                raise InputError(f"duplicate step_id '{step.step_id}'", path=where, field="step_id")
            if step.index != count:
                raise InputError(f"step index {step.index} out of order (expected {count})", path=where)
            seen.add(step.step_id)
            count += 1
        if count == 0:
            raise InputError("no steps found", path=where, hint="is this the right --format?")
        update: dict[str, Any] = {}
        if facts.task and not self._base.task:
            update["task"] = facts.task
        if facts.metadata:
            update["metadata"] = {**self._base.metadata, **facts.metadata}
        if facts.withheld:
            update["withheld"] = [*self._base.withheld, *facts.withheld]
        self._labels.update(facts.labels)
        self._header = self._base.model_copy(update=update) if update else self._base
        self.step_count = count
        return self._header

    @property
    def header(self) -> TraceHeader:
        return self.scan()

    @property
    def labels(self) -> LabelsRecord | None:
        """Sidecar labels (annotations, gold answers) found beside the log; None when there are none."""
        header = self.scan()
        if not self._labels:
            return None
        return LabelsRecord(trace_id=header.trace_id, source=header.source, labels=self._labels)


def file_digest(path: Path) -> str:
    """sha256 of a file, read in chunks: stable trace ids for raw logs."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def file_header(
    path: Path, prefix: str, framework: str, digest: str | None = None, **metadata: Any
) -> TraceHeader:
    """The header of a trace that is a whole file: its id the file's digest (``prefix-`` and 16 hex
    digits; ``digest`` where the trace spans more files than this one), the file its source, the
    digest and the other ``metadata`` given (empty values left out) in its metadata."""
    digest = digest or file_digest(path)
    kept = {k: v for k, v in metadata.items() if v not in (None, "", [], {})}
    return TraceHeader(
        trace_id=f"{prefix}-{digest[:16]}",
        source=str(path),
        framework=framework,
        metadata={"source_sha256": digest, **kept},
    )


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_head(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The head every importer's detection reads; one that would break a JSON decoder (a hostile
    nesting or number, see ``strictjson.head_problem``) is refused here, before any of them."""
    with path.open("rb") as f:
        head = f.read(size)
    problem = head_problem(head)
    if problem:
        message, line, offset = problem
        raise InputError(message, path=str(path), line=line, offset=offset, hint="see docs/input.md")
    return head


def head_text(head: bytes) -> str:
    """The head decoded leniently (a multi-byte character may be cut at the end)."""
    return head.decode("utf-8", errors="ignore").lstrip("\ufeff")
