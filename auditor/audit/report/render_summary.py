"""The terminal summary of a review, laid out for the console's width (80 columns and up).

A seven-column table does not fit 80 columns: rich cut the risk class to ``informati…`` and
wrapped the title a word per line. Each finding is a block instead: its identifiers on one line,
never cut (they are what a reader searches for), then the title, the boundary and the mechanism
wrapped at full width under a hanging indent, then the evidence. Everything from the trace is
printed as rich ``Text``, never parsed as console markup: trace content is data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.padding import Padding
from rich.text import Text

from auditor.audit.report.render_text import cited_acts, incident_lines
from auditor.audit.test_timeline import evidence_lines, is_coding, timeline
from schemas import Severity

if TYPE_CHECKING:
    from rich.console import Console

    from auditor.audit.report.validator import ValidationResult
    from schemas import AuditReport, Finding, Trace

INDENT = 3
SHOWN = 20  # findings printed in full; a long trace can file thousands
_SEVERITY = list(Severity)


def print_summary(
    console: Console, report: AuditReport, trace: Trace, validation: ValidationResult, importer: str
) -> None:
    """Print the decision, one block per finding, the notes and the validation line."""
    head = Text(report.trace_id, style="bold")
    head.append(f" ({importer}, {len(trace.steps)} steps, graph {report.graph_mode.value})")
    console.print(head)
    console.print(f"report {report.report_id}", highlight=False)
    colour = "red" if report.decision.value == "risk_identified" else "green"
    console.print(Text.assemble("decision: ", (report.decision.value, colour)))
    _indented(console, Text(report.summary), 1)
    for label, text in incident_lines(report, trace):
        console.print(Text.assemble((f"{label.lower()}: ", "bold"), text))
    shown = _most_severe(report.findings, SHOWN)
    acts = cited_acts(report, trace)
    for i, finding in enumerate(report.findings):
        if i in shown:
            _print_finding(console, i + 1, finding, acts)
    if len(shown) < len(report.findings):
        console.print(_not_shown(report.findings, shown))
    for note in report.notes:
        console.print(Text.assemble(("note:", "yellow"), f" {note}"))
    found = timeline(trace)
    if any(f.detector == "coding_verification" for f in report.findings) or is_coding(found):
        # what its tests said: the facts a coding finding rests on, or why none was filed
        console.print(Text.assemble(("test runs: ", "bold"), f"auditor traces tests {report.trace_id}"))
        for label, text in evidence_lines(found):
            _indented(console, Text(f"{label}: {text}"), 1)
    console.print(
        f"validated: schema ok, {validation.resolved}/{len(validation.units)} evidence units resolve"
    )


def _most_severe(findings: list[Finding], limit: int) -> set[int]:
    """The indexes of the ``limit`` most severe findings (the earlier first among equals): they
    are printed in the report's order, under their numbers in the report."""
    ranked = sorted(range(len(findings)), key=lambda i: (-_SEVERITY.index(findings[i].severity), i))
    return set(ranked[:limit])


def _not_shown(findings: list[Finding], shown: set[int]) -> Text:
    """One line for the findings left out: how many, of which detectors, and how to see them."""
    counts: dict[str, int] = {}
    for i, f in enumerate(findings):
        if i not in shown:
            counts[f.detector] = counts.get(f.detector, 0) + 1
    by = ", ".join(f"{d} {n:,}" for d, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    rest = len(findings) - len(shown)
    return Text(
        f"… {rest:,} more finding(s), none more severe than those above ({by}); "
        "the whole report: -o report.json or --format md"
    )


def _print_finding(console: Console, number: int, f: Finding, acts: dict[str, str]) -> None:
    ids = Text.assemble((f"{number}. ", "bold"), (f.risk_class.value, "bold"))
    ids.append(f" · {f.disposition.value} · severity {f.severity.value}")

    console.print(ids)
    where = f"first step {f.first_anomalous_step} · boundary {f.boundary_edge}"
    if f.intercepted_at:
        where += f" · intercepted at {f.intercepted_at}"
    if f.policy_rule:
        where += f" · rule {f.policy_rule}"
    if f.failure_mode:
        where += f" · MAST {f.failure_mode}"
    for line in (Text(f.title, style="bold"), Text(where, style="dim"), Text(f.mechanism)):
        _indented(console, line, 1)
    for unit in f.evidence:
        act = f" {acts[unit.step_id]}" if unit.step_id in acts else ""
        _indented(
            console, Text.assemble((f"{unit.step_id} {unit.edge_ref}", "dim"), f"{act} “{unit.quote}”"), 2
        )


def _indented(console: Console, text: Text, level: int) -> None:
    """Text wrapped at the console's width under a hanging indent."""
    console.print(Padding(text, (0, 0, 0, level * INDENT), expand=False))
