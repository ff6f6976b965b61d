"""Policies on the service (issue 33, item 1): `auditor serve --policy` and `auditor stream workers
--policy` take a policy file or a directory whose selector picks a policy per trace, and `POST
/api/audit` takes `policy` (a name the server knows) and `outcome`.

Done when each always-on path — the OpenTelemetry SDK's OTLP exporter against a real `auditor
serve` process, a Kafka collector's records audited by a real `auditor stream workers` process, and
`POST /api/audit` — files, for the shipped failed airline run under the airline policy, the same
findings as `auditor review --policy` on the file. The reports also record the policy (name and
digest).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from auditor.audit.policy import load_policy
from auditor.audit.policy_selection import load_policies
from auditor.audit.review import read_traces
from auditor.core.errors import InputError
from tests.otel_airline_agent import AIRLINE_POLICY, AIRLINE_RUN, comparable, run_airline_agent

REPO = Path(__file__).resolve().parents[1]
RETAIL_POLICY = REPO / "examples" / "policies" / "retail.yaml"
SELECTOR = """\
version: 1
by: service.name
choose:
  airline-*: airline
  retail-*: retail
"""


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The airline and retail policies, chosen by the spans' service.name."""
    folder = tmp_path_factory.mktemp("policies")
    shutil.copy(AIRLINE_POLICY, folder / "airline.yaml")
    shutil.copy(RETAIL_POLICY, folder / "retail.yaml")
    (folder / "selector.yaml").write_text(SELECTOR, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What `auditor review FILE --policy airline.yaml` files for the shipped run."""
    store = tmp_path_factory.mktemp("review") / "review.db"
    proc = subprocess.run(
        [sys.executable, "-m", "auditor.surfaces.cli.main", "--store", f"sqlite:///{store}", "review", str(AIRLINE_RUN),
         "--policy", str(AIRLINE_POLICY), "--format", "json"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr  # a realized finding
    report = json.loads(proc.stdout)
    assert report["decision"] == "risk_identified" and report["findings"]
    return report


def assert_same_findings(report: dict[str, Any], reviewed: dict[str, Any]) -> None:
    airline = load_policy(AIRLINE_POLICY)
    assert report["policy"] == {"name": "airline", "digest": airline.digest}
    assert comparable(report) == comparable(reviewed)
    assert report["decision"] == reviewed["decision"]
    assert report["outcome"]["value"] == reviewed["outcome"]["value"]


# -- the selector ------------------------------------------------------------------------------


def test_a_file_is_every_traces_policy_and_a_directory_chooses_by_its_selector(policy_dir: Path) -> None:
    [(trace, _, _)] = read_traces(AIRLINE_RUN)
    single = load_policies(AIRLINE_POLICY)
    assert single.names == ["airline"] and single.for_trace(trace).name == "airline"

    both = load_policies(policy_dir)
    assert both.names == ["airline", "retail"]
    assert both.for_trace(trace, {"service.name": "airline-support"}.get).name == "airline"
    assert both.for_trace(trace, {"service.name": "retail-desk"}.get).name == "retail"
    assert both.for_trace(trace, {"service.name": "billing"}.get) is None  # no default declared
    assert both.for_trace(trace) is None  # a trace from no spans has no resource


def test_a_header_field_selects_and_a_default_catches_the_rest(tmp_path: Path) -> None:
    [(trace, _, _)] = read_traces(AIRLINE_RUN)  # importer openai-chat: header.metadata.importer
    shutil.copy(AIRLINE_POLICY, tmp_path / "airline.yaml")
    shutil.copy(RETAIL_POLICY, tmp_path / "retail.yaml")
    (tmp_path / "selector.yaml").write_text(
        "version: 1\nby: header.metadata.importer\nchoose: {openai-chat: airline}\ndefault: retail\n"
    )
    policies = load_policies(tmp_path)
    assert policies.for_trace(trace).name == "airline"
    other = trace.model_copy(update={"header": trace.header.model_copy(update={"metadata": {}})})
    assert policies.for_trace(other).name == "retail"


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (
            "version: 1\nby: service.name\nchoose: {x: billing}\n",
            "line 3, field 'choose.x': 'billing' names no policy",
        ),
        ("version: 1\nby: colour\nchoose: {x: airline}\n", "line 2, field 'by': 'colour' is no selector"),
        ("version: 1\nby: service.name\nchoose: {x: airline}\nextra: 1\n", "line 4, field 'extra'"),
        ("version: 1\nby: [service.name\n", "line 3: not valid YAML"),
    ],
)
def test_a_bad_selector_is_an_input_error_naming_file_and_field(
    tmp_path: Path, selector: str, expected: str
) -> None:
    shutil.copy(AIRLINE_POLICY, tmp_path / "airline.yaml")
    (tmp_path / "selector.yaml").write_text(selector)
    with pytest.raises(InputError) as err:
        load_policies(tmp_path)
    assert str(err.value).startswith(str(tmp_path / "selector.yaml")) and expected in str(err.value)


def test_two_policies_of_one_name_are_refused(tmp_path: Path) -> None:
    shutil.copy(AIRLINE_POLICY, tmp_path / "a.yaml")
    shutil.copy(AIRLINE_POLICY, tmp_path / "b.yaml")
    with pytest.raises(InputError) as err:
        load_policies(tmp_path)
    assert "b.yaml, field 'name': policy name 'airline' is declared by two files" in str(err.value)


def test_an_upload_naming_no_policy_gets_the_one_the_selector_picks(tmp_path: Path) -> None:
    """POST /api/audit without `policy`: the server's selector reads the stored trace's header."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from auditor.core.store import open_store
    from auditor.surfaces.server import ServerConfig, create_app
    from auditor.surfaces.server.tokens import create_token

    shutil.copy(AIRLINE_POLICY, tmp_path / "airline.yaml")
    shutil.copy(RETAIL_POLICY, tmp_path / "retail.yaml")
    (tmp_path / "selector.yaml").write_text(
        "version: 1\nby: header.metadata.importer\nchoose: {openai-chat: airline}\n"
    )
    store = open_store(f"sqlite:///{tmp_path / 'auditor.db'}")
    token = create_token(store, "agent", ["ingest", "read"])[0]
    with TestClient(create_app(ServerConfig(policy=str(tmp_path)), store=store)) as client:
        auth = {"Authorization": f"Bearer {token}"}
        r = client.post(
            "/api/audit",
            params={"filename": AIRLINE_RUN.name},
            content=AIRLINE_RUN.read_bytes(),
            headers=auth,
        )
        assert r.status_code == 201, r.text
        [result] = r.json()["results"]
        report = client.get(f"/api/reports/{result['report_id']}", headers=auth).json()
    assert report["policy"] == {"name": "airline", "digest": load_policy(AIRLINE_POLICY).digest}
    assert any(f["policy_rule"] == "cancel-eligibility" for f in report["findings"])
    store.close()


@pytest.mark.parametrize(
    "command", [["serve", "--port", "0"], ["stream", "workers", "--bootstrap", "127.0.0.1:1"]]
)
def test_a_bad_policy_directory_stops_serve_and_workers_before_they_start(
    tmp_path: Path, command: list[str]
) -> None:
    from tests.cli_helpers import run

    folder = tmp_path / "policies"
    folder.mkdir()
    shutil.copy(AIRLINE_POLICY, folder / "airline.yaml")
    (folder / "selector.yaml").write_text("version: 1\nby: service.name\nchoose: {x: billing}\n")
    out = run([*command, "--policy", str(folder)], tmp_path)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert (
        "selector.yaml, line 3, field 'choose.x': 'billing' names no policy of the directory (known: airline)"
        in out.stderr
    )


# -- the three always-on paths against `auditor review --policy` -------------------------------


@pytest.fixture(scope="module")
def served(policy_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Any]]:
    """(origin, token with ingest and read scopes, store) of `auditor serve --policy DIR`."""
    pytest.importorskip("uvicorn")
    from auditor.core.store import open_store
    from auditor.surfaces.server.tokens import create_token
    from tests.serve_support import serving

    folder = tmp_path_factory.mktemp("served")
    url = f"sqlite:///{folder / 'auditor.db'}"
    store = open_store(url)
    token = create_token(store, "agent", ["ingest", "read"])[0]
    with serving(url, folder, "--policy", str(policy_dir)) as origin:
        yield origin, token, store
    store.close()


