"""The producer side: an agent application publishes its steps as they happen, or a file is replayed.

Records are keyed by trace id, so one trace's records land on one partition in the order sent. The
producer is idempotent with ``acks=all`` (kafka-python's defaults), so a retried send is not a
duplicate on the broker; the consumer's idempotency keys and step ids cover everything else. A
whole source in an importer's format can also go as one record (``document``), to be parsed by
the consumer.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Any

from ingest.base import ImportedTrace
from ingest.stream_loop import kafka_client
from ingest.stream_records import FORMAT_HEADER, NAME_HEADER, EndRecord, encode
from schemas.trace import TraceHeader, TraceStep


class StepPublisher:
    """Publish one trace's header, steps and end record to the steps topic.

    >>> with StepPublisher("127.0.0.1:9092") as pub:          # doctest: +SKIP
    ...     pub.start_trace(TraceHeader(trace_id="t1", task="refund"))
    ...     pub.step("t1", TraceStep(step_id="s0", index=0, actor="planner", content="…"))
    ...     pub.end("t1")
    """

    def __init__(self, bootstrap: str, topic: str = "agent-steps", **producer_config: Any) -> None:
        from kafka import KafkaProducer

        self.topic = topic
        config: dict[str, Any] = {
            "linger_ms": 5,
            "max_request_size": 4 << 20,
            **producer_config,
        }
        self.producer = kafka_client(KafkaProducer, bootstrap=bootstrap, **config)

    def _send(self, trace_id: str, value: bytes) -> Any:
        return self.producer.send(self.topic, key=trace_id.encode("utf-8"), value=value)

    def start_trace(self, header: TraceHeader) -> Any:
        """Announce a trace (its task, source, framework) before its first step."""
        return self._send(header.trace_id, encode(header))

    def step(self, trace_id: str, step: TraceStep) -> Any:
        """Publish one step; returns the send future (``.get()`` waits for the broker's ack)."""
        return self._send(trace_id, encode(step))

    def end(self, trace_id: str, reason: str = "end_record") -> Any:
        """Close the trace: the consumer records TraceClosed and the audit workers audit it."""
        return self._send(trace_id, encode(EndRecord(trace_id=trace_id, reason=reason)))

    def document(
        self, data: bytes, fmt: str = "auto", name: str | None = None, key: str | None = None
    ) -> Any:
        """Publish one whole source (an OTLP export, a framework log …) for the consumer to import
        with the importer ``fmt`` names (or detects, with ``auto``); its traces close on arrival.
        ``name`` is the source's file name; ``key`` places the record (default: the name)."""
        headers = [(FORMAT_HEADER, fmt.encode())]
        if name is not None:
            headers.append((NAME_HEADER, name.encode("utf-8")))
        key = key if key is not None else name
        return self.producer.send(
            self.topic, key=key.encode("utf-8") if key else None, value=data, headers=headers
        )

    def flush(self, timeout: float = 30.0) -> None:
        self.producer.flush(timeout=timeout)

    def close(self) -> None:
        self.producer.close(timeout=30)

    def __enter__(self) -> StepPublisher:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.flush()
        self.close()


def prepare_replay(path: Path, fmt: str = "auto") -> list[tuple[ImportedTrace, int]]:
    """Parse and validate every trace of a file in any importer's format (canonical JSONL, framework
    logs, OpenTelemetry, …) without publishing anything; returns each trace with its step count."""
    from ingest import open_traces

    traces = list(open_traces(path, fmt))
    return [(imported, sum(1 for _ in imported.steps())) for imported in traces]


def replay(publisher: StepPublisher, prepared: list[tuple[ImportedTrace, int]], end: bool = True) -> None:
    """Publish prepared traces as canonical records: header, steps, then (by default) an end record.
    Sidecar labels stay behind: they never travel on the audit path."""
    for imported, _ in prepared:
        trace_id = imported.header.trace_id
        publisher.start_trace(imported.header)
        for step in imported.steps():
            publisher.step(trace_id, step)
        if end:
            publisher.end(trace_id)
    publisher.flush()


def replay_file(
    publisher: StepPublisher, path: Path, fmt: str = "auto", end: bool = True
) -> list[tuple[str, int]]:
    """Validate a whole file, then replay it; returns (trace id, step count) per trace."""
    prepared = prepare_replay(path, fmt)
    replay(publisher, prepared, end)
    return [(imported.header.trace_id, n) for imported, n in prepared]
