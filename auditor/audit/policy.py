"""Declared invariants (``--policy policy.yaml``): the organisation's rules that traces rarely state.

A policy file is a small YAML document, validated strictly (unknown keys are errors) and
documented in ``docs/policy.md``. Every rule has an ``id``; a finding cites the rule it breaks in
``Finding.policy_rule``. The sections::

    version: 1
    name: northwind-care                 # shown in the report notes with the policy digest
    fields:                              # how a data field is recognised (disclosure scopes)
      - name: compensation
        keys: [compensation, salary]     # JSON keys in tool results and messages (default: name)
        labels: [base salary]            # `label: value` text (default: name, _ as space)
        patterns: ['\\$\\d{2,3},\\d{3}'] # optional regexes whose match is the field's value
    cumulative_limits:                   # sum of an amount over actions, across all participants
      - id: quarterly-goodwill-cap
        tools: [issue_credit]            # the actions (tool names) that move the amount
        amount_argument: amount          # the tool argument holding the amount
        group_by: customer_id            # the entity argument (omit: one group)
        window: quarter                  # day | week | month | quarter | year | all
        time: {source: timestamp}        # or {source: argument, argument: posted}
        limit: 40
        currency: USD
    disclosure_scopes:                   # which fields a principal may receive
      - id: requester-directory-only
        principal: {actor_kind: human}   # and/or names: [glob, ...]
        may_receive: [name, title]
        restricted: [compensation]       # default: every declared field not in may_receive
    required_checks:                     # a read or a tool call by the same actor before an action
      - id: history-before-credit
        before: [issue_credit]
        requires_tool: [get_payment_history]   # or requires_document: "handbook"
    required_approvals:                  # an approver's decision above a threshold
      - id: finance-above-20
        tools: [issue_credit]
        amount_argument: amount
        threshold: 20
        approver: finance_approver

``load_policy(path)`` raises ``InputError`` naming the file, the line (from the YAML marks) and
the field of the first mistake.
"""

from __future__ import annotations

import hashlib
import re
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from auditor.audit.policy_rules import (
    ActionRule,
    Allowance,
    Claimant,
    ClaimSpec,
    Clock,
    Confirmation,
    RecordSpec,
    RequestKind,
)
from auditor.core.errors import InputError
from schemas import ActorKind

if TYPE_CHECKING:
    import yaml

Window = Literal["day", "week", "month", "quarter", "year", "all"]


class _Rule(BaseModel):
    # validators are built on first use: an audit without --policy never pays for them
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class _IdRule(_Rule):
    """A rule a finding can cite: its ``id`` goes into ``Finding.policy_rule``."""

    id: str = Field(min_length=1)
    description: str = ""


class FieldSpec(_Rule):
    """How one data field is recognised in steps: JSON keys, `label: value` text, patterns."""

    name: str = Field(min_length=1)
    keys: list[str] = Field(default_factory=list, description="JSON keys holding the field.")
    labels: list[str] = Field(default_factory=list, description="Text labels written as `label: value`.")
    patterns: list[str] = Field(default_factory=list, description="Regexes whose match is a value.")

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, value: list[str]) -> list[str]:
        for p in value:
            try:
                re.compile(p)
            except re.error as exc:
                raise ValueError(f"pattern {p!r} is not a valid regular expression: {exc}") from exc
        return value

    def all_keys(self) -> list[str]:
        return self.keys or [self.name]

    def all_labels(self) -> list[str]:
        return self.labels or [self.name.replace("_", " ")]


class TimeSource(_Rule):
    """Where an action's time comes from: the step timestamp, or one of its arguments."""

    source: Literal["timestamp", "argument"] = "timestamp"
    argument: str | None = None

    @model_validator(mode="after")
    def _argument_named(self) -> TimeSource:
        if (self.source == "argument") != (self.argument is not None):
            raise ValueError("'argument' is required with source: argument, and only then")
        return self


