"""The V3 report as one self-contained HTML page: findings, the graph drawing, a readable transcript.

Each evidence quote links to its step in the transcript (``#step-<id>``), where the quoted text is
marked. The page loads nothing from the network: the stylesheet is inline, the graph drawing is an
SVG inside a data URI (an ``<img>``, so nothing in the drawing can run), and a Content Security
Policy forbids scripts and remote loads. All trace text is untrusted and goes through
``html.escape``; the CSP is a second wall, not the first.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from typing import TYPE_CHECKING

from auditor.audit import test_timeline as tl
from auditor.audit.report.render_graph import graph_figure
from auditor.audit.report.render_html_style import CSS
from auditor.audit.report.render_text import (
    CRITERION_TEXT,
    DISPOSITION_TEXT,
    RISK_TEXT,
    cited_acts,
    headline,
    incident_lines,
    plan_items,
    shorten,
    words,
)
from schemas import AuditReport, Finding, Trace, TraceStep
from schemas.failure import MAST_MODES

if TYPE_CHECKING:
    from graph import InteractionGraph

# Above this many steps the transcript keeps the cited steps and their neighbours only.
FULL_TRANSCRIPT_STEPS = 2000
CONTEXT_STEPS = 2
# An uncited step's content is cut after this many characters (cited steps are shown whole).
UNCITED_CONTENT_CHARS = 20_000
TASK_CHARS = 300  # a longer task text is folded

_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
_UNSAFE_ID = re.compile(r"[^A-Za-z0-9.-]")

e = html.escape


def step_anchor(step_id: str) -> str:
    """The element id of a step in the transcript: injective, and safe in an id and a URL fragment."""
    return "step-" + _UNSAFE_ID.sub(lambda m: f"_{ord(m.group()):x}_", step_id)


def quote_span(content: str, quote: str) -> tuple[int, int] | None:
    """Where a quote stands in (NFC-normalised) content, allowing only whitespace runs to differ:
    the same normalisation the validator accepts."""
    tokens = unicodedata.normalize("NFC", quote).split()
    if not tokens:
        return None
    match = re.search(r"\s+".join(map(re.escape, tokens)), content)
    return (match.start(), match.end()) if match else None


def render_html(report: AuditReport, trace: Trace, graph: InteractionGraph | None = None) -> str:
    """The page. ``graph`` is drawn when given; otherwise the trace's topology graph is built."""
    cites = _citations(report)
    shown = _shown_positions(trace, {sid for f in report.findings for sid in _cited_steps(f)})
    title = f"Audit report: {report.trace_id}"
    body = [
        '<a class="skip" href="#findings">Skip to the findings</a>',
        "<main>",
        _header(report, trace, title),
        _findings(report, cited_acts(report, trace)),
        _test_runs(trace, {trace.steps[i].step_id for i in shown}),
        '<section id="graph" aria-labelledby="graph-h"><h2 id="graph-h">Interaction graph</h2>',
        graph_figure(report, trace, graph),
        "</section>",
        _transcript(trace, shown, cites),
        _notes(report),
        "</main>",
    ]
    head = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="agent-auditor {e(report.engine)}">'
        f"<title>{e(title)}</title><style>{CSS}</style></head><body>"
    )
    return head + "\n".join(body) + "</body></html>\n"


def _header(report: AuditReport, trace: Trace, title: str) -> str:
    meta = [
        ("Report", report.report_id),
        ("Trace digest", report.trace_digest),
        ("Engine", report.engine + (f" · model {report.model}" if report.model else "")),
        (
            "Graph",
            f"{words(report.graph_mode.value)}"
            + (f" · {report.graph_digest}" if report.graph_digest else ""),
        ),
        ("Contract", report.contract_version),
        ("Steps", str(len(trace.steps))),
        ("Created", report.created_at),
        *incident_lines(report, trace),
    ]
    rows = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in meta)
    if trace.header.task:
        rows = f"<dt>Task</dt><dd>{_long_text(trace.header.task)}</dd>" + rows
    nav = "".join(
        f'<li><a href="#{i}">{t}</a></li>'
        for i, t in [("findings", "Findings"), ("graph", "Graph"), ("transcript", "Transcript")]
    )
    return (
        f"<header><h1>{e(title)}</h1>"
        f'<p><span class="decision {report.decision.value}">{e(headline(report))}</span></p>'
        f'<p class="summary">{e(report.summary)}</p><dl class="meta">{rows}</dl>'
        f'<nav aria-label="Sections"><ul>{nav}</ul></nav></header>'
    )


