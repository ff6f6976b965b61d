"""The producer side: an agent application publishes its steps as they happen, or a file is replayed.

Records are keyed by trace id, so one trace's records land on one partition in the order sent. The
producer is idempotent with ``acks=all`` (kafka-python's defaults), so a retried send is not a
duplicate on the broker; the consumer's idempotency keys cover everything else.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Any

from ingest.canonical import iter_canonical, scan_canonical
from ingest.stream_loop import CLIENT_DEFAULTS
from ingest.stream_records import EndRecord, encode
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
            **CLIENT_DEFAULTS,
            **producer_config,
        }
        self.producer = KafkaProducer(bootstrap_servers=bootstrap, **config)

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


def replay_file(publisher: StepPublisher, path: Path, end: bool = True, trace_id: str | None = None) -> int:
    """Replay a canonical JSONL trace: header, every step, then (by default) an end record.

    The whole file is validated first, so a bad line publishes nothing. Returns the step count.
    """
    scan = scan_canonical(path)
    header = scan.header if trace_id is None else scan.header.model_copy(update={"trace_id": trace_id})
    publisher.start_trace(header)
    for step in iter_canonical(path):
        publisher.step(header.trace_id, step)
    if end:
        publisher.end(header.trace_id)
    publisher.flush()
    return scan.steps
