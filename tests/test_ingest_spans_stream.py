"""The span importers read a file in bounded memory and keep what a span's status says.

A single OTLP document is walked one span at a time (a resource may come after its spans, and the
legacy ``instrumentationLibrarySpans`` key is read); the grouping by trace spills to a temporary
SQLite file past a threshold and gives the same traces as in memory. Fixtures beside the
span fixtures of test_ingest_spans_inspect: ``otel_genai_failure.json`` (one document, resource
after its spans, a tool span whose status is STATUS_CODE_ERROR) and ``openinference_failure.jsonl``
(a Phoenix TOOL span with ``status_code: ERROR``).
"""

from __future__ import annotations

import copy
import json
from functools import partial
from pathlib import Path

import pytest

import ingest.spans as spans_module
from auditor.audit.detectors.limits import _failed
from auditor.audit.engine import run_rules_audit
from auditor.core.errors import InputError
from ingest import open_traces
from ingest.jsonstream import JsonReader
from ingest.spans import read_spans
from schemas import Trace
from schemas.trace import StepKind
from tests.conftest import REPO

FIX = REPO / "tests" / "fixtures" / "ingest"
SPAN_FILES = [
    "otel_genai.json",
    "otel_genai_generations.json",
    "otel_genai_failure.json",
    "openinference_spans.jsonl",
    "openinference_handoff.jsonl",
    "openinference_failure.jsonl",
]


def _dump(path: Path, fmt: str = "auto") -> list[tuple[dict, list[dict], dict | None]]:
    return [
        (
            t.header.model_dump(mode="json", exclude={"source"}),
            [s.model_dump(mode="json") for s in t.steps()],
            t.labels.model_dump(mode="json", exclude={"source"}) if t.labels else None,
        )
        for t in open_traces(path, fmt)
    ]


# -- grouping: in memory or spilled, the same traces ------------------------------------------


@pytest.mark.parametrize("name", SPAN_FILES)
def test_spilled_grouping_gives_the_same_traces_as_in_memory(name, monkeypatch):
    in_memory = _dump(FIX / name)
    monkeypatch.setattr(spans_module, "SPILL_AT", 3)
    assert _dump(FIX / name) == in_memory


def test_spill_file_lives_only_while_the_traces_are_read(tmp_path, monkeypatch):
    spill = tmp_path / "spill"
    spill.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(spill))
    seen = []
    for trace_id, spans in read_spans(FIX / "otel_genai_generations.json", spill_at=2):
        assert [p.suffix for p in spill.iterdir()] == [".sqlite"]
        seen.append((trace_id, [s.span_id for s in spans]))
    assert list(spill.iterdir()) == []
    assert seen == [
        (tid, [s.span_id for s in spans]) for tid, spans in read_spans(FIX / "otel_genai_generations.json")
    ]
    traces = read_spans(FIX / "otel_genai_generations.json", spill_at=2)
    next(traces)
    traces.close()  # an importer's reader abandoned half way deletes the file too
    assert list(spill.iterdir()) == []


def test_groups_come_in_first_seen_order_with_spans_by_start(tmp_path):
    def record(trace: str, span: str, start: int) -> str:
        return json.dumps({"context": {"trace_id": trace, "span_id": span}, "start_time": start}) + "\n"

    path = tmp_path / "spans.jsonl"
    path.write_text(record("B", "b2", 5) + record("A", "a1", 9) + record("B", "b1", 5) + record("A", "a0", 1))
    for spill_at in (None, 1):
        got = [(tid, [s.span_id for s in spans]) for tid, spans in read_spans(path, spill_at)]
        assert got == [("B", ["b1", "b2"]), ("A", ["a0", "a1"])]


# -- a single document, walked span by span ---------------------------------------------------


def test_single_document_with_resource_after_spans_and_the_legacy_key(tmp_path):
    doc = json.loads((FIX / "otel_genai.json").read_text())
    legacy = copy.deepcopy(doc)
    for rs in legacy["resourceSpans"]:
        rs["instrumentationLibrarySpans"] = rs.pop("scopeSpans")
        rs["resource"] = rs.pop("resource")  # now written after the spans
    assert list(legacy["resourceSpans"][0]) == ["instrumentationLibrarySpans", "resource"]
    path = tmp_path / "legacy.json"
    path.write_text(json.dumps(legacy, indent=1))
    assert _dump(path, "otel-genai") == _dump(FIX / "otel_genai.json")
    [trace] = open_traces(FIX / "otel_genai_failure.json")
    assert trace.header.framework == "order-desk"  # service.name from the resource after the spans


