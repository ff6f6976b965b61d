"""Shared set-up for the repair tests: a real audited world episode in a real store, opened as a repair."""

from __future__ import annotations

from typing import Any

from auditor.audit.review import audit_trace
from repair.propose import select_items
from repair.service import audit_context, open_repair
from worlds import get_world, record_cohort, run_cohort


def open_audited_repair(
    store: Any, world_name: str, episodes: int = 2, item_ids: list[str] | None = None
) -> str:
    """Run a small scripted cohort, audit it, and open a repair on the first report with a usable plan."""
    world = get_world(world_name)
    wf = world.workflow()
    cohort = run_cohort(world, world.scripted(), world.canonical_conditions, episodes, 0, wf)
    record_cohort(store, cohort)
    for ep in sorted(cohort.episodes, key=lambda e: not e.outcome.target_fired):
        report, _ = audit_trace(store, ep.trace())
        if report.repair_plan:
            items = select_items(report, wf, item_ids)
            keys = [e.spec.identity.key for e in cohort.episodes]
            return open_repair(store, audit_context(store, report, wf, items, keys))
    raise AssertionError(f"no {world_name} report carried a repair plan")