def _long_text(text: str) -> str:
    """Short text as is; long text folded under its first line (a <details> works by keyboard)."""
    if len(text) <= TASK_CHARS:
        return e(text)
    return f'<details><summary>{e(shorten(text, 160))}</summary><div class="long">{e(text)}</div></details>'


def _findings(report: AuditReport, acts: dict[str, str]) -> str:
    out = ['<section id="findings" aria-labelledby="findings-h"><h2 id="findings-h">Findings</h2>']
    if not report.findings:
        return out[0] + '<p class="note">No finding was filed.</p></section>'
    out.append(
        "<table><thead><tr><th>#</th><th>Finding</th><th>Risk class</th><th>Disposition</th>"
        "<th>Severity</th><th>Confidence</th><th>First anomalous step</th></tr></thead><tbody>"
    )
    for n, f in enumerate(report.findings, start=1):
        out.append(
            f'<tr><td>{n}</td><td><a href="#finding-{n}">{e(f.title)}</a></td>'
            f"<td>{e(RISK_TEXT[f.risk_class].title)}</td><td>{_badge(f)}</td><td>{f.severity.value}</td>"
            f"<td>{f.confidence:.2f}</td><td>{_step_link(f.first_anomalous_step)}</td></tr>"
        )
    out.append("</tbody></table>")
    out += [_finding(n, f, report, acts) for n, f in enumerate(report.findings, start=1)]
    return "\n".join(out) + "</section>"


def _finding(n: int, f: Finding, report: AuditReport, acts: dict[str, str]) -> str:
    facts = [
        ("Risk class", f"{e(RISK_TEXT[f.risk_class].title)} <code>{e(f.risk_class.value)}</code>"),
        ("Disposition", _badge(f)),
        *(
            [("MAST failure mode", f"{f.failure_mode} ({MAST_MODES[f.failure_mode]})")]
            if f.failure_mode
            else []
        ),
        ("Severity", f.severity.value),
        ("Confidence", f"{f.confidence:.2f}"),
        ("Boundary edge", f"<code>{e(f.boundary_edge)}</code>"),
        ("First anomalous step", _step_link(f.first_anomalous_step)),
        ("Responsible participant", e(f.responsible_participant or "not established")),
    ]
    if f.detector:
        facts.append(("Filed by", f"<code>{e(f.detector)}</code>"))
    if f.policy_rule:
        facts.append(("Policy rule", e(f.policy_rule)))
    dl = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts)
    hops = "".join(
        f"<li>{_step_link(h.step_id)}"
        + (f" <code>{e(h.edge_ref)}</code>" if h.edge_ref else "")
        + (f" — {e(h.note)}" if h.note else "")
        + "</li>"
        for h in f.propagation_path
    )
    criteria = "".join(
        f"<tr><th scope=row>{key}: {CRITERION_TEXT[key]}</th>"
        f'<td class="verdict-{c.verdict.value}">{c.verdict.value}</td><td>{e(c.rationale)}</td></tr>'
        for key, c in (
            ("R1", f.criteria.R1),
            ("R2", f.criteria.R2),
            ("R3", f.criteria.R3),
            ("R4", f.criteria.R4),
        )
    )
    evidence = "".join(
        f'<li><a class="evidence-link" href="#{step_anchor(u.step_id)}">'
        f"<blockquote>{e(u.quote)}</blockquote>"
        f'<span class="cite">step {e(u.step_id)}'
        + (f" ({e(acts[u.step_id])})" if u.step_id in acts else "")
        + f" · edge {e(u.edge_ref)} · go to the step</span></a></li>"
        for u in f.evidence
    )
    plan = "".join(
        f"<li><strong>{e(i.control)}</strong> — surface: "
        + ", ".join(f"<code>{e(s)}</code>" for s in i.surface)
        + f". {e(i.rationale)}</li>"
        for i in plan_items(report, f)
    )
    return (
        f'<article class="finding {f.disposition.value}" id="finding-{n}" aria-labelledby="finding-{n}-h">'
        f'<h3 id="finding-{n}-h">{n}. {e(f.title)}</h3><p class="note">Finding <code>{e(f.finding_id)}</code></p>'
        f'<dl class="facts">{dl}</dl>'
        f"<p><strong>Mechanism.</strong> {e(f.mechanism)}</p>"
        f"<p><strong>Material effect.</strong> {e(f.material_effect or 'none established')}</p>"
        + (f'<h4>Propagation path</h4><ol class="path">{hops}</ol>' if hops else "")
        + "<h4>Criteria</h4><table><thead><tr><th>Criterion</th><th>Verdict</th><th>Rationale</th></tr>"
        f"</thead><tbody>{criteria}</tbody></table>"
        f'<h4>Evidence</h4><ul class="evidence">{evidence}</ul>'
        + (f"<h4>Repair plan</h4><ul>{plan}</ul>" if plan else "")
        + "</article>"
    )