def test_no_value_bigger_than_one_span_is_decoded(tmp_path, monkeypatch):
    """Every span of a ~2 MB document comes through a reader that refuses values over 64 KiB:
    the document is walked, never decoded whole."""
    doc = json.loads((FIX / "otel_genai.json").read_text())
    template = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    many = []
    for n in range(400):
        for span in copy.deepcopy(template):
            span["traceId"] = f"{n:032x}"
            many.append(span)
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"] = many
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    assert path.stat().st_size > 2 * (1 << 20)
    monkeypatch.setattr(spans_module, "JsonReader", partial(JsonReader, max_value_chars=1 << 16))
    traces = list(read_spans(path, spill_at=500))
    assert len(traces) == 400 and all(len(s) == len(template) for _, s in traces)


def test_truncated_document_names_the_byte_offset(tmp_path):
    data = (FIX / "otel_genai_failure.json").read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError) as caught:
        list(open_traces(cut, "otel-genai"))
    err = caught.value
    assert err.path == str(cut) and err.offset is not None and err.line is not None
    assert 0 < err.offset <= len(data) // 2 and "byte " in str(err)


def test_a_bad_span_names_its_line_and_offset(tmp_path):
    doc = json.loads((FIX / "otel_genai_failure.json").read_text())
    del doc["resourceSpans"][0]["scopeSpans"][0]["spans"][2]["traceId"]
    path = tmp_path / "bad.json"
    text = json.dumps(doc, indent=1)
    path.write_text(text)
    with pytest.raises(InputError, match="not a span record") as caught:
        list(read_spans(path))
    start = text.index('"spanId": "c3d4e5f60718293a"')
    span_start = text.rindex("{", 0, start)
    assert caught.value.offset == span_start and caught.value.line == text[:span_start].count("\n") + 1


def test_json_lines_errors_name_their_line(tmp_path):
    lines = (FIX / "openinference_failure.jsonl").read_text().splitlines()
    path = tmp_path / "spans.jsonl"
    path.write_text(lines[0] + "\n\n" + lines[1][:40] + "\n")
    with pytest.raises(InputError, match="malformed JSON") as caught:
        list(read_spans(path))
    assert caught.value.line == 3
    path.write_text(lines[0] + " " + lines[1] + "\n")
    with pytest.raises(InputError, match="extra data") as caught:
        list(read_spans(path))
    assert caught.value.line == 1 and caught.value.offset == len(lines[0]) + 1


# -- span status ------------------------------------------------------------------------------


def _tool_result(name: str):  # type: ignore[no-untyped-def]
    [trace] = open_traces(FIX / name)
    steps = list(trace.steps())
    [result] = [s for s in steps if s.kind == StepKind.tool_result]
    return steps, result


def test_otlp_error_status_marks_the_tool_result_failed():
    steps, result = _tool_result("otel_genai_failure.json")
    assert result.actor == "lookup_order"
    assert result.raw["status"] == "error"
    assert result.raw["status_message"] == "order service timed out after 30 s"
    assert result.content == "order service timed out after 30 s"  # no result: the status says why
    assert result.raw["attributes"]["error.type"] == "TimeoutError"
    assert [e["name"] for e in result.raw["events"]] == ["exception"]
    assert steps[0].raw["status"] == "ok" and "status" not in steps[1].raw  # code 1, and unset
    assert _failed(result)  # the limits detector's reading of a result


def test_phoenix_error_status_marks_the_tool_result_failed():
    _, result = _tool_result("openinference_failure.jsonl")
    assert (result.actor, result.raw["status"]) == ("refund_charge", "error")
    assert (
        result.content == result.raw["status_message"] == "payment provider returned 503 Service Unavailable"
    )
    assert _failed(result)


@pytest.mark.parametrize(
    ("name", "tool"),
    [("otel_genai_failure.json", "lookup_order"), ("openinference_failure.jsonl", "refund_charge")],
)
def test_a_failed_tool_span_is_an_operational_failure_in_the_audit(name, tool):
    [imported] = open_traces(FIX / name)
    report = run_rules_audit(Trace(header=imported.header, steps=list(imported.steps())))
    # the failure-mode detectors may add a task failure (the run ended unanswered); the span's
    # failed status must reach the audit as exactly one operational failure of that tool
    [finding] = [f for f in report.findings if f.detector == "unverified_relay"]
    assert finding.disposition.value == "operational_failure" and finding.responsible_participant == tool
