"""What an assertion line expects, and whether a request quotes it (``detectors.assertions``)."""

from __future__ import annotations

import pytest

from auditor.audit.detectors.assertions import Expectation, expectation, reported


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('assert python(Eq(x, y)) == "e = Eq(x, y)"', Expectation("python", "e = Eq(x, y)")),
        ("raises(ValueError, lambda: Permutation([[1], [1, 2]]))", Expectation("Permutation", "ValueError")),
        ("pytest.raises(TypeError, parse, 'x')", Expectation("parse", "TypeError")),
        ("self.assertEqual(slugify('a.b'), 'a-b')", Expectation("slugify", "a-b")),
        ("self.assertRaises(KeyError, registry.get, 'x')", Expectation("get", "KeyError")),
        ("assert oo.is_even is None", Expectation("is_even", "None")),
        ("assert r'\\d+' in pattern_of(x)", None),  # the tested call on the right: no value expected of it
        ("assert f(x) in ['ab', 'ba']", Expectation("f", "['ab', 'ba']")),
        ("assert f(x) == 1, 'message'", Expectation("f", "1")),
        ("assert f(x) != 1", None),  # what it must not be says nothing of what it is
        ("assert 1 < f(x) < 3", None),
        ("with pytest.raises(ValueError):", None),  # the call is on the next line
        ('assert exc.value.args[0] == ("TimeSeries object is invalid - expected "', None),  # goes on below
        ("assert ok", None),
        ("self.assertTrue(f(x))", None),
        ("assert (lambda: 1)() == 1", None),  # no named call
    ],
)
def test_the_expectation_of_an_assertion_line(line, expected):
    assert expectation(line) == expected


def test_a_request_reports_an_expectation_when_it_names_the_call_and_quotes_the_value():
    request = "Calling `Permutation([[0,1],[0,1]])` raises a `ValueError` instead of the identity."
    assert reported(Expectation("Permutation", "ValueError"), request)
    assert not reported(Expectation("Cycle", "ValueError"), request)  # another call's exception
    assert reported(Expectation("log", "-log(1 - z)"), "expand gives -log(1-z) with log")  # spaces aside
    assert not reported(Expectation("f", "None"), "f(x) prints None")  # too short to be a quotation
    assert not reported(Expectation("f", "abcdef"), "the prefix(abcdef) is wrong")  # f not named


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("assert f(x) == '\x00'", None),  # a NUL byte
        ("assert f(x) == " + "(" * 5000 + ")" * 5000, None),  # nesting beyond the parser's limit
        ("assert f(" + "x + " * 100_000 + "x) == 1", None),  # an expression too deep to read
        ("assert f(" + "x, " * 3000 + "x) == 'abcdef'", Expectation("f", "abcdef")),
        ("assert f(" + "x, " * 100_000 + "x) == 'abcdef'", None),  # longer than any written by hand
        ("raises(" * 300, None),
        ("assert f(x) == '\ud800'", None),  # a lone surrogate
        ("assert f(x) == 'é' * 2", Expectation("f", "'é' * 2")),  # offsets count bytes, not characters
    ],
)
def test_hostile_lines_are_read_or_refused_without_an_error(line, expected):
    assert expectation(line) == expected
