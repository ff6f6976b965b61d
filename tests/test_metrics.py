"""Metrics through prometheus_client: each stream component's own registry and HTTP server, the
API's /metrics (its scope, route templates, every worker's series summed), and the Grafana
dashboard, whose every query must name only series that the real components export once they
have run on a real broker and store."""

from __future__ import annotations

import gzip
import json
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("prometheus_client")
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from auditor.audit.workers import worker_metrics
from auditor.core.store import EventStore, open_store
from ingest.stream import consumer_metrics
from ingest.stream_metrics import MetricsServer

REPO = Path(__file__).resolve().parents[1]
DASHBOARD = REPO / "deploy" / "grafana" / "auditor-dashboard.json"
TARGET_LABELS = {"job", "instance"}  # Prometheus adds these at scrape time
UNITS = ("_seconds", "_bytes")


def exported(registry: CollectorRegistry) -> dict[str, set[str]]:
    """Every sample name a registry exposes now, with the label names it carries."""
    names: dict[str, set[str]] = {}
    for family in registry.collect():
        for sample in family.samples:
            names.setdefault(sample.name, set()).update(sample.labels)
    return names


def _scrape(url: str, headers: dict[str, str] | None = None) -> str:
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=10) as resp:
        return resp.read().decode()


def _value(text: str, name: str, **labels: str) -> float | None:
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return s.value
    return None


# -- the stream components ---------------------------------------------------------------------


def test_components_keep_their_own_registries_and_prometheus_conventions() -> None:
    """Several consumers and workers in one process (the tests run them so) never collide, and
    each family follows the conventions: counters end in _total, histograms and sizes in a unit."""
    consumers, workers = [consumer_metrics(), consumer_metrics()], [worker_metrics(), worker_metrics()]
    consumers[0].inc("dead_letters_total", kind="malformed")
    workers[1].observe("audit_seconds", 0.04)
    assert consumers[0].value("dead_letters_total", kind="malformed") == 1
    assert consumers[1].value("dead_letters_total", kind="malformed") == 0
    assert workers[1].value("audit_seconds_count") == 1 and workers[0].value("audit_seconds_count") == 0
    families = 0
    for m in consumers + workers:
        samples = exported(m.registry)
        assert "process_cpu_seconds_total" in samples and "process_resident_memory_bytes" in samples
        assert "python_gc_collections_total" in samples
        for family in m.registry.collect():
            if not family.name.startswith("auditor_"):
                continue
            families += 1
            if family.type == "counter":
                assert all(s.name.endswith(("_total", "_created")) for s in family.samples), family.name
            if family.type == "histogram":
                assert family.name.endswith(UNITS), f"{family.name}: a histogram names its unit"
    assert families >= 4, "every component exports its own families"
    # label values known in advance are exported at 0, so a rate over them exists from the start
    assert consumers[1].value("dead_letters_total", kind="oversized") == 0
    assert 'kind="oversized"' in _exposition(consumers[1].registry)


def _exposition(registry: CollectorRegistry) -> str:
    from prometheus_client import generate_latest

    return generate_latest(registry).decode()


def test_metrics_server_is_prometheus_clients_exposition_with_a_health_probe() -> None:
    m = worker_metrics()
    m.inc("audits_total", outcome="done")
    m.observe("audit_seconds", 0.2)
    healthy = [True]
    server = MetricsServer(m, 0, healthy=lambda: healthy[0])
    base = f"http://127.0.0.1:{server.port}"
    try:
        text = _scrape(f"{base}/metrics")
        assert 'auditor_worker_audits_total{outcome="done"} 1.0' in text.splitlines()
        assert _value(text, "auditor_worker_audit_seconds_bucket", le="0.25") == 1
        assert _value(text, "auditor_worker_audit_seconds_bucket", le="0.1") == 0
        request = urllib.request.Request(f"{base}/metrics", headers={"Accept-Encoding": "gzip"})
        with urllib.request.urlopen(request, timeout=10) as resp:
            assert resp.headers["Content-Encoding"] == "gzip"
            assert gzip.decompress(resp.read()).decode().count("auditor_worker_audits_total{") == 4
        with urllib.request.urlopen(f"{base}/healthz", timeout=10) as resp:
            assert (resp.status, resp.read()) == (200, b"ok\n")
        healthy[0] = False
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{base}/healthz", timeout=10)
        assert refused.value.code == 503
    finally:
        server.close()


# -- the API -----------------------------------------------------------------------------------


@pytest.fixture
def api_store(tmp_path: Path) -> Iterator[EventStore]:
    store = open_store(f"sqlite:///{tmp_path / 'auditor.db'}")
    yield store
    store.close()


def _token(store: EventStore, *scopes: str) -> dict[str, str]:
    from auditor.surfaces.server.tokens import create_token

    return {"Authorization": f"Bearer {create_token(store, '-'.join(scopes), scopes)[0]}"}


