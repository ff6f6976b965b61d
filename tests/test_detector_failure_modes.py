"""The failure-mode detectors (MAST codes): frozen paraphrase sets, the facts they decide from, and
their behaviour on real runs (MAST, Who&When, τ-bench) from the shared data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from auditor.audit.detectors.failure_facts import RunFacts
from auditor.audit.engine import run_rules_audit
from auditor.audit.report.disposition import ACTIONABLE
from auditor.audit.report.validator import validate_report
from benchmarks.mast_eval import FAILURE_DETECTORS, ModeScore, load_mast_labels
from benchmarks.mast_eval import main as mast_main
from ingest import open_traces
from schemas import ActorKind, AuditReport, Trace, TraceHeader, TraceStep
from schemas.failure import MAST_MODES
from tests.conftest import DATA
from tests.detector_paraphrase import SETS, assert_injection_ignored, cases, finding_shapes, injected, load

CASES = [(d, name, expect) for d in FAILURE_DETECTORS for name, expect in cases(d)]
TAU = DATA / "taubench" / "airline"
MAST = DATA / "mast" / "derived"


def mine(report: AuditReport, detector: str) -> list:
    return [f for f in report.findings if f.detector == detector]


def real(path: Path) -> Trace:
    (imported,) = list(open_traces(path))
    return Trace(header=imported.header, steps=list(imported.steps()))


# -- frozen paraphrase sets ---------------------------------------------------------------------------
@pytest.mark.parametrize(("detector", "name", "expect"), CASES, ids=[f"{d}/{n}" for d, n, _ in CASES])
def test_paraphrase_case(detector: str, name: str, expect: dict) -> None:
    trace = load(SETS / detector / name)
    report = run_rules_audit(trace, detectors=[detector])
    assert validate_report(report.model_dump(mode="json"), trace).ok
    got = mine(report, detector)
    if expect["disposition"] is None:
        assert got == [], [f.title for f in got]
        return
    hits = [f for f in got if f.disposition.value == expect["disposition"]]
    assert hits, [(f.title, f.disposition.value) for f in got]
    assert all(f.failure_mode == expect["failure_mode"] for f in hits)
    assert all(f.risk_class.value == "task_failure" for f in got)
    for f in got:
        if f.disposition.value == "anomaly_with_interception":
            assert f.intercepted_at is not None and trace.step(f.intercepted_at)


@pytest.mark.parametrize("detector", FAILURE_DETECTORS)
def test_each_set_has_four_positives_and_four_negatives(detector: str) -> None:
    expected = json.loads((SETS / detector / "expected.json").read_text())
    positives = sum(e["disposition"] is not None for e in expected.values())
    assert positives >= 4 and len(expected) - positives >= 4
    assert sorted(expected) == sorted(p.name for p in (SETS / detector).glob("*.jsonl"))


@pytest.mark.parametrize("detector", FAILURE_DETECTORS)
def test_injected_instruction_changes_nothing(detector: str) -> None:
    assert_injection_ignored(detector)


# -- the facts: failures by structure, never from business text --------------------------------------
def _trace(*steps: TraceStep) -> Trace:
    return Trace(header=TraceHeader(trace_id="facts"), steps=list(steps))


def _step(
    i: int, actor: str, kind: str, content: str, actor_kind: str = "agent", **extra: object
) -> TraceStep:
    return TraceStep(
        step_id=f"s{i}", index=i, actor=actor, actor_kind=actor_kind, kind=kind, content=content, **extra
    )


def _facts(trace: Trace) -> RunFacts:
    from auditor.audit.detectors.base import AuditContext
    from graph import build_graph
    from schemas import GraphMode

    graph = build_graph(trace, GraphMode.topology)
    assert graph is not None
    return RunFacts(AuditContext(trace=trace, graph=graph, mode=GraphMode.topology))


def _failures(trace: Trace) -> dict[int, str]:
    return _facts(trace).failures


def test_failures_are_structural() -> None:
    trace = _trace(
        _step(0, "agent", "tool_call", "{}", tool={"name": "get_order", "arguments": {}}),
        _step(1, "get_order", "tool_result", '{"address": "410 River Street", "note": "503 Gate B"}', "tool"),
        _step(2, "get_order", "tool_result", "Error: order 77 not found", "tool"),
        _step(
            3, "Computer_terminal", "tool_result", "exitcode: 1 (execution failed)\nCode output: boom", "tool"
        ),
        _step(4, "python_execute", "tool_result", "{'observation': 'x', 'success': False}", "tool"),
        _step(5, "agent", "message", "Error: I think the order is late."),
        _step(
            6,
            "env",
            "tool_result",
            "Execution failed. Traceback:\n  File \"x\", line 1\nKeyError: 'a'",
            "environment",
        ),
        _step(7, "svc", "tool_result", "slow", "tool", raw={"status": "error", "status_message": "slow"}),
    )
    got = _failures(trace)
    assert set(got) == {2, 3, 4, 6, 7}  # a street number is no status; an agent's "Error:" prose is no result
    assert got[6] == "KeyError: 'a'" and got[3].startswith("exitcode: 1")


def test_a_file_a_shell_command_showed_is_no_failure() -> None:
    """A module whose docstring shows an example traceback, printed by ``cat`` (exit code 0): the
    file's text, not the command failing; the same text from a script that ran is a failure."""
    listing = 'def parse(t):\n    """\n    >>> parse("")\n    Traceback (most recent call last):\n    ValueError: empty\n    """\n'

    def ran(command: str) -> Trace:
        tool = {"name": "bash", "arguments": {"command": command}, "call_id": "c1"}
        return _trace(
            _step(0, "user", "message", "Fix parse.", "human"),
            _step(1, "agent", "tool_call", command, tool=tool),
            _step(2, "bash", "tool_result", listing, "tool", tool={"name": "bash", "call_id": "c1"},
                  raw={"status": "ok"}, refs={"reply_to": "s1", "call_id": "c1"}),
        )  # fmt: skip

    assert _failures(ran("cat parse.py")) == {}
    assert _failures(ran("python parse.py")) == {2: "ValueError: empty"}


