"""Declared rules about actions (policy sections ``clock``, ``claimants``, ``confirmations``,
``records``, ``action_rules``, ``requests`` and ``handoffs``): what a domain policy such as an
airline's demands before a write tool is called, and which customer requests it grants.

A rule is decided from the trace's own facts: a record is the JSON a read tool returned for the
entity the action names (the reservation a cancellation names, the user a certificate goes to);
a condition reads a field of that record (or an argument of the call) and compares it with a
value, a list, or the trace's clock (the policy's "current time", read from a system step where
the domain states it). A customer's word is never a record: ``claimants`` lists who is a source of
claims (a human, a simulated user) and which values their word may establish (their own user id).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from schemas import ActorKind


class _Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Clock(_Rule):
    """The domain's "now": a fixed ISO time, or the first match of a pattern in a system step."""

    fixed: str | None = None
    pattern: str | None = Field(default=None, description="A regex whose group 1 is the time.")
    format: str = Field(default="%Y-%m-%d %H:%M:%S", description="strptime format of the match.")

    @model_validator(mode="after")
    def _one_source(self) -> Clock:
        if (self.fixed is None) == (self.pattern is None):
            raise ValueError("a clock needs exactly one of 'fixed' or 'pattern'")
        if self.pattern is not None:
            try:
                if re.compile(self.pattern).groups < 1:
                    raise ValueError("the clock pattern needs a group that captures the time")
            except re.error as exc:
                raise ValueError(f"clock pattern is not a valid regular expression: {exc}") from exc
        return self


class Claimant(_Rule):
    """A source of claims, not an audited agent: its word establishes only ``trusted_for``."""

    names: list[str] = Field(default_factory=list)
    actor_kind: ActorKind | None = ActorKind.human
    trusted_for: list[str] = Field(
        default_factory=list, description="Values their word may establish (e.g. their own user_id)."
    )


class Confirmation(_Rule):
    """Write tools that need the claimant's explicit confirmation of the listed details first."""

    id: str = Field(min_length=1)
    description: str = ""
    tools: list[str] = Field(min_length=1)
    negations: list[str] = Field(
        default_factory=lambda: ["no", "not", "don't", "wait", "hold on", "cancel that", "instead"],
        description="Words that, in the same reply, withdraw or condition the yes.",
    )


class RecordSpec(_Rule):
    """Where a record comes from: the results of a read tool, keyed by one of its fields."""

    name: str = Field(min_length=1)
    tools: list[str] = Field(min_length=1, description="Read tools whose results hold the record.")
    key: str = Field(min_length=1, description="Field of the record (and argument of actions) naming it.")
    value_field: str | None = Field(
        default=None,
        description=(
            "For a read tool that returns one bare value, not a JSON object (a flight's status): the "
            "field that value fills; the key then comes from the call's argument of that name."
        ),
    )


class ClaimSpec(_Rule):
    """What a claimant's words state, by declared terms: the categories of a claim (a
    cancellation's reason: health, weather, change of plan) and the words that state each. The
    vocabulary is the policy author's, visible in the file and quoted in the evidence."""

    name: str = Field(min_length=1)
    values: dict[str, list[str]] = Field(min_length=1, description="Category -> words that state it.")


class PerItem(_Rule):
    """An amount the policy computes per item of a record list: a certificate of $100 per
    passenger of the reservation."""

    items: str = Field(min_length=1, description="Dotted path of the record's list (passengers).")
    amounts: list[float] = Field(min_length=1, description="The allowed amounts per item.")