@pytest.mark.slow
def test_the_otlp_exporter_gets_the_findings_of_review_policy(
    served: tuple[str, str, Any], reviewed: dict[str, Any]
) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    import httpx
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from auditor.core.store.reports import list_reports
    from tests.otel_toy_agent import provider

    origin, token, store = served
    auth = {"Authorization": f"Bearer {token}"}
    exporter = OTLPSpanExporter(endpoint=f"{origin}/v1/traces", headers=auth)
    tp = provider(SimpleSpanProcessor(exporter), service="airline-support")  # the selector's airline-*
    tid = run_airline_agent(tp)
    tp.shutdown()
    r = httpx.post(f"{origin}/api/otlp/flush", params={"trace_id": tid}, headers=auth, timeout=300)
    assert r.status_code == 200, r.text
    [done] = r.json()["assembled"]
    [report] = list_reports(store, done["trace_id"])
    assert_same_findings(report.model_dump(mode="json"), reviewed)


@pytest.mark.slow
def test_post_api_audit_with_a_policy_name_and_outcome_gets_the_findings_of_review_policy(
    served: tuple[str, str, Any], reviewed: dict[str, Any]
) -> None:
    import httpx

    origin, token, _ = served
    auth = {"Authorization": f"Bearer {token}"}
    body = AIRLINE_RUN.read_bytes()
    params = {"filename": AIRLINE_RUN.name, "policy": "airline"}
    r = httpx.post(f"{origin}/api/audit", params=params, content=body, headers=auth, timeout=300)
    assert r.status_code == 201, r.text
    [result] = r.json()["results"]
    report = httpx.get(f"{origin}/api/reports/{result['report_id']}", headers=auth, timeout=60).json()
    assert_same_findings(report, reviewed)

    # outcome: the responder's word, as review --outcome failed (attribution at the cancellation)
    params["outcome"] = "failed"
    r = httpx.post(f"{origin}/api/audit", params=params, content=body, headers=auth, timeout=300)
    assert r.status_code == 201, r.text
    [result] = r.json()["results"]
    report = httpx.get(f"{origin}/api/reports/{result['report_id']}", headers=auth, timeout=60).json()
    assert report["outcome"]["source"] == "flag" and report["attribution"]["step_id"] == "s10"