def test_each_result_of_a_turn_of_two_calls_is_read_against_its_own_call() -> None:
    """A turn that runs a script and shows a file, both answered after it (mini-swe-agent 2's tool
    calls): the script's traceback is a failure, the file's is its text."""
    text = 'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: empty\n'

    def call(i: int, command: str) -> TraceStep:
        return _step(
            i,
            "agent",
            "tool_call",
            command,
            tool={"name": "bash", "arguments": {"command": command}, "call_id": f"c{i}"},
        )

    def result(i: int, answers: int) -> TraceStep:
        return _step(i, "bash", "tool_result", text, "tool", tool={"name": "bash", "call_id": f"c{answers}"},
                     raw={"status": "ok"}, refs={"reply_to": f"s{answers}", "call_id": f"c{answers}"})  # fmt: skip

    trace = _trace(_step(0, "user", "message", "Fix parse.", "human"), call(1, "python parse.py"),
                   call(2, "cat notes.py"), result(3, 1), result(4, 2))  # fmt: skip
    assert set(_failures(trace)) == {3}
    facts = _facts(trace)
    assert (facts.answer_of(1), facts.answer_of(2)) == (3, 4)  # each call's own answer


def test_an_execution_relay_counts_only_when_it_looks_like_output() -> None:
    code = "```python\nprint(1/0)\n```"
    relay = _trace(
        _step(0, "assistant", "message", "Compute it.\n" + code),
        _step(
            1,
            "proxy",
            "message",
            "Error: Traceback (most recent call last):\nZeroDivisionError: division by zero",
        ),
    )
    review = _trace(
        _step(0, "coder", "message", "Here it is.\n" + code),
        _step(1, "reviewer", "message", "to do WriteReview for the submitted code"),
    )
    assert 1 in _failures(relay)
    assert _failures(review) == {}


