"""JSON inside a step's text is decoded within the canonical format's depth bound, else left as text."""

from __future__ import annotations

from auditor.core.json_text import MAX_DEPTH, json_value, strings


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


def test_a_python_literal_is_read_quietly() -> None:
    """A tool's printed repr is read as a literal; text the compiler warns about ("1a", an odd
    escape) is none, and no warning reaches the user's terminal as if the auditor had said it."""
    import warnings

    from auditor.core.json_text import NO_LITERAL, python_literal

    assert python_literal("{'message': 'sent', 'id': 3}") == {"message": "sent", "id": 3}
    assert python_literal("None", NO_LITERAL) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning would raise here
        assert python_literal("{'amount': 1a}", NO_LITERAL) is NO_LITERAL
        assert python_literal("'\\d+'") == "\\d+"
        assert python_literal("__import__('os')", NO_LITERAL) is NO_LITERAL


def test_strings_walks_every_string_of_a_value_in_order_at_any_depth():
    value = {"a": "x", "b": [1, "y", {"c": ("z",)}], "d": None}
    assert list(strings(value)) == ["x", "y", "z"]
    deep: object = "bottom"
    for _ in range(50_000):  # deeper than any recursion could follow
        deep = [deep]
    assert list(strings(deep)) == ["bottom"]
