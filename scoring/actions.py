"""Generated actions (§16.2): parse a completion into ``{tool, arguments}`` and judge each target.

The parser removes an optional Markdown code fence and parses what remains; if that is not a JSON
object it takes the first balanced JSON object in the completion, matching braces outside quoted
strings and honouring escapes. A tool target is present only when the key ``tool`` parses; a slot
target only when its key occurs in the parsed ``arguments`` object. Values are compared in a
canonical form, so ``10``, ``"10"`` and ``10.0`` agree. There are no retries or repairs: a
completion with no JSON object is malformed, and every target of a malformed action is incorrect.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from dataclasses import dataclass

FENCE = re.compile(r"```[^\n`]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_SPACE = re.compile(r"\s+")
_SAFE_INT = 2**53


def _number(x: int | float) -> str:
    """One spelling per number: integral floats as integers, others by their shortest repr."""
    if isinstance(x, int):
        return str(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "infinity" if x > 0 else "-infinity"
    return str(int(x)) if x.is_integer() and abs(x) < _SAFE_INT else repr(x)


def _canonical_tree(value: object) -> object:
    """Leaves to canonical strings, keys canonical too, so containers compare as JSON text."""
    if isinstance(value, dict):
        return {canonical_value(k): _canonical_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_canonical_tree(v) for v in value]
    return canonical_value(value)


def canonical_value(value: object) -> str:
    """The comparison form of a generated or reference value.

    Strings are NFKC-normalised, case-folded, stripped and have whitespace runs collapsed; a string
    that then reads as a JSON number, literal or container is compared as that value (the reference
    ``"0.01"`` equals a generated ``0.01``). Containers become compact JSON of canonical leaves.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _number(value)
    if isinstance(value, dict | list):
        return json.dumps(_canonical_tree(value), ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    text = _normalise(str(value))
    try:
        parsed = json.loads(text)
        return text if isinstance(parsed, str) else canonical_value(parsed)
    except (ValueError, RecursionError):  # not JSON, or nested too deep to canonicalise
        return text


def _normalise(text: str) -> str:
    """NFKC, case fold, collapse whitespace, strip — repeated to a fixed point (folding can denormalise)."""
    for _ in range(8):
        new = _SPACE.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()
        if new == text:
            break
        text = new
    return text


def balanced_end(text: str, start: int) -> int | None:
    """Index just past the brace that closes the one at ``start``, outside strings; None if open."""
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def first_object_closed(text: str) -> bool:
    """Whether the first ``{`` of the text has been closed: where greedy decoding stops."""
    start = text.find("{")
    return start >= 0 and balanced_end(text, start) is not None


def _as_object(text: str) -> dict[str, object] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def first_json_object(text: str) -> dict[str, object] | None:
    """The first balanced span that parses as a JSON object, trying each ``{`` in turn."""
    start = text.find("{")
    while start >= 0:
        end = balanced_end(text, start)
        if end is not None:
            found = _as_object(text[start:end])
            if found is not None:
                return found
        start = text.find("{", start + 1)
    return None


def strip_fence(text: str) -> str:
    """The body of the first Markdown code fence (an unclosed one runs to the end), else the text."""
    match = FENCE.search(text)
    return match.group(1) if match else text


@dataclass(frozen=True)
class ParsedAction:
    """A parsed action in canonical form: ``None`` marks a key that did not parse."""

    tool: str | None
    arguments: dict[str, str] | None

    def value(self, slot: str | None) -> str | None:
        """The canonical value of the tool (``slot=None``) or of one argument, if present."""
        if slot is None:
            return self.tool
        return None if self.arguments is None else self.arguments.get(slot)

    def to_json(self) -> str:
        """Canonical text: parsing it gives this action back."""
        out: dict[str, object] = {}
        if self.tool is not None:
            out["tool"] = self.tool
        if self.arguments is not None:
            out["arguments"] = self.arguments
        return json.dumps(out, ensure_ascii=False, sort_keys=True)


def parse_action(completion: str) -> ParsedAction | None:
    """Parse a completion by the §16.2 rules; None when it holds no JSON object (malformed)."""
    obj = _as_object(strip_fence(completion).strip())
    if obj is None:
        obj = first_json_object(completion)
    if obj is None:
        return None
    raw_args = obj.get("arguments")
    try:
        tool = canonical_value(obj["tool"]) if "tool" in obj else None
        args = {k: canonical_value(v) for k, v in raw_args.items()} if isinstance(raw_args, dict) else None
    except RecursionError:  # a value nested too deep to compare is no action
        return None
    return ParsedAction(tool, args)


@dataclass(frozen=True)
class TargetOutcome:
    """One audited target under one generation.

    ``competitor_match`` is defined only for an incorrect target whose context presented a
    competitor: whether the generated value is that competitor (None otherwise, never False).
    """

    value: str | None
    correct: bool
    competitor_match: bool | None


def judge_target(
    action: ParsedAction | None, slot: str | None, reference: str, competitor: str | None
) -> TargetOutcome:
    """Correctness of the tool (``slot=None``) or one slot against its reference value."""
    value = None if action is None else action.value(slot)
    correct = value is not None and value == canonical_value(reference)
    match = None if correct or competitor is None else value == canonical_value(competitor)
    return TargetOutcome(value, correct, match)
