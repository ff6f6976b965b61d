"""The declared-invariants language: every example policy loads, and every mistake is one clear
InputError naming the file, the line and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.audit.policy import Policy, load_policy, parse_policy
from auditor.core.errors import InputError
from schemas import ActorKind

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples" / "policies").glob("*.yaml"))
FIXTURE_POLICIES = sorted((ROOT / "tests" / "fixtures" / "paraphrase").glob("*/*.yaml"))

GOOD = """\
version: 1
name: care
cumulative_limits:
  - id: cap
    tools: [issue_credit]
    amount_argument: amount
    group_by: customer_id
    window: quarter
    limit: 40
required_approvals:
  - id: above-20
    tools: [issue_credit]
    amount_argument: amount
    threshold: 20
    approver: finance_approver
"""


@pytest.mark.parametrize("path", EXAMPLES + FIXTURE_POLICIES, ids=lambda p: p.name)
def test_shipped_policies_load(path: Path) -> None:
    policy = load_policy(path)
    assert policy.rules(), f"{path.name} declares no rule"
    assert policy.digest.startswith("sha256:")


def test_five_worlds_have_an_example_policy() -> None:
    assert {p.stem for p in EXAMPLES} >= {"a1", "b1", "c1", "d1", "f1"}


def test_digest_is_stable_and_content_sensitive() -> None:
    a, b = parse_policy(GOOD), parse_policy(GOOD)
    assert a.digest == b.digest
    assert parse_policy(GOOD.replace("limit: 40", "limit: 45")).digest != a.digest


def test_approvers_and_restricted_defaults() -> None:
    policy = parse_policy(
        GOOD
        + """\
fields:
  - {name: salary, keys: [salary, compensation]}
  - {name: title}
disclosure_scopes:
  - id: requester
    principal: {actor_kind: human, names: ["Dana *"]}
    may_receive: [title]
"""
    )
    assert policy.approvers() == ["finance_approver"]
    scope = policy.disclosure_scopes[0]
    assert policy.restricted_for(scope) == ["salary"]
    assert scope.principal.matches("Dana Whitfield", ActorKind.human)
    assert not scope.principal.matches("Dana Whitfield", ActorKind.agent)
    assert not scope.principal.matches("Lee Ortiz", ActorKind.human)
    assert policy.field("salary").all_keys() == ["salary", "compensation"]
    assert policy.field("office").all_labels() == ["office"]


def _error(text: str) -> InputError:
    with pytest.raises(InputError) as info:
        parse_policy(text, "p.yaml")
    return info.value


@pytest.mark.parametrize(
    ("edit", "line", "field", "words"),
    [
        (("window: quarter", "window: fortnight"), 8, "cumulative_limits.0.window", "day"),
        (("limit: 40", "limit: -1"), 9, "cumulative_limits.0.limit", "greater than 0"),
        (
            ("    limit: 40\n", "    limit: 40\n    windw: day\n"),
            10,
            "cumulative_limits.0.windw",
            "Extra inputs",
        ),
        (
            ("    tools: [issue_credit]\n    amount_argument: amount\n    group_by", "    group_by"),
            4,
            "cumulative_limits.0.tools",
            "required",
        ),
        (("threshold: 20", "threshold: lots"), 14, "required_approvals.0.threshold", "number"),
        (("id: above-20", "id: cap"), 11, None, "used twice"),
    ],
)
def test_validation_errors_name_line_and_field(
    edit: tuple[str, str], line: int, field: str | None, words: str
) -> None:
    assert edit[0] in GOOD
    err = _error(GOOD.replace(edit[0], edit[1], 1))
    assert err.path == "p.yaml"
    assert err.line == line, str(err)
    assert err.field == field, str(err)
    assert words in str(err)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("name: [x\n", "not valid YAML"),
        ("- just\n- a list\n", "YAML mapping"),
        ("name: x\nversion: 2\n", "version"),
        (
            "name: x\ndisclosure_scopes:\n  - id: s\n    principal: {}\n    restricted: [salary]\n",
            "'names' or 'actor_kind'",
        ),
        (
            "name: x\ndisclosure_scopes:\n  - id: s\n    principal: {actor_kind: human}\n"
            "    may_receive: [salary]\n    restricted: [salary]\n",
            "both in may_receive and restricted",
        ),
        ("name: x\ndisclosure_scopes:\n  - id: s\n    principal: {actor_kind: human}\n", "restricts nothing"),
        ("name: x\nfields:\n  - {name: a, patterns: ['(']}\n", "not a valid regular expression"),
        ("name: x\nrequired_checks:\n  - id: c\n    before: [pay]\n", "requires_tool"),
        (
            "name: x\ncumulative_limits:\n  - id: c\n    tools: [pay]\n    amount_argument: a\n    limit: 1\n"
            "    time: {source: argument}\n",
            "'argument' is required",
        ),
    ],
)
def test_semantic_mistakes_are_input_errors(text: str, words: str) -> None:
    err = _error(text)
    assert words in str(err)
    assert err.line is not None


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read the policy file"):
        load_policy(tmp_path / "absent.yaml")


def test_policy_is_frozen() -> None:
    policy: Policy = parse_policy(GOOD)
    with pytest.raises(ValueError):
        policy.name = "other"  # type: ignore[misc]
