"""Scoring attributions against Who&When labels: loading cases with labels kept apart, matching
agents by name (the part before `` (``), exact and tolerant step accuracy, Wilson intervals.

The labels travel beside the trace in :class:`Case` and are read only here, after the strategy
has answered; the strategy is handed ``case.trace`` (header and steps, no labels) and, in the
"with ground truth" setting only, ``case.ground_truth``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.audit.attribution.facts import agent_name
from auditor.audit.attribution.result import Attribution
from auditor.core.errors import InputError
from schemas import Trace

SUBSETS = ("algorithm-generated", "hand-crafted")
TOLERANCES = (1, 2, 3, 4, 5)
LABEL_KEYS = ("mistake_agent", "mistake_step", "mistake_step_id", "mistake_reason", "ground_truth")

# Table 1 of Zhang et al. (ICML 2025), GPT-4o judge: (agent %, step %) per (setting, subset).
PUBLISHED: dict[str, dict[tuple[str, str], tuple[float, float]]] = {
    "random": {("with", "algorithm-generated"): (29.10, 19.06), ("with", "hand-crafted"): (12.00, 4.16),
               ("without", "algorithm-generated"): (29.10, 19.06), ("without", "hand-crafted"): (12.00, 4.16)},
    "all_at_once": {("with", "algorithm-generated"): (54.33, 12.50), ("with", "hand-crafted"): (55.17, 5.26),
                    ("without", "algorithm-generated"): (51.12, 13.53), ("without", "hand-crafted"): (53.44, 3.51)},
    "step_by_step": {("with", "algorithm-generated"): (35.20, 25.51), ("with", "hand-crafted"): (34.48, 7.02),
                     ("without", "algorithm-generated"): (26.02, 15.31), ("without", "hand-crafted"): (32.75, 8.77)},
    "binary_search": {("with", "algorithm-generated"): (44.13, 23.98), ("with", "hand-crafted"): (51.72, 6.90),
                      ("without", "algorithm-generated"): (30.11, 16.59), ("without", "hand-crafted"): (36.21, 6.90)},
}  # fmt: skip


def best_published(subset: str) -> tuple[float, float]:
    """The bar: the best published agent and step accuracy on a subset over methods and settings."""
    cells = [v for m in PUBLISHED.values() for (_, sub), v in m.items() if sub == subset]
    return max(a for a, _ in cells), max(s for _, s in cells)


@dataclass(frozen=True)
class Case:
    """One labelled failure: the trace a strategy sees, and the labels only the scorer reads."""

    name: str
    subset: str
    trace: Trace
    mistake_agent: str
    mistake_step: int
    ground_truth: str | None


def load_cases(root: Path, subsets: tuple[str, ...] = SUBSETS) -> Iterator[Case]:
    """Who&When files under ``root/<subset>/*.json`` (or ``root`` itself as one subset folder)."""
    from ingest import open_traces

    root = Path(root)
    dirs = [root / s for s in subsets if (root / s).is_dir()] or [root]
    files = [p for d in dirs for p in sorted(d.glob("*.json"), key=_file_order)]
    if not files:
        raise InputError("no Who&When JSON files found", path=str(root), hint="give the whowhen data folder")
    for path in files:
        for imported in open_traces(path, "whowhen"):
            header = imported.header
            trace = Trace(header=header, steps=list(imported.steps()))
            labels = imported.labels.labels if imported.labels else {}
            if "mistake_agent" not in labels or "mistake_step" not in labels:
                raise InputError("no mistake_agent/mistake_step labels", path=str(path), field="mistake_step")
            leaked = [k for k in LABEL_KEYS if k in header.metadata]
            if leaked:
                raise InputError(f"labels leaked into the header: {leaked}", path=str(path), field="metadata")
            gt = labels.get("ground_truth", labels.get("groundtruth"))
            yield Case(
                name=f"{header.metadata.get('subset', path.parent.name)}/{path.name}",
                subset=str(header.metadata.get("subset", path.parent.name)),
                trace=trace,
                mistake_agent=str(labels["mistake_agent"]),
                mistake_step=int(str(labels["mistake_step"]).strip()),
                ground_truth=None if gt is None else str(gt),
            )


def _file_order(p: Path) -> tuple[int, str]:
    return (int(p.stem), p.stem) if p.stem.isdigit() else (1 << 30, p.stem)


@dataclass(frozen=True)
class Outcome:
    """One prediction scored against its labels."""

    case: str
    subset: str
    strategy: str
    setting: str
    predicted_agent: str | None
    predicted_step: int | None
    label_agent: str
    label_step: int
    agent_ok: bool
    step_ok: bool
    step_distance: int | None
    confidence: float | None

    def row(self) -> dict[str, Any]:
        return self.__dict__.copy()


def score(case: Case, attribution: Attribution, setting: str) -> Outcome:
    agent = agent_name(attribution.agent) if attribution.agent else None
    distance = None if attribution.step_index is None else abs(attribution.step_index - case.mistake_step)
    return Outcome(
        case=case.name,
        subset=case.subset,
        strategy=attribution.strategy,
        setting=setting,
        predicted_agent=agent,
        predicted_step=attribution.step_index,
        label_agent=case.mistake_agent,
        label_step=case.mistake_step,
        agent_ok=agent is not None and agent == agent_name(case.mistake_agent),
        step_ok=distance == 0,
        step_distance=distance,
        confidence=attribution.steps[0].confidence if attribution.steps else None,
    )


@dataclass(frozen=True)
class Summary:
    """Accuracy of one strategy on one subset in one setting, with Wilson intervals."""

    strategy: str
    setting: str
    subset: str
    n: int
    agent_hits: int
    step_hits: int
    within: dict[int, int]


def summarise(outcomes: list[Outcome]) -> list[Summary]:
    groups: dict[tuple[str, str, str], list[Outcome]] = {}
    for o in outcomes:
        groups.setdefault((o.strategy, o.setting, o.subset), []).append(o)
    return [
        Summary(
            strategy=k[0],
            setting=k[1],
            subset=k[2],
            n=len(v),
            agent_hits=sum(o.agent_ok for o in v),
            step_hits=sum(o.step_ok for o in v),
            within={
                t: sum(o.step_distance is not None and o.step_distance <= t for o in v) for t in TOLERANCES
            },
        )
        for k, v in groups.items()
    ]
