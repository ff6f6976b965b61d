"""Issue 22's smaller items, each as a user meets it: every world's bundle exports (10); a model call
never outlives the agent's wall-time budget and the report says when the budget cut one (11); the
Who&When benchmark marks a cell by its Wilson lower bound and names the data the rules were
developed on (13); the review summary reads at 80 columns, ``graph export`` writes what the
extension says, written reports honour the umask, ``serve`` on a busy port fails before its
banner (15)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import stat
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path

import networkx as nx
import pytest

from tests.cli_helpers import run
from tests.conftest import DATA, REPO

EXAMPLE = REPO / "examples" / "renewal_drift.jsonl"
TRACE = "example-renewal-drift"
CASSETTES = REPO / "tests" / "fixtures" / "cassettes"

pytestmark = pytest.mark.slow  # CLI runs, litellm's import


# -- 10: world export ---------------------------------------------------------------------------------


@pytest.mark.parametrize("world", ["A1", "B1", "C1", "D1", "F1"])
def test_every_world_exports_a_condition_blind_bundle(world: str, tmp_path: Path) -> None:
    from worlds import get_world

    out = tmp_path / "bundle"
    proc = run(["world", "run", world, "--episodes", "2", "--export", str(out), "--json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    cohort = json.loads(proc.stdout)["cohort"]
    manifest = json.loads((out / "manifest.json").read_text())
    labels = [json.loads(line) for line in (out / "labels.jsonl").read_text().splitlines()]
    files = sorted((out / "traces").glob("*.jsonl"))
    assert [p.stem for p in files] == sorted(cohort["episode_ids"]) and len(labels) == len(files)
    assert {lab["labels"]["condition"] for lab in labels} == set(get_world(world).canonical_conditions)
    for path in files:
        assert manifest["files"][f"traces/{path.name}"] == hashlib.sha256(path.read_bytes()).hexdigest()
        header = json.loads(path.read_text().splitlines()[0])
        assert set(header["metadata"]) == {"world", "source_digest", "workflow_digest"}


def test_a_header_naming_its_condition_is_still_refused(tmp_path: Path) -> None:
    from auditor.core.errors import InputError
    from worlds import export_bundle, get_world

    world = get_world("B1")
    episode = world.run_episode("B", 3, world.identity(3), world.scripted())
    trace, labels = episode.trace(), episode.labels()
    assert labels.labels["condition"] == "B" and trace.header.metadata["world"] == "B1"
    leaky = trace.model_copy(
        update={"header": trace.header.model_copy(update={"metadata": {**trace.header.metadata, "arm": "B"}})}
    )
    with pytest.raises(InputError, match="names its condition"):
        export_bundle(tmp_path / "leaky", [(leaky, labels)])
    assert not (tmp_path / "leaky").exists()  # refused before anything is written
    export_bundle(tmp_path / "clean", [(trace, labels)])  # the "B" of "B1" names the world, not the arm
    assert (tmp_path / "clean" / "traces" / f"{trace.header.trace_id}.jsonl").is_file()


# -- 11: agent wall-time budget ---------------------------------------------------------------------


def _slow_cassette(tmp_path: Path, slow_at: int, latency_s: float) -> str:
    """The recorded renewal-drift audit with response ``slow_at`` taking ``latency_s`` seconds."""
    records = [json.loads(line) for line in (CASSETTES / "renewal_drift_v3.jsonl").read_text().splitlines()]
    for i, rec in enumerate(records):
        rec["latency_s"] = latency_s if i == slow_at else 0.0
    path = tmp_path / "slow.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return f"replay/{path}"


@pytest.fixture(scope="module")
def warm_gateway() -> None:
    """One short replayed audit first: litellm's and langgraph's first use costs seconds that are
    no model call's time."""
    from auditor.audit.agent import run_agent_audit
    from auditor.audit.agent.loop import Budget
    from tests.test_detector_state_drift import load

    run_agent_audit(
        load(EXAMPLE), f"replay/{CASSETTES / 'renewal_drift_v3.jsonl'}", budget=Budget(max_tool_calls=1)
    )


def test_a_model_call_is_bounded_by_what_is_left_of_the_budget(
    warm_gateway: None, tmp_path: Path, sqlite_store
) -> None:
    from auditor.audit.agent import run_agent_audit
    from auditor.audit.agent.loop import Budget, audit_stream
    from tests.test_detector_state_drift import load

    trace = load(EXAMPLE)
    started = time.perf_counter()
    report = run_agent_audit(
        trace, _slow_cassette(tmp_path, 1, 30.0), store=sqlite_store, budget=Budget(max_seconds=2.0)
    )
    wall = time.perf_counter() - started
    assert wall < 2.0 + 2.5, wall  # the second call got what was left of 2 s, not its 30 s
    assert report.decision.value == "inconclusive"
    [cut] = [n for n in report.notes if n.startswith("budget exhausted (wall time)")]
    assert "of the 2 s budget were left and the model call at message 4 was stopped after" in cut
    assert cut.endswith("without a reply; submitted what was validated")
    events = list(sqlite_store.read_stream(audit_stream("aud-" + report.report_id[4:])))
    assert sum(e.type == "ModelCalled" for e in events) == 1  # the stopped call answered nothing