def _api_requests(client: Any, store: EventStore) -> dict[str, str]:
    """Requests of every kind the middleware labels: a route with a parameter, an unknown path,
    an unknown method, a body over the limit. Returns the metrics token's header."""
    reader, scraper = _token(store, "read"), _token(store, "metrics")
    assert client.get("/health").status_code == 200
    assert client.get("/api/traces/no-such-trace", headers=reader).status_code == 404
    assert client.get("/api/traces", headers=reader).status_code == 200
    assert client.get("/no/such/path").status_code == 404
    assert client.request("BREW", "/api/traces", headers=reader).status_code == 405
    assert client.post("/api/audit", content=b"x" * 4096, headers=reader).status_code == 413
    return scraper


def test_api_metrics_need_their_scope_and_label_routes_by_template(api_store: EventStore) -> None:
    from fastapi.testclient import TestClient

    from auditor.surfaces.server import ServerConfig, create_app

    with TestClient(create_app(ServerConfig(max_body=2048), store=api_store)) as client:
        scraper = _api_requests(client, api_store)
        assert client.get("/metrics").status_code == 401
        refused = client.get("/metrics", headers=_token(api_store, "read", "ingest", "repair"))
        assert refused.status_code == 403 and "lacks the 'metrics' scope" in refused.json()["detail"]
        response = client.get("/metrics", headers=scraper)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    text = response.text

    def requests(method: str, route: str, status: int) -> float | None:
        return _value(text, "auditor_http_requests_total", method=method, route=route, status=str(status))

    assert requests("GET", "/api/traces/{trace_id}", 404) == 1  # the template, never the id
    assert requests("GET", "/api/traces", 200) == 1
    assert requests("GET", "unmatched", 404) == 1
    assert requests("other", "/api/traces", 405) == 1
    assert requests("POST", "unmatched", 413) == 1  # refused by the body limit, before any route
    assert requests("GET", "/metrics", 401) == 1 and requests("GET", "/metrics", 403) == 1
    assert "no-such-trace" not in text and "/no/such/path" not in text and "BREW" not in text
    count = _value(text, "auditor_http_request_duration_seconds_count", method="GET", route="/health")
    assert count == 1
    assert _value(text, "process_cpu_seconds_total") is not None  # one process: its own collectors


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_served_workers_report_every_workers_requests_whichever_answers(tmp_path: Path) -> None:
    """`auditor serve --workers 2`: each scrape, over a fresh connection that either worker may
    accept, reports all requests of both (prometheus_client's multiprocess mode)."""
    url = f"sqlite:///{tmp_path / 'auditor.db'}"
    store = open_store(url)
    try:
        scraper = _token(store, "metrics")
    finally:
        store.close()
    port = _free_port()
    log = tmp_path / "serve.log"
    cmd = [sys.executable, "-m", "auditor.surfaces.cli.main", "serve", "--store", url, "--port", str(port),
           "--workers", "2", "--threads", "4", "--log-level", "warning"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=log.open("w"))
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            try:
                if _scrape(f"{base}/health"):
                    break
            except OSError:
                time.sleep(0.2)
        for _ in range(19):  # 20 in all with the readiness check
            _scrape(f"{base}/health")
        seen = [
            _value(_scrape(f"{base}/metrics", scraper), "auditor_http_requests_total",
                   method="GET", route="/health", status="200")
            for _ in range(12)
        ]  # fmt: skip
        assert seen == [20] * 12, log.read_text()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


# -- the dashboard -----------------------------------------------------------------------------

_LABEL_LISTS = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
_KEYWORDS = {"and", "or", "unless", "bool", "offset", "group_left", "group_right", "inf", "nan"}


