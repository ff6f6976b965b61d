"""`auditor traces tests`: what the tests said in a coding run, in order, and the last word on each
test that failed — the facts the coding findings rest on, laid out by step (issue 29)."""

from __future__ import annotations

import json

import pytest

from auditor.audit.detectors.test_runs import runner_of
from auditor.audit.test_timeline import evidence_lines, timeline
from schemas import Trace
from tests.cli_helpers import run
from tests.test_coding_runs import CHANGED, EDIT, REAL, _coding_run, trace_of

DJANGO = REAL / "mini-swe-agent"
FAILING_TEST = "FAILED tests/test_x.py::test_a - AssertionError\n===== 1 failed, 4 passed in 0.12s ====="


@pytest.mark.parametrize(
    ("name", "passing", "last"),
    [
        ("django_scripted_narrow_rerun_cleared", True, "s17"),
        ("django_scripted_narrow_rerun_failing", False, "s15"),
    ],
)
def test_a_failed_test_has_the_word_of_the_last_run_that_ran_it(name, passing, last):
    """Django's runner fails a test after the change; the label rerun passes it once the breaking
    edit is undone, and fails it again when nothing changed."""
    found = timeline(trace_of(DJANGO / f"{name}.traj.json"))
    (verdict,) = found.verdicts
    assert verdict.test.endswith("TestUtilsText.test_slugify")
    assert (verdict.first_failed, verdict.last_run, verdict.passing) == ("s13", last, passing)
    assert verdict.on_original is None  # no run on the original code ran it
    assert found.changed == ("django/utils/text.py", "repro.py") and found.new == ("repro.py",)
    tests = [e for e in found.entries if e.act == "test"]
    assert tests[0].result == "FAILED (failures=7)" and tests[0].code == "changed" and tests[0].failed == 7
    acts = [e.act for e in found.entries]
    assert acts[:4] == ["edit", "edit", "edit", "check"]  # repro.py written and run, the fix twice, its rerun
    assert found.entries[0].result == "failed (exit 1)" and found.entries[0].code == "original"
    # what the runs show: reproduced, shown fixed by the same script, the project's last test run
    ev = found.evidence
    assert (ev.reproduced, ev.shown_fixed, ev.last_test, ev.last_test_passed) == ("s5", "s11", last, passing)
    assert ev.edited_after_pass == (() if passing else None)  # nothing edited after it / no run passed


def test_a_failure_the_original_code_showed_is_told_apart():
    """The same test failing before the change and after it: a failure the change did not cause."""
    found = timeline(
        _coding_run(
            [("pytest tests/test_x.py", FAILING_TEST), EDIT, ("pytest tests/test_x.py", FAILING_TEST)]
        )
    )
    assert [(e.act, e.code) for e in found.entries] == [
        ("test", "original"),
        ("edit", None),
        ("test", "changed"),
    ]
    assert found.entries[1].files == (CHANGED,)
    (verdict,) = found.verdicts
    assert (verdict.passing, verdict.on_original) == (False, True)
    assert found.submitted == "s7"
    said = dict(evidence_lines(found))["project tests after the last edit"]
    assert said == "s6 FAILED (the same tests failed on the original code)"


def test_the_last_test_run_after_the_change_is_one_on_the_change_not_after_a_revert():
    """pytest's real run: the project's tests fail on the change, the agent reverts its fix and runs
    them on the original code (the same two failures), then restores the fix. The last run after
    the last edit that tested the change is the one before the revert."""
    from tests.test_coding_runs import COMMENTED

    found = timeline(trace_of(COMMENTED))
    tests = [e for e in found.entries if e.act == "test" and e.failed]
    assert [e.code for e in tests] == ["changed", "original"]
    assert found.evidence.last_test == tests[0].result_step and found.evidence.last_test_failed_before


def test_a_test_run_whose_failures_the_change_was_not_on_says_where_they_were_raised():
    """The real SymPy run's two failures were raised in the parser, through none of the changed
    files: the timeline says so beside the run, where the lead it rests on can be checked; runs
    whose failures are assertions (Django's) say nothing of the kind."""
    from auditor.audit.test_timeline import result_text
    from tests.test_coding_runs import NARROWED

    failing = next(e for e in timeline(trace_of(NARROWED)).entries if e.act == "test" and e.failed)
    assert failing.raised_outside == ("/testbed/sympy/parsing/sympy_parser.py",)
    assert "raised outside the change, in /testbed/sympy/parsing/sympy_parser.py" in result_text(failing)
    django = timeline(trace_of(DJANGO / "django_scripted_narrow_rerun_failing.traj.json"))
    assert all(e.raised_outside == () for e in django.entries)


