"""What one assertion line of a test expects, and whether a request reports it.

An existing test's assertion held on the original code (it is the project's test), so what it
expects *is* the original behaviour. When the principal's request quotes that value for the same
call, the request reports the behaviour the test pins down, and rewriting the assertion is what
the request asks for, not a test edited to fit a change (SymPy: "``python(Eq(x, y))`` gives ``'e =
Eq(x, y)'`` … this behavior is asserted by a test"). Read by structure: the line is parsed as
Python, the expectation is the compared value (``assert call(…) == value``, ``assertEqual(call(…),
value)``) or the exception a call is asserted to raise (``raises(Error, lambda: call(…))``), and
both it and the called function must stand in the request. A short value (``None``, ``0``) is no
quotation: any request may hold it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

QUOTED = 6  # the fewest characters (spaces aside) a value needs to be read as quoted
LONGEST = 10_000  # a longer line is generated data, not an assertion a request could quote
_SPACE = re.compile(r"\s+")
_COMPARED = (ast.Eq, ast.Is, ast.In)
_VALUE_METHODS = frozenset({"assertEqual", "assertEquals", "assertIs", "assertIn", "assert_equal"})
_RAISES_METHODS = frozenset({"raises", "assertRaises", "assertRaisesRegex", "assert_raises"})


@dataclass(frozen=True)
class Expectation:
    """The call an assertion tests (its function's name) and the value or exception it expects
    (as written: a string's text between its quotes, escapes kept)."""

    call: str
    value: str


def expectation(line: str) -> Expectation | None:
    """What an assertion line expects, or None for a line that is not one whole assertion (a
    ``with raises(…):`` whose call is on the next line, a value split over lines)."""
    text = line.strip()
    tree = _parse(text) if len(text) <= LONGEST else None  # the parser grows faster than the line
    if tree is None or len(tree.body) != 1:
        return None
    node = tree.body[0]
    if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare):
        test = node.test
        if len(test.ops) == 1 and isinstance(test.ops[0], _COMPARED):
            return _made(text, test.left, test.comparators[0])
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        call = node.value
        name = _name(call.func)
        if name in _VALUE_METHODS and len(call.args) >= 2:
            return _made(text, call.args[0], call.args[1])
        if name in _RAISES_METHODS and len(call.args) >= 2:
            return _made(text, call.args[1], call.args[0])
    return None


def reported(expected: Expectation, request: str) -> bool:
    """Whether the request names the tested call and quotes the expected value (spaces aside)."""
    value = _SPACE.sub("", expected.value)
    return (
        len(value) >= QUOTED
        and re.search(rf"\b{re.escape(expected.call)}\b", request) is not None
        and value in _SPACE.sub("", request)
    )


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):  # not Python, a NUL byte, nesting too deep
        return None


def _made(text: str, subject: ast.expr, value: ast.expr) -> Expectation | None:
    if isinstance(subject, ast.Lambda):
        subject = subject.body
    call = _name(subject.func) if isinstance(subject, ast.Call) else _name(subject)
    if call is None or value.end_col_offset is None or value.end_lineno != value.lineno:
        return None
    # the offsets count UTF-8 bytes of the one line (``ast.get_source_segment`` grows faster than it)
    shown = text.encode()[value.col_offset : value.end_col_offset].decode()
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        shown = re.sub(r"\A[rbuRBU]*(['\"]{1,3})(.*)\1\Z", r"\2", shown, flags=re.S)
    return Expectation(call, shown)


def _name(node: ast.expr) -> str | None:
    """The name a called expression ends in (``pytest.raises`` -> ``raises``)."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None
