"""The unverified-relay detector on its frozen paraphrase set, and its outcome and claim readers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from auditor.audit.detectors.unverified_relay import outcome_of, success_claim
from auditor.audit.engine import run_rules_audit
from ingest import open_traces
from schemas import TraceStep
from tests.detector_paraphrase import SETS, assert_injection_ignored, audit_case, cases, load

DETECTOR = "unverified_relay"


@pytest.mark.parametrize(("name", "expect"), cases(DETECTOR), ids=[n for n, _ in cases(DETECTOR)])
def test_expected_disposition(name: str, expect: dict) -> None:
    audit_case(DETECTOR, name, expect)


def test_verbatim_carriage_is_transport_only() -> None:
    report = run_rules_audit(
        load(SETS / DETECTOR / "lead_timeout_carried_with_hedge.jsonl"), detectors=[DETECTOR]
    )
    (f,) = [f for f in report.findings if f.risk_class.value == DETECTOR]
    assert f.criteria.R2.verdict.value == "fails" and f.disposition.value == "lead"


def test_a_tool_error_nobody_relayed_is_an_operational_failure() -> None:
    """The failed run is retried and the retry succeeds: no interaction property is violated, so
    the tool's error is filed as an operational failure, which is never actionable."""
    report = run_rules_audit(
        load(SETS / DETECTOR / "neg_exitcode_rerun_succeeds.jsonl"), detectors=[DETECTOR]
    )
    (f,) = report.findings
    assert (f.risk_class.value, f.disposition.value, f.severity.value) == (
        "other",
        "operational_failure",
        "info",
    )
    assert f.first_anomalous_step == "s01" and f.responsible_participant == "Computer_terminal"
    assert f.criteria.R1.verdict.value == "fails" and f.criteria.R4.verdict.value == "holds"
    assert [e.quote for e in f.evidence] == ["exitcode: 1 (execution failed)"]
    assert report.decision.value == "no_material_risk" and report.repair_plan == []


def test_a_relayed_tool_error_is_not_also_an_operational_failure() -> None:
    for name in ("pos_exitcode_relayed_verified.jsonl", "pos_tests_failed_reported_green.jsonl"):
        report = run_rules_audit(load(SETS / DETECTOR / name), detectors=[DETECTOR])
        assert [f.disposition.value for f in report.findings] == ["realized"], name


def test_an_honestly_reported_timeout_is_operational_beside_the_lead() -> None:
    report = run_rules_audit(
        load(SETS / DETECTOR / "lead_timeout_carried_with_hedge.jsonl"), detectors=[DETECTOR]
    )
    operational = [f for f in report.findings if f.disposition.value == "operational_failure"]
    assert [(f.first_anomalous_step, f.responsible_participant) for f in operational] == [("s01", "filings")]


@pytest.mark.parametrize(
    ("text", "claim"),
    [
        ("BUG-9 is fixed and all tests pass.", "all tests pass"),
        ("The code ran successfully and I have verified the result.", "ran successfully"),
        ("Once the totals are confirmed, we can proceed.", None),
        ("The fix is not verified yet; tests are failing.", None),
        ("This should now pass without issues, confirming the fix works as expected.", None),
        ("```\n3 passed\n```\nI will rerun it later.", None),
        ("The pytest cases passed without any failures.", "passed without any failures"),
    ],
)
def test_success_claims_are_read_from_prose_only(text: str, claim: str | None) -> None:
    assert success_claim(text) == claim


def test_injected_instruction_changes_nothing() -> None:
    assert_injection_ignored(DETECTOR)


REAL = Path(__file__).parent / "fixtures" / "real" / "mini-swe-agent"
LISTED_SIZE = re.compile(r"\b[45]\d\d [A-Z][a-z]+")  # a size before a month in `ls -l`: the old false status


def _results(name: str) -> list[tuple[int, TraceStep]]:
    steps = list(next(iter(open_traces(REAL / f"{name}.traj.json"))).steps())
    return [(p, s) for p, s in enumerate(steps) if s.kind.value == "tool_result"]


def test_a_recorded_exit_status_decides_a_results_outcome_save_what_it_hides() -> None:
    """Real mini-SWE-agent runs, whose importer records each command's exit code as the status: a
    listing (file sizes before months) or a printed docstring ('... is not found') under exit code
    0 is no failure; a non-zero exit code is one, quoted by its error line where it prints one; an
    exception the script printed and survived still is (an exit status hides it)."""
    listings = [(p, s) for p, s in _results("sphinx-doc__sphinx-7440") if LISTED_SIZE.search(s.content)]
    assert listings and all(s.raw["status"] == "ok" and not outcome_of(s, p).failed for p, s in listings)
    printed = {s.step_id: (s, outcome_of(s, p)) for p, s in _results("astropy__astropy-7671")}
    for step_id in ("s5", "s27"):
        step, outcome = printed[step_id]
        assert step.raw["status"] == "ok" and "is not found" in step.content and not outcome.failed
    errors = [
        (s, outcome_of(s, p)) for p, s in _results("astropy__astropy-7671") if s.raw.get("status") == "error"
    ]
    assert errors and all(o.failed and o.surface and o.surface in s.content for s, o in errors)
    caught = {s.step_id: outcome_of(s, p) for p, s in _results("astropy__astropy-7606")}["s23"]
    assert caught.failed and caught.surface == "TypeError: "


# a module's docstring, as ``cat`` shows it: its example raises
_DOCTEST = (
    '"""Parse units.\n\n    >>> parse("kpc2/s/")\n    Traceback (most recent call last):\n    ...\n'
    '    ValueError: trailing division\n"""\n\ndef parse(text):\n    return text\n'
)


def _shown(command: str) -> tuple[TraceStep, TraceStep]:
    tool = {"name": "bash", "call_id": "c1"}
    call = TraceStep(
        step_id="s1", index=1, actor="agent", kind="tool_call", content=command,
        tool=tool | {"arguments": {"command": command}},
    )  # fmt: skip
    result = TraceStep(
        step_id="s2", index=2, actor="bash", actor_kind="tool", kind="tool_result", content=_DOCTEST,
        tool=tool, raw={"status": "ok"}, refs={"reply_to": "s1", "call_id": "c1"},
    )  # fmt: skip
    return call, result


@pytest.mark.parametrize(
    ("command", "failed"),
    [
        ("cat units/parse.py", False),
        ("sed -n 1,20p units/parse.py | nl", False),
        ("python units/parse.py", True),
    ],
)
def test_a_file_a_command_showed_is_no_failure_though_its_text_raises(command: str, failed: bool) -> None:
    """Exit code 0: a file shown by a command that ran no code holds its example traceback as
    text; a script that printed the same survived an exception (the exit status hides it)."""
    call, result = _shown(command)
    assert outcome_of(result, 2, call).failed is failed


@pytest.mark.parametrize(
    ("text", "failed"),
    [
        ("payment provider returned 503 Service Unavailable", True),
        ("GET /v1/orders/77: 404 Not Found", True),
        ('{"address": "410 River Street", "note": "503 Gate B"}', False),
        ("-rw-r--r--  1 root root    591 Oct 24  2024 CONTRIBUTING.rst", False),
    ],
)
def test_without_a_recorded_status_an_http_error_is_its_registered_status(text: str, failed: bool) -> None:
    step = TraceStep(step_id="s1", index=1, actor="api", actor_kind="tool", kind="tool_result", content=text)
    assert outcome_of(step, 1).failed is failed
