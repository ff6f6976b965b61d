"""The V3 report as Markdown for a ticket: decision, summary, a findings table, then each finding.

Every string that can come from a trace (titles, mechanisms, rationales, participant names, quotes)
is escaped, so trace text renders as text: no headings, links, emphasis, tables or raw HTML can be
smuggled into a ticket through an agent's message.
"""

from __future__ import annotations

import re

from auditor.audit import test_timeline as tl
from auditor.audit.report.render_text import (
    CRITERION_TEXT,
    RISK_TEXT,
    cited_acts,
    disposition_phrase,
    headline,
    incident_lines,
    plan_items,
    shorten,
    words,
)
from auditor.core.markdown import markdown_table
from schemas import AuditReport, Finding, RepairPlanItem, Trace
from schemas.failure import MAST_MODES

TASK_CHARS = 400  # a ticket shows the start of a long task text; the trace holds the rest
# Characters with inline meaning in CommonMark/GFM (and `$` for GitHub math), escaped anywhere.
_INLINE = re.compile(r"([\\`*_\[\]|~$])")
# Markers that only mean something at the start of a line, as CommonMark reads them: a heading's
# hashes and a list's bullet or number need a blank (or the line's end) after them; a line of only
# ``=`` or ``-`` underlines the line before or draws a rule. Anything else there is text: a number
# such as 0.51 or -3 prints as written.
_LINE_START = re.compile(r"^(#{1,6}|[+\-]|\d{1,9}[.)])(?=[ \t]|$)|^([=\-])(?=[ \t=\-]*$)", re.MULTILINE)
# Leading blanks would turn a line into an indented code block: keep them as entities.
_INDENT = re.compile(r"^[ \t]+", re.MULTILINE)


def md_text(text: str) -> str:
    """Escape trace-derived text so it renders literally (entities for <, >, &; backslashes else)."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _INLINE.sub(r"\\\1", text)
    text = _INDENT.sub(lambda m: "&#32;" * len(m.group().expandtabs(4)), text)
    return _LINE_START.sub(lambda m: _escape_marker(m.group(1) or m.group(2)), text)


def _escape_marker(marker: str) -> str:
    if marker[0].isdigit():
        return marker[:-1] + "\\" + marker[-1]
    return "\\" + marker


def md_cell(text: str) -> str:
    """Escaped text that stays inside one table cell (no line breaks)."""
    return md_text(" ".join(text.split()))


def md_code(ident: str) -> str:
    """An identifier (step id, edge ref) as a code span, or escaped text where it cannot be one."""
    if ident and not any(c in ident for c in "`|\n") and ident.strip() == ident:
        return f"`{ident}`"
    return md_cell(ident)


def md_quote(text: str) -> list[str]:
    """A verbatim quote as blockquote lines (blank lines kept inside the quote)."""
    return [f"> {md_text(line)}" if line.strip() else ">" for line in text.splitlines() or [""]]


def render_markdown(report: AuditReport, trace: Trace) -> str:
    """The whole report; ``trace`` supplies the task text and step count shown in the header."""
    out = [f"# Audit report: {md_code(report.trace_id)}", ""]
    out += [f"**Decision:** {md_text(headline(report))}", ""]
    if trace.header.task:
        out += [f"**Task:** {md_text(shorten(trace.header.task, TASK_CHARS))}", ""]
    out += [
        f"Report {md_code(report.report_id)} · engine {md_code(report.engine)}"
        + (f" · model {md_code(report.model)}" if report.model else "")
        + f" · graph {words(report.graph_mode.value)} · contract {report.contract_version}"
        + f" · {len(trace.steps)} steps · trace digest {md_code(report.trace_digest)}"
        + f" · created {md_text(report.created_at)}",
        "",
        "## Summary",
        "",
        md_text(report.summary),
        "",
    ]
    incident = incident_lines(report, trace)
    if incident:
        out += [f"- **{label}:** {md_text(text)}" for label, text in incident] + [""]
    if report.findings:
        out += _findings_table(report.findings)
        acts = cited_acts(report, trace)
        for n, finding in enumerate(report.findings, start=1):
            out += _finding_section(n, finding, plan_items(report, finding), acts)
    out += _test_runs(trace)
    if report.notes:
        out += ["## Notes", ""] + [f"- {md_cell(note)}" for note in report.notes] + [""]
    return "\n".join(out).rstrip() + "\n"


def _test_runs(trace: Trace) -> list[str]:
    """A coding run's test timeline: what the tests said, by step (nothing for another run)."""
    found = tl.timeline(trace)
    if not tl.is_coding(found):
        return []
    rows = [
        [
            md_code(e.step),
            e.act,
            e.code or "",
            md_cell(shorten(tl.what_text(found, e), 120)),
            (f"{md_code(e.result_step)} " if e.result_step else "") + md_cell(tl.result_text(e)),
        ]
        for e in found.entries
    ]
    out = [
        "## Test runs",
        "",
        md_text(tl.submission_line(found)),
        "",
        *(f"- **{label}:** {md_text(text)}" for label, text in tl.evidence_lines(found)),
        "",
        *markdown_table(list(tl.ENTRY_COLUMNS), rows),
        "",
    ]
    if found.verdicts:
        verdicts = [
            [md_cell(c) if i == 0 else md_code(c) if i < 3 else c for i, c in enumerate(tl.verdict_cells(v))]
            for v in found.verdicts
        ]
        out += [
            f"**{tl.VERDICT_TITLE.capitalize()}**",
            "",
            *markdown_table(list(tl.VERDICT_COLUMNS), verdicts),
            "",
        ]
    return out


