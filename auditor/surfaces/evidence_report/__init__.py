"""The whole regenerated evidence set: attribution audit, world evidence, repair retests.

``BUILDERS`` is the ordered registry: each builder reads the store through an ``Evidence`` and
returns its tables. A later control adds its tables with one line here.

The package stands on the top floor, beside the CLI and the server: it assembles the others
(``scoring``'s runs and statistics, ``worlds``' cohorts, ``repair.stream``'s retests), and only
``auditor evidence report`` imports it.
"""

from __future__ import annotations

from collections.abc import Callable

from auditor.surfaces.evidence_report import attribution, controls, relabel, repair, worlds
from auditor.surfaces.evidence_report.source import Evidence
from auditor.surfaces.evidence_report.table import NO_RUNS, Table

Builder = Callable[[Evidence], list[Table]]

BUILDERS: list[tuple[str, Builder]] = [
    ("matched interventions", attribution.matched),
    ("generated actions", attribution.generation),
    ("rescue prediction", attribution.rescue_prediction),
    ("degradation", attribution.degradation),
    ("degradation prediction", attribution.degradation_prediction),
    ("coalition anchors", attribution.coalition),
    ("screening", attribution.screening),
    ("guardrail", attribution.guardrail),
    ("null controls", controls.stored_controls),
    ("construction controls", controls.construction),
    ("elicitation variants", controls.elicitation),
    ("perturbation checks", controls.perturbation),
    ("API proxy", controls.api_proxy),
    ("world endpoint rates", worlds.endpoint_rates),
    ("world contrasts", worlds.contrasts),
    ("implementation × risk", worlds.risk_matrix),
    ("C1 handoffs", worlds.c1),
    ("D1 field atlas", worlds.d1),
    ("F1 cascade", worlds.f1),
    ("repair retests", repair.retests),
    ("relabelling study", relabel.study),
    ("workload", controls.workload),
]


def build_tables(ev: Evidence, progress: Callable[[str], None] | None = None) -> list[Table]:
    """Every registered table in order; ``progress`` hears each builder's name when it is done."""
    tables: list[Table] = []
    for name, builder in BUILDERS:
        tables += builder(ev)
        if progress is not None:
            progress(name)
    return tables


__all__ = ["BUILDERS", "NO_RUNS", "Builder", "Evidence", "Table", "build_tables"]
