"""The poll → process → commit loop shared by the ingestion consumer and the audit workers.

Offsets are committed only after a batch's effects are durable. A batch whose processing raises
(store down, broker down) is rewound to its first offsets and retried after a pause, so nothing is
skipped; the idempotency keys make the retry's repeated effects no-ops.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ingest.stream_metrics import Metrics

log = logging.getLogger("auditor.stream")

Polled = dict[Any, list[Any]]


def commit_batch(consumer: Any, polled: Polled, metrics: Metrics) -> None:
    """Commit the offsets after a stored batch; a refused commit only means a harmless re-delivery."""
    from kafka.structs import OffsetAndMetadata

    offsets = {tp: OffsetAndMetadata(records[-1].offset + 1, None, -1) for tp, records in polled.items()}
    try:
        consumer.commit(offsets)
    except Exception as exc:
        metrics.inc("commit_failures_total")
        log.warning("offset commit failed (%s); the batch will be re-delivered and deduplicated", exc)


def wait_sent(producer: Any, futures: list[Any], timeout: float = 30.0) -> None:
    """Flush and confirm every send; a failed send raises, so its batch is retried, not committed."""
    producer.flush(timeout=timeout)
    for future in futures:
        future.get(timeout=timeout)


class BatchLoop:
    """Poll, process, retry: ``process`` must commit the batch's offsets itself when it succeeds."""

    def __init__(
        self,
        consumer: Any,
        process: Callable[[Polled], object],
        metrics: Metrics,
        poll_ms: int,
        retry_backoff_s: float,
        every: tuple[float, Callable[[], object]] | None = None,
    ) -> None:
        self.consumer, self.process, self.metrics = consumer, process, metrics
        self.poll_ms, self.retry_backoff_s, self.every = poll_ms, retry_backoff_s, every
        self.healthy = True

    def run(self, stop: threading.Event) -> None:
        last_tick = time.monotonic()
        while not stop.is_set():
            polled = self.consumer.poll(timeout_ms=self.poll_ms)
            if polled:
                try:
                    self.process(polled)
                    self.healthy = True
                except Exception as exc:
                    self.metrics.inc("batch_failures_total")
                    self.healthy = False
                    log.warning("batch failed (%s: %s); rewinding to retry", type(exc).__name__, exc)
                    for tp, records in polled.items():
                        self.consumer.seek(tp, records[0].offset)
                    stop.wait(self.retry_backoff_s)
            if self.every and time.monotonic() - last_tick >= self.every[0]:
                last_tick = time.monotonic()
                try:
                    self.every[1]()
                except Exception as exc:
                    log.warning("periodic task failed (%s: %s); will retry", type(exc).__name__, exc)
