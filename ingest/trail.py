"""TRAIL benchmark traces (patronus-ai/trail-benchmark: GAIA and SWE-bench runs of smolagents).

A TRAIL file is one trace document: ``trace_id`` and ``spans``, each span nesting its children in
``child_spans``, with ``span_name``, ``span_kind`` (always "Internal"), ``status_code``,
``timestamp`` and the OpenInference attributes in ``span_attributes`` (ingest.spans reads the
tree). The attributes are OpenInference's, so the steps are drawn as the OpenInference importer
draws them: the agent's task (``CodeAgent.run``'s ``input.value``), each model output, each tool
result, the agent's answer.

Beside the spans, the harness's function spans carry ``logs`` whose bodies hold the benchmark
example (question, gold answer, annotator steps) and the run's result: grading material, kept in
the labels record and never in a step.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ingest.base import head_text
from ingest.frameworks.common import pack_raw
from ingest.jsonstream import top_level_kind
from ingest.openinference import OpenInferenceImporter
from ingest.spans import Span
from schemas.trace import WithheldItem

LOGS_RULE = "trail.logs: the harness's function logs (the benchmark example, its gold answer, the result)"


class TrailImporter(OpenInferenceImporter):
    name = "trail"
    description = "TRAIL benchmark traces (a trace document of nested child_spans with span_attributes)"
    prefix = "trail"

    def detect(self, path: Path, head: bytes) -> str | None:
        text = head_text(head)
        if (
            top_level_kind(head) == "object"
            and re.search(r'"spans"\s*:\s*\[', text)
            and '"span_attributes"' in text
            and ('"child_spans"' in text or '"parent_span_id"' in text)
        ):
            return "a trace document whose spans carry 'span_attributes' and nest 'child_spans' (TRAIL)"
        return None

    def withheld(self, spans: list[Span]) -> tuple[dict[str, Any], list[WithheldItem]]:
        labels, withheld = super().withheld(spans)
        logs = [pack_raw(span_id=s.span_id, span_name=s.name, logs=s.logs) for s in spans if s.logs]
        if logs:
            labels["harness_logs"] = logs
            withheld.append(WithheldItem(what="harness_logs", where="span logs", rule=LOGS_RULE))
        return labels, withheld


IMPORTER = TrailImporter()