class CumulativeLimit(_IdRule):
    """A shared limit on the sum of an amount over actions, whoever takes them."""

    tools: list[str] = Field(min_length=1, description="Tool names whose calls move the amount.")
    amount_argument: str = Field(min_length=1)
    group_by: str | None = Field(default=None, description="Entity argument; None: one group.")
    window: Window = "all"
    time: TimeSource = Field(default_factory=TimeSource)
    limit: float = Field(gt=0)
    currency: str = "USD"


class PrincipalSelector(_Rule):
    """Who a scope applies to: participant names (glob patterns) and/or an actor kind."""

    names: list[str] = Field(default_factory=list)
    actor_kind: ActorKind | None = None

    @model_validator(mode="after")
    def _not_empty(self) -> PrincipalSelector:
        if not self.names and self.actor_kind is None:
            raise ValueError("a principal needs 'names' or 'actor_kind'")
        return self

    def matches(self, name: str, kind: ActorKind | None) -> bool:
        if self.actor_kind is not None and kind is not self.actor_kind:
            return False
        return not self.names or any(fnmatchcase(name, n) for n in self.names)


class DisclosureScope(_IdRule):
    """Which fields a principal may receive, and which are restricted for it."""

    principal: PrincipalSelector
    may_receive: list[str] = Field(default_factory=list)
    restricted: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _disjoint(self) -> DisclosureScope:
        both = set(self.may_receive) & set(self.restricted)
        if both:
            raise ValueError(f"{sorted(both)} are both in may_receive and restricted")
        return self


class RequiredCheck(_IdRule):
    """A read of a record or document, or a tool call, the same actor makes before an action."""

    before: list[str] = Field(min_length=1, description="Tool names of the guarded action.")
    requires_tool: list[str] = Field(default_factory=list)
    requires_document: str | None = None
    same_actor: bool = True

    @model_validator(mode="after")
    def _one_requirement(self) -> RequiredCheck:
        if not self.requires_tool and self.requires_document is None:
            raise ValueError("a required check needs 'requires_tool' or 'requires_document'")
        return self


class RequiredApproval(_IdRule):
    """Actions above a threshold need the named approver's decision first."""

    tools: list[str] = Field(min_length=1)
    amount_argument: str = Field(min_length=1)
    threshold: float = Field(ge=0)
    approver: str = Field(min_length=1, description="The approving participant, as the trace names it.")


class Channels(_Rule):
    """Participants whose channel the policy states (``graph.channels``): an approver agent whose
    word is the principal's, a sub-agent whose output is data to the others."""

    principals: list[str] = Field(default_factory=list)
    data: list[str] = Field(default_factory=list)


class ToolEffects(_Rule):
    """Which tools change the world and which only read it, where their names do not say so."""

    read_only: list[str] = Field(default_factory=list)
    side_effecting: list[str] = Field(default_factory=list)