def test_a_failed_check_says_how_it_failed():
    """By its exit code; and a runner the harness stopped (no exit code, the result an error) is a
    failed run of the project's tests, not the agent's own check."""
    failed = timeline(
        _coding_run([EDIT, ("python repro.py", "<returncode>1</returncode>\n<output>\nboom\n</output>")])
    )
    assert (failed.entries[-1].act, failed.entries[-1].result) == ("check", "failed (exit 1)")
    trace = _coding_run([EDIT, ("pytest tests/test_x.py", "The last command timed out and has been killed.")])
    stopped = trace.steps[4].model_copy(update={"raw": {"status": "error"}})
    steps = [*trace.steps[:4], stopped, *trace.steps[5:]]
    entry = timeline(Trace(header=trace.header, steps=steps)).entries[-1]
    assert (entry.act, entry.result) == ("test", "failed (no exit code: the harness stopped it)")


def test_a_run_with_no_code_command_has_no_entries():
    found = timeline(_coding_run([("ls", "<returncode>0</returncode>\n<output>\nsetup.py\n</output>")]))
    assert found.entries == () and found.verdicts == ()


@pytest.mark.parametrize(
    ("command", "runner"),
    [
        ("python manage.py test app.tests", "unittest"),
        ("./manage.py test", "unittest"),
        ("django-admin test --settings=project.settings", "unittest"),
        ("python -m django test app", "unittest"),
        ("cd tests && python -W error runtests.py utils_tests", "unittest"),
        ("python -X dev -m pytest -x", "pytest"),
        ("python manage.py migrate", None),
        ("python -m django shell", None),
        ("python repro.py test", None),
    ],
)
def test_django_test_commands_and_python_options_are_read(command, runner):
    assert runner_of(command) == runner


