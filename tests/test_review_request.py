"""`auditor review`'s options as one checked request, and a multi-trace input's reports as one
file's text (``render_reports``): the command itself only wires them together."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from auditor.audit.report.render import render, render_reports
from auditor.core.errors import InputError
from auditor.surfaces.cli.review_request import AgentRequest, ReviewRequest
from schemas import GraphMode
from tests.conftest import DATA, REPO

AGENT = AgentRequest("local/smollm2", "v3", None, 30, 200_000, 600.0)


def options(**changed: Any) -> dict[str, Any]:
    """The command's defaults, with ``changed`` options given."""
    given: dict[str, Any] = {
        "path": str(REPO / "examples" / "renewal_drift.jsonl"),
        "input_format": "auto",
        "graph": "annotated",
        "engine": "rules",
        "agent": AGENT,
        "policy": None,
        "detectors": None,
        "output": None,
        "fmt": None,
        "as_json": False,
        "quiet": False,
        "redact": False,
        "redact_pattern": [],
        "trace_id": None,
        "outcome": None,
    }
    return given | changed


def test_defaults_and_the_format_an_output_name_implies(tmp_path: Path) -> None:
    plain = ReviewRequest.checked(**options())
    assert (plain.fmt, plain.mode, plain.agent, plain.policy, plain.from_stdin) == (
        "summary",
        GraphMode.annotated,
        None,
        None,
        False,
    )
    assert plain.file_format == "json"  # the terminal's summary is written to a file as JSON
    assert ReviewRequest.checked(**options(as_json=True)).fmt == "json"
    assert ReviewRequest.checked(**options(output=tmp_path / "r.json")).fmt == "json"
    written_md = ReviewRequest.checked(**options(output=tmp_path / "r.md", fmt="md"))
    assert (written_md.fmt, written_md.file_format) == ("md", "md")


def test_options_are_read_into_their_forms() -> None:
    request = ReviewRequest.checked(
        **options(
            path="-",
            graph="topology",
            detectors="state_drift, failure_repetition",
            policy=REPO / "examples" / "policies" / "airline.yaml",
            redact_pattern=["EMPLOYEE_ID=E\\d{6}"],
            engine="agent",
            agent=AgentRequest("replay/x", "naive", "rules", 3, 1000, 5.0),
        )
    )
    assert request.from_stdin and request.mode is GraphMode.topology
    assert request.detectors == ["state_drift", "failure_repetition"]
    assert request.policy is not None and request.redact and request.patterns == {"EMPLOYEE_ID": "E\\d{6}"}
    assert request.agent is not None
    assert (request.agent.model, request.agent.contract, request.agent.seed_findings) == (
        "replay/x",
        "naive",
        "rules",
    )
    assert (request.agent.budget.max_tool_calls, request.agent.budget.max_tokens) == (3, 1000)


@pytest.mark.parametrize(
    ("changed", "named"),
    [
        ({"fmt": "pdf"}, "field '--format'"),
        ({"graph": "dense"}, "field '--graph'"),
        ({"outcome": "maybe"}, "field '--outcome'"),
        ({"redact_pattern": ["NO_EQUALS"]}, "field '--redact-pattern'"),
        ({"engine": "agent", "agent": AgentRequest("m", "v9", None, 1, 1, 1.0)}, "field '--contract'"),
        ({"engine": "agent", "agent": AgentRequest("m", "v3", "all", 1, 1, 1.0)}, "field '--seed-findings'"),
        ({"policy": Path("/no/such/policy.yaml")}, "/no/such/policy.yaml"),
    ],
)
def test_a_wrong_option_is_one_input_error_naming_it(changed: dict[str, Any], named: str) -> None:
    with pytest.raises(InputError) as err:
        ReviewRequest.checked(**options(**changed))
    assert named in err.value.one_line()


def test_an_output_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a regular file"):
        ReviewRequest.checked(**options(output=tmp_path))
    assert ReviewRequest.checked(**options(output=Path("-"))).output == Path("-")


def test_several_reports_are_one_json_array_and_one_report_its_object(tmp_path: Path) -> None:
    from auditor.audit.review import review_file
    from auditor.core.store import open_store

    runs = sorted((DATA / "taubench" / "airline" / "runs").glob("airline-task041-*.json"))[:2]
    lines = tmp_path / "runs.jsonl"
    lines.write_text("".join(json.dumps(json.loads(p.read_text())) + "\n" for p in runs))
    outcomes = review_file(open_store(f"sqlite:///{tmp_path / 's.db'}"), lines)
    pairs = [(o.report, o.trace) for o in outcomes]
    assert len(pairs) == 2
    array = json.loads(render_reports(pairs, "json"))
    assert array == [o.report.model_dump(mode="json") for o in outcomes]
    assert render_reports(pairs[:1], "json") == render(*pairs[0], "json")
    markdown = render_reports(pairs, "md")
    assert markdown == render(*pairs[0], "md") + "\n" + render(*pairs[1], "md")
    with pytest.raises(InputError, match="the report audits trace"):  # a report with another's trace
        render_reports([(pairs[0][0], pairs[1][1])], "md")