# -- real runs -----------------------------------------------------------------------------------------
def _tau_outcomes() -> dict[str, str]:
    rows = (TAU / "outcomes.csv").read_text().splitlines()[1:]
    return {r.split(",")[0]: r.split(",")[3] for r in rows if r}


@pytest.mark.slow
def test_succeeded_tau_runs_rarely_draw_an_actionable_failure_mode() -> None:
    """The issue's bar for succeeded runs (≤ 15% with an actionable finding), on the development runs."""
    outcomes = _tau_outcomes()
    succeeded = [name for name, o in outcomes.items() if o == "succeeded"]
    assert len(succeeded) >= 20
    flagged = 0
    for name in succeeded:
        report = run_rules_audit(real(TAU / "runs" / name), detectors=list(FAILURE_DETECTORS))
        flagged += any(
            f.detector in FAILURE_DETECTORS and f.disposition in ACTIONABLE for f in report.findings
        )
    assert flagged / len(succeeded) <= 0.15


@pytest.mark.slow
def test_a_real_payment_retry_loop_is_found_at_its_first_repeat() -> None:
    """τ-bench airline task 9, trial 2: book_reservation fails four times with one error and the
    same arguments; the loop is realized (the booking never went through) and its agent answers."""
    trace = real(TAU / "runs" / "airline-task009-trial2.json")
    report = run_rules_audit(trace, detectors=["failure_repetition", "failure_ignored_input"])
    loops = mine(report, "failure_repetition")
    assert [f.disposition.value for f in loops] == ["realized"]
    first = trace.step(loops[0].first_anomalous_step)
    assert first.tool is not None and first.tool.name == "book_reservation"
    assert loops[0].responsible_participant == "assistant"
    assert [f.failure_mode for f in mine(report, "failure_ignored_input")] == ["2.5"]


@pytest.mark.slow
def test_a_recorded_round_limit_on_a_real_run() -> None:
    """Who&When hand-crafted 11 ends with Magentic-One's 'Max rounds (30) reached.'"""
    trace = real(DATA / "whowhen" / "hand-crafted" / "11.json")
    report = run_rules_audit(trace, detectors=["failure_termination"])
    (finding,) = mine(report, "failure_termination")
    assert finding.failure_mode == "1.5" and finding.disposition.value == "realized"
    assert any("Max rounds (30) reached." in u.quote for u in finding.evidence)
    assert finding.responsible_participant == "Orchestrator"


def test_a_limit_that_a_tool_printed_is_no_record_of_the_run_s_budget() -> None:
    """A solver's source read through the shell says "max iterations reached": the program's
    message, shown to the agent; the run itself ran out of nothing."""
    listing = (
        "    for step in range(self.max_iter):\n        if converged(step):\n            return step\n"
        '    logger.warning("Max iterations reached before convergence")\n'
    )
    trace = _trace(
        _step(0, "user", "message", "Make the solver warn once.", "human"),
        _step(1, "agent", "tool_call", "sed -n 40,44p solver.py", tool={"name": "bash", "arguments": {}}),
        _step(2, "bash", "tool_result", listing, "tool"),
        _step(3, "agent", "final_output", "The solver now warns once."),
    )
    report = run_rules_audit(trace, detectors=["failure_termination"])
    assert mine(report, "failure_termination") == []


@pytest.mark.slow
@pytest.mark.parametrize(
    "folder", ["whowhen/algorithm-generated", "whowhen/hand-crafted", "taubench/airline/runs"]
)
def test_no_human_is_ever_responsible_and_reports_validate(folder: str) -> None:
    paths = sorted((DATA / folder).glob("*.json"))
    assert paths, f"no runs in {folder}"
    for path in paths:
        trace = real(path)
        report = run_rules_audit(trace, detectors=list(FAILURE_DETECTORS))
        assert validate_report(report.model_dump(mode="json"), trace).ok, path.name
        humans = {s.actor for s in trace.steps if s.actor_kind is ActorKind.human}
        for f in report.findings:
            if f.detector in FAILURE_DETECTORS:
                assert f.responsible_participant not in humans, (path.name, f.title)
                assert trace.step(f.first_anomalous_step).actor_kind is not ActorKind.human, path.name


