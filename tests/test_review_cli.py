"""`auditor review` end to end on the shipped example: exit codes, storage, idempotency, outputs."""

from __future__ import annotations

import html
import json

from auditor.audit.report.render_html import step_anchor
from tests.cli_helpers import events_in, run
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "renewal_drift.jsonl"


def test_review_files_a_realized_drift_and_exits_1(tmp_path):
    proc = run(["review", str(EXAMPLE)], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "information_state_drift" in proc.stdout and "realized" in proc.stdout
    before = events_in(tmp_path)
    again = run(["review", str(EXAMPLE), "--json"], tmp_path)
    assert again.returncode == 1
    assert events_in(tmp_path) == before  # same trace, same audit: nothing new appended
    report = json.loads(again.stdout)
    assert report["contract_version"] == "v3.1" and report["findings"][0]["disposition"] == "realized"


def test_review_writes_json_that_validates(tmp_path):
    out = tmp_path / "out" / "report.json"
    assert run(["review", str(EXAMPLE), "-o", str(out)], tmp_path).returncode == 1
    check = run(["validate", str(out), "--trace", str(EXAMPLE), "--json"], tmp_path)
    assert check.returncode == 0, check.stdout
    assert json.loads(check.stdout)["units_resolved"] >= 3
    stored = run(["validate", str(out), "--trace", "example-renewal-drift"], tmp_path)
    assert stored.returncode == 0 and "valid" in stored.stdout


def test_tampered_report_fails_validation(tmp_path):
    out = tmp_path / "report.json"
    run(["review", str(EXAMPLE), "-o", str(out)], tmp_path)
    data = json.loads(out.read_text())
    data["findings"][0]["evidence"][0]["quote"] = "the VP approved it"
    out.write_text(json.dumps(data))
    proc = run(["validate", str(out), "--trace", str(EXAMPLE)], tmp_path)
    assert proc.returncode == 1 and "FAIL" in proc.stdout


def test_bad_input_exits_2_and_stores_nothing(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"step_id": "s0", "index": 0}\n')
    proc = run(["review", str(bad), "-o", str(tmp_path / "r.json")], tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and str(bad) in proc.stderr
    assert not (tmp_path / "r.json").exists()
    assert events_in(tmp_path) == 0
    assert run(["review", str(EXAMPLE), "--graph", "sideways"], tmp_path).returncode == 2


def test_topology_mode_is_recorded(tmp_path):
    proc = run(["review", str(EXAMPLE), "--graph", "topology", "--json"], tmp_path)
    report = json.loads(proc.stdout)
    assert report["graph_mode"] == "topology"
    assert any("annotated graph" in n for n in report["notes"])


CLEAN = REPO / "tests" / "fixtures" / "ingest" / "openinference_spans.jsonl"  # a raw OpenInference export
OPERATIONAL = (
    REPO / "tests" / "fixtures" / "paraphrase" / "unverified_relay" / "neg_exitcode_rerun_succeeds.jsonl"
)


def test_clean_trace_exits_0(tmp_path):
    proc = run(["review", str(CLEAN)], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "(openinference, 5 steps" in proc.stdout and "no_material_risk" in proc.stdout


def test_an_operational_failure_is_listed_and_exits_0(tmp_path):
    proc = run(["review", str(OPERATIONAL), "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["decision"] == "no_material_risk"
    assert [f["disposition"] for f in report["findings"]] == ["operational_failure"]


def test_review_reads_stdin(tmp_path):
    proc = run(["review", "-", "--json"], tmp_path, stdin=EXAMPLE.read_bytes())
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert (
        report["trace_id"] == "example-renewal-drift" and report["findings"][0]["disposition"] == "realized"
    )
    assert events_in(tmp_path) > 0
    assert not list(tmp_path.glob("auditor-stdin-*"))  # the spooled copy is gone


def test_input_format_names_the_importer(tmp_path):
    named = run(["review", "-", "--input-format", "openinference"], tmp_path, stdin=CLEAN.read_bytes())
    assert named.returncode == 0, named.stderr
    assert "(openinference, 5 steps" in named.stdout
    wrong = run(["review", str(CLEAN), "--input-format", "ag2"], tmp_path)
    assert wrong.returncode == 2 and str(CLEAN) in wrong.stderr and "Traceback" not in wrong.stderr
    unknown = run(["review", str(CLEAN), "--input-format", "nosuch"], tmp_path)
    assert unknown.returncode == 2 and "openinference" in unknown.stderr  # the valid names are listed


def test_markdown_html_and_sarif_are_written_with_o(tmp_path):
    report = json.loads(run(["review", str(EXAMPLE), "--json"], tmp_path).stdout)
    (finding,) = [f for f in report["findings"] if f["disposition"] == "realized"]
    for fmt in ("md", "html", "sarif"):
        out = tmp_path / f"report.{fmt}"
        proc = run(["review", str(EXAMPLE), "--format", fmt, "-o", str(out)], tmp_path)
        assert proc.returncode == 1, proc.stderr
        assert "wrote" in proc.stdout and out.is_file()
        text = out.read_text(encoding="utf-8")
        if fmt == "md":
            assert text.startswith("# Audit report") and finding["title"] in text
            assert finding["first_anomalous_step"] in text
        elif fmt == "html":
            assert text.startswith("<!DOCTYPE html>") and html.escape(finding["title"]) in text
            assert "<script src=" not in text and 'href="http' not in text  # self-contained
            assert (
                f'href="#{step_anchor(finding["first_anomalous_step"])}"' in text
            )  # evidence links to its step
            assert f'id="{step_anchor(finding["first_anomalous_step"])}"' in text
        else:
            sarif = json.loads(text)
            assert sarif["version"] == "2.1.0"
            (result,) = [r for r in sarif["runs"][0]["results"] if finding["title"] in r["message"]["text"]]
            assert result["level"] == "error"


def test_trace_text_is_never_console_markup(tmp_path):
    """A quote holding console markup is printed as written: no styling, no markup error."""
    marked = tmp_path / "marked.jsonl"
    marked.write_text(
        EXAMPLE.read_text(encoding="utf-8").replace(
            "status: approved.", "status: approved [/dim][bold red]now[/]."
        ),
        encoding="utf-8",
    )
    proc = run(["review", str(marked)], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "approved [/dim][bold red]now[/]." in proc.stdout
