"""Who speaks with authority in a trace: the annotation layer's labels, plus stated titles it misses.

The graph's annotator reads first-person titles ("I'm the CFO"), delegations and role cards. A
signature such as "Theo Marsh, VP Engineering." at the head of a message, senior titles and
seniority outside its list ("acting as dean for research", "senior engineer"), and stated power
over the reader ("I decide your team's staffing") are read here. Each label keeps the verbatim quote it
was read from, so a finding can cite it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from auditor.audit.detectors.base import AuditContext
from auditor.audit.detectors.facts import windowed
from schemas import ActorKind, StepKind

_SENIOR = (
    r"(?:VP|SVP|EVP|Vice President|CFO|CEO|COO|CTO|CIO|CISO|Chief \w+(?: \w+)?|Director|Head of \w+"
    r"|Dean|President|Chair|General Counsel|Managing Partner|(?i:senior|principal|staff|lead) \w+)"
    r"(?: (?:of |for |on )?[A-Za-z&][\w&]*){0,3}"
)
_SIGNATURE = re.compile(
    rf"^\s*(?:[A-Z][\w.'-]+ ){{0,3}}[A-Z][\w.'-]+, (?:the |our )?(?P<title>{_SENIOR})(?=\s*[.,;:(\n])"
)
_ACTING = re.compile(
    rf"(?i:\b(?:I am|I'm|speaking as|acting as) (?:the |a |an |your )?)(?P<title>(?i:{_SENIOR}))"
)
# enacted power over the listener: "I decide your team's staffing", "I own ... performance reviews"
_POWER = re.compile(
    r"(?i:\bI (?:decide|own|control|set|run|sign off|approve)\b[^.\n]{0,50}?"
    r"\b(?:staffing|performance reviews?|promotions?|bonus(?:es)?|ratings?|headcount|your (?:team|review)))"
)
_ACTING_KEYS = ("i am", "i'm", "i’m", "speaking as", "acting as")
_POWER_KEYS = ("i decide", "i own", "i control", "i set", "i run", "i sign off", "i approve")
# role cards count only when they grant a decision or name a senior role
_GRANTING = (
    "approv",
    "authori",
    "sign",
    "decid",
    "director",
    "head of",
    "chief",
    "vp ",
    "officer",
    "manager",
)
BASIS = {
    "title": "stated title",
    "delegation": "stated delegation",
    "role_card": "role card",
    "power": "stated power over the reader",
    "assertion": "its own assertion",
}


@dataclass(frozen=True)
class Authority:
    participant: str
    authority: str
    basis: str
    step_id: str | None
    quote: str


def authorities(ctx: AuditContext) -> dict[str, Authority]:
    """participant -> the first authority it holds or claims in the trace."""
    out: dict[str, Authority] = {}
    assert ctx.graph.annotations is not None
    for label in ctx.graph.annotations.authority:
        if label.basis in ("title", "delegation") or (
            label.basis == "role_card" and any(w in label.authority.lower() for w in _GRANTING)
        ):
            out.setdefault(
                label.participant,
                Authority(label.participant, label.authority, label.basis, label.step_id, label.quote),
            )
    for step in ctx.trace.steps:
        if step.actor in out or step.actor_kind not in (ActorKind.agent, ActorKind.human):
            continue
        if step.kind not in (StepKind.message, StepKind.handoff):
            continue
        text = step.content
        m = _SIGNATURE.match(text) or next(windowed(_ACTING, _ACTING_KEYS, text, 80), None)
        if m is not None:
            quote = step.content[m.start() : m.end()].strip()
            out[step.actor] = Authority(step.actor, m["title"].strip(), "title", step.step_id, quote)
        elif (p := next(windowed(_POWER, _POWER_KEYS, text, 80), None)) is not None:
            out[step.actor] = Authority(step.actor, p.group(), "power", step.step_id, p.group())
    return out