def test_retries_do_not_outlive_the_call_budget(warm_gateway: None, tmp_path: Path) -> None:
    from auditor.core.llm import ModelCallTimeout, complete

    started = time.perf_counter()
    with pytest.raises(ModelCallTimeout, match=r"timed out after 1\.0 s"):
        complete(
            _slow_cassette(tmp_path, 0, 5.0),
            [{"role": "user", "content": "audit"}],
            retries=2,
            budget_s=1.0,
        )
    assert time.perf_counter() - started < 2.5  # one second in all, not three attempts of five


@pytest.mark.model
@pytest.mark.timeout(600)
def test_local_generation_stops_at_the_budget(smollm2) -> None:
    from auditor.core.llm import complete

    ask = [{"role": "user", "content": "Write a long story about a lighthouse keeper, in many chapters."}]
    complete("local/smollm2", ask, max_tokens=1)  # the gateway's own load of the model is not generation
    started = time.perf_counter()
    result = complete("local/smollm2", ask, max_tokens=4096, budget_s=3.0)
    wall = time.perf_counter() - started
    assert result.cut_short and result.content and 0 < result.output_tokens < 4096
    assert wall < 3.0 + 2.0, wall  # generation stopped at the limit (one token step of slack)


# -- 13: Who&When benchmark wording -------------------------------------------------------------------

ROW = re.compile(
    r"^rules\s+(\w+)\s+(\S+)\s+(\d+)\s+([\d.]+) \[\s*([\d.]+)–([\d.]+)\]\s+([\d.]+) \[\s*([\d.]+)–([\d.]+)\]"
    r".*?([\d.]+)/([\d.]+)\s+(yes|no)/(yes|no)$"
)


def test_whowhen_marks_cells_by_the_wilson_lower_bound_and_names_the_developer_half() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "whowhen_eval.py"),
            str(DATA / "whowhen" / "hand-crafted"),
            "--settings",
            "without",
            "--halves",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    assert "BEATS" not in proc.stdout
    assert "data: 29 of 29 files are from the developer half of Who&When" in proc.stdout
    assert "in-sample" in proc.stdout and "not a held-out test" in proc.stdout
    rows = [m.groups() for line in proc.stdout.splitlines() if (m := ROW.match(line))]
    assert len(rows) == 3  # all files, odd half, even half
    for *_, _agent, agent_low, _, _step, step_low, _, bar_a, bar_s, mark_a, mark_s in rows:
        assert mark_a == ("yes" if float(agent_low) > float(bar_a) else "no")
        assert mark_s == ("yes" if float(step_low) > float(bar_s) else "no")


def test_a_point_estimate_above_the_bar_is_not_marked_unless_the_lower_bound_is() -> None:
    """The marking rule itself, where the run's own figures may no longer straddle a bar: 2 of 16
    is 12.5% (above 8.77) with a Wilson lower bound of 3.5%; 9 of 16 clears it."""
    from benchmarks.whowhen_eval import clears

    assert 100 * 2 / 16 > 8.77 and not clears(2, 16, 8.77)
    assert clears(9, 16, 8.77)


# -- 15: newcomer papercuts -------------------------------------------------------------------------


def test_review_summary_reads_at_80_columns() -> None:
    from rich.console import Console

    from auditor.audit.engine import run_rules_audit
    from auditor.audit.report.render_summary import print_summary
    from auditor.audit.report.validator import validate_report
    from auditor.audit.review import read_traces
    from schemas import GraphMode

    [(trace, _, importer)] = read_traces(EXAMPLE)
    report = run_rules_audit(trace, GraphMode.annotated)
    validation = validate_report(report.model_dump(mode="json"), trace)
    console = Console(width=80, file=StringIO(), color_system=None)
    print_summary(console, report, trace, validation, importer)
    text = console.file.getvalue()
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    [finding] = report.findings
    assert finding.risk_class.value == "information_state_drift" and "…" not in text
    assert f"1. information_state_drift · realized · severity {finding.severity.value}" in lines
    assert f"   {finding.title}" in [line.rstrip() for line in lines]  # 71 characters: one line
    words = " ".join(" ".join(lines).split())
    assert " ".join(finding.mechanism.split()) in words
    assert all(" ".join(u.quote.split()) in words for u in finding.evidence)


