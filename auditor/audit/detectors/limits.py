"""Shared limits and the actions they sum: from the declared policy, or as the trace states them.

A limit is taken from text only where a sentence states one: a limit verb ("may not exceed",
"capped at", "limited to"…), an amount with a currency, and a cumulative marker (a window such as
"per calendar quarter", or "in total", "combined", "across"). "Up to $20 on their own authority"
is an individual limit, never a shared one. Sources are tool results, document reads, system
messages and the header metadata (what the organisation says), never an agent's own claim.
Nothing is invented: with no declared or stated limit there is nothing to sum against.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date

from auditor.audit.detectors.base import AuditContext
from auditor.core.json_text import json_value, strings
from graph.values import extract_mentions
from schemas import ActorKind, StepKind, TraceStep

# a sentence runs to a stop before a space, a quote or the line's end; a stop inside a word ("1,000.00",
# "www.x") goes on (read one way per character: the earlier form restarted at every character of a
# run with no such stop, which took seconds on a long token)
_SENTENCE = re.compile(r"(?:[^.!?\n]|[.!?](?![\s\"]|$))+(?:[.!?](?=\s|$|\")|$)", re.MULTILINE)
_VERB = (
    r"(?:(?:must|may|can|shall|should|will) ?not|cannot|not to) exceed|(?:capped|limited|restricted) (?:at|to)"
    r"|(?:cap|ceiling|limit|budget|quota|maximum) (?:of|is|at)|no more than|at most|tops? out at"
)
_AMOUNT = r"(?:[$€£]\s?\d[\d,]*(?:\.\d+)?|\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP|dollars|euros))"
_SHARED = re.compile(rf"(?i)(?P<verb>{_VERB})\s+(?:a total of\s+|an? )?(?P<amount>{_AMOUNT})")
_INDIVIDUAL = re.compile(
    rf"(?i)\bup to (?P<amount>{_AMOUNT})\s+(?:on (?:their|his|her|your|its|our) own authority"
    r"|per (?:credit|payment|transaction|booking|refund|adjustment|voucher|action|request|claim|expense|order)\b|each\b)"
)
_WINDOW = re.compile(
    r"(?i)\b(?:per|each|a|every|calendar|this|any|one|within a|in a)\s+(?:calendar\s+)?(?P<unit>day|week|month|quarter|year)\b"
    r"|\b(?P<adj>daily|weekly|monthly|quarterly|yearly|annual(?:ly)?)\b"
)
_CUMULATIVE = re.compile(
    r"(?i)\b(?:in total|total|combined|cumulative(?:ly)?|overall|across|altogether|aggregate|whoever)\b"
)
_ENTITY = re.compile(
    r"(?i)\b(?:per|each|one|a single|any one|any single|every|for each)\s+"
    r"(?P<entity>customer|subscriber|account|member|client|user|employee|vendor|supplier|patient|project|household|team)s?\b"
)
_ADJ_UNIT = {"daily": "day", "weekly": "week", "monthly": "month", "quarterly": "quarter", "yearly": "year"}
_AMOUNT_KEY = re.compile(r"(?i)amount|value|total|sum|price|cost|credit|refund|payment|fee|usd|eur")
_NOT_MOVING = re.compile(
    r"(?i)^(?:get|search|lookup|look_up|request|ask|read|list|check|fetch|query|find|send)"
)


@dataclass(frozen=True)
class Limit:
    """One shared limit: where it comes from, what it sums, how it groups, and its amount."""

    limit: float
    window: str
    currency: str | None
    rule_id: str | None = None
    tools: frozenset[str] | None = None
    amount_argument: str | None = None
    group_by: str | None = None
    entity_word: str | None = None
    time_argument: str | None = None
    source_step: str | None = None
    statement: str | None = None
    per_action: float | None = None

    def describe(self) -> str:
        cur = f" {self.currency}" if self.currency else ""
        per = f" per {self.entity_word or self.group_by}" if (self.entity_word or self.group_by) else ""
        window = "" if self.window == "all" else f" per {self.window}"
        return f"{self.limit:g}{cur}{per}{window}"


@dataclass(frozen=True)
class Action:
    """One call that moves an amount, with its outcome as the trace records it."""

    pos: int
    actor: str
    tool: str
    amount: float
    quote: str
    entity: str | None
    bucket: str
    result_pos: int | None
    failed: bool


def declared_limits(ctx: AuditContext) -> list[Limit]:
    """The policy's cumulative limits, each with the approval threshold on its tools (own limit)."""
    if ctx.policy is None:
        return []
    out = []
    for rule in ctx.policy.cumulative_limits:
        own = [a.threshold for a in ctx.policy.required_approvals if set(a.tools) & set(rule.tools)]
        out.append(
            Limit(
                limit=rule.limit,
                window=rule.window,
                currency=rule.currency,
                rule_id=rule.id,
                tools=frozenset(rule.tools),
                amount_argument=rule.amount_argument,
                group_by=rule.group_by,
                time_argument=rule.time.argument,
                per_action=min(own) if own else None,
            )
        )
    return out


def _authoritative(step: TraceStep) -> bool:
    return step.kind in (StepKind.tool_result, StepKind.document_read) or step.actor_kind in (
        ActorKind.system,
        ActorKind.environment,
        ActorKind.tool,
    )


def _money(text: str) -> tuple[float, str | None] | None:
    found = [m for m in extract_mentions(text) if m.kind == "amount" and m.value is not None]
    return (found[0].value, found[0].currency) if found else None  # type: ignore[return-value]