def _test_runs(trace: Trace, shown: set[str]) -> str:
    """A coding run's test timeline, each step linked where the transcript shows it (nothing for
    another run)."""
    found = tl.timeline(trace)
    if not tl.is_coding(found):
        return ""

    def step(step_id: str | None) -> str:
        if step_id is None:
            return ""
        return _step_link(step_id) if step_id in shown else f"<code>{e(step_id)}</code>"

    def head(columns: tuple[str, ...]) -> str:
        return "<thead><tr>" + "".join(f"<th>{e(c)}</th>" for c in columns) + "</tr></thead>"

    rows = "".join(
        f"<tr><td>{step(x.step)}</td><td>{e(x.act)}</td><td>{e(x.code or '')}</td>"
        f"<td><code>{e(tl.what_text(found, x))}</code></td><td>{step(x.result_step)} {e(tl.result_text(x))}</td></tr>"
        for x in found.entries
    )
    out = [
        '<section id="test-runs" aria-labelledby="test-runs-h"><h2 id="test-runs-h">Test runs</h2>',
        f"<p>{e(tl.submission_line(found))}</p>",
        "<ul>"
        + "".join(
            f"<li><strong>{e(label)}:</strong> {e(text)}</li>" for label, text in tl.evidence_lines(found)
        )
        + "</ul>",
        f"<table>{head(tl.ENTRY_COLUMNS)}<tbody>{rows}</tbody></table>",
    ]
    if found.verdicts:
        cells = (tl.verdict_cells(v) for v in found.verdicts)
        verdicts = "".join(
            f"<tr><td><code>{e(t)}</code></td><td>{step(first)}</td><td>{step(last)}</td><td>{e(then)}</td><td>{e(orig)}</td></tr>"
            for t, first, last, then, orig in cells
        )
        out.append(
            f"<h3>{e(tl.VERDICT_TITLE.capitalize())}</h3><table>{head(tl.VERDICT_COLUMNS)}<tbody>{verdicts}</tbody></table>"
        )
    return "\n".join(out) + "</section>"


def _badge(f: Finding) -> str:
    """The disposition as a coloured label, with the intercepting step linked where there is one."""
    badge = f'<span class="badge {f.disposition.value}">{e(DISPOSITION_TEXT[f.disposition])}</span>'
    return badge + (f" stopped at {_step_link(f.intercepted_at)}" if f.intercepted_at else "")


def _step_link(step_id: str) -> str:
    return f'<a href="#{step_anchor(step_id)}"><code>{e(step_id)}</code></a>'


def _cited_steps(f: Finding) -> list[str]:
    ids = [f.first_anomalous_step, *(u.step_id for u in f.evidence), *(h.step_id for h in f.propagation_path)]
    return ids + ([f.intercepted_at] if f.intercepted_at else [])


def _citations(report: AuditReport) -> dict[str, list[tuple[int, str]]]:
    """Step id → (finding number, quote) for every evidence unit citing it."""
    cites: dict[str, list[tuple[int, str]]] = {}
    for n, f in enumerate(report.findings, start=1):
        for u in f.evidence:
            cites.setdefault(u.step_id, []).append((n, u.quote))
    return cites


