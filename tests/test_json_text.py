"""JSON inside a step's text is decoded within the canonical format's depth bound, else left as text."""

from __future__ import annotations

from auditor.core.json_text import MAX_DEPTH, json_value


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_values_up_to_the_bound_decode_and_deeper_ones_read_as_text() -> None:
    assert json_value(nested(MAX_DEPTH)) is not None
    assert json_value(nested(MAX_DEPTH + 1)) is None
    assert json_value(nested(100_000), default="text") == "text"  # past the decoder itself
    assert json_value('{"a": ' + nested(MAX_DEPTH - 1) + "}") is not None


def test_what_is_not_json_reads_as_the_default() -> None:
    assert json_value("not json") is None
    assert json_value("{'a': 1}", default="as written") == "as written"
    assert json_value('{"a": [1, {"b": null}]}') == {"a": [1, {"b": None}]}