def promql_names(expr: str) -> tuple[set[str], set[str]]:
    """The series names and the label names a PromQL expression uses (functions, keywords,
    strings, ranges and Grafana's variables left out)."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    labels = {name.strip() for m in _LABEL_LISTS.finditer(expr) for name in m.group(2).split(",")}
    expr = _LABEL_LISTS.sub(" ", expr)
    for matchers in re.findall(r"\{([^}]*)\}", expr):
        labels |= set(re.findall(r"([A-Za-z_]\w*)\s*(?:=~|!~|!=|=)", matchers))
    expr = re.sub(r"\{[^}]*\}|\[[^\]]*\]|\$\{?\w+\}?", " ", expr)
    names = {
        m.group(0)
        for m in re.finditer(r"[A-Za-z_:][\w:]*", expr)
        if not expr[m.end() :].lstrip().startswith("(") and m.group(0) not in _KEYWORDS
    }
    return names, labels - {""}


def test_promql_names_reads_series_and_labels() -> None:
    names, labels = promql_names(
        'histogram_quantile(0.95, sum by (le, route) (rate(a_bucket{status=~"5..", job!="x"}[$__rate_interval])))'
        " / on (instance) group_left b_total and sum without (kind) (c)"
    )
    assert names == {"a_bucket", "b_total", "c"}
    assert labels == {"le", "route", "status", "job", "instance", "kind"}


def _panels() -> list[dict[str, Any]]:
    dashboard = json.loads(DASHBOARD.read_text())
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    assert panels, "the dashboard has panels"
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])
    assert [v["name"] for v in dashboard["templating"]["list"]] == ["datasource"]
    for p in panels:
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        assert p["gridPos"]["x"] + p["gridPos"]["w"] <= 24, p["title"]
        assert p["targets"], p["title"]
    return panels


@pytest.fixture
def pg_store(pg_schema_url: str) -> Iterator[EventStore]:
    s = open_store(pg_schema_url)
    yield s
    s.close()


@pytest.mark.kafka
@pytest.mark.postgres
@pytest.mark.slow
def test_every_dashboard_query_names_only_series_we_export(pg_store: EventStore) -> None:
    """Run a consumer and a worker on a real broker (a trace audited with an alert, a dead letter)
    and an API over the store, then check every panel against what their registries export."""
    from fastapi.testclient import TestClient
    from kafka import KafkaProducer

    from auditor.audit.workers import AuditWorker, WorkerConfig
    from auditor.surfaces.server import ServerConfig, create_app
    from ingest.stream import ConsumerConfig, StreamConsumer
    from schemas.report import Severity
    from tests.stream_support import (
        count_type,
        kafka_bootstrap,
        new_topics,
        publish_traces,
        running,
        wait_until,
    )

    bootstrap = kafka_bootstrap()
    t = new_topics(bootstrap, 2, "steps", "dlq", "closed", "reports", "alerts")
    consumer = StreamConsumer(
        pg_store,
        ConsumerConfig(bootstrap, t["steps"], f"g-{t['steps']}", t["dlq"], t["closed"], poll_ms=100,
                       session_timeout_ms=6000),
    )  # fmt: skip
    worker = AuditWorker(
        pg_store,
        WorkerConfig(bootstrap, t["closed"], f"w-{t['closed']}", t["reports"], t["alerts"], Severity.high,
                     poll_ms=100, session_timeout_ms=6000),
    )  # fmt: skip
    with running(consumer), running(worker):
        wait_until(lambda: consumer.consumer.assignment() and worker.consumer.assignment(), 30, "assigned")
        publish_traces(bootstrap, t["steps"], {"dash-drift": 0})
        producer = KafkaProducer(bootstrap_servers=bootstrap)
        producer.send(t["steps"], key=b"junk", value=b"{not json")
        producer.flush()
        producer.close()
        wait_until(lambda: count_type(pg_store, "AuditCompleted") == 1, 60, "the trace audited")
        wait_until(lambda: consumer.metrics.total("dead_letters_total") == 1, 30, "the dead letter")
        for m in (consumer.metrics, worker.metrics):
            wait_until(lambda m=m: f"{m.namespace}_lag_records" in exported(m.registry), 30, "a lag gauge")
    assert consumer.metrics.value("open_traces") == 0
    assert (
        consumer.metrics.value("lag_seconds_count") >= 1
        and consumer.metrics.value("batch_seconds_count") >= 1
    )
    assert consumer.metrics.total("lag_records") == 0, "everything consumed is committed"
    assert worker.metrics.value("audit_seconds_count") == 1
    assert worker.metrics.value("alerts_total") >= 1
    with TestClient(create_app(ServerConfig(max_body=2048), store=pg_store)) as client:
        scraper = _api_requests(client, pg_store)
        assert client.get("/metrics", headers=scraper).status_code == 200
        api = exported(client.app.state.metrics)

    series: dict[str, set[str]] = {}
    for names in (exported(consumer.metrics.registry), exported(worker.metrics.registry), api):
        for name, labels in names.items():
            series.setdefault(name, set()).update(labels)
    shown: set[str] = set()
    for panel in _panels():
        for target in panel["targets"]:
            names, labels = promql_names(target["expr"])
            assert names, f"{panel['title']}: no series in {target['expr']}"
            unknown = names - set(series)
            assert not unknown, f"{panel['title']}: {sorted(unknown)} are not exported"
            carried = set().union(*(series[n] for n in names)) | TARGET_LABELS
            assert labels <= carried, f"{panel['title']}: labels {sorted(labels - carried)} do not exist"
            legend = set(re.findall(r"\{\{\s*(\w+)\s*\}\}", target.get("legendFormat", "")))
            assert legend <= labels, f"{panel['title']}: the legend names {sorted(legend - labels)}"
            shown |= names
    ours = {_family(n) for n in series if n.startswith("auditor_") and not n.endswith("_created")}
    missing = ours - {_family(n) for n in shown}
    assert not missing, f"series no panel shows: {sorted(missing)}"


def _family(sample: str) -> str:
    return re.sub(r"_(bucket|count|sum)$", "", sample)