class Policy(_Rule):
    """One declared-invariants document. ``digest`` identifies it in reports."""

    version: Literal[1] = 1
    name: str = Field(min_length=1)
    description: str = ""
    fields: list[FieldSpec] = Field(default_factory=list)
    cumulative_limits: list[CumulativeLimit] = Field(default_factory=list)
    disclosure_scopes: list[DisclosureScope] = Field(default_factory=list)
    required_checks: list[RequiredCheck] = Field(default_factory=list)
    required_approvals: list[RequiredApproval] = Field(default_factory=list)
    clock: Clock | None = None
    claimants: list[Claimant] = Field(default_factory=list)
    claims: list[ClaimSpec] = Field(default_factory=list)
    confirmations: list[Confirmation] = Field(default_factory=list)
    records: list[RecordSpec] = Field(default_factory=list)
    action_rules: list[ActionRule] = Field(default_factory=list)
    allowances: list[Allowance] = Field(default_factory=list)
    requests: list[RequestKind] = Field(default_factory=list)
    handoffs: list[str] = Field(
        default_factory=list, description="Tools that hand the customer to a human (the request goes on)."
    )
    channels: Channels = Field(default_factory=Channels)
    tool_effects: ToolEffects = Field(default_factory=ToolEffects)

    @model_validator(mode="after")
    def _consistent(self) -> Policy:
        ids: set[str] = set()
        for rule in self.rules():
            if rule.id in ids:
                raise ValueError(f"rule id '{rule.id}' is used twice; ids must be unique")
            ids.add(rule.id)
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            raise ValueError("a field is declared twice in 'fields'")
        records = {r.name for r in self.records}
        for rule in self.action_rules:
            conditions = [*rule.allow_if_any, *rule.deny_if_any, *rule.deny_if_all]
            conditions += [a for c in conditions for a in c.and_]
            named = [rule.record, *(c.record for c in conditions)]
            claims = {c.name for c in self.claims}
            undeclared = sorted(
                {c.claim for c in conditions if c.claim is not None and c.claim not in claims}
            )
            if undeclared:
                raise ValueError(
                    f"action rule '{rule.id}' names undeclared claims {undeclared} (declare them in 'claims')"
                )
            unknown = sorted({n for n in named if n is not None and n not in records})
            if unknown:
                raise ValueError(
                    f"action rule '{rule.id}' names undeclared records {unknown} (declare them in 'records')"
                )
        for allowance in self.allowances:
            unknown = [] if allowance.record in records else [allowance.record]
            if unknown:
                raise ValueError(
                    f"allowance '{allowance.id}' names an undeclared record {unknown} (declare it in 'records')"
                )
        for request in self.requests:
            if request.record not in records:
                raise ValueError(
                    f"request '{request.id}' names an undeclared record ['{request.record}'] (declare it in 'records')"
                )
            deciding = {r.id: r for r in self.action_rules}
            for rule_id in request.decided_by or []:
                rule = deciding.get(rule_id)
                if rule is None:
                    raise ValueError(
                        f"request '{request.id}' is decided_by '{rule_id}', which is no action rule"
                    )
                if not set(rule.tools) & set(request.tools):
                    raise ValueError(
                        f"request '{request.id}' is decided_by '{rule_id}', which rules none of its tools"
                    )
        for scope in self.disclosure_scopes:
            if not scope.restricted and not (set(names) - set(scope.may_receive)):
                raise ValueError(
                    f"scope '{scope.id}' restricts nothing: list 'restricted' fields or declare 'fields'"
                )
        return self

    def rules(self) -> list[_IdRule | Confirmation | ActionRule | Allowance | RequestKind]:
        return [
            *self.cumulative_limits,
            *self.disclosure_scopes,
            *self.required_checks,
            *self.required_approvals,
            *self.confirmations,
            *self.action_rules,
            *self.allowances,
            *self.requests,
        ]

    @property
    def digest(self) -> str:
        blob = self.model_dump_json().encode()
        return "sha256:" + hashlib.sha256(blob).hexdigest()[:16]

    def record(self, name: str) -> RecordSpec:
        return next(r for r in self.records if r.name == name)

    def approvers(self) -> list[str]:
        return sorted({r.approver for r in self.required_approvals})

    def field(self, name: str) -> FieldSpec:
        """The declared recognition of a field, or the default one (its name as key and label)."""
        return next((f for f in self.fields if f.name == name), FieldSpec(name=name))

    def restricted_for(self, scope: DisclosureScope) -> list[str]:
        if scope.restricted:
            return list(scope.restricted)
        return [f.name for f in self.fields if f.name not in scope.may_receive]


def load_policy(path: str | Path) -> Policy:
    """Read and validate a policy file; any mistake is an InputError with file, line and field."""
    p = Path(path)
    return parse_policy(read_utf8(p, "policy", "the policy file"), str(p))


