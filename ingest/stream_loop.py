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
from dataclasses import KW_ONLY, dataclass
from typing import Any

from auditor.core.errors import InputError
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


@dataclass(frozen=True)
class GroupMember:
    """A consumer-group member's Kafka settings, the same for the ingestion consumer
    (ConsumerConfig) and the audit workers (WorkerConfig), which add their topics, group and batch
    size. Keyword-only after ``bootstrap``, so that each subclass's own fields keep their places
    as positional arguments."""

    bootstrap: str
    _: KW_ONLY
    instance_id: str | None = None  # static membership: a restarted pod takes its partitions back at once
    poll_ms: int = 200
    retry_backoff_s: float = 1.0
    session_timeout_ms: int = 10000


def group_consumer(topic: str, member: GroupMember, group: str, max_batch: int, **config: Any) -> Any:
    """A member of ``group`` consuming ``topic`` (at most ``max_batch`` records a poll) that
    commits by hand, starts from the earliest record, and knows the topic's partitions before it
    joins.

    Subscribing at construction joins the group before any metadata arrives: the first assignment
    is empty and an immediate second rebalance follows, which kafka-python has been seen to stall
    in under load. Fetching the topic's metadata first makes the first assignment the real one.
    """
    from kafka import KafkaConsumer

    consumer = kafka_client(
        KafkaConsumer,
        bootstrap=member.bootstrap,
        group_id=group,
        group_instance_id=member.instance_id,
        enable_auto_commit=False,  # offsets follow durable effects (BatchLoop.commit)
        auto_offset_reset="earliest",
        max_poll_records=max_batch,
        session_timeout_ms=member.session_timeout_ms,
        heartbeat_interval_ms=max(member.session_timeout_ms // 5, 500),
        **config,
    )
    consumer.partitions_for_topic(topic)  # empty for a topic not created yet: it is found later
    consumer.subscribe([topic])
    return consumer


def batch_producer(bootstrap: str, max_request_size: int) -> Any:
    """The producer a batch's effects go out through (dead letters, notices, reports): a short
    linger gathers one batch's sends into few requests."""
    from kafka import KafkaProducer

    return kafka_client(KafkaProducer, bootstrap=bootstrap, linger_ms=5, max_request_size=max_request_size)


def wait_sent(producer: Any, futures: list[Any], timeout: float = 30.0) -> None:
    """Flush and confirm every send; a failed send raises, so its batch is retried, not committed."""
    producer.flush(timeout=timeout)
    for future in futures:
        future.get(timeout=timeout)


def rejoin_if_stalled(consumer: Any) -> None:
    """Work around a kafka-python 3.0 stall. A leader that rejoins because the topics' metadata
    changed, and whose poll times out before the join ends, is never told the join ended: it
    stays "rebalancing" with its heartbeats off, every commit is refused, and the group drops it.
    That state (rebalancing, no rejoin requested) arises no other way, so asking for a rejoin
    there is safe: the next poll finishes a join still in flight, or joins again."""
    coordinator = getattr(consumer, "_coordinator", None)
    if coordinator is not None and coordinator.rebalance_in_progress() and not coordinator.need_rejoin():
        log.warning("a group join was left unfinished (a kafka-python 3.0 defect); joining again")
        coordinator.request_rejoin()


class BatchLoop:
    """Poll, process, retry. ``process`` must call ``commit`` with the batch when it succeeds.

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
        self._uncommitted: dict[Any, Any] = {}  # stored batches' offsets the broker has not taken yet
        self._committed: dict[Any, int] = {}  # offsets this member committed, for the lag gauge
        self._refused = 0  # commits refused since the last one made

    def commit(self, polled: Polled) -> None:
        """Commit the offsets after a stored batch. A refused commit (a rebalance, a broker hiccup)
        is kept and retried between batches and at close, so lag never reports work already done;
        until then a re-delivery is harmless (the idempotency keys make it a no-op)."""
        from kafka.structs import OffsetAndMetadata

        now = time.time()
        for tp, records in polled.items():
            self._uncommitted[tp] = OffsetAndMetadata(records[-1].offset + 1, None, -1)
            if records[-1].timestamp >= 0:  # milliseconds; -1 where the broker keeps no timestamps
                self.metrics.observe("lag_seconds", max(now - records[-1].timestamp / 1000, 0.0))
        self.flush_commits()

    def flush_commits(self) -> None:
        """Commit what is pending for the partitions this member still owns (the others' new owners
        re-read from the last committed offset, so there is nothing left to commit for them)."""
        if not self._uncommitted:
            return
        owned = self.consumer.assignment()
        offsets = {tp: o for tp, o in self._uncommitted.items() if tp in owned}
        try:
            if offsets:
                self.consumer.commit(offsets)
        except Exception as exc:
            self.metrics.inc("commit_failures_total")
            self._refused += 1
            if self._refused == 1:  # once a spell: it is retried at every poll
                log.warning("offset commit failed (%s); retrying it between batches", exc)
            return
        if self._refused:
            log.warning("offset commit made after %d refusals", self._refused)
            self._refused = 0
        self._committed.update((tp, o.offset) for tp, o in offsets.items())
        self._uncommitted.clear()

    def poll(self) -> Polled:
        rejoin_if_stalled(self.consumer)
        return self.consumer.poll(timeout_ms=self.poll_ms)

    def close_commits(self, timeout_s: float = 10.0) -> None:
        """At shutdown, commit what is pending even across a rebalance: kafka-python completes a
        rebalance only inside ``poll``, so a commit refused for one is retried after polls, until
        ``timeout_s``. What those polls fetch is neither processed nor committed; the partitions'
        next owner reads it again."""
        deadline = time.monotonic() + timeout_s
        self.flush_commits()
        while self._uncommitted and time.monotonic() < deadline:
            try:
                self.poll()
            except Exception as exc:  # leaving anyway: the next owner re-reads what is not committed
                log.warning("offsets left uncommitted at close (%s: %s)", type(exc).__name__, exc)
                return
            self.flush_commits()

    def _report_lag(self) -> None:
        """Records behind the log end (as the last fetch saw it) in each partition this member owns
        and has committed; a partition it gave up leaves the gauge to its new owner."""
        owned = self.consumer.assignment()
        for tp in [tp for tp in self._committed if tp not in owned]:
            del self._committed[tp]
            self.metrics.forget("lag_records", topic=tp.topic, partition=str(tp.partition))
        for tp, offset in self._committed.items():
            end = self.consumer.highwater(tp)
            if end is not None:
                self.metrics.set(
                    "lag_records", max(end - offset, 0), topic=tp.topic, partition=str(tp.partition)
                )

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
        self.flush_commits()
        self._report_lag()
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
            polled = self.poll()
            if polled:
                started = time.monotonic()
                try:
                    self.process(polled)
                    self.metrics.observe("batch_seconds", time.monotonic() - started)
                    self.healthy = True
                except Exception as exc:
                    self._failed(exc, polled)
                    stop.wait(self.retry_backoff_s)
            self._tick()

    def _run_pipelined(
        self, stop: threading.Event, work: Callable[[Polled], Any], finish: Callable[[Polled, Any], object]
    ) -> None:
        inflight: tuple[Polled, Future, float] | None = None  # the batch, its write, when it was polled
        with ThreadPoolExecutor(1, thread_name_prefix="batch-writer") as writer:
            while True:
                polled = {} if stop.is_set() else self.poll()
                if inflight is not None:
                    done, future, started = inflight
                    inflight = None
                    try:
                        result = future.result()
                    except Exception as exc:
                        self._failed(exc, done, polled)  # the prefetched batch is re-fetched too
                        stop.wait(self.retry_backoff_s)
                        continue
                    finish(done, result)
                    self.metrics.observe("batch_seconds", time.monotonic() - started)
                    self.healthy = True
                if stop.is_set():
                    return
                self._tick()  # between batches: nothing is in flight while the tick runs
                if polled:
                    inflight = (polled, writer.submit(work, polled), time.monotonic())