@pytest.mark.slow
def test_injection_on_a_real_run_changes_nothing() -> None:
    trace = real(TAU / "runs" / "airline-task008-trial1.json")
    plain = run_rules_audit(trace, detectors=list(FAILURE_DETECTORS))
    assert mine(plain, "failure_repetition")
    poisoned = run_rules_audit(injected(trace), detectors=list(FAILURE_DETECTORS))
    assert finding_shapes(plain) == finding_shapes(poisoned)


# -- real MAST traces: the facts behind the findings ----------------------------------------------------
def _mast(prefix: str) -> Trace:
    (path,) = sorted((MAST / "traces").glob(f"{prefix}_*"))
    return real(path)


@pytest.mark.slow
def test_a_two_party_chat_pressed_past_its_stop() -> None:
    """AG2 GSM-Plus (MAST trace 2): the assistant says the problem cannot be solved; the proxy sends
    its same 'Continue' three times. The proxy ignored the report (2.5) and kept the exchange going
    past its stop (1.5); the assistant's last act still says it cannot go on."""
    trace = _mast("02")
    report = run_rules_audit(trace, detectors=["failure_termination", "failure_ignored_input"])
    (pressed,) = mine(report, "failure_termination")
    (ignored,) = mine(report, "failure_ignored_input")
    assert pressed.failure_mode == "1.5" and pressed.disposition.value == "realized"
    assert ignored.failure_mode == "2.5"
    assert pressed.responsible_participant == ignored.responsible_participant == "mathproxyagent"
    assert any("Continue. Please keep solving" in u.quote for u in pressed.evidence)
    assert validate_report(report.model_dump(mode="json"), trace).ok


@pytest.mark.slow
def test_an_error_caught_instead_of_fixed_in_a_real_chatdev_log() -> None:
    """ChatDev MMLU (MAST trace 15): the test report's TclError is caught by the Programmer's next
    code, and the next test report passes: incorrect verification (3.3), realized. The passing run
    of a GUI program is also all the checking there was (3.2)."""
    trace = _mast("15")
    report = run_rules_audit(trace, detectors=["failure_verification"])
    modes = {f.failure_mode: f for f in mine(report, "failure_verification")}
    silenced = modes["3.3"]
    assert silenced.disposition.value == "realized" and silenced.responsible_participant == "Programmer"
    quotes = [u.quote for u in silenced.evidence]
    assert any("TclError: no display name" in q for q in quotes)
    assert any(q.startswith("except tk.TclError") for q in quotes)
    assert modes["3.2"].disposition.value == "lead"
    assert validate_report(report.model_dump(mode="json"), trace).ok


@pytest.mark.slow
def test_an_error_a_reproduction_catches_and_prints_is_not_silenced() -> None:
    """A mini-SWE-agent run (SWE-bench, astropy-14539): numpy's DTypePromotionError fails a check;
    the agent's next script wraps the call in ``except Exception as e: print(f"Failed: {e}")`` and
    exits 0. Its output prints the caught error's message: the error is shown, not hidden, so no
    'caught instead of fixed' finding (the ChatDev run above, whose handler hides it, keeps one)."""
    trace = real(DATA / "swebench" / "runs" / "astropy__astropy-14539.traj.json")
    report = run_rules_audit(trace, detectors=["failure_verification"])
    assert not [f for f in mine(report, "failure_verification") if "caught the reported error" in f.title]