def _shown_positions(trace: Trace, cited: set[str]) -> list[int]:
    """Every step of a readable trace; on a long one, the cited steps with a little context."""
    if len(trace.steps) <= FULL_TRANSCRIPT_STEPS:
        return list(range(len(trace.steps)))
    keep: set[int] = set()
    for i, s in enumerate(trace.steps):
        if s.step_id in cited:
            keep.update(range(max(0, i - CONTEXT_STEPS), min(len(trace.steps), i + CONTEXT_STEPS + 1)))
    return sorted(keep)


def _transcript(trace: Trace, shown: list[int], cites: dict[str, list[tuple[int, str]]]) -> str:
    out = ['<section id="transcript" aria-labelledby="transcript-h"><h2 id="transcript-h">Transcript</h2>']
    if len(shown) < len(trace.steps):
        out.append(
            f'<p class="note">Showing {len(shown)} of {len(trace.steps)} steps: the cited ones in context.</p>'
        )
    out.append('<ol class="transcript">')
    prev = -1
    for i in shown:
        if i > prev + 1:
            out.append(f'<li class="gap">… {i - prev - 1} step(s) not shown …</li>')
        out.append(_step(trace.steps[i], cites.get(trace.steps[i].step_id, [])))
        prev = i
    if shown and shown[-1] < len(trace.steps) - 1:
        out.append(f'<li class="gap">… {len(trace.steps) - 1 - shown[-1]} step(s) not shown …</li>')
    return "\n".join(out) + "</ol></section>"


def _step(step: TraceStep, cites: list[tuple[int, str]]) -> str:
    recipients = ", ".join(step.recipients) if step.recipients is not None else "recipients not recorded"
    back = " ".join(f'<a href="#finding-{n}">finding {n}</a>' for n in sorted({n for n, _ in cites}))
    head = (
        f'<div class="step-head"><a href="#{step_anchor(step.step_id)}" class="mono">{e(step.step_id)}</a>'
        f"<span>#{step.index}</span><span><span class=actor>{e(step.actor)}</span> ({step.actor_kind.value})"
        f" → {e(recipients)}</span><span>{words(step.kind.value)}</span>"
        + (f"<time>{e(step.timestamp)}</time>" if step.timestamp else "")
        + (f"<span>cited by {back}</span>" if back else "")
        + "</div>"
    )
    tool = ""
    if step.tool is not None:
        args = step.tool.arguments
        shown_args = args if isinstance(args, str) or args is None else json.dumps(args, ensure_ascii=False)
        tool = (
            f'<div class="tool mono">{e(step.tool.name)}'
            + (f"({e(shown_args)})" if shown_args is not None else "")
            + (f" · call {e(step.tool.call_id)}" if step.tool.call_id else "")
            + "</div>"
        )
    content = _marked(unicodedata.normalize("NFC", step.content), [q for _, q in cites])
    css = "step cited" if cites else "step"
    return f'<li class="{css}" id="{step_anchor(step.step_id)}" tabindex="-1">{head}{tool}<pre>{content}</pre></li>'


def _marked(content: str, quotes: list[str]) -> str:
    """Escaped content with each quote wrapped in <mark> (overlapping quotes merge into one)."""
    spans = sorted(s for q in quotes if (s := quote_span(content, q)) is not None)
    if not spans and len(content) > UNCITED_CONTENT_CHARS:
        cut = len(content) - UNCITED_CONTENT_CHARS
        return e(content[:UNCITED_CONTENT_CHARS]) + f'<span class="note"> … {cut} more characters</span>'
    merged: list[list[int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out, pos = [], 0
    for start, end in merged:
        out += [e(content[pos:start]), f"<mark>{e(content[start:end])}</mark>"]
        pos = end
    return "".join(out) + e(content[pos:])


def _notes(report: AuditReport) -> str:
    if not report.notes:
        return ""
    items = "".join(f"<li>{e(n)}</li>" for n in report.notes)
    return (
        f'<section id="notes" aria-labelledby="notes-h"><h2 id="notes-h">Notes</h2><ul>{items}</ul></section>'
    )