def stated_limits(ctx: AuditContext) -> list[Limit]:
    """Shared limits stated in the trace (authoritative steps) or its header metadata."""
    texts: list[tuple[str | None, str]] = [
        (s.step_id, s.content) for s in ctx.trace.steps if s.content and _authoritative(s)
    ]
    texts += [(None, t) for t in strings(ctx.trace.header.metadata)]
    individual = [
        v[0]
        for _, text in texts
        for m in _INDIVIDUAL.finditer(text)
        if (v := _money(m["amount"])) is not None
    ]
    out: list[Limit] = []
    seen: set[tuple[float, str, str | None]] = set()
    for step_id, text in texts:
        if _SHARED.search(text) is None:  # one cheap pass before splitting into sentences
            continue
        for sm in _SENTENCE.finditer(text):
            sentence = sm.group().rsplit('": "', 1)[-1].strip()  # inside JSON: the string value only
            m = _SHARED.search(sentence)
            window = _WINDOW.search(sentence)
            if m is None or (window is None and not _CUMULATIVE.search(sentence)):
                continue
            money = _money(m["amount"])
            if money is None:
                continue
            unit = "all" if window is None else window["unit"] or _ADJ_UNIT.get(window["adj"].lower(), "year")
            entity = _ENTITY.search(sentence)
            key = (money[0], unit.lower(), entity["entity"].lower() if entity else None)
            if key in seen:
                continue
            seen.add(key)
            out.append(
                Limit(
                    limit=money[0],
                    window=unit.lower(),
                    currency=money[1],
                    entity_word=key[2],
                    source_step=step_id,
                    statement=sentence,
                    per_action=min(individual) if individual else None,
                )
            )
    return out


def actions_for(ctx: AuditContext, limit: Limit) -> list[Action]:
    """Every call the limit sums: named tools (policy) or amount-moving calls (stated limits)."""
    results = _results_by_call(ctx)
    out = []
    for pos, step in enumerate(ctx.trace.steps):
        if step.kind is not StepKind.tool_call or step.tool is None:
            continue
        name = step.tool.name
        if limit.tools is not None and name not in limit.tools:
            continue
        if limit.tools is None and _NOT_MOVING.match(name):
            continue
        found = _amount_of(step, limit.amount_argument)
        if found is None:
            continue
        amount, quote = found
        rpos = results.get(step.tool.call_id or "")
        failed = rpos is not None and _failed(ctx.trace.steps[rpos])
        entity = _entity_of(step, limit)
        out.append(Action(pos, step.actor, name, amount, quote, entity, _bucket(step, limit), rpos, failed))
    return out


def _results_by_call(ctx: AuditContext) -> dict[str, int]:
    out = {}
    for pos, s in enumerate(ctx.trace.steps):
        if s.kind is StepKind.tool_result:
            cid = (s.refs.call_id if s.refs else None) or (s.tool.call_id if s.tool else None)
            if cid:
                out.setdefault(cid, pos)
    return out


def _failed(result: TraceStep) -> bool:
    status = str(result.raw.get("status", "ok")).lower()
    if status not in ("ok", "success", "succeeded", "200", "true"):
        return True
    body = json_value(result.content)
    return isinstance(body, dict) and "error" in body


def _amount_of(step: TraceStep, argument: str | None) -> tuple[float, str] | None:
    """Structured argument first; else (free-text arguments) the first money amount written in the step."""
    args = step.tool.arguments if step.tool else None
    if isinstance(args, dict):
        keys = [argument] if argument else [k for k in args if _AMOUNT_KEY.search(k)]
        for k in keys:
            v = args.get(k)
            if isinstance(v, int | float) and not isinstance(v, bool):
                literal = f'"{k}": {json.dumps(v)}'
                return float(v), literal if literal in step.content else str(v)
            if isinstance(v, str) and re.fullmatch(r"\d+(?:\.\d+)?", v.strip()):
                return float(v), v.strip()
        return None  # structured arguments without an amount: the step moves nothing
    amounts = [m for m in extract_mentions(step.content) if m.kind == "amount" and m.value is not None]
    return (amounts[0].value, amounts[0].surface) if amounts else None  # type: ignore[return-value]


def _entity_of(step: TraceStep, limit: Limit) -> str | None:
    args = step.tool.arguments if step.tool else None
    if limit.group_by is not None:
        return str(args.get(limit.group_by)) if isinstance(args, dict) else None
    if limit.entity_word is None:
        return None
    if isinstance(args, dict):
        key = next((k for k in args if limit.entity_word in k.lower()), None)
        return str(args[key]) if key is not None else None
    m = re.search(rf"(?i){limit.entity_word}\w*\s*[=:]\s*([\w-]+)", str(args or ""))
    return m.group(1) if m else None


def _bucket(step: TraceStep, limit: Limit) -> str:
    if limit.window == "all":
        return "all"
    raw = step.timestamp
    args = step.tool.arguments if step.tool else None
    if limit.time_argument and isinstance(args, dict):
        raw = str(args.get(limit.time_argument) or "") or None
    try:
        d = date.fromisoformat((raw or "")[:10])
    except ValueError:
        return "undated"
    if limit.window == "day":
        return d.isoformat()
    if limit.window == "week":
        y, w, _ = d.isocalendar()
        return f"{y}-W{w:02d}"
    if limit.window == "month":
        return f"{d.year}-{d.month:02d}"
    if limit.window == "quarter":
        return f"{d.year}-Q{(d.month - 1) // 3 + 1}"
    return str(d.year)


def head_quote(step: TraceStep, limit: int = 200) -> str:
    """A verbatim quote of a step's opening (for steps cited as a whole: a result, a delegation)."""
    text = step.content.strip()
    return text[:limit].strip() or text
