"""The stream workers' Prometheus metrics (prometheus_client), served on a local HTTP port.

Each component (one consumer, one audit worker) keeps its series in its own ``CollectorRegistry``
with the process, platform and GC collectors beside them: a process that runs several components
(the tests do) gets no duplicate-name errors, and each ``/metrics`` shows exactly one component.
The loop and the components name series by their short name (``audits_total``), so they never
hold prometheus_client objects. ``GET /healthz`` answers the liveness and readiness probes; any
other path is prometheus_client's own exposition (text or OpenMetrics, gzip when asked).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    make_wsgi_app,
)
from prometheus_client.exposition import ThreadingWSGIServer
from prometheus_client.gc_collector import GCCollector

# Batch and audit latency: a rules audit takes tens of milliseconds, a model-backed one minutes.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
# How far behind the newest record a member is when it commits: sub-second when caught up, hours
# when a backlog drains (idle-closed traces' notices trail their last step by --idle-close).
LAG_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 14400.0)

Series = Counter | Gauge | Histogram

__all__ = ["LAG_BUCKETS", "LATENCY_BUCKETS", "Metrics", "MetricsServer", "loop_metrics"]


class Metrics:
    """One component's series, by short name, in its own registry (thread-safe: prometheus_client
    locks each value, and the HTTP thread reads while the loop writes)."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self._series: dict[str, Series] = {}
        self._labelnames: dict[str, tuple[str, ...]] = {}

    # -- declaring -------------------------------------------------------------------------------
    def counter(self, name: str, help_text: str, label: str | None = None, known: Iterable[str] = ()) -> None:
        """A counter (``name`` ends in ``_total``); ``known`` label values are exported at 0 from
        the start, so a rate over them exists before the first event."""
        labels = (label,) if label else ()
        counter = Counter(name, help_text, labels, namespace=self.namespace, registry=self.registry)
        self._add(name, counter, labels)
        for value in known:
            counter.labels(value)

    def gauge(self, name: str, help_text: str, *labels: str) -> None:
        self._add(
            name, Gauge(name, help_text, labels, namespace=self.namespace, registry=self.registry), labels
        )

    def histogram(self, name: str, help_text: str, buckets: tuple[float, ...]) -> None:
        """A histogram (``name`` ends in its unit, ``_seconds``): quantiles come from its buckets."""
        histogram = Histogram(
            name, help_text, namespace=self.namespace, registry=self.registry, buckets=buckets
        )
        self._add(name, histogram, ())

    def _add(self, name: str, series: Series, labels: tuple[str, ...]) -> None:
        self._series[name], self._labelnames[name] = series, labels

    # -- recording -------------------------------------------------------------------------------
    def inc(self, name: str, amount: float = 1.0, **labels: str) -> None:
        self._child(name, labels).inc(amount)  # type: ignore[union-attr]

    def set(self, name: str, value: float, **labels: str) -> None:
        self._child(name, labels).set(value)  # type: ignore[union-attr]

    def observe(self, name: str, value: float) -> None:
        self._series[name].observe(value)  # type: ignore[union-attr]

    def forget(self, name: str, **labels: str) -> None:
        """Drop one labelled series (a partition this member no longer owns)."""
        self._series[name].remove(*(labels[n] for n in self._labelnames[name]))

    def _child(self, name: str, labels: dict[str, str]) -> Any:
        series = self._series[name]
        return series.labels(**labels) if labels else series

    # -- reading (tests, ``auditor stream`` output) ------------------------------------------------
    def value(self, name: str, **labels: str) -> float:
        """The current value of one sample, e.g. ``audits_total`` with ``outcome="done"`` (0 if absent)."""
        found = self.registry.get_sample_value(f"{self.namespace}_{name}", labels)
        return found or 0.0

    def total(self, name: str) -> float:
        """The sum of one sample name over all its label sets."""
        full = f"{self.namespace}_{name}"
        return sum(s.value for s in self._samples() if s.name == full)

    def _samples(self) -> Iterator[Any]:
        for family in self.registry.collect():
            yield from family.samples


def loop_metrics(m: Metrics) -> Metrics:
    """The series every ``ingest.stream_loop.BatchLoop`` records, whatever it consumes."""
    m.counter("batch_failures_total", "Batches rewound and retried after a failure (store or broker down).")
    m.counter("commit_failures_total", "Offset commits refused (kept and retried; a re-delivery is a no-op).")
    m.histogram("batch_seconds", "Seconds from a batch's poll to its commit.", LATENCY_BUCKETS)
    m.histogram(
        "lag_seconds",
        "At each commit, per partition: seconds since the newest committed record was published.",
        LAG_BUCKETS,
    )
    m.gauge("lag_records", "Records in the partition after this member's last commit (log end - committed).",
            "topic", "partition")  # fmt: skip
    return m


class MetricsServer:
    """``/metrics`` (prometheus_client's WSGI app and threading server) and ``/healthz``, in a
    daemon thread, on 127.0.0.1 or the host given."""

    def __init__(
        self, metrics: Metrics, port: int, host: str = "127.0.0.1", healthy: Callable[[], bool] = lambda: True
    ) -> None:
        exposition = make_wsgi_app(metrics.registry)

        def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
            if environ.get("PATH_INFO", "").startswith("/healthz"):
                ok = healthy()
                start_response(
                    "200 OK" if ok else "503 Service Unavailable", [("Content-Type", "text/plain")]
                )
                return [b"ok\n" if ok else b"unhealthy\n"]
            return exposition(environ, start_response)

        self.server = make_server(host, port, app, ThreadingWSGIServer, handler_class=_Quiet)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, name="metrics-http", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Quiet(WSGIRequestHandler):
    """Prometheus and the probes call every few seconds: keep stderr for what matters."""

    def log_message(self, *_args: Any) -> None:
        return