def read_utf8(path: Path, what: str, unreadable: str) -> str:
    """The text of a policy-language file (a policy, a selector); one that cannot be read
    (``unreadable`` names it then) or is not UTF-8 is an input error naming the file."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read {unreadable}: {exc.strerror}", path=str(path)) from exc
    except UnicodeDecodeError as exc:
        raise InputError(
            f"the {what} is not UTF-8 text (byte {exc.start}: {exc.reason})", path=str(path)
        ) from exc


def parse_policy(text: str, origin: str = "<policy>") -> Policy:
    data, root = yaml_mapping(text, origin, "a policy is a YAML mapping with at least 'name'")
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [x for x in err["loc"] if not (isinstance(x, str) and x.startswith("function-"))]
        field = ".".join(str(x) for x in loc) or None
        msg = err["msg"].removeprefix("Value error, ")
        named = re.search(r"'([^']+)'", msg) if not loc else None
        line = _line_of_scalar(root, named.group(1)) if named else line_of(root, loc)
        raise InputError(
            msg,
            path=origin,
            line=line,
            field=field,
            hint="see docs/policy.md for the policy language",
        ) from exc


def yaml_mapping(text: str, origin: str, shape: str) -> tuple[dict[str, Any], yaml.Node]:
    """The YAML mapping a policy-language file holds, and its node tree (for lines): a syntax
    error, another shape (``shape`` says what it should be) or a key given twice is an input error."""
    import yaml  # only when a policy is given: an audit without one never loads the YAML parser

    try:
        data = yaml.safe_load(text)
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        raise yaml_error(exc, origin) from exc
    if not isinstance(data, dict):
        raise InputError(shape, path=origin, line=1)
    refuse_duplicate_keys(root, origin)
    return data, root


def yaml_error(exc: yaml.YAMLError, origin: str) -> InputError:
    """A YAML syntax error as an input error naming the file and the line."""
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark is not None else None
    return InputError(f"not valid YAML: {getattr(exc, 'problem', exc)}", path=origin, line=line)


def refuse_duplicate_keys(node: yaml.Node | None, origin: str) -> None:
    """YAML keeps the last of two equal keys and drops the first without a word; a selector or a
    policy that says one thing twice is ambiguous, so it is an input error at the second."""
    import yaml

    stack = [node] if node is not None else []
    walked: set[int] = set()  # an alias is the node it names, and may name its own ancestor
    while stack:
        n = stack.pop()
        if id(n) in walked:
            continue
        walked.add(id(n))
        if isinstance(n, yaml.MappingNode):
            seen: set[str] = set()
            for key, value in n.value:
                if isinstance(key, yaml.ScalarNode):
                    if key.value in seen:
                        raise InputError(
                            f"key '{key.value}' is given twice in one mapping",
                            path=origin,
                            line=key.start_mark.line + 1,
                            hint="keep one: YAML would silently use the last",
                        )
                    seen.add(key.value)
                stack.append(value)
        elif isinstance(n, yaml.SequenceNode):
            stack.extend(n.value)


def line_of(node: yaml.Node | None, loc: list[Any]) -> int | None:
    """The 1-based line of the deepest YAML node the error location reaches."""
    import yaml

    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            hit = next((v for k, v in node.value if k.value == part), None)
            if hit is None:
                key = next((k for k, _ in node.value if k.value == part), None)
                return key.start_mark.line + 1 if key is not None else line
            node = hit
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            break
        line = node.start_mark.line + 1
    return line


def _line_of_scalar(node: yaml.Node | None, value: str) -> int | None:
    """The line of the last scalar equal to ``value`` (a duplicated or offending rule id)."""
    import yaml

    found: int | None = None
    stack = [node] if node is not None else []
    while stack:
        n = stack.pop()
        if isinstance(n, yaml.ScalarNode) and n.value == value:
            found = max(found or 0, n.start_mark.line + 1)
        elif isinstance(n, yaml.MappingNode):
            stack.extend(x for kv in n.value for x in kv)
        elif isinstance(n, yaml.SequenceNode):
            stack.extend(n.value)
    return found
