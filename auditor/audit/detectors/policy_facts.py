"""Facts the declared action rules are judged on: tool calls with their results, the records read
tools returned, the domain's clock, and the claimants' replies.

A record is the JSON object a read tool returned (``records`` in the policy), indexed by its key
field — or, for a tool that returns one bare value (a flight's status) and a spec naming its
``value_field``, that value under that field, keyed by the call's argument; a write is a call of
a tool a rule or a confirmation names; a call failed when its result is marked failed by the
source (``raw.status``) or is an error by its structure: a JSON object with an ``error`` key, or
text that begins ``Error:`` — the tool's own refusal.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

from auditor.audit.detectors.base import AuditContext
from auditor.audit.policy_rules import Condition, parse_time
from auditor.core.json_text import json_value
from schemas import ActorKind, EvidenceUnit, StepKind, TraceStep

_ERROR_TEXT = re.compile(r"^\s*(error|exception|traceback)\b", re.IGNORECASE)
_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIME = re.compile(r"\d{1,2}:\d{2}(?::\d{2})?")
CALL_QUOTE_CHARS = 1000  # a call quoted whole up to this length (a booking of several passengers fits)


def result_failed(step: TraceStep) -> bool:
    """The tool or the format marks the result failed, or it is an error by its structure."""
    status = str(step.raw.get("status", "")).lower()
    if status in ("error", "failed", "failure"):
        return True
    text = step.content
    if _ERROR_TEXT.match(text):
        return True
    body = json_value(text)
    return isinstance(body, dict) and "error" in body and len(body) <= 3


@dataclass(frozen=True)
class Call:
    """One tool call and its result (None when the trace has none)."""

    pos: int
    step: TraceStep
    result: TraceStep | None

    @property
    def name(self) -> str:
        return self.step.tool.name if self.step.tool else ""

    @property
    def arguments(self) -> dict[str, Any]:
        args = self.step.tool.arguments if self.step.tool else None
        return args if isinstance(args, dict) else {}

    @property
    def failed(self) -> bool:
        return self.result is not None and result_failed(self.result)


@dataclass(frozen=True)
class Record:
    name: str
    key: str
    value: dict[str, Any]
    step: TraceStep
    pos: int


class PolicyFacts:
    """The calls, records, clock and claimant replies of one trace, under one policy."""

    def __init__(self, ctx: AuditContext) -> None:
        assert ctx.policy is not None
        self.ctx = ctx
        self.policy = ctx.policy
        self.steps = ctx.trace.steps

    @cached_property
    def calls(self) -> list[Call]:
        results: dict[str, TraceStep] = {}
        for s in self.steps:
            if s.kind is StepKind.tool_result:
                cid = (s.refs.call_id if s.refs else None) or (s.tool.call_id if s.tool else None)
                if cid:
                    results.setdefault(cid, s)
        return [
            Call(i, s, results.get(s.tool.call_id or "") if s.tool else None)
            for i, s in enumerate(self.steps)
            if s.kind is StepKind.tool_call and s.tool is not None
        ]

    @cached_property
    def records(self) -> list[Record]:
        out = []
        by_tool = {t: spec for spec in self.policy.records for t in spec.tools}
        for call in self.calls:
            spec = by_tool.get(call.name)
            if spec is None or call.result is None or call.failed:
                continue
            body = json_value(call.result.content)
            if not isinstance(body, dict) and spec.value_field and call.result.content.strip():
                body = {spec.key: call.arguments.get(spec.key), spec.value_field: call.result.content.strip()}
            if isinstance(body, dict):
                key = body.get(spec.key, call.arguments.get(spec.key))
                if key is not None:
                    out.append(
                        Record(spec.name, str(key), body, call.result, self.ctx.position(call.result.step_id))
                    )
        return out

    def returned(self, name: str, call: Call) -> Record | None:
        """The record a write returned (the state after it), when it went through as JSON."""
        if call.result is None or call.failed:
            return None
        body = json_value(call.result.content)
        if not isinstance(body, dict):
            return None
        key = self.policy.record(name).key
        return Record(name, str(body.get(key, "")), body, call.result, self.ctx.position(call.result.step_id))

    def records_before(self, name: str, pos: int, key: str | None = None) -> list[Record]:
        """Records of ``name`` read before position ``pos`` (for ``key`` when given), latest first."""
        found = [r for r in self.records if r.name == name and r.pos < pos and (key is None or r.key == key)]
        return sorted(found, key=lambda r: -r.pos)

    @cached_property
    def now(self) -> datetime | None:
        clock = self.policy.clock
        if clock is None:
            return None
        if clock.fixed is not None:
            return parse_time(clock.fixed, clock.format)
        pattern = re.compile(clock.pattern or "")
        for s in self.steps:
            if s.actor_kind is ActorKind.system or s.index == 0:
                m = pattern.search(s.content)
                if m:
                    return parse_time(m.group(1), clock.format)
        return None

    def is_claimant(self, step: TraceStep) -> bool:
        for c in self.policy.claimants:
            if c.actor_kind is not None and step.actor_kind is not c.actor_kind:
                continue
            if c.names and step.actor not in c.names:
                continue
            return True
        return not self.policy.claimants and step.actor_kind is ActorKind.human

    # -- conditions ----------------------------------------------------------------------------

    def holds(self, cond: Condition, call: Call, record: Record | None) -> tuple[bool, Record | None] | None:
        """(holds, the record it read) for a condition and its ``and`` conditions; None when it
        cannot be decided."""
        verdict = self._holds_one(cond, call, record)
        for extra in cond.and_:
            if verdict is None or not verdict[0]:
                return verdict
            more = self._holds_one(extra, call, record)
            if more is None:
                return None
            verdict = (more[0], verdict[1] or more[1])
        return verdict

    def stated(self, claim: str, before: int) -> list[tuple[str, TraceStep, str]]:
        """(category, step, word) for each category of ``claim`` a claimant's words stated before
        position ``before`` (whole words, case-insensitive)."""
        spec = next((c for c in self.policy.claims if c.name == claim), None)
        if spec is None:
            return []
        found = []
        for s in self.steps[:before]:
            if not self.is_claimant(s):
                continue
            low = s.content.lower()
            for category, words in spec.values.items():
                word = next(
                    (w for w in words if re.search(rf"(?<!\w){re.escape(w.lower())}(?!\w)", low)), None
                )
                if word is not None:
                    found.append((category, s, word))
        return found

    def _holds_one(
        self, cond: Condition, call: Call, record: Record | None
    ) -> tuple[bool, Record | None] | None:
        if cond.claim is not None:
            categories = [c for c, _, _ in self.stated(cond.claim, call.pos)]
            return self._test(cond, categories) if categories else cond.not_in is not None, None
        candidates = [record] if cond.record is None else self.records_before(cond.record, call.pos)
        if cond.argument is not None:
            values = values_at(call.arguments, cond.argument)
            if cond.differs_from is not None or cond.count_differs_from is not None:
                if not values or record is None:
                    return None
                return _against(cond, values, record)
            if cond.per_item is not None:
                return _per_item(cond, values, candidates) if values else None
            return (self._test(cond, values), None) if values or cond.count_over is not None else None
        decided = None
        for rec in candidates:
            if rec is None:
                continue
            values = values_at(rec.value, cond.field or "")
            if not values:
                continue
            if cond.before_clock is not None and self.now is not None:
                before = any(t < self.now for t in self._moments(rec.value, cond.field or ""))
                return before == cond.before_clock, rec
            if cond.differs_from is not None or cond.count_differs_from is not None:
                verdict = _against(cond, values, rec)
                if verdict is not None:
                    return verdict
                continue
            if cond.per_item is not None:
                verdict = _per_item(cond, values, [rec])
                if verdict is not None and verdict[0]:
                    return verdict
                decided = verdict or decided
                continue
            if self._test(cond, values):
                return True, rec
            decided = (False, rec)
        return decided

    def _test(self, cond: Condition, values: list[Any]) -> bool:
        if cond.count_over is not None:
            items = [v for v in values if not cond.where_prefix or str(v).startswith(cond.where_prefix)]
            return len(items) > cond.count_over
        if cond.equals is not None:
            return any(_same(v, cond.equals) for v in values)
        if cond.in_ is not None:
            return any(any(_same(v, x) for x in cond.in_) for v in values)
        if cond.not_in is not None:
            return all(not any(_same(v, x) for x in cond.not_in) for v in values)
        now = self.now
        if now is None:
            return False
        times = [t for t in (parse_time(str(v)) for v in values) if t is not None]
        if cond.within_hours is not None:
            return any(0 <= (now - t).total_seconds() <= cond.within_hours * 3600 for t in times)
        if cond.before_clock is not None:
            before = any(t.date() < now.date() for t in times)
            return before if cond.before_clock else not before
        return False

    def _moments(self, value: Any, path: str) -> list[datetime]:
        """The times at a path, to the minute where the trace gives it: a date alone is its
        day's end unless a time of day for it is known: in the item that holds the date, or in
        a tool result's object naming the item (its values with digits, such as a flight number)
        and that date; the earliest such time is when the item begins (a departure before an
        arrival). A flight dated today that left this morning has flown."""
        parent, _, last = path.rpartition(".")
        items = walk(value, parent) if parent else [value]
        out = []
        for item in items:
            if not isinstance(item, dict) or last not in item:
                continue
            moment = parse_time(str(item[last]))
            if moment is None:
                continue
            if _DATE_ONLY.fullmatch(str(item[last]).strip()):
                clock = self._time_of_day(item, str(item[last]).strip())
                moment = datetime.combine(moment.date(), clock or datetime.max.time())
            out.append(moment)
        return out

    def _time_of_day(self, item: dict[str, Any], day: str) -> Any:
        """The earliest time of day an object (the item, or a tool result's object naming it and
        the day) gives for the item."""
        marks = [str(v) for v in item.values() if isinstance(v, str) and re.search(r"\d", v) and v != day]
        objects = [item] + [
            obj
            for obj in self._result_objects
            if marks and all(m in obj.values() for m in marks) and day in obj.values()
        ]
        found = [
            v.strip()
            for obj in objects
            for v in obj.values()
            if isinstance(v, str) and _TIME.fullmatch(v.strip())
        ]
        times = sorted(datetime.strptime(t[:5].rstrip(":"), "%H:%M").time() for t in found)
        return times[0] if times else None

    @cached_property
    def _result_objects(self) -> list[dict[str, Any]]:
        """Every JSON object inside a tool result of the trace."""
        out: list[dict[str, Any]] = []
        for s in self.steps:
            if s.kind is not StepKind.tool_result:
                continue
            stack = [json_value(s.content)]
            while stack:
                obj = stack.pop()
                if isinstance(obj, dict):
                    out.append(obj)
                    stack.extend(obj.values())
                elif isinstance(obj, list):
                    stack.extend(obj)
        return out

    # -- evidence ------------------------------------------------------------------------------

    def quote_field(self, step: TraceStep, field: str, values: list[Any]) -> EvidenceUnit | None:
        """A unit quoting ``"field": value`` (or the value alone) verbatim from the step."""
        last = field.split(".")[-1]
        for v in values:
            for text in (f'"{last}": {json.dumps(v)}', f'"{last}":{json.dumps(v)}', str(v)):
                if text and text in step.content:
                    return self.ctx.unit(step.step_id, text)
        return None

    def quote_call(self, call: Call, around: str | None = None) -> EvidenceUnit:
        """A unit for the act itself: the call as written, its arguments and all (a reader must
        see what was done, not only which record it touched). A call too long to quote whole is
        quoted around ``around`` (the value a finding is about), else its first string argument."""
        content = call.step.content.strip()
        if not content:
            return self.ctx.unit(call.step.step_id, call.name)
        if len(content) <= CALL_QUOTE_CHARS:
            return self.ctx.unit(call.step.step_id, content)
        values = [around] if around else []
        values += [v for v in call.arguments.values() if isinstance(v, str)]
        for v in values:
            if v and v in content:
                at = content.index(v)
                start = max(0, min(at - CALL_QUOTE_CHARS // 4, len(content) - CALL_QUOTE_CHARS))
                return self.ctx.unit(call.step.step_id, content[start : start + CALL_QUOTE_CHARS])
        return self.ctx.unit(call.step.step_id, content[:CALL_QUOTE_CHARS])


def _against(cond: Condition, values: list[Any], record: Record) -> tuple[bool, Record] | None:
    """``differs_from`` (as sets) or ``count_differs_from`` against the record's values at a path;
    None when the record holds nothing there."""
    path = cond.differs_from or cond.count_differs_from or ""
    stored = values_at(record.value, path)
    if not stored:
        return None
    if cond.count_differs_from is not None:
        return len(values) != len(stored), record
    return sorted(map(str, values)) != sorted(map(str, stored)), record


def _per_item(
    cond: Condition, values: list[Any], records: list[Record | None]
) -> tuple[bool, Record | None] | None:
    """Some value equals one of the amounts times the number of items of some record's list."""
    assert cond.per_item is not None
    decided = None
    for rec in records:
        if rec is None:
            continue
        count = sum(len(x) if isinstance(x, list) else 1 for x in walk(rec.value, cond.per_item.items))
        if not count:
            continue
        numbers = [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
        if any(abs(v - a * count) < 1e-6 for v in numbers for a in cond.per_item.amounts):
            return True, rec
        decided = (False, rec)
    return decided


def _index(part: str) -> int | None:
    try:
        return int(part)
    except ValueError:
        return None


def values_at(obj: Any, path: str) -> list[Any]:
    """Values at a dotted path; ``*`` walks every item of a list (or every value of a mapping), a
    number picks one item (``-1``: the last)."""
    return [v for v in walk(obj, path) if v is not None and not isinstance(v, dict | list)]


def walk(obj: Any, path: str) -> list[Any]:
    """Everything at a dotted path (lists and objects too), as ``values_at`` walks it."""
    current = [obj]
    for part in path.split(".") if path else []:
        nxt: list[Any] = []
        for item in current:
            if part == "*":
                if isinstance(item, list):
                    nxt.extend(item)
                elif isinstance(item, dict):
                    nxt.extend(item.values())
            elif isinstance(item, dict) and part in item:
                nxt.append(item[part])
            elif (
                isinstance(item, list) and _index(part) is not None and -len(item) <= _index(part) < len(item)
            ):  # type: ignore[operator]
                nxt.append(item[_index(part)])  # type: ignore[index]
        current = nxt
    return current


def _same(value: Any, expected: Any) -> bool:
    if isinstance(value, str) and isinstance(expected, str):
        return value.strip().lower() == expected.strip().lower()
    if isinstance(value, bool) or isinstance(expected, bool):
        return str(value).lower() == str(expected).lower()
    return value == expected