def _findings_table(findings: list[Finding]) -> list[str]:
    columns = ["#", "Finding", "Risk class", "Disposition", "Severity", "Confidence", "First anomalous step"]
    rows = [
        [
            n,
            md_cell(f.title),
            RISK_TEXT[f.risk_class].title,
            md_cell(disposition_phrase(f)),
            f.severity.value,
            f"{f.confidence:.2f}",
            md_code(f.first_anomalous_step),
        ]
        for n, f in enumerate(findings, start=1)
    ]
    return ["## Findings", "", *markdown_table(columns, rows), ""]


def _finding_section(n: int, f: Finding, plan: list[RepairPlanItem], acts: dict[str, str]) -> list[str]:
    out = [f"## {n}. {md_cell(f.title)}", "", f"Finding {md_code(f.finding_id)}", ""]
    facts = [
        ("Risk class", f"{RISK_TEXT[f.risk_class].title} ({md_code(f.risk_class.value)})"),
        ("Disposition", md_text(disposition_phrase(f))),
        *(
            [("MAST failure mode", f"{f.failure_mode} ({MAST_MODES[f.failure_mode]})")]
            if f.failure_mode
            else []
        ),
        ("Severity", f.severity.value),
        ("Confidence", f"{f.confidence:.2f}"),
        ("Boundary edge", md_code(f.boundary_edge)),
        ("First anomalous step", md_code(f.first_anomalous_step)),
        ("Responsible participant", md_cell(f.responsible_participant or "not established")),
    ]
    if f.detector:
        facts.append(("Filed by", md_code(f.detector)))
    if f.policy_rule:
        facts.append(("Policy rule", md_cell(f.policy_rule)))
    out += [f"- **{name}:** {value}" for name, value in facts] + [""]
    out += [f"**Mechanism.** {md_text(f.mechanism)}", ""]
    out += [f"**Propagation path.** {_path(f)}", ""]
    out += [f"**Material effect.** {md_text(f.material_effect or 'none established')}", ""]
    criteria = [
        [f"{key}: {CRITERION_TEXT[key]}", c["verdict"], md_cell(c["rationale"])]
        for key, c in f.criteria.model_dump().items()
    ]
    out += ["### Criteria", "", *markdown_table(["Criterion", "Verdict", "Rationale"], criteria)]
    out += ["", "### Evidence", ""]
    for unit in f.evidence:
        out += md_quote(unit.quote)
        act = f" ({md_text(acts[unit.step_id])})" if unit.step_id in acts else ""
        out += [">", f"> — step {md_code(unit.step_id)}{act}, edge {md_code(unit.edge_ref)}", ""]
    if plan:
        out += ["### Repair plan", ""]
        for item in plan:
            surface = ", ".join(md_code(s) for s in item.surface)
            out.append(
                f"- **{md_cell(item.control)}** ({md_code(item.item_id)}) — surface: {surface}. "
                f"{md_cell(item.rationale)}"
            )
        out.append("")
    return out


def _path(f: Finding) -> str:
    if not f.propagation_path:
        return "not traced beyond the first anomalous step."
    hops = []
    for hop in f.propagation_path:
        extra = [md_code(hop.edge_ref)] if hop.edge_ref else []
        if hop.note:
            extra.append(md_cell(hop.note))
        hops.append(md_code(hop.step_id) + (f" ({', '.join(extra)})" if extra else ""))
    return " → ".join(hops)
