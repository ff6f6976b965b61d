"""JSON (and Python literals) inside a step's text.

Tool results and arguments are often JSON, or a Python value's repr as many tool wrappers print it,
and detectors read them as records. A hostile result
can nest deeper than Python's decoder goes (a ``RecursionError``, no ``ValueError``) or than a
recursive walk of the value can follow; such text is read as text, never a traceback. The bound
is the canonical format's for a whole record (``ingest.strictjson.MAX_DEPTH``, pydantic's).
"""

from __future__ import annotations

import ast
import json
import warnings
from collections.abc import Iterator
from typing import Any

MAX_DEPTH = 200
NO_LITERAL = object()  # python_literal's default where None (the literal) must read apart from none


def json_value(text: str, default: Any = None) -> Any:
    """The JSON value ``text`` holds; ``default`` when it holds none, or one nested deeper than
    ``MAX_DEPTH``."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return default
    return value if _within(value) else default


def python_literal(text: str, default: Any = None) -> Any:
    """The Python literal ``text`` holds (``ast.literal_eval``: literals only, never code);
    ``default`` when it holds none. Quiet: the compiler's warnings about the text ("invalid
    decimal literal") are the text's, and printed on stderr they read as the auditor's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.literal_eval(text)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return default


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value (a call's arguments, a header's metadata), however nested, in
    order. Iterative: no depth a value can hold makes it recurse."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list | tuple):
            stack.extend(reversed(item))


def _within(value: Any) -> bool:
    """Whether no object or array in ``value`` lies deeper than ``MAX_DEPTH``. Iterative."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                return False
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return True
