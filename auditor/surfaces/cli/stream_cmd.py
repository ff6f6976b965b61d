"""`auditor stream consume|produce|workers|status`: continuous auditing over Kafka."""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path

import typer

from auditor.surfaces.cli.common import (
    JSON_OUTPUT,
    REDACT,
    REDACT_PATTERN,
    console,
    open_cli_store,
    print_json,
    print_table,
    redaction,
)

stream_app = typer.Typer(
    help="Continuous auditing over Kafka: ingest steps, audit closed traces.", no_args_is_help=True
)

_BOOTSTRAP = typer.Option(..., "--bootstrap", envvar="AUDITOR_KAFKA", help="Kafka bootstrap HOST:PORT.")
_METRICS_PORT = typer.Option(
    0, "--metrics-port", min=0, max=65535, help="Serve /metrics and /healthz on this port (0: off)."
)
_METRICS_HOST = typer.Option(
    "127.0.0.1", "--metrics-host", help="Address to serve metrics on (0.0.0.0 in pods)."
)


def _stop_on_signals() -> threading.Event:
    """SIGTERM (Kubernetes, compose) and Ctrl-C finish the current batch, then leave the group."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return stop


def _serve(member, stop: threading.Event, metrics_port: int, metrics_host: str) -> None:  # type: ignore[no-untyped-def]
    """Run a consumer or worker until SIGTERM, with /metrics and /healthz when a port is given."""
    from ingest.stream_metrics import MetricsServer

    server = (
        MetricsServer(member.metrics, metrics_port, metrics_host, healthy=lambda: member.healthy)
        if metrics_port
        else None
    )
    try:
        member.run(stop)
    finally:
        member.close()
        if server:
            server.close()


@stream_app.command("consume")
def consume(
    bootstrap: str = _BOOTSTRAP,
    topic: str = typer.Option("agent-steps", "--topic", help="The steps topic."),
    group: str = typer.Option("auditor", "--group", help="Consumer group id."),
    dead_letter_topic: str = typer.Option("agent-steps-dlq", "--dead-letter-topic"),
    closed_topic: str = typer.Option("agent-traces-closed", "--closed-topic", help="Closed-trace notices."),
    instance_id: str = typer.Option(None, "--instance-id", help="Static group membership (e.g. pod name)."),
    max_batch: int = typer.Option(2000, "--max-batch", min=1, help="Records per poll and store transaction."),
    idle_close: float = typer.Option(
        300.0, "--idle-close", min=0.1, help="Close a trace silent this long (s)."
    ),
    max_record_bytes: int = typer.Option(512 * 1024, "--max-record-bytes", min=1024),
    metrics_port: int = _METRICS_PORT,
    metrics_host: str = _METRICS_HOST,
    redact: bool = REDACT,
    redact_pattern: list[str] = REDACT_PATTERN,
) -> None:
    """Append steps from Kafka to the store; malformed records go to the dead-letter topic. With
    --redact, each record is redacted before it is stored."""
    from ingest.stream import ConsumerConfig, StreamConsumer

    redact, patterns = redaction(redact, redact_pattern)
    stop = _stop_on_signals()
    config = ConsumerConfig(
        bootstrap=bootstrap,
        topic=topic,
        group=group,
        dead_letter_topic=dead_letter_topic,
        closed_topic=closed_topic,
        instance_id=instance_id,
        max_batch=max_batch,
        idle_close_s=idle_close,
        max_record_bytes=max_record_bytes,
        redact=redact,
        redact_patterns=patterns,
    )
    consumer = StreamConsumer(open_cli_store(), config)
    _serve(consumer, stop, metrics_port, metrics_host)


@stream_app.command("produce")
def produce(
    files: list[Path] = typer.Argument(..., help="Trace files to replay, in any importer's format."),
    bootstrap: str = _BOOTSTRAP,
    topic: str = typer.Option("agent-steps", "--topic"),
    input_format: str = typer.Option(
        "auto", "--input-format", help="Importer name (see 'auditor ingest --help')."
    ),
    no_end: bool = typer.Option(False, "--no-end", help="Do not send end records (traces close when idle)."),
    as_document: bool = typer.Option(
        False, "--as-document", help="Send each file as one record in its own format; the consumer parses it."
    ),
    as_json: bool = JSON_OUTPUT,
) -> None:
    """Replay trace files into the steps topic (tests, demos, backfills); each file is checked first."""
    from ingest.pipeline import choose
    from ingest.stream import StepPublisher
    from ingest.stream_publish import prepare_replay, replay

    prepared = [(f, prepare_replay(f, input_format)) for f in files]  # every file valid before any send
    rows = [
        {"file": str(f), "trace_id": imported.header.trace_id, "steps": n}
        for f, traces in prepared
        for imported, n in traces
    ]
    with StepPublisher(bootstrap, topic) as publisher:
        for f, traces in prepared:
            if as_document:  # the consumer imports the bytes with the importer that read them here
                publisher.document(f.read_bytes(), choose(f, input_format)[0], name=f.name)
            else:
                replay(publisher, traces, end=not no_end)
    if as_json:
        print_json(rows)
    else:
        for r in rows:
            console.print(
                f"{r['file']}: {r['trace_id']} ({r['steps']} steps) published to {topic}",
                markup=False,
                highlight=False,
            )


@stream_app.command("workers")
def workers(
    bootstrap: str = _BOOTSTRAP,
    closed_topic: str = typer.Option("agent-traces-closed", "--closed-topic", help="Closed-trace notices."),
    group: str = typer.Option("auditor-workers", "--group", help="Worker group id."),
    reports_topic: str = typer.Option("agent-audit-reports", "--reports-topic"),
    alerts_topic: str = typer.Option("agent-audit-alerts", "--alerts-topic"),
    alert_severity: str = typer.Option("high", "--alert-severity", help="info|low|medium|high|critical"),
    engine: str = typer.Option("rules", "--engine", help="Audit engine (rules: embedded, no model)."),
    policy: Path = typer.Option(
        None,
        "--policy",
        help="A policy file for every trace, or a directory of policies whose selector.yaml picks "
        "one per trace (docs/policy.md).",
    ),
    instance_id: str = typer.Option(None, "--instance-id", help="Static group membership (e.g. pod name)."),
    metrics_port: int = _METRICS_PORT,
    metrics_host: str = _METRICS_HOST,
) -> None:
    """Audit every closed trace once; publish reports, and alerts at or above a severity."""
    from auditor.audit.policy_selection import load_policies
    from auditor.audit.workers import AuditWorker, WorkerConfig, resolve_engine
    from auditor.core.errors import InputError
    from schemas.report import Severity

    try:
        severity = Severity(alert_severity)
    except ValueError:
        raise InputError(
            f"unknown severity '{alert_severity}'", field="--alert-severity", hint=", ".join(Severity)
        ) from None
    resolve_engine(engine)
    if policy is not None:
        load_policies(policy)  # every policy and the selector valid before the worker joins its group
    stop = _stop_on_signals()
    config = WorkerConfig(
        bootstrap=bootstrap,
        closed_topic=closed_topic,
        group=group,
        reports_topic=reports_topic,
        alerts_topic=alerts_topic,
        alert_severity=severity,
        engine=engine,
        policy=str(policy) if policy is not None else None,
        instance_id=instance_id,
    )
    worker = AuditWorker(open_cli_store(), config)
    _serve(worker, stop, metrics_port, metrics_host)


@stream_app.command("status")
def status(
    bootstrap: str = _BOOTSTRAP,
    topic: str = typer.Option("agent-steps", "--topic"),
    group: str = typer.Option("auditor", "--group", help="Ingestion consumer group."),
    closed_topic: str = typer.Option("agent-traces-closed", "--closed-topic"),
    workers_group: str = typer.Option("auditor-workers", "--workers-group"),
    as_json: bool = JSON_OUTPUT,
) -> None:
    """Lag per partition of the consumer and the workers; traces open; audits done and failed."""
    from ingest.stream_lag import partition_lag
    from ingest.stream_store import open_traces

    lags = [("ingest", group, lag) for lag in partition_lag(bootstrap, group, topic)]
    lags += [("workers", workers_group, lag) for lag in partition_lag(bootstrap, workers_group, closed_topic)]
    store = open_cli_store()
    by_type = store.stats()["by_type"]
    data = {
        "partitions": [
            {"role": role, "group": g, "topic": lag.topic, "partition": lag.partition,
             "committed": lag.committed, "end": lag.end, "lag": lag.lag}
            for role, g, lag in lags
        ],
        "traces_open": len(open_traces(store, topic)),
        "traces_closed": by_type.get("TraceClosed", 0),
        "audits_done": by_type.get("AuditCompleted", 0),
        "audits_failed": by_type.get("AuditFailed", 0),
    }  # fmt: skip
    if as_json:
        print_json(data)
        return
    print_table(
        "consumer lag",
        ["role", "group", "topic", "partition", "committed", "end", "lag"],
        [
            [p["role"], p["group"], p["topic"], p["partition"], p["committed"], p["end"], p["lag"]]
            for p in data["partitions"]
        ],
    )
    console.print(
        f"traces open {data['traces_open']}, closed {data['traces_closed']}; "
        f"audits done {data['audits_done']}, failed {data['audits_failed']}"
    )


def register(app: typer.Typer) -> None:
    app.add_typer(stream_app, name="stream")
