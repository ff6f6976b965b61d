"""Issue 33's papercuts in what a responder reads: ``auditor attribute`` and ``review --outcome
failed`` name the same agent and step on one input (one code path, ``--policy`` on both); a
policy finding's evidence quotes the call itself, arguments and all, with the tool named beside
it; a rule's alternatives print with their grouping brackets; the decisive step shows its time
where steps carry one; numbers print plainly in Markdown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from tests.cli_helpers import run
from tests.conftest import REPO

INCIDENT = REPO / "examples" / "incidents" / "airline-task041-trial0.json"
AIRLINE = REPO / "examples" / "policies" / "airline.yaml"
TIMED = REPO / "examples" / "renewal_drift.jsonl"  # every step carries a timestamp

pytestmark = pytest.mark.slow  # CLI runs


def _review(tmp_path: Path, path: Path, *extra: str) -> dict:
    proc = run(["review", str(path), "--outcome", "failed", "--json", *extra], tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def _steps(tmp_path: Path, trace_id: str) -> dict[str, dict]:
    shown = run(["traces", "show", trace_id, "--json"], tmp_path)
    return {s["step_id"]: s for s in json.loads(shown.stdout)["steps"]}


# -- one attribution ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "policy"),
    [(INCIDENT, AIRLINE), (INCIDENT, None), (TIMED, None)],
    ids=["policy", "bare", "timed"],
)
def test_attribute_gives_the_reviews_attribution(tmp_path: Path, path: Path, policy: Path | None) -> None:
    extra = ["--policy", str(policy)] if policy else []
    report = _review(tmp_path, path, *extra)
    proc = run(["attribute", str(path), "--json", *extra], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == report["attribution"]
    by_id = run(["attribute", report["trace_id"], "--json", *extra], tmp_path)  # the stored trace too
    assert json.loads(by_id.stdout) == report["attribution"]


def test_under_the_policy_both_blame_the_forbidden_call(tmp_path: Path) -> None:
    """Without the policy's finding the rules' first-act signal wins; with it, the forbidden call
    is the decisive step, for attribute as for review."""
    report = _review(tmp_path, INCIDENT, "--policy", str(AIRLINE))
    [finding] = [f for f in report["findings"] if f["policy_rule"]]
    steps = _steps(tmp_path, report["trace_id"])
    assert steps[finding["first_anomalous_step"]]["kind"] == "tool_call"
    proc = run(["attribute", str(INCIDENT), "--policy", str(AIRLINE), "--json"], tmp_path)
    assert json.loads(proc.stdout)["step_id"] == finding["first_anomalous_step"]


def test_policy_belongs_to_the_rules_strategy(tmp_path: Path) -> None:
    proc = run(
        ["attribute", str(INCIDENT), "--strategy", "counterfactual", "--policy", str(AIRLINE)], tmp_path
    )
    assert proc.returncode == 2 and "--policy" in proc.stderr and "rules" in proc.stderr


# -- the evidence quotes the act ------------------------------------------------------------------------


def test_a_policy_finding_quotes_the_call_with_its_arguments(tmp_path: Path) -> None:
    report = _review(tmp_path, INCIDENT, "--policy", str(AIRLINE))
    [finding] = [f for f in report["findings"] if f["policy_rule"]]
    step = _steps(tmp_path, report["trace_id"])[finding["first_anomalous_step"]]
    [unit] = [u for u in finding["evidence"] if u["step_id"] == step["step_id"]]
    assert unit["quote"] == step["content"].strip()
    assert json.loads(unit["quote"]) == step["tool"]["arguments"]  # every argument, as called
    summary = run(["review", str(INCIDENT), "--outcome", "failed", "--policy", str(AIRLINE)], tmp_path).stdout
    assert f"{step['step_id']} {unit['edge_ref']} call {step['tool']['name']} “{unit['quote']}”" in summary
    md = run(
        ["review", str(INCIDENT), "--outcome", "failed", "--policy", str(AIRLINE), "-f", "md"], tmp_path
    ).stdout
    assert f"step `{step['step_id']}` (call {step['tool']['name']})".replace("_", "\\_") in md


CALL_DETECTORS = ["policy_actions", "policy_allowances", "policy_identifiers", "policy_confirmation"]


@pytest.mark.parametrize("detector", CALL_DETECTORS)
def test_every_policy_finding_at_a_call_quotes_the_whole_call(detector: str) -> None:
    """On the detectors' frozen case sets: where a finding's first step is a tool call, its
    evidence there is the call as written (every argument), never a lone value out of it."""
    from tests.detector_paraphrase import SETS, audit_case, cases, load

    checked = 0
    for name, expect in cases(detector):
        if expect["disposition"] is None:
            continue
        trace = load(SETS / detector / name)
        for f in audit_case(detector, name, expect).findings:
            step = trace.step(f.first_anomalous_step)
            if step.kind.value != "tool_call":
                continue
            quotes = [u.quote for u in f.evidence if u.step_id == step.step_id]
            assert quotes == [step.content.strip()], (name, quotes)
            checked += 1
    assert checked, detector


def test_a_call_too_long_to_quote_whole_is_quoted_around_the_value_the_finding_is_about() -> None:
    """The same booking with a long note written before its arguments: the quote is cut to
    CALL_QUOTE_CHARS, and it keeps the charged amount the allowance finding is about."""
    import json as _json

    from auditor.audit.detectors.policy_facts import CALL_QUOTE_CHARS
    from auditor.audit.engine import run_rules_audit
    from tests.detector_paraphrase import SETS, cases, load, policy_of

    name, expect = next(c for c in cases("policy_allowances") if c[1]["disposition"] is not None)
    trace = load(SETS / "policy_allowances" / name)
    [f] = [
        f
        for f in run_rules_audit(trace, policy=policy_of("policy_allowances", expect)).findings
        if f.detector == "policy_allowances"
    ]
    call = trace.step(f.first_anomalous_step)
    arguments = {"note": "n" * (2 * CALL_QUOTE_CHARS), **call.tool.arguments}
    content = _json.dumps(arguments, separators=(",", ":"))
    long_call = call.model_copy(
        update={"content": content, "tool": call.tool.model_copy(update={"arguments": arguments})}
    )
    steps = [long_call if s.step_id == call.step_id else s for s in trace.steps]
    longer = trace.model_copy(update={"steps": steps})
    [g] = [
        g
        for g in run_rules_audit(longer, policy=policy_of("policy_allowances", expect)).findings
        if g.detector == "policy_allowances"
    ]
    [quote] = [u.quote for u in g.evidence if u.step_id == call.step_id]
    assert len(quote) == CALL_QUOTE_CHARS and quote in content
    policy = policy_of("policy_allowances", expect)
    assert policy is not None
    charged = next(r.charged_argument for r in policy.allowances if r.id == g.policy_rule)
    assert f'"{charged}":{arguments[charged]}' in quote


# -- a rule prints with its grouping ------------------------------------------------------------------


def test_compound_alternatives_are_bracketed() -> None:
    from auditor.audit.policy_rules import Condition

    compound = Condition.model_validate(
        {"field": "insurance", "equals": "yes", "and": [{"claim": "reason", "in": ["health", "weather"]}]}
    )
    simple = Condition.model_validate({"field": "cabin", "equals": "business"})
    assert (
        compound.describe() == "insurance = 'yes' and the customer's stated reason in ['health', 'weather']"
    )
    assert compound.describe(grouped=True) == f"({compound.describe()})"
    assert simple.describe(grouped=True) == simple.describe()


def test_the_finding_reads_its_rule_with_brackets(tmp_path: Path) -> None:
    report = _review(tmp_path, INCIDENT, "--policy", str(AIRLINE))
    [finding] = [f for f in report["findings"] if f["policy_rule"]]
    mechanism = finding["mechanism"]
    assert " or (" in mechanism and " and " in mechanism.split(" or (", 1)[1].split(")", 1)[0]
    assert "h before now" in mechanism  # a time window reads from the record's side, as "of booking" does


# -- the decisive step's time ---------------------------------------------------------------------------


def test_the_decisive_step_shows_its_time_where_steps_carry_one(tmp_path: Path) -> None:
    report = _review(tmp_path, TIMED)
    when = _steps(tmp_path, report["trace_id"])[report["attribution"]["step_id"]]["timestamp"]
    assert when
    line = f"at step {report['attribution']['step_id']} on {when}"
    for fmt in ("summary", "md", "html"):
        out = run(["review", str(TIMED), "--outcome", "failed", "-f", fmt], tmp_path).stdout
        assert line in " ".join(out.split()), fmt
    attributed = run(["attribute", str(TIMED)], tmp_path).stdout
    assert f"decisive step: {report['attribution']['step_id']} on {when}" in attributed
    untimed = _review(tmp_path, INCIDENT)
    text = run(["review", str(INCIDENT), "--outcome", "failed"], tmp_path).stdout
    assert f"at step {untimed['attribution']['step_id']} (index" in text


# -- numbers in Markdown ------------------------------------------------------------------------------------


def test_markdown_prints_numbers_plainly(tmp_path: Path) -> None:
    md = run(
        ["review", str(INCIDENT), "--outcome", "failed", "--policy", str(AIRLINE), "-f", "md"], tmp_path
    ).stdout
    score = _review(tmp_path, INCIDENT, "--policy", str(AIRLINE))["risk_score"]
    assert f"**Risk score:** {score:.2f}" in md and "\\." not in md


NUMBERS = ["0.51", "-3", "+2", "1.5 h", "42", "2024-05-02"]


@pytest.mark.parametrize("text", [*NUMBERS, "#hashtag", "1.", "- item", "# h", "==="])
def test_md_text_renders_as_the_text_it_was(text: str) -> None:
    """CommonMark reads the escaped text back as the same paragraph (no list, heading or rule);
    a number needs no escape at all."""
    from auditor.audit.report.render_markdown import md_text

    html = MarkdownIt("commonmark").render(md_text(text))
    assert html == f"<p>{text}</p>\n"
    if text in NUMBERS:
        assert md_text(text) == text