@pytest.mark.slow
def test_a_test_that_restates_the_code_and_an_answer_format_never_given() -> None:
    """MetaGPT MMLU (MAST trace 16): the tester asserts find_answer() == "The answer is (0)", the very
    literal find_answer returns (3.3); the run stops without ever answering in the asked format (1.1)."""
    trace = _mast("16")
    report = run_rules_audit(trace, detectors=["failure_verification", "failure_constraint"])
    tautology = [f for f in mine(report, "failure_verification") if f.failure_mode == "3.3"]
    assert [f.responsible_participant for f in tautology] == ["SimpleTester"]
    assert any("The answer is (0)" in u.quote for u in tautology[0].evidence)
    (dropped,) = mine(report, "failure_constraint")
    assert dropped.failure_mode == "1.1" and dropped.disposition.value == "realized"


@pytest.mark.slow
def test_a_predicted_output_taken_for_a_result() -> None:
    """HyperAgent (MAST trace 6): the Executor writes 'The output of the code snippet will be:' and
    the output it expects; the Planner declares the issue resolved repeating that output (3.3)."""
    trace = _mast("06")
    report = run_rules_audit(trace, detectors=["failure_verification"])
    (taken,) = mine(report, "failure_verification")
    assert taken.failure_mode == "3.3" and taken.responsible_participant == "Planner"
    predicted, repeated = (u.quote for u in taken.evidence)
    assert predicted == "The output of the code snippet will be:"
    assert "Pipeline fitted successfully." in repeated
    assert validate_report(report.model_dump(mode="json"), trace).ok


def _taken(report: AuditReport) -> list:
    return [f for f in mine(report, "failure_verification") if "as the outcome without checking" in f.title]


@pytest.mark.slow
def test_an_answer_taken_on_a_workers_report_is_an_outcome_nobody_checked() -> None:
    """Magentic-One GAIA (MAST trace 17): the surfer states the figure with no page behind it and the
    orchestrator delivers it as FINAL ANSWER at once (3.3 in the annotators' sense: the outcome was
    never confirmed). AppWorld (MAST trace 0): the supervisor ends after the agent reports its call
    failed (no outcome to confirm). AG2 (MAST trace 2): the boxed answer is the assistant's own,
    not the proxy's prompt before it."""
    trace = _mast("17")
    report = run_rules_audit(trace, detectors=["failure_verification"])
    (taken,) = _taken(report)
    assert taken.failure_mode == "3.3" and taken.disposition.value == "lead"
    assert taken.responsible_participant == "MagenticOneOrchestrator"
    report_quote, answer_quote = (u.quote for u in taken.evidence)
    assert "525 at bats" in report_quote and answer_quote.startswith("FINAL ANSWER: 525")
    assert validate_report(report.model_dump(mode="json"), trace).ok
    for prefix in ("00", "02"):
        assert _taken(run_rules_audit(_mast(prefix), detectors=["failure_verification"])) == []


def _delegated(*last: tuple[str, str, str]) -> Trace:
    """A coordinator delegates a lookup; the worker answers from a tool; ``last`` ends the run."""
    steps = [
        _step(0, "user", "message", "Which plan is the customer on?", actor_kind="human"),
        _step(1, "lead", "message", "Please look up the customer's plan.", recipients=["worker"]),
        _step(2, "worker", "tool_call", '{"id": "C-17"}', tool={"name": "lookup"}),
        _step(3, "lookup", "tool_result", '{"plan": "gold"}', actor_kind="tool", tool={"name": "lookup"}),
        _step(4, "worker", "message", "The customer is on the gold plan.", recipients=["lead"]),
    ]
    steps += [
        _step(len(steps) + i, actor, kind, text, actor_kind="tool" if kind == "tool_result" else "agent")
        for i, (actor, kind, text) in enumerate(last)
    ]
    return _trace(*steps)


