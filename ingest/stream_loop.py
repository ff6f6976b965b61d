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
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from auditor.errors import InputError
from ingest.stream_metrics import Metrics

log = logging.getLogger("auditor.stream")

Polled = dict[Any, list[Any]]

# kafka-python backs off reconnects up to 30 s; after a broker restart that is 30 s of nothing.
CLIENT_DEFAULTS: dict[str, Any] = {"reconnect_backoff_max_ms": 2000}


def kafka_client(factory: Callable[..., Any], *args: Any, bootstrap: str, **config: Any) -> Any:
    """Create a kafka-python client; an unreachable broker is one clear error, not a traceback."""
    from kafka.errors import KafkaError

    try:
        return factory(*args, bootstrap_servers=bootstrap, **CLIENT_DEFAULTS, **config)
    except KafkaError as exc:
        raise InputError(
            f"cannot reach Kafka at {bootstrap}: {exc}",
            field="--bootstrap",
            hint="check the address and that the broker runs",
        ) from exc


def group_consumer(topic: str, *, bootstrap: str, **config: Any) -> Any:
    """A consumer-group member of ``topic`` that knows the topic's partitions before it joins.

    Subscribing at construction joins the group before any metadata arrives: the first assignment
    is empty and an immediate second rebalance follows, which kafka-python has been seen to stall
    in under load. Fetching the topic's metadata first makes the first assignment the real one.
    """
    from kafka import KafkaConsumer

    consumer = kafka_client(KafkaConsumer, bootstrap=bootstrap, **config)
    consumer.partitions_for_topic(topic)  # empty for a topic not created yet: it is found later
    consumer.subscribe([topic])
    return consumer


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
    """Poll, process, retry. ``process`` must commit the batch's offsets itself when it succeeds.

    Pipelined (``stages`` given as (work, finish)): ``work`` runs in a writer thread while the
    next batch is fetched, then ``finish`` (which commits) runs back on the polling thread, since
    a Kafka consumer is not thread-safe. One batch is in flight at a time, so commits keep order.
    """

    def __init__(
        self,
        consumer: Any,
        process: Callable[[Polled], object],
        metrics: Metrics,
        poll_ms: int,
        retry_backoff_s: float,
        every: tuple[float, Callable[[], object]] | None = None,
        stages: tuple[Callable[[Polled], Any], Callable[[Polled, Any], object]] | None = None,
    ) -> None:
        self.consumer, self.process, self.metrics = consumer, process, metrics
        self.poll_ms, self.retry_backoff_s, self.every, self.stages = poll_ms, retry_backoff_s, every, stages
        self.healthy = True
        self._last_tick = time.monotonic()

    def _failed(self, exc: BaseException, *batches: Polled) -> None:
        """Rewind every partition to the first offset not yet committed, then pause."""
        self.metrics.inc("batch_failures_total")
        self.healthy = False
        log.warning("batch failed (%s: %s); rewinding to retry", type(exc).__name__, exc)
        first: dict[Any, int] = {}
        for polled in batches:
            for tp, records in polled.items():
                first.setdefault(tp, records[0].offset)
        for tp, offset in first.items():
            self.consumer.seek(tp, offset)

    def _tick(self) -> None:
        if self.every and time.monotonic() - self._last_tick >= self.every[0]:
            self._last_tick = time.monotonic()
            try:
                self.every[1]()
            except Exception as exc:
                log.warning("periodic task failed (%s: %s); will retry", type(exc).__name__, exc)

    def run(self, stop: threading.Event) -> None:
        if self.stages:
            self._run_pipelined(stop, *self.stages)
            return
        while not stop.is_set():
            polled = self.consumer.poll(timeout_ms=self.poll_ms)
            if polled:
                try:
                    self.process(polled)
                    self.healthy = True
                except Exception as exc:
                    self._failed(exc, polled)
                    stop.wait(self.retry_backoff_s)
            self._tick()

    def _run_pipelined(
        self, stop: threading.Event, work: Callable[[Polled], Any], finish: Callable[[Polled, Any], object]
    ) -> None:
        inflight: tuple[Polled, Future] | None = None
        with ThreadPoolExecutor(1, thread_name_prefix="batch-writer") as writer:
            while True:
                polled = {} if stop.is_set() else self.consumer.poll(timeout_ms=self.poll_ms)
                if inflight is not None:
                    done, future = inflight
                    inflight = None
                    try:
                        result = future.result()
                    except Exception as exc:
                        self._failed(exc, done, polled)  # the prefetched batch is re-fetched too
                        stop.wait(self.retry_backoff_s)
                        continue
                    finish(done, result)
                    self.healthy = True
                if stop.is_set():
                    return
                self._tick()  # between batches: nothing is in flight while the tick runs
                if polled:
                    inflight = (polled, writer.submit(work, polled))
