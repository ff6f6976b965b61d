"""The repair retest table, from the repairs' ``RetestCompleted`` events (and ``RepairDecided`` beside them).

One row per retest: the patched workflow on fresh identities against the original workflow on the
same conditions, seeds and identities, the targeted outcome's rate in each with Wilson 95%
intervals, realized findings of the fresh audits, utility and Retain, and the acceptance decision
where one was recorded after the retest.
"""

from __future__ import annotations

from auditor.surfaces.evidence_report.source import Evidence
from auditor.surfaces.evidence_report.table import Bar, Figure, Table, placeholder
from repair.stream import DECIDED, RETESTED
from schemas.repair import RateWithInterval, RepairDecision, RetestResult

SCRIPTED = ("scripted", "fixed")
COLUMNS = [
    "repair",
    "world",
    "implementation",
    "evidence",
    "target outcome",
    "episodes (retest / baseline)",
    "baseline rate",
    "retest rate",
    "realized findings",
    "AuditPass",
    "utility baseline → after",
    "Retain",
    "decision",
]


def _rate(r: RateWithInterval) -> str:
    return f"{r.successes}/{r.total} {r.rate:.1%} [{r.low:.1%}, {r.high:.1%}]"


def _decision(d: RepairDecision | None) -> str:
    if d is None:
        return "not decided"
    return "accepted" if d.accepted else "rejected: " + "; ".join(d.reasons)


def retests(ev: Evidence) -> list[Table]:
    """Every recorded retest, in store order, with the repair's latest decision."""
    key, title = "repair-retest", "Repair retests: patched workflow on fresh identities vs the original"
    denominator = (
        "retest and baseline cohorts, every job counted (an episode the workflow could not complete "
        "stays with zero utility); rates: targeted outcome over the cohort's episodes, Wilson 95%"
    )
    results: list[RetestResult] = []
    decisions: dict[str, RepairDecision] = {}
    for e in ev.store.read_all(types=[RETESTED, DECIDED]):
        if e.type == RETESTED:
            results.append(RetestResult.model_validate(e.payload["retest"]))
        else:
            d = RepairDecision.model_validate(e.payload["decision"])
            decisions[d.repair_id] = d
    if not results:
        command = "auditor repair run A1 --episodes 20"
        return [placeholder(key, title, COLUMNS, denominator, command)]
    rows, bars = [], []
    for r in results:
        scripted = r.cohort.implementation.startswith(SCRIPTED)
        rows.append(
            [
                r.repair_id,
                r.cohort.world,
                r.cohort.implementation,
                "simulation (scripted policy)" if scripted else "model measurement",
                r.target_outcome,
                f"{len(r.cohort.episode_ids)} / {len(r.baseline.episode_ids)}",
                _rate(r.baseline_target),
                _rate(r.target),
                str(r.realized_findings),
                str(r.audit_pass),
                f"{r.utility_baseline:.3f} → {r.utility_after:.3f}",
                "n/a (no positive baseline)" if r.retain is None else f"{r.retain:.3f}",
                _decision(decisions.get(r.repair_id)),
            ]
        )
        for label, rate in (("baseline", r.baseline_target), ("retest", r.target)):
            bars.append(Bar(f"{r.repair_id[:12]}\n{label}", rate.rate, rate.low, rate.high))
    simulated = any(row[3].startswith("simulation") for row in rows)
    source = "implementations " + ", ".join(sorted({r.cohort.implementation for r in results}))
    figure = Figure("targeted outcome rate (Wilson 95%)", bars)
    return [Table(key, title, COLUMNS, rows, denominator, source, simulated, figure=figure)]