@pytest.mark.parametrize(
    ("last", "taken"),
    [
        ([("lead", "final_output", "FINAL ANSWER: gold")], True),
        ([("lead", "message", "The plan is gold.\nFINAL ANSWER: gold")], True),
        (
            [
                ("lead", "tool_call", '{"account": "C-17"}'),
                ("billing", "tool_result", '{"plan": "gold", "paid": true}'),
                ("lead", "final_output", "FINAL ANSWER: gold"),
            ],
            False,
        ),
        ([("lead", "final_output", "FINAL ANSWER: silver")], False),
        ([("lead", "message", "TERMINATE")], False),
    ],
)
def test_which_endings_take_the_outcome_on_a_report(last: list, taken: bool) -> None:
    """Only a delivery made on the worker's report, adopting its value, with no act of the
    deliverer's between, is an outcome nobody checked; a bare TERMINATE delivers nothing."""
    report = run_rules_audit(_delegated(*last), detectors=["failure_verification"])
    assert bool(_taken(report)) is taken


def _unchecked(report: AuditReport) -> list:
    return [f for f in mine(report, "failure_verification") if "computation's output" in f.title]


@pytest.mark.slow
def test_a_computed_answer_delivered_straight_off_its_one_run() -> None:
    """AG2 GSM-Plus (MAST traces 7 and 12): the assistant's code runs once (trace 12: once more
    after a NameError) and the assistant boxes the printed number at once, with nothing between:
    an outcome nobody checked (3.3), a lead. Trace 2 boxes no computed number: nothing."""
    for prefix, number in (("07", "29"), ("12", "0")):
        trace = _mast(prefix)
        report = run_rules_audit(trace, detectors=["failure_verification"])
        (unchecked,) = _unchecked(report)
        assert unchecked.failure_mode == "3.3" and unchecked.disposition.value == "lead"
        assert unchecked.responsible_participant == "assistant"
        printed, delivered = (u.quote for u in unchecked.evidence)
        assert printed.startswith(number) and f"\\boxed{{{number}}}" in delivered
        assert validate_report(report.model_dump(mode="json"), trace).ok
    assert _unchecked(run_rules_audit(_mast("02"), detectors=["failure_verification"])) == []


@pytest.mark.slow
def test_a_computed_answer_another_run_showed_too_is_checked() -> None:
    """MAST trace 7 with a second computation of the same number (the proxy's run of another
    program) before the answer: the number was shown twice, so it was cross-checked."""
    steps = _mast("07").steps
    check = [
        _step(
            3,
            "assistant",
            "message",
            "Let me check another way.\n```python\nprint((150 + 200 - 60) // 10)\n```",
        ),
        _step(4, "mathproxyagent", "message", "29"),
    ]
    last = steps[3].model_copy(update={"step_id": "s5", "index": 5})
    trace = Trace(header=_mast("07").header, steps=[*steps[:3], *check, last])
    assert _unchecked(run_rules_audit(trace, detectors=["failure_verification"])) == []


@pytest.mark.slow
def test_a_failed_call_the_agent_replaced_is_no_premature_end() -> None:
    """AppWorld (MAST trace 11): show_personal_info does not exist; the supervisor uses show_profile
    and goes on. That failed call is no unfinished step (no 3.1); trace 0, where the agent gives up
    on its failed call, still draws one."""
    assert mine(run_rules_audit(_mast("11"), detectors=["failure_premature"]), "failure_premature") == []
    (gave_up,) = mine(run_rules_audit(_mast("00"), detectors=["failure_premature"]), "failure_premature")
    assert gave_up.failure_mode == "3.1"


@pytest.mark.slow
def test_a_failed_check_relayed_as_success_names_incorrect_verification() -> None:
    """HyperAgent (MAST trace 10): the Executor states 'all tests are passing' after its assistant
    reported the script failed; the relay finding names MAST 3.3."""
    report = run_rules_audit(_mast("10"), detectors=["unverified_relay"])
    relays = [f for f in report.findings if f.disposition.value == "realized"]
    assert relays and all(f.failure_mode == "3.3" for f in relays)


