"""Audit workers: audit every closed trace once, publish its report, raise alerts above a severity.

Workers read closed-trace notices (published by the ingestion consumer after the trace's
``TraceClosed`` event is stored) as a consumer group, so partitions spread over workers. For each
notice: audit the trace with the configured engine (which files the report in the store), publish
the report to the reports topic and each finding at or above the alert severity to the alerts topic,
record ``AuditCompleted`` (or ``AuditFailed``) in ``audit-{trace_id}`` (``auditor.audit.audit_runs``, as
the OTLP receiver's in-process audit does), then commit the offset. A notice re-delivered after the
marker is skipped; one re-delivered before it re-runs a deterministic audit, whose report the store
de-duplicates, and publishes the report again (downstream readers de-duplicate by ``report_id``).
"""

from __future__ import annotations

import gc
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from auditor.audit.audit_runs import AuditFn, AuditRecorder, AuditRun, Outcome
from auditor.audit.policy_selection import PolicySet, load_policies
from auditor.core.errors import InputError, VerificationFailed
from auditor.core.store import EventStore
from auditor.core.store.anchors import CheckpointSettings, take_checkpoint
from ingest.stream_loop import BatchLoop, GroupMember, Polled, batch_producer, group_consumer, wait_sent
from ingest.stream_metrics import LATENCY_BUCKETS, Metrics, loop_metrics
from schemas.report import AuditReport, Severity
from schemas.trace import Trace

SEVERITY_ORDER = list(Severity)
log = logging.getLogger(__name__)


def rules_audit(store: EventStore, trace: Trace, policies: PolicySet | None = None) -> AuditReport:
    """The embedded rules engine, exactly as ``auditor review`` runs it (validated, then filed),
    under the policy ``policies`` chooses for the trace (``auditor.audit.policy_selection``)."""
    from auditor.audit.policy_selection import span_resource
    from auditor.audit.review import audit_trace

    policy = policies.for_trace(trace, lambda key: span_resource(store, trace, key)) if policies else None
    report, _validation = audit_trace(store, trace, engine="rules", policy=policy)
    return report


def warm_rules() -> None:
    """Load the rules engine (graph, detectors, validator) by auditing a one-step trace in memory,
    so that the first real trace is not the one that pays for the imports."""
    from auditor.audit.review import audit_trace
    from schemas.trace import Trace, TraceHeader, TraceStep

    step = TraceStep(step_id="s0", index=0, actor="warm-up", content="warm-up")
    audit_trace(None, Trace(header=TraceHeader(trace_id="warm-up"), steps=[step]), engine="rules")


ENGINES: dict[str, Callable[..., AuditReport]] = {"rules": rules_audit}
WARM_UPS: dict[str, Callable[[], None]] = {"rules": warm_rules}


def resolve_engine(name: str, policies: PolicySet | None = None) -> AuditFn:
    """The engine called ``name``, auditing each trace under the policy ``policies`` chooses."""
    if name not in ENGINES:
        raise InputError(
            f"unknown engine '{name}'", field="--engine", hint=f"use one of {', '.join(ENGINES)}"
        )
    return partial(ENGINES[name], policies=policies)


@dataclass(frozen=True)
class WorkerConfig(GroupMember):
    """What the audit workers read and publish, and how they audit (the group member's Kafka
    settings are GroupMember's)."""

    closed_topic: str = "agent-traces-closed"
    group: str = "auditor-workers"
    reports_topic: str = "agent-audit-reports"
    alerts_topic: str = "agent-audit-alerts"
    alert_severity: Severity = Severity.high
    engine: str = "rules"
    policy: str | None = (
        None  # a policy file, or a directory with its selector (auditor.audit.policy_selection)
    )
    max_batch: int = 20
    # periodic signed checkpoints of the store's head (docs/store.md): on when AUDITOR_CHECKPOINT_FILE is set
    checkpoints: CheckpointSettings | None = field(default_factory=CheckpointSettings.from_env)


def worker_metrics() -> Metrics:
    """The workers' series (``auditor_worker_*``), the batch loop's among them."""
    m = loop_metrics(Metrics("auditor_worker"))
    outcomes = ["done", "failed", "skipped", "unreadable_notice"]
    m.counter("audits_total", "Closed-trace notices handled, by outcome.", "outcome", outcomes)
    m.histogram(
        "audit_seconds", "Seconds inside the audit engine per attempt (failed ones too).", LATENCY_BUCKETS
    )
    m.counter("alerts_total", "Findings published to the alerts topic.")
    m.counter(
        "checkpoints_total",
        "Periodic checkpoints, by outcome.",
        "outcome",
        ["written", "unchanged", "refused"],
    )
    return m


