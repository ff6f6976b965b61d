"""Requester scopes and field values for the delegated-disclosure detector.

A scope says which fields a principal may receive. It comes from the declared policy (a
``disclosure_scopes`` rule whose principal matches), else from the trace header's
``metadata.disclosure_scopes`` (``{principal | "*": {may_receive: [...], restricted: [...]}}``),
else from the delegation itself when it carries the requester's field list (a tool argument such
as ``requester_authorized_fields``, or a "fields they may receive: a, b" clause). Field values are
read from what the delegate read: JSON keys in tool results, ``label: value`` lines, and the
policy's optional patterns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from auditor.audit.detectors.base import AuditContext
from auditor.audit.policy import FieldSpec
from auditor.core.json_text import json_value
from schemas import ActorKind, TraceStep

_SCOPE_ARG = re.compile(r"(?i)field|scope|authori[sz]ed|allowed|permission")
_SCOPE_TEXT = re.compile(
    r"(?i)(?:fields? (?:they|the requester|he|she) (?:may|can) (?:receive|see)|authori[sz]ed fields|allowed fields)"
    r"\s*:\s*(?P<list>[\w ,/-]+)"
)
# a line's own blanks ([^\S\n]), not \s: a leading \s* ran over every blank line below each line
# start, a lazy value before \s*$ over every blank inside the line (both quadratic)
_LABEL_LINE = re.compile(
    r"(?m)^[^\S\n]*(?P<label>[A-Za-z][\w ()/-]{1,40}?)\s*:\s*(?P<value>\S(?:[^\n]*\S)?)[^\S\n]*$"
)
_TOKEN = re.compile(r"[$€£]?\d[\d,.:/-]*\d%?|\b[A-Z]{2,}-\d{3,}\b")


def norm(name: str) -> str:
    return " ".join(name.replace("_", " ").replace("-", " ").lower().split())


@dataclass(frozen=True)
class Scope:
    """What a requester may receive; ``restricted`` None means 'anything recognised outside
    may_receive'."""

    may_receive: frozenset[str] | None
    restricted: frozenset[str] | None
    basis: str
    rule_id: str | None = None

    def is_restricted(self, field_name: str) -> bool:
        f = norm(field_name)
        if self.may_receive is not None and f in self.may_receive:
            return False
        return f in self.restricted if self.restricted is not None else self.may_receive is not None


@dataclass
class FieldValue:
    """A restricted field's value as a tool result showed it, and the strings that carry it."""

    field: str
    step_pos: int
    surface: str
    carriers: list[str] = field(default_factory=list)


def requester_scope(
    ctx: AuditContext, requester: str, kind: ActorKind | None, carried: list[str] | None, carried_at: str
) -> Scope | None:
    policy = ctx.policy
    if policy is not None:
        for rule in policy.disclosure_scopes:
            if rule.principal.matches(requester, kind):
                return Scope(
                    frozenset(norm(f) for f in rule.may_receive),
                    frozenset(norm(f) for f in policy.restricted_for(rule)),
                    f"policy rule '{rule.id}'",
                    rule.id,
                )
    meta = ctx.trace.header.metadata.get("disclosure_scopes")
    if isinstance(meta, dict) and (requester in meta or "*" in meta):
        mine, anyone = meta.get(requester) or {}, meta.get("*") or {}
        may = mine.get("may_receive")
        restricted = [*(mine.get("restricted") or []), *(anyone.get("restricted") or [])]
        return Scope(
            frozenset(norm(f) for f in may) if may is not None else None,
            frozenset(norm(f) for f in restricted) if restricted else None,
            "header.metadata.disclosure_scopes",
        )
    if carried is not None:
        return Scope(frozenset(norm(f) for f in carried), None, f"the delegation (step {carried_at})")
    return None


def carried_scope(steps: list[TraceStep]) -> list[str] | None:
    """A field list the delegation itself carries (structured argument or stated clause)."""
    for s in steps:
        args = s.tool.arguments if s.tool else None
        if isinstance(args, dict):
            for k, v in args.items():
                if _SCOPE_ARG.search(k) and isinstance(v, list) and all(isinstance(x, str) for x in v):
                    return list(v)
        m = _SCOPE_TEXT.search(s.content)
        if m:
            return [x.strip() for x in m["list"].split(",") if x.strip()]
    return None


def field_values(ctx: AuditContext, pos: int, specs: dict[str, FieldSpec]) -> list[tuple[str, str]]:
    """(field name, value) pairs a step shows: JSON keys, `label: value` lines, policy patterns."""
    content = ctx.trace.steps[pos].content
    by_key = {norm(k): name for name, spec in specs.items() for k in spec.all_keys()}
    by_label = {norm(lb): name for name, spec in specs.items() for lb in spec.all_labels()}
    out: list[tuple[str, str]] = []
    body: Any = json_value(content)
    if body is not None:
        for key, value in _leaves(body):
            out.append((by_key.get(norm(key), key), value))
    else:
        for m in _LABEL_LINE.finditer(content):
            out.append((by_label.get(norm(m["label"]), m["label"]), m["value"]))
    for name, spec in specs.items():
        for p in spec.patterns:
            out += [(name, m.group()) for m in re.finditer(p, content)]
    return out


def _leaves(body: Any, key: str = "") -> list[tuple[str, str]]:
    if isinstance(body, dict):
        return [leaf for k, v in body.items() for leaf in _leaves(v, str(k))]
    if isinstance(body, list):
        return [leaf for v in body for leaf in _leaves(v, key)]
    if isinstance(body, str | int | float) and not isinstance(body, bool) and key:
        return [(key, str(body))]
    return []


def _parenthesised(value: str) -> tuple[str, list[str]]:
    """The value without its parenthesised parts (nor the blanks before each), stripped, and those
    parts: each '(' to the next ')'. One scan: a pattern retried at every '(' of an unclosed run, and
    at every blank before one, was quadratic."""
    kept, parts, at = [], [], 0
    while (opening := value.find("(", at)) >= 0 and (closing := value.find(")", opening)) >= 0:
        kept.append(value[at:opening].rstrip())
        parts.append(value[opening + 1 : closing])
        at = closing + 1
    return "".join([*kept, value[at:]]).strip(), parts


def carriers_of(value: str) -> list[str]:
    """Strings whose presence downstream shows the value crossed: the value, its core without
    parenthetical references, the references, and its distinctive tokens (numbers, ids)."""
    out = [value] if len(value) >= 4 else []
    core, references = _parenthesised(value)
    if len(core) >= 8 and core != value:
        out.append(core)
    out += [p.strip() for p in references if len(p.strip()) >= 6]
    out += [t.lstrip("$€£") for t in _TOKEN.findall(value) if len(t.lstrip("$€£")) >= 5]
    return list(dict.fromkeys(out))


def find_carrier(content: str, carriers: list[str]) -> str | None:
    """The verbatim surface of the first carrier present in ``content`` (case-insensitive)."""
    low = content.lower()
    for c in carriers:
        at = low.find(c.lower())
        if at >= 0:
            return content[at : at + len(c)]
    return None