def test_the_cli_lays_out_the_runs_and_the_verdicts(tmp_path):
    reviewed = run(["review", str(DJANGO / "django_scripted_narrow_rerun_failing.traj.json")], tmp_path)
    assert reviewed.returncode == 1, reviewed.stderr  # a finding: submitted on a failing test
    trace_id = json.loads(run(["traces", "list", "--json"], tmp_path).stdout)[0]["trace_id"]
    assert f"test runs: auditor traces tests {trace_id}" in reviewed.stdout  # the review says where to look
    shown = run(["traces", "tests", trace_id], tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "repro.py (new)" in shown.stdout and "FAILED (failures=7)" in shown.stdout
    assert "project tests after the last edit: s15 FAILED" in shown.stdout
    assert "tests that failed, and their last run" in shown.stdout
    data = json.loads(run(["traces", "tests", trace_id, "--json"], tmp_path).stdout)
    assert data["submitted"] == "s18" and data["headline"].startswith("submitted at s18")
    assert dict(data["evidence_lines"])["project tests after the last edit"] == "s15 FAILED"
    assert [v["passing"] for v in data["verdicts"]] == [False]
    assert {e["act"] for e in data["entries"]} == {"edit", "check", "test"}


def test_the_cli_names_a_trace_it_does_not_hold(tmp_path):
    shown = run(["traces", "tests", "nope"], tmp_path)
    assert shown.returncode == 2 and "nope" in shown.stderr and "Traceback" not in shown.stderr


def test_the_api_serves_the_same_timeline(tmp_path):
    """``GET /api/traces/{id}/tests``: the timeline the CLI prints, for a reader's token."""
    from fastapi.testclient import TestClient

    from auditor.audit.review import review_file
    from auditor.core.store import open_store
    from auditor.surfaces.server import ServerConfig, create_app
    from auditor.surfaces.server.tokens import create_token

    path = DJANGO / "django_scripted_narrow_rerun_cleared.traj.json"
    store = open_store(f"sqlite:///{tmp_path / 'auditor.db'}")
    try:
        (reviewed,) = review_file(store, path)
        trace_id = reviewed.trace.header.trace_id
        token = create_token(store, "reader", ["read"])[0]
        with TestClient(create_app(ServerConfig(), store=store)) as client:
            h = {"Authorization": f"Bearer {token}"}
            served = client.get(f"/api/traces/{trace_id}/tests", headers=h)
            assert served.status_code == 200
            expected = timeline(trace_of(path))
            data = served.json()
            assert data["trace_id"] == trace_id and data["submitted"] == expected.submitted
            assert [(e["step"], e["act"], e["result"]) for e in data["entries"]] == [
                (e.step, e.act, e.result) for e in expected.entries
            ]
            assert [v["passing"] for v in data["verdicts"]] == [True]
            assert client.get("/api/traces/nope/tests", headers=h).status_code == 404
            assert client.get(f"/api/traces/{trace_id}/tests").status_code == 401
    finally:
        store.close()


def test_the_markdown_and_html_reports_of_a_coding_run_hold_its_test_runs():
    from auditor.audit.engine import run_rules_audit
    from auditor.audit.report.render import render

    trace = trace_of(DJANGO / "django_scripted_narrow_rerun_failing.traj.json")
    report = run_rules_audit(trace)
    md = render(report, trace, "md")
    section = md[md.index("## Test runs") :]
    assert "submitted at s18: django/utils/text.py, repro.py (new)" in section
    assert "| `s12` | test | changed |" in section and "`s13` FAILED (failures=7)" in section
    assert "| `s13` | `s15` | FAILED | not run |" in section
    assert "- **shown fixed:** s11 (a check that failed on the original code ran clean)" in section
    page = render(report, trace, "html")
    assert '<section id="test-runs"' in page and '<a href="#step-s15"><code>s15</code></a>' in page


def test_a_command_in_the_test_runs_renders_as_text():
    """Whatever a command holds (markup, a table's bar, a heading) stays text in every format."""
    from auditor.audit.engine import run_rules_audit
    from auditor.audit.report.render import render

    hostile = "python repro.py '<script>alert(1)</script>' | # x"
    trace = _coding_run([EDIT, (hostile, "<returncode>1</returncode>\n<output>\nboom\n</output>")])
    report = run_rules_audit(trace)
    page = render(report, trace, "html")
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    md = render(report, trace, "md")
    row = next(ln for ln in md.splitlines() if "repro.py" in ln and ln.startswith("| `s"))
    assert row.count(" | ") == 4 and "&lt;script&gt;" in row  # the bar escaped: still five cells


def test_a_run_that_ran_no_code_has_no_test_runs_section():
    from auditor.audit.engine import run_rules_audit
    from auditor.audit.report.render import render

    trace = _coding_run([("ls", "<returncode>0</returncode>\n<output>\nsetup.py\n</output>")])
    report = run_rules_audit(trace)
    assert "Test runs" not in render(report, trace, "md") and 'id="test-runs"' not in render(
        report, trace, "html"
    )


def test_the_review_of_a_coding_run_with_no_finding_says_what_its_runs_showed(tmp_path):
    """A clean coding run's review says why it is clean: its reproduction (here a caught error the
    request reports), the fix shown, and where to read the runs; a chat trace says nothing of runs."""
    from tests.test_coding_runs import CAUGHT

    reviewed = run(["review", str(CAUGHT)], tmp_path)
    assert reviewed.returncode == 0, reviewed.stderr
    trace_id = json.loads(run(["traces", "list", "--json"], tmp_path).stdout)[0]["trace_id"]
    assert f"test runs: auditor traces tests {trace_id}" in reviewed.stdout
    assert "reproduced: s23 (printed the request's TypeError on the original code)" in reviewed.stdout
    assert "shown fixed: s29" in reviewed.stdout
    chat = run(["review", str(REAL.parents[2] / "examples" / "renewal_drift.jsonl")], tmp_path)
    assert "validated:" in chat.stdout and "test runs:" not in chat.stdout


def test_the_cli_lists_the_tests_left_failing_first_and_caps_the_rest(tmp_path):
    """A suite that failed 50 tests on the change, 45 of which a rerun passed: the table lists the
    5 left failing first, then passing ones up to 40 rows, and says how many more there are and
    how to see them; ``--all`` lists every one."""
    from ingest.canonical import write_canonical
    from tests.test_coding_runs import _generated

    failed = "\n".join(f"FAILED tests/test_mod.py::t{k} - x" for k in range(50))
    still = "\n".join(f"FAILED tests/test_mod.py::t{k} - x" for k in range(45, 50))
    trace = _generated(
        "capped",
        [
            ("sed -i 's/x = 1/x = 2/' pkg/mod.py", "<returncode>0</returncode>\n"),
            (
                "python -m pytest tests/test_mod.py",
                f"<returncode>1</returncode>\n{failed}\n=== 50 failed in 0.1s ===",
            ),
            (
                "python -m pytest tests/test_mod.py",
                f"<returncode>1</returncode>\n{still}\n=== 5 failed, 45 passed in 0.1s ===",
            ),
        ],
    )
    path = tmp_path / "capped.jsonl"
    with path.open("w") as fh:
        write_canonical(trace.header, trace.steps, fh)
    assert run(["review", str(path)], tmp_path).returncode == 1  # submitted on a failing test
    shown = run(["traces", "tests", "capped"], tmp_path)
    assert shown.returncode == 0, shown.stderr
    rows = [ln for ln in shown.stdout.splitlines() if ln.startswith("│ tests/test_mod.py::t")]
    assert len(rows) == 40 and all("FAILED" in ln for ln in rows[:5]) and "FAILED" not in rows[5]
    assert (
        "10 more of 50 failed tests (5 still failing); --all lists them, --json gives them all"
        in shown.stdout
    )
    every = run(["traces", "tests", "capped", "--all"], tmp_path)
    assert len([ln for ln in every.stdout.splitlines() if ln.startswith("│ tests/test_mod.py::t")]) == 50
    assert "more of" not in every.stdout
