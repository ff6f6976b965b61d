"""`auditor stream consume|produce|workers|status`: continuous auditing over Kafka."""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path

import typer

from auditor.cli.common import console, open_cli_store, print_json

stream_app = typer.Typer(
    help="Continuous auditing over Kafka: ingest steps, audit closed traces.", no_args_is_help=True
)

_BOOTSTRAP = typer.Option(..., "--bootstrap", envvar="AUDITOR_KAFKA", help="Kafka bootstrap HOST:PORT.")


def _stop_on_signals() -> threading.Event:
    """SIGTERM (Kubernetes, compose) and Ctrl-C finish the current batch, then leave the group."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return stop


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
    metrics_port: int = typer.Option(0, "--metrics-port", help="Serve /metrics and /healthz here (0: off)."),
) -> None:
    """Append steps from Kafka to the store; malformed records go to the dead-letter topic."""
    from ingest.stream import ConsumerConfig, StreamConsumer
    from ingest.stream_metrics import MetricsServer

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
    )
    consumer = StreamConsumer(open_cli_store(), config)
    server = (
        MetricsServer(consumer.metrics, metrics_port, healthy=lambda: consumer.healthy)
        if metrics_port
        else None
    )
    try:
        consumer.run(stop)
    finally:
        consumer.close()
        if server:
            server.close()


@stream_app.command("produce")
def produce(
    files: list[Path] = typer.Argument(..., help="Canonical JSONL trace files to replay."),
    bootstrap: str = _BOOTSTRAP,
    topic: str = typer.Option("agent-steps", "--topic"),
    no_end: bool = typer.Option(False, "--no-end", help="Do not send end records (traces close when idle)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
) -> None:
    """Replay trace files into the steps topic (tests, demos, backfills); each file is checked first."""
    from ingest.canonical import scan_canonical
    from ingest.stream import StepPublisher, replay_file

    for f in files:
        scan_canonical(f)  # every file valid before the first record is sent
    rows = []
    with StepPublisher(bootstrap, topic) as publisher:
        for f in files:
            rows.append({"file": str(f), "steps": replay_file(publisher, f, end=not no_end)})
    if as_json:
        print_json(rows)
    else:
        for r in rows:
            console.print(f"{r['file']}: {r['steps']} steps published to {topic}")


def register(app: typer.Typer) -> None:
    app.add_typer(stream_app, name="stream")