def alerts_for(report: dict[str, Any], threshold: Severity) -> list[dict[str, Any]]:
    """The findings at or above ``threshold``, as alert records."""
    floor = SEVERITY_ORDER.index(threshold)
    return [
        {
            "trace_id": report["trace_id"],
            "report_id": report["report_id"],
            "finding_id": f["finding_id"],
            "severity": f["severity"],
            "risk_class": f["risk_class"],
            "disposition": f["disposition"],
            "title": f["title"],
        }
        for f in report.get("findings", [])
        if SEVERITY_ORDER.index(Severity(f["severity"])) >= floor
    ]


class AuditWorker:
    """One member of the audit worker group."""

    def __init__(
        self,
        store: EventStore,
        config: WorkerConfig,
        audit: AuditFn | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.store, self.config = store, config
        self.audits = AuditRecorder(
            store,
            config.engine,
            audit or resolve_engine(config.engine, load_policies(config.policy) if config.policy else None),
        )
        self.metrics = metrics or worker_metrics()
        self.consumer = group_consumer(config.closed_topic, config, config.group, config.max_batch)
        self.producer = batch_producer(config.bootstrap, max_request_size=8 << 20)
        self._warm = WARM_UPS.get(config.engine) if audit is None else None
        every = (config.checkpoints.every_s, self.checkpoint) if config.checkpoints else None
        self.loop = BatchLoop(
            self.consumer, self.process, self.metrics, config.poll_ms, config.retry_backoff_s, every
        )

    def process(self, polled: Polled) -> None:
        for records in polled.values():
            for r in records:
                try:
                    trace_id = str(json.loads(r.value)["trace_id"])
                except (ValueError, KeyError, TypeError):  # not a notice we wrote: skip, never loop on it
                    self.metrics.inc("audits_total", outcome="unreadable_notice")
                    continue
                self.handle(trace_id)
        self.loop.commit(polled)

    def handle(self, trace_id: str) -> AuditRun:
        """Audit one closed trace unless an earlier delivery finished it; a store failure is
        raised (the batch is retried)."""
        run = self.audits.run(trace_id, publish=self.publish)
        if run.outcome is not Outcome.skipped:
            self.metrics.observe("audit_seconds", run.seconds)
        self.metrics.inc("alerts_total", run.recorded.get("alerts", 0))
        self.metrics.inc("audits_total", outcome=run.outcome.value)
        return run

    def publish(self, report: AuditReport) -> dict[str, Any]:
        """Send the report, and its findings at or above the alert severity, before the audit is
        marked complete; the marker counts the alerts."""
        cfg = self.config
        data = report.model_dump(mode="json")
        key = str(data["trace_id"]).encode()
        sends = [self.producer.send(cfg.reports_topic, key=key, value=json.dumps(data).encode())]
        alerts = alerts_for(data, cfg.alert_severity)
        sends += [self.producer.send(cfg.alerts_topic, key=key, value=json.dumps(a).encode()) for a in alerts]
        wait_sent(self.producer, sends)
        return {"alerts": len(alerts)}

    def checkpoint(self) -> None:
        """Anchor the store's head in the checkpoint file (periodic); a chain that no longer
        matches its anchors is logged as an error and left unanchored."""
        settings = self.config.checkpoints
        if settings is None:
            return
        try:
            taken = take_checkpoint(self.store, settings.path, settings.key)
        except VerificationFailed as exc:
            self.metrics.inc("checkpoints_total", outcome="refused")
            log.error("checkpoint refused: %s", exc.one_line())
            return
        self.metrics.inc("checkpoints_total", outcome="written" if taken else "unchanged")

    @property
    def healthy(self) -> bool:
        return self.loop.healthy

    def run(self, stop: threading.Event | None = None) -> None:
        if self._warm is not None:
            self._warm()
        # What is loaded by now (engine, graph, detectors, clients) lives as long as the process:
        # out of the collector's sight, a full collection (the graph builder runs one per build)
        # scans only an audit's own objects, ~0.05 s instead of ~0.5 s per audit.
        gc.freeze()
        self.loop.run(stop or threading.Event())

    def close(self) -> None:
        self.loop.close_commits()
        self.producer.close(timeout=10)
        self.consumer.close(autocommit=False)
