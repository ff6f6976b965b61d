"""The §16.2 action parser: known completions by hand, then fuzzed for crashes and idempotence."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.actions import (
    ParsedAction,
    canonical_value,
    first_object_closed,
    judge_target,
    parse_action,
)

EMAIL = {"tool": "send_email", "arguments": {"recipient": "priya@example.com", "attachment": "v4.pdf"}}


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        (
            json.dumps(EMAIL),
            ParsedAction("send_email", {"recipient": "priya@example.com", "attachment": "v4.pdf"}),
        ),
        ("```json\n" + json.dumps(EMAIL) + "\n```", ParsedAction("send_email", EMAIL["arguments"])),
        ("```\n" + json.dumps(EMAIL), ParsedAction("send_email", EMAIL["arguments"])),  # unclosed fence
        ("Sure! " + json.dumps(EMAIL) + " Done.", ParsedAction("send_email", EMAIL["arguments"])),
        ('{"tool": "a", "arguments": {"x": "1"}}}}', ParsedAction("a", {"x": "1"})),  # runaway braces
        (
            '{"tool": "a", "arguments": {"note": "brace } and \\" quote {"}}',
            ParsedAction("a", {"note": 'brace } and " quote {'}),
        ),
        ('{tool: a} then {"tool": "b"}', ParsedAction("b", None)),  # first balanced span is not JSON
        ('{"tool": "copy", "arguments": {', None),  # truncated: no balanced object
        ('{"arguments": {"x": 2}}', ParsedAction(None, {"x": "2"})),  # no tool key: tool absent
        ('{"tool": "a", "arguments": ["x"]}', ParsedAction("a", None)),  # arguments not an object
        ('{"tool": null}', ParsedAction("null", None)),  # the key parses, so the tool is present
        ("[1, 2]", None),
        ("", None),
        ("no json here", None),
    ],
)
def test_known_completions(completion: str, expected: ParsedAction | None) -> None:
    assert parse_action(completion) == expected


def test_truncated_outer_object_falls_back_to_a_balanced_inner_one() -> None:
    parsed = parse_action('{"tool": "copy_file", "arguments": {"source_path": "/a"}')
    assert parsed == ParsedAction(None, None)  # the inner object has neither key


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (10, "10"),
        (10.0, "10"),
        ("0.01", 0.01),
        ("1E5", 100000),
        (" Priya@Example.COM ", "priya@example.com"),
        ("two  words\n", "two words"),
        ("[5, 4]", [5, 4]),
        ("true", True),
        ("ｆｉｌｅ", "file"),  # NFKC: full-width letters
    ],
)
def test_canonical_equivalences(a: object, b: object) -> None:
    assert canonical_value(a) == canonical_value(b)


@pytest.mark.parametrize(("a", "b"), [("#W477", "W477"), ("10", "10.5"), ("a", "a.")])
def test_canonical_keeps_distinct_values_apart(a: object, b: object) -> None:
    assert canonical_value(a) != canonical_value(b)


def test_judge_target() -> None:
    action = parse_action('{"tool": "send_email", "arguments": {"recipient": "old@example.com"}}')
    tool = judge_target(action, None, "send_email", "forward_email")
    assert tool.correct and tool.competitor_match is None  # correct: no competitor question
    wrong = judge_target(action, "recipient", "priya@example.com", "Old@Example.com")
    assert not wrong.correct and wrong.competitor_match is True and wrong.value == "old@example.com"
    absent = judge_target(action, "attachment", "v4.pdf", "v3.pdf")
    assert absent.value is None and not absent.correct and absent.competitor_match is False
    malformed = judge_target(None, None, "send_email", None)
    assert not malformed.correct and malformed.competitor_match is None  # no competitor presented


def test_stop_rule_follows_quoted_braces() -> None:
    assert not first_object_closed('{"tool": "a", "arguments": {"x": "}')
    assert not first_object_closed('{"tool": "a}"')
    assert first_object_closed('{"tool": "a", "arguments": {}}\n')
    assert not first_object_closed("no object yet")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
actions = st.fixed_dictionaries(
    {},
    optional={
        "tool": json_values,
        "arguments": st.dictionaries(st.text(max_size=8), json_values, max_size=4),
    },
)
noise = st.text(max_size=20)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=200))
def test_any_text_parses_or_is_malformed(text: str) -> None:
    parsed = parse_action(text)
    assert parsed is None or isinstance(parsed, ParsedAction)
    if parsed is not None:
        assert parse_action(parsed.to_json()) == parsed


@settings(max_examples=400, deadline=None)
@given(actions, noise, noise, st.booleans())
def test_embedded_action_is_found_and_canonical_output_is_a_fixed_point(
    action: dict, before: str, after: str, fenced: bool
) -> None:
    body = json.dumps(action)
    text = f"```json\n{body}\n```" if fenced else body
    if "{" not in before:  # the first balanced object must be this one
        text = before + text + after
    parsed = parse_action(text)
    assert parsed is not None
    assert parsed.tool == (canonical_value(action["tool"]) if "tool" in action else None)
    assert parse_action(parsed.to_json()) == parsed


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_canonical_value_is_idempotent(value: object) -> None:
    once = canonical_value(value)
    assert canonical_value(once) == once


def test_deep_nesting_is_malformed_not_a_crash() -> None:
    assert parse_action('{"tool": ' + "[" * 900 + "]" * 900 + "}") is None
    assert canonical_value("[" * 5000 + "]" * 5000) == "[" * 5000 + "]" * 5000
