"""One entry point for every report format: ``render(report, trace, fmt, graph=None) -> str``, and
``render_reports`` for the reports of a multi-trace file as one text.

The CLI and the server call this; each format lives in its own module, loaded only when asked for.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from auditor.core.errors import InputError
from schemas import AuditReport, Trace

if TYPE_CHECKING:
    from graph import InteractionGraph

FORMATS = ("json", "md", "html", "sarif")


def render(report: AuditReport, trace: Trace, fmt: str, graph: InteractionGraph | None = None) -> str:
    """The report as text in ``fmt``; ``graph`` (HTML only) saves rebuilding it for the drawing."""
    if trace.header.trace_id != report.trace_id:
        raise InputError(
            f"the report audits trace '{report.trace_id}', not '{trace.header.trace_id}'",
            field="trace_id",
            hint="render a report together with the trace it audits",
        )
    if fmt == "json":
        return report.model_dump_json(indent=2) + "\n"
    if fmt == "md":
        from auditor.audit.report.render_markdown import render_markdown

        return render_markdown(report, trace)
    if fmt == "html":
        from auditor.audit.report.render_html import render_html

        return render_html(report, trace, graph)
    if fmt == "sarif":
        from auditor.audit.report.render_sarif import render_sarif

        return render_sarif(report, trace)
    raise InputError(
        f"unknown report format '{fmt}'", field="format", hint=f"valid formats: {', '.join(FORMATS)}"
    )


def render_reports(pairs: Sequence[tuple[AuditReport, Trace]], fmt: str) -> str:
    """The reports of one input as one file's text: in JSON one report's object, or an array of
    them when the input held several traces; in another format each report in turn."""
    if fmt == "json" and len(pairs) > 1:
        return json.dumps([report.model_dump(mode="json") for report, _ in pairs], indent=2) + "\n"
    return "\n".join(render(report, trace, fmt) for report, trace in pairs)