def test_summary_prints_trace_text_as_written(tmp_path: Path) -> None:
    from rich.console import Console

    from auditor.audit.engine import run_rules_audit
    from auditor.audit.report.render_summary import print_summary
    from auditor.audit.report.validator import validate_report
    from auditor.audit.review import read_traces
    from schemas import GraphMode

    marked = tmp_path / "marked.jsonl"
    marked.write_text(EXAMPLE.read_text().replace("status: approved.", "status: approved [/dim][bold]x[/]."))
    [(trace, _, importer)] = read_traces(marked)
    report = run_rules_audit(trace, GraphMode.annotated)
    console = Console(width=120, file=StringIO(), color_system=None)
    print_summary(console, report, trace, validate_report(report.model_dump(mode="json"), trace), importer)
    assert "approved [/dim][bold]x[/]." in console.file.getvalue()


@pytest.fixture(scope="module")
def graph_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("papercut-graph")
    assert run(["ingest", str(EXAMPLE)], path).returncode == 0
    return path


def test_graph_export_writes_the_format_its_extension_names(graph_dir: Path) -> None:
    proc = run(["graph", "export", TRACE, "-o", "g.graphml"], graph_dir)
    assert proc.returncode == 0, proc.stderr
    graphml = nx.read_graphml(graph_dir / "g.graphml")
    assert graphml.graph["trace_id"] == TRACE and graphml.number_of_edges() > 0
    assert run(["graph", "export", TRACE, "-o", "g.json"], graph_dir).returncode == 0
    assert json.loads((graph_dir / "g.json").read_text())["links"]
    clash = run(["graph", "export", TRACE, "--format", "json", "-o", "clash.graphml"], graph_dir)
    assert clash.returncode == 2 and not (graph_dir / "clash.graphml").exists()
    assert "--format json does not match the file's extension .graphml" in clash.stderr
    assert "Traceback" not in clash.stderr and len(clash.stderr.strip().splitlines()) == 1


def test_written_reports_honour_the_umask(tmp_path: Path) -> None:
    def review_to(name: str, umask: int) -> int:
        before = os.umask(umask)  # the process's umask, as a shell's `umask` sets it for the command
        try:
            proc = run(["review", str(EXAMPLE), "-o", name], tmp_path)
        finally:
            os.umask(before)
        assert proc.returncode == 1, proc.stderr  # a realized finding
        return stat.S_IMODE((tmp_path / name).stat().st_mode)

    assert review_to("open.json", 0o022) == 0o644
    assert review_to("private.json", 0o077) == 0o600
    (tmp_path / "kept.json").write_text("{}")
    (tmp_path / "kept.json").chmod(0o640)
    assert review_to("kept.json", 0o022) == 0o640  # a replaced file keeps its mode


def test_serve_on_a_busy_port_fails_before_its_banner(tmp_path: Path) -> None:
    pytest.importorskip("uvicorn")
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        proc = run(["serve", "--port", str(port)], tmp_path)
    assert proc.returncode == 2
    output = proc.stdout + proc.stderr
    assert "auditor console" not in output and "startup complete" not in output.lower()
    [line] = proc.stderr.strip().splitlines()
    assert f"port {port}" in line and "in use" in line
    assert not (tmp_path / "auditor.db").exists()  # the store was never opened


def test_a_summary_of_many_findings_prints_the_most_severe_and_counts_the_rest() -> None:
    """A long trace files thousands of findings: the terminal gets the 20 most severe, under their
    numbers in the report, and one line counting the others by detector and saying how to see them."""
    import re

    from rich.console import Console

    from auditor.audit.engine import run_rules_audit
    from auditor.audit.report.render_summary import SHOWN, print_summary
    from auditor.audit.report.validator import validate_report
    from benchmarks.render_bench import embedded_trace

    trace = embedded_trace(3000)
    report = run_rules_audit(trace)
    assert len(report.findings) > SHOWN
    validation = validate_report(report.model_dump(mode="json"), trace)
    console = Console(width=100, file=StringIO(), color_system=None)
    print_summary(console, report, trace, validation, "canonical")
    text = console.file.getvalue()
    numbers = [int(n) for n in re.findall(r"(?m)^(\d+)\. ", text)]
    assert len(numbers) == SHOWN and numbers == sorted(numbers)
    drift = next(
        i for i, f in enumerate(report.findings, 1) if f.risk_class.value == "information_state_drift"
    )
    assert drift in numbers  # the one high-severity finding, wherever it sits
    rest = len(report.findings) - SHOWN
    assert f"… {rest:,} more finding(s), none more severe than those above (failure_repetition {rest:,})" in (
        " ".join(text.split())
    )
