"""`auditor stream produce|consume|workers|status` as an operator runs them: separate processes, a
real broker, PostgreSQL, SIGTERM to stop, Prometheus counters scraped over HTTP."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from auditor.core.store import open_store
from tests.stream_support import count_type, drift_trace, kafka_bootstrap, new_topics, wait_until

pytestmark = [pytest.mark.kafka, pytest.mark.postgres, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _auditor(store_url: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "auditor.surfaces.cli.main", "--store", store_url, "stream", *args]


@pytest.fixture
def pg_store(pg_schema_url: str) -> Iterator:
    s = open_store(pg_schema_url)
    yield s
    s.close()


def test_operator_flow_produce_consume_audit_status(pg_store, pg_schema_url: str, tmp_path: Path) -> None:
    from kafka import KafkaProducer

    bootstrap = kafka_bootstrap()
    t = new_topics(bootstrap, 2, "steps", "dlq", "closed", "reports", "alerts")
    header, steps = drift_trace("cli-drift")
    trace_file = tmp_path / "drift.jsonl"
    trace_file.write_text("\n".join(x.model_dump_json() for x in (header, *steps)) + "\n")
    bad_file = tmp_path / "bad.jsonl"
    bad_file.write_text(
        '{"step_id": "s0", "index": 0, "actor": "a"}\n{"step_id": "s1", "index": 5, "actor": "b"}\n'
    )
    refused = subprocess.run(
        _auditor(pg_schema_url, "produce", str(trace_file), str(bad_file), "--bootstrap", bootstrap, "--topic", t["steps"]),
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refused.returncode == 2 and "bad.jsonl" in refused.stderr  # and nothing was sent (offsets below)
    produced = subprocess.run(
        _auditor(pg_schema_url, "produce", str(trace_file), "--bootstrap", bootstrap, "--topic", t["steps"], "--json"),
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    assert json.loads(produced.stdout) == [{"file": str(trace_file), "trace_id": "cli-drift", "steps": 3}]
    # a notice for a trace nobody stored, and one that is not a notice at all
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    producer.send(
        t["closed"], key=b"ghost", value=b'{"trace_id": "ghost", "step_count": 1, "reason": "idle"}'
    )
    producer.send(t["closed"], key=b"junk", value=b"not json")
    producer.flush()
    producer.close()

    port = _free_port()
    common = ["--bootstrap", bootstrap, "--closed-topic", t["closed"]]
    procs = [
        subprocess.Popen(
            _auditor(pg_schema_url, "consume", *common, "--topic", t["steps"], "--group", f"g-{t['steps']}",
                     "--dead-letter-topic", t["dlq"]),
            cwd=REPO, stderr=(tmp_path / "consume.log").open("w"),
        ),
        subprocess.Popen(
            _auditor(pg_schema_url, "workers", *common, "--group", f"w-{t['closed']}", "--reports-topic",
                     t["reports"], "--alerts-topic", t["alerts"], "--metrics-port", str(port)),
            cwd=REPO, stderr=(tmp_path / "workers.log").open("w"),
        ),
    ]  # fmt: skip
    try:
        wait_until(lambda: count_type(pg_store, "AuditCompleted") == 1, 90, "the drift trace audited")
        wait_until(
            lambda: count_type(pg_store, "AuditFailed") == 1, 30, "the ghost notice recorded as failed"
        )
        lines = wait_until(lambda: _scrape(port), 30, "three notices counted").splitlines()
        assert 'auditor_worker_audits_total{outcome="done"} 1.0' in lines
        assert 'auditor_worker_audits_total{outcome="failed"} 1.0' in lines
        assert 'auditor_worker_audits_total{outcome="unreadable_notice"} 1.0' in lines
        assert 'auditor_worker_audits_total{outcome="skipped"} 0.0' in lines
        assert "auditor_worker_alerts_total 1.0" in lines
        assert "auditor_worker_audit_seconds_count 2.0" in lines  # the drift trace and the ghost
    except AssertionError:
        for name in ("consume.log", "workers.log"):  # what the services said, for the failure report
            print(f"--- {name}\n{(tmp_path / name).read_text()[-3000:]}")
        raise
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        codes = [p.wait(timeout=30) for p in procs]
    assert codes == [0, 0], "SIGTERM finishes the batch and exits cleanly"
    failed = next(pg_store.read_all(types=["AuditFailed"]))
    assert failed.payload["trace_id"] == "ghost" and "no trace with id 'ghost'" in failed.payload["error"]

    status = subprocess.run(
        _auditor(pg_schema_url, "status", "--bootstrap", bootstrap, "--topic", t["steps"], "--group",
                 f"g-{t['steps']}", "--closed-topic", t["closed"], "--workers-group", f"w-{t['closed']}", "--json"),
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout)
    logs = "".join(f"--- {n}\n{(tmp_path / n).read_text()[-3000:]}" for n in ("consume.log", "workers.log"))
    assert [p["lag"] for p in data["partitions"]] == [0, 0, 0, 0], logs
    assert sum(p["end"] for p in data["partitions"] if p["role"] == "ingest") == 5  # header, 3 steps, end
    assert (data["traces_open"], data["traces_closed"], data["audits_done"], data["audits_failed"]) == (
        0,
        1,
        1,
        1,
    )


def _scrape(port: int) -> str | None:
    """The workers' exposition once all three notices are counted (the outcomes exist at 0 from the start)."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
            text = resp.read().decode()
    except OSError:
        return None
    audits = next(f for f in text_string_to_metric_families(text) if f.name == "auditor_worker_audits")
    return text if sum(s.value for s in audits.samples if s.name.endswith("_total")) >= 3 else None


def test_produce_as_document_sends_each_file_whole_in_its_format(tmp_path: Path) -> None:
    from ingest import open_traces as import_file
    from tests.stream_support import read_topic

    bootstrap = kafka_bootstrap()
    t = new_topics(bootstrap, 1, "steps")
    source = REPO / "tests" / "fixtures" / "ingest" / "otel_genai.json"
    produced = subprocess.run(
        _auditor(f"sqlite:///{tmp_path / 'unused.db'}", "produce", str(source), "--as-document",
                 "--bootstrap", bootstrap, "--topic", t["steps"], "--json"),
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert produced.returncode == 0, produced.stderr
    (imported,) = import_file(source)
    assert json.loads(produced.stdout)[0]["steps"] == len(list(imported.steps()))  # checked before sending
    (record,) = read_topic(bootstrap, t["steps"], 1)
    assert (record.key, record.value) == (b"otel_genai.json", source.read_bytes())
    assert dict(record.headers) == {"format": b"otel-genai", "name": b"otel_genai.json"}