@pytest.mark.slow
def test_the_server_lists_the_policies_it_knows(served: tuple[str, str, Any]) -> None:
    import httpx

    origin, token, _ = served
    r = httpx.get(f"{origin}/api/policies", headers={"Authorization": f"Bearer {token}"}, timeout=60)
    assert r.status_code == 200, r.text
    body = r.json()
    digests = {p["name"]: p["digest"] for p in body["policies"]}
    assert digests == {
        "airline": load_policy(AIRLINE_POLICY).digest,
        "retail": load_policy(RETAIL_POLICY).digest,
    }
    assert (
        body["selector"]["by"] == "resource.service.name"
        and body["selector"]["choose"]["airline-*"] == "airline"
    )


@pytest.mark.slow
def test_post_api_audit_naming_an_unknown_policy_is_a_400_listing_the_known(
    served: tuple[str, str, Any],
) -> None:
    import httpx

    origin, token, store = served
    before = store.stats()["events"]
    r = httpx.post(
        f"{origin}/api/audit",
        params={"filename": AIRLINE_RUN.name, "policy": "insurance"},
        content=AIRLINE_RUN.read_bytes(),
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    assert r.status_code == 400 and r.headers["content-type"] == "application/problem+json"
    assert "unknown policy 'insurance' (known: airline, retail)" in r.json()["detail"]
    assert store.stats()["events"] == before  # nothing stored for a refused request


@pytest.mark.slow
@pytest.mark.kafka
def test_a_kafka_collector_and_stream_workers_get_the_findings_of_review_policy(
    policy_dir: Path, reviewed: dict[str, Any], tmp_path: Path, store_url: str
) -> None:
    """On SQLite and PostgreSQL: the selector reads service.name from the stored spans."""
    pytest.importorskip("kafka")
    from kafka import KafkaProducer
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from auditor.core.store import open_store
    from auditor.core.store.reports import list_reports
    from ingest.span_assembly import AssemblySettings
    from ingest.stream import ConsumerConfig, StreamConsumer
    from tests.otel_toy_agent import encoded_spans, provider
    from tests.stream_support import kafka_bootstrap, new_topics, running, wait_until
    from tests.test_otlp_kill import process

    bootstrap = kafka_bootstrap()
    t = new_topics(bootstrap, 1, "steps", "dlq", "closed", "reports", "alerts")
    url = store_url
    store = open_store(url)
    memory = InMemorySpanExporter()
    tid = run_airline_agent(provider(SimpleSpanProcessor(memory), service="airline-support"))
    spans = list(memory.get_finished_spans())
    consumer = StreamConsumer(
        store,
        ConsumerConfig(
            bootstrap, t["steps"], f"g-{t['steps']}", t["dlq"], t["closed"], poll_ms=100,
            spans=AssemblySettings(idle_s=0.5, rootless_s=60.0, tick_s=0.05),
        ),
    )  # fmt: skip
    workers = ["--store", url, "stream", "workers", "--bootstrap", bootstrap, "--closed-topic", t["closed"],
               "--group", f"w-{t['closed']}", "--reports-topic", t["reports"], "--alerts-topic", t["alerts"],
               "--policy", str(policy_dir)]  # fmt: skip
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    with running(consumer), process(workers, tmp_path / "workers.log", idle=0.5):
        # the collector's otlp_proto encoding, cut in two records as its batch processor does
        producer.send(t["steps"], key=tid.encode(), value=encoded_spans(spans[: len(spans) // 2]))
        producer.send(t["steps"], key=tid.encode(), value=encoded_spans(spans[len(spans) // 2 :]))
        producer.flush()
        trace_id = f"otel-{tid}"
        wait_until(
            lambda: any(e.type == "AuditCompleted" for e in store.read_stream(f"audit-{trace_id}")),
            240,
            f"the workers' audit of {trace_id}",
        )
    producer.close()
    [report] = list_reports(store, trace_id)
    assert_same_findings(report.model_dump(mode="json"), reviewed)
    store.close()