class Condition(_Rule):
    """One test: a record field (``field``, dotted, ``*`` over lists), a call argument, or a claim
    (the categories the claimants' words stated before the call); ``and`` adds conditions that
    must hold too."""

    field: str | None = None
    argument: str | None = None
    claim: str | None = Field(default=None, description="A claims entry: the categories stated.")
    record: str | None = Field(default=None, description="Another record than the rule's own.")
    equals: Any = None
    in_: list[Any] | None = Field(default=None, alias="in")
    not_in: list[Any] | None = None
    within_hours: float | None = Field(
        default=None, gt=0, description="Time value within N hours before now."
    )
    before_clock: bool | None = None
    differs_from: str | None = Field(
        default=None, description="Holds when the argument's values differ from this field of the record."
    )
    count_over: int | None = Field(default=None, ge=0, description="Holds when more than N list items match.")
    where_prefix: str | None = Field(default=None, description="With count_over: count items starting so.")
    count_differs_from: str | None = Field(
        default=None, description="Holds when the subject has another number of values than this record path."
    )
    per_item: PerItem | None = Field(
        default=None, description="Holds when the value is one of the amounts times a record list's length."
    )
    and_: list[Condition] = Field(
        default_factory=list, alias="and", description="Conditions that must hold too."
    )

    @model_validator(mode="after")
    def _one_subject_one_test(self) -> Condition:
        if sum(x is not None for x in (self.field, self.argument, self.claim)) != 1:
            raise ValueError(
                "a condition reads exactly one of 'field' (a record field), 'argument' or 'claim'"
            )
        if self.claim is not None and self.equals is None and self.in_ is None and self.not_in is None:
            raise ValueError("a claim condition tests with equals, in or not_in")
        tests = [
            self.equals is not None,
            self.in_ is not None,
            self.not_in is not None,
            self.within_hours is not None,
            self.before_clock is not None,
            self.count_over is not None,
            self.differs_from is not None,
            self.count_differs_from is not None,
            self.per_item is not None,
        ]
        if sum(tests) != 1:
            raise ValueError(
                "a condition needs exactly one test: equals, in, not_in, within_hours, "
                "before_clock, count_over, differs_from, count_differs_from or per_item"
            )
        return self

    def describe(self, grouped: bool = False) -> str:
        """The condition in words; ``grouped`` brackets a compound one (``and``), as it must be
        when it stands among alternatives joined by "or"."""
        text = " and ".join([self._describe_one(), *(c.describe(grouped=True) for c in self.and_)])
        return f"({text})" if grouped and self.and_ else text

    def _describe_one(self) -> str:
        if self.claim is not None:
            subject = f"the customer's stated {self.claim}"
        elif self.argument is not None:
            subject = f"argument {self.argument}"
        else:
            subject = f"{self.record + '.' if self.record else ''}{self.field}"
        if self.equals is not None:
            return f"{subject} = {self.equals!r}"
        if self.in_ is not None:
            return f"{subject} in {self.in_!r}"
        if self.not_in is not None:
            return f"{subject} not in {self.not_in!r}"
        if self.within_hours is not None:
            return f"{subject} at most {self.within_hours:g} h before now"
        if self.before_clock is not None:
            return f"{subject} {'before' if self.before_clock else 'not before'} now"
        if self.differs_from is not None:
            return f"{subject} differs from the record's {self.differs_from}"
        if self.count_differs_from is not None:
            return f"the number of {subject} differs from the record's number of {self.count_differs_from}"
        if self.per_item is not None:
            amounts = " or ".join(f"{a:g}" for a in self.per_item.amounts)
            return f"{subject} is {amounts} per item of {self.record or 'the record'}.{self.per_item.items}"
        which = f" starting {self.where_prefix!r}" if self.where_prefix else ""
        return f"more than {self.count_over} of {subject}{which}"


class ActionRule(_Rule):
    """An action is allowed only if any ``allow_if_any`` holds (when given) and no
    ``deny_if_any`` holds, judged on the record the action names (read before the action)."""

    id: str = Field(min_length=1)
    description: str = ""
    tools: list[str] = Field(min_length=1)
    record: str | None = Field(default=None, description="The records entry the action names.")
    judge: Literal["before", "result"] = Field(
        default="before",
        description="before: the record read before the call; result: the record the write returned.",
    )
    allow_if_any: list[Condition] = Field(default_factory=list)
    deny_if_any: list[Condition] = Field(default_factory=list)
    deny_if_all: list[Condition] = Field(default_factory=list)

    @model_validator(mode="after")
    def _has_conditions(self) -> ActionRule:
        if not (self.allow_if_any or self.deny_if_any or self.deny_if_all):
            raise ValueError("an action rule needs allow_if_any, deny_if_any or deny_if_all")
        return self

    @field_validator("tools")
    @classmethod
    def _named(cls, value: list[str]) -> list[str]:
        if any(not t.strip() for t in value):
            raise ValueError("tool names must be non-empty")
        return value


class RequestKind(_Rule):
    """A request for a write: which tools serve it and which record it concerns. The request
    itself is recognised from the tools' own names and descriptions (the request ledger), never
    from words the policy declares. ``decided_by`` names the action rules that decide it
    completely from that record: where none of them refuses it on the record read, the policy
    grants the request (an empty list: always granted)."""

    id: str = Field(min_length=1)
    description: str = ""
    tools: list[str] = Field(min_length=1, description="The write tools that serve the request.")
    record: str = Field(min_length=1, description="The records entry the request concerns.")
    decided_by: list[str] | None = Field(
        default=None, description="Action rules that decide the request from the record (omit: none do)."
    )


def parse_time(text: str, fmt: str = "%Y-%m-%d %H:%M:%S") -> datetime | None:
    """A record's or the clock's time: ISO 8601 (date or date-time), or ``fmt``; None otherwise."""
    text = str(text).strip()
    for parse in (datetime.fromisoformat, lambda t: datetime.strptime(t, fmt)):
        try:
            value = parse(text)
        except ValueError:
            continue
        return value.replace(tzinfo=None)
    return None


class Allowance(_Rule):
    """A charge the policy computes: ``charged = max(0, total − allowance × count)``, with the
    allowance read from ``table`` by a record field (row) and a call argument (column) — e.g.
    free checked bags by membership tier and cabin, per passenger."""

    id: str = Field(min_length=1)
    description: str = ""
    tools: list[str] = Field(min_length=1)
    record: str = Field(min_length=1, description="The records entry the call names (the row's source).")
    row_field: str = Field(min_length=1, description="Record field that picks the table row.")
    column_argument: str = Field(min_length=1, description="Call argument that picks the column.")
    table: dict[str, dict[str, float]] = Field(min_length=1)
    count_argument: str | None = Field(
        default=None, description="A list argument the allowance is per item of."
    )
    total_argument: str = Field(min_length=1)
    charged_argument: str = Field(min_length=1)


Condition.model_rebuild()
