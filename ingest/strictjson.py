"""Strict JSON for the canonical format: every value is kept as written, or the line is refused.

Python's decoder quietly changes some input: ``NaN`` and ``Infinity`` (not JSON) and ``1e400``
(beyond a double) become floats that are later written as ``null``, a repeated key keeps only its
last value, and an integer of more than 4,300 digits or a deep enough nesting raises an error that
is no input error at all. Here each of those is refused with the dotted path of the field, so the
caller can name the file, line and field (see docs/input.md).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_DEPTH = 200  # objects and arrays nested in one record, the record itself level 1 (pydantic's limit)
MAX_INT_DIGITS = 4300  # Python's (and pydantic's) limit for converting an int to and from text
TOO_DEEP = f"objects and arrays nested deeper than {MAX_DEPTH} levels"


class StrictJsonError(ValueError):
    """A value the canonical format refuses; ``field`` is its dotted path ('' for the record)."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


class _Refused:
    """Stands where the decoder met a value that cannot be kept; the walk reports it."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why


class Repeated(dict):
    """An object in which ``key`` appears more than once (the decoder kept its last value)."""

    key: str = ""


def keyed_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The ``object_pairs_hook`` that marks a repeated key: a plain dict, or a ``Repeated``."""
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    seen: set[str] = set()
    repeated = Repeated(obj)
    repeated.key = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
    return repeated


def _float(text: str) -> float | _Refused:
    value = float(text)
    if math.isfinite(value):
        return value
    return _Refused(f"the number {_cut(text)} is beyond the range of a 64-bit float")


def _int(text: str) -> int | _Refused:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        return _Refused(f"an integer of {digits:,} digits (at most {MAX_INT_DIGITS:,})")
    return int(text)


def _constant(name: str) -> _Refused:
    return _Refused(f"{name} is not a JSON number (RFC 8259)")


_decoder = json.JSONDecoder(
    object_pairs_hook=keyed_object, parse_float=_float, parse_int=_int, parse_constant=_constant
)


def _cut(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


def loads(text: str) -> Any:
    """The JSON value of ``text``, every key and number as written. Raises ``json.JSONDecodeError``
    for text that is not JSON, and ``StrictJsonError`` for a value that JSON text can hold but this
    format refuses (see the module docstring)."""
    try:
        value = _decoder.decode(text)
    except RecursionError:
        raise StrictJsonError(TOO_DEEP, "") from None
    _check(value)
    return value


def dotted(path: tuple[str, ...]) -> str:
    """A dotted path, cut after eight steps (a hostile nesting's path is hundreds long)."""
    return ".".join(path) if len(path) <= 8 else ".".join(path[:8]) + ".…"


def _check(value: Any) -> None:
    """Raise for the first refused value in document order: a repeated key, a number that was not
    kept, a nesting deeper than ``MAX_DEPTH``. Iterative, so a deep value cannot exhaust the stack."""
    stack: list[tuple[Any, tuple[str, ...], int]] = [(value, (), 1)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, _Refused):
            raise StrictJsonError(item.why, dotted(path))
        if isinstance(item, dict):
            if depth > MAX_DEPTH:
                raise StrictJsonError(TOO_DEEP, dotted(path))
            if isinstance(item, Repeated):
                raise StrictJsonError(
                    f"the key {_cut(item.key)!r} appears more than once in one object; JSON readers "
                    "keep only one of its values",
                    dotted((*path, item.key)),
                )
            stack.extend((v, (*path, k), depth + 1) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            if depth > MAX_DEPTH:
                raise StrictJsonError(TOO_DEEP, dotted(path))
            stack.extend((v, (*path, str(i)), depth + 1) for i, v in reversed(list(enumerate(item))))


# A JSON head's tokens that matter for its depth: strings (skipped whole, also one cut at the head's
# end), brackets, and integers longer than any a decoder converts (a fraction is a float: no limit).
_HEAD_TOKENS = re.compile(
    rb'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[{\]}]|(?<![.0-9])[0-9]{%d,}(?![.0-9eE])' % (MAX_INT_DIGITS + 1)
)


def head_problem(head: bytes) -> tuple[str, int, int] | None:
    """Why the head of a JSON-looking file would break a JSON decoder (a nesting deeper than
    ``MAX_DEPTH``, an integer of more than ``MAX_INT_DIGITS`` digits), with the line and byte
    offset where it does; else None. Format detection decodes heads with the standard library, so
    such a head is refused before any importer sees it, with a reason instead of a traceback."""
    if head.lstrip(b" \t\r\n\xef\xbb\xbf")[:1] not in (b"{", b"["):
        return None
    depth = 0
    for token in _HEAD_TOKENS.finditer(head):
        first = token.group()[:1]
        if first in b"[{":
            depth += 1
            if depth <= MAX_DEPTH:
                continue
            problem = TOO_DEEP
        elif first in b"]}":
            depth = max(depth - 1, 0)
            continue
        elif first == b'"':
            continue
        else:
            problem = f"an integer of {len(token.group()):,} digits (at most {MAX_INT_DIGITS:,})"
        return problem, head.count(b"\n", 0, token.start()) + 1, token.start()
    return None