# -- the MAST harness ------------------------------------------------------------------------------------
def test_cohens_kappa_by_hand() -> None:
    s = ModeScore(tp=3, fp=1, fn=2, tn=4)  # po = 0.7, pe = (4*5 + 6*5) / 100 = 0.5
    assert s.kappa == pytest.approx(0.4)
    assert s.precision == pytest.approx(0.75) and s.recall == pytest.approx(0.6)
    assert ModeScore(tn=19).kappa is None  # one class only: chance agreement is total


def test_labels_of_the_real_file() -> None:
    labels = load_mast_labels(DATA / "mast" / "derived" / "human_labels_mast14.jsonl")
    assert len(labels) == 19 and labels[0]["1.5"] and not labels[18]["1.1"]


def test_a_bad_labels_file_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "mast"
    (root / "traces").mkdir(parents=True)
    (root / "human_labels_mast14.jsonl").write_text('{"trace_id": 0, "labels_mast14": {"1.1": {}}}\n')
    assert mast_main(["--mast", str(root)]) == 2
    err = capsys.readouterr().err
    assert "human_labels_mast14.jsonl" in err and "line 1" in err and "labels_mast14" in err


@pytest.mark.slow
def test_mast_harness_on_the_real_traces(capsys: pytest.CaptureFixture[str]) -> None:
    assert mast_main(["--json"]) == 0
    result = json.loads(capsys.readouterr().out)["mast"]
    assert result["traces"] == 19
    assert set(result["modes"]) == set(MAST_MODES)
    pooled = result["pooled_covered"]
    assert pooled["tp"] + pooled["fp"] + pooled["fn"] + pooled["tn"] == 19 * 8
    assert {row["file"][:2] for row in result["per_trace"]} == {f"{i:02d}" for i in range(19)}


@pytest.mark.slow
def test_mast_harness_split_by_round_partitions_the_traces(capsys: pytest.CaptureFixture[str]) -> None:
    """Each round is scored on its own traces; the parts' counts add up to the whole."""
    assert mast_main(["--json", "--split-by", "round"]) == 0
    result = json.loads(capsys.readouterr().out)["mast"]
    parts = result["parts"]
    assert set(parts) == {"Round1", "Round2", "Round3", "Generlazability"}
    assert sum(p["traces"] for p in parts.values()) == result["traces"] == 19
    for key in ("tp", "fp", "fn", "tn"):
        assert sum(p["pooled_covered"][key] for p in parts.values()) == result["pooled_covered"][key]


# -- what makes two messages the same act -----------------------------------------------------------
def _status_loop(texts: list[str]) -> list[str]:
    """The repetition findings' first anomalous steps when one agent posts ``texts`` in turn, with
    the other agent's unchanged acknowledgement between them (nothing new comes back)."""
    steps = []
    for text in texts:
        steps.append(_step(len(steps), "ops", "message", text))
        steps.append(_step(len(steps), "lead", "message", "Noted, thank you for the update."))
    report = run_rules_audit(_trace(*steps), detectors=["failure_repetition"])
    return [f.first_anomalous_step for f in report.findings]


def test_another_ticket_or_date_is_another_act() -> None:
    """Numbers that name something (a ticket, a date, an amount) make another message; the
    acknowledgement between them is the same each time, so only the signature decides."""
    assert (
        _status_loop([f"Ticket OPS-{n} is closed; the review moves to 2026-11-0{n}." for n in (1, 2, 3)])
        == []
    )
    assert _status_loop([f"The refund of ${n}00 for order W{n} has been sent." for n in (1, 2, 3)]) == []
    same = "Ticket OPS-7 is closed; the review moves to 2026-11-04."
    assert _status_loop([same, same, same]) == ["s2", "s3"]  # and the acknowledgements, with nothing new


def test_a_progress_counter_or_clock_time_does_not_make_another_act() -> None:
    texts = [f"Executing step {n}/20 of the migration plan at 10:0{n}:00 now." for n in (1, 2, 3)]
    assert _status_loop(texts) == ["s2"]
