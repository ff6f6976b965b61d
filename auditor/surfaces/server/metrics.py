"""The API's Prometheus metrics: requests by route and status, their latency, and ``GET /metrics``.

Each app keeps its series in its own ``CollectorRegistry`` (the tests build several apps in one
process), with the process, platform and GC collectors beside them. Under
``auditor serve --workers N`` the parent names a directory in ``PROMETHEUS_MULTIPROC_DIR`` before
the workers start; each worker then writes its series there, and ``/metrics`` sums every worker's,
so a scrape sees the whole server whichever process answers it (prometheus_client's multiprocess
mode, which has no per-process collectors). ``/metrics`` needs a token with the ``metrics`` scope.

Reviewers' feedback is read from the search index at each scrape, the same in every process:
labelled findings by detector and label, and each detector's precision.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends, Request, Response
from prometheus_client import CollectorRegistry, Counter, Histogram, PlatformCollector, ProcessCollector
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.gc_collector import GCCollector
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from auditor.audit.feedback import precision_by_detector
from auditor.surfaces.server.auth import require

if TYPE_CHECKING:
    from auditor.surfaces.server.search import SearchIndex

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# Request latency: reads answer in tens of milliseconds, a submitted trace's audit in seconds.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# Any other method is one label value: a client must not mint series by inventing methods.
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

router = APIRouter()


class RequestMetrics:
    """ASGI middleware, outermost, so that refusals by the other middleware (413) count too.

    A request is counted, and its latency observed, when its response starts: a server-sent
    event stream counts as it opens, not when the client leaves. The route label is the matched
    route's template (``/api/traces/{trace_id}``), ``unmatched`` for a path no route serves, so
    clients cannot mint series either.
    """

    def __init__(self, app: Any, registry: CollectorRegistry) -> None:
        self.app = app
        self.requests = Counter(
            "auditor_http_requests_total",
            "HTTP requests answered, by method, route template and status code.",
            ("method", "route", "status"),
            registry=registry,
        )
        self.latency = Histogram(
            "auditor_http_request_duration_seconds",
            "Seconds from a request's arrival to its response's start, by method and route template.",
            ("method", "route"),
            registry=registry,
            buckets=BUCKETS,
        )

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        answered = False

        def record(status: int) -> None:
            method = scope["method"] if scope["method"] in METHODS else "other"
            route = getattr(scope.get("route"), "path", "unmatched")  # set by the router on the same scope
            self.requests.labels(method, route, str(status)).inc()
            self.latency.labels(method, route).observe(time.perf_counter() - started)

        async def observed_send(message: dict[str, Any]) -> None:
            nonlocal answered
            if message["type"] == "http.response.start" and not answered:
                answered = True
                record(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, observed_send)
        finally:
            if not answered:  # an exception before any response: the server answers 500
                record(500)


class FeedbackCollector(Collector):
    """Labelled findings and per-detector precision, counted from the index when scraped."""

    def __init__(self, index: SearchIndex) -> None:
        self.index = index

    def describe(self) -> list[Metric]:
        return []  # nothing to read when registered: the series are known only at a scrape

    def collect(self) -> list[Metric]:
        labelled = GaugeMetricFamily(
            "auditor_feedback_findings",
            "Findings reviewers labelled, by detector and latest label (confirmed or dismissed).",
            labels=("detector", "label"),
        )
        precision = GaugeMetricFamily(
            "auditor_detector_precision",
            "Confirmed over labelled findings, by detector (detectors with a label so far).",
            labels=("detector",),
        )
        for p in precision_by_detector(self.index.feedback_counts()):
            labelled.add_metric((p.detector, "confirmed"), p.confirmed)
            labelled.add_metric((p.detector, "dismissed"), p.dismissed)
            precision.add_metric((p.detector,), p.precision or 0.0)
        return [labelled, precision]


def app_registry(index: SearchIndex) -> CollectorRegistry:
    """The registry an app's own series go to, with the feedback read from ``index``; it is what
    ``/metrics`` shows in a single process."""
    registry = CollectorRegistry()
    if not os.environ.get(MULTIPROC_ENV):
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        GCCollector(registry=registry)
    registry.register(FeedbackCollector(index))
    return registry


@contextmanager
def shared_across_workers() -> Iterator[None]:
    """For ``auditor serve --workers N``, around starting them: a fresh directory for every
    worker's series (removed afterwards), unless the operator named one (theirs to empty)."""
    if os.environ.get(MULTIPROC_ENV):
        yield
        return
    folder = tempfile.mkdtemp(prefix="auditor-metrics-")
    os.environ[MULTIPROC_ENV] = folder
    try:
        yield
    finally:
        del os.environ[MULTIPROC_ENV]
        shutil.rmtree(folder, ignore_errors=True)


@router.get("/metrics", include_in_schema=False, dependencies=[Depends(require("metrics"))])
def metrics(request: Request) -> Response:
    """The Prometheus exposition of this server (every worker's series, summed, under --workers N),
    in the format the scraper asks for (text, or OpenMetrics)."""
    registry = request.app.state.metrics
    if os.environ.get(MULTIPROC_ENV):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
        registry.register(FeedbackCollector(request.app.state.index))
    encode, content_type = choose_encoder(request.headers.get("accept", ""))
    return Response(encode(registry), headers={"Content-Type": content_type})
