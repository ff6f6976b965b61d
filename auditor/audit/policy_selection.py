"""Which declared policy audits a trace, on the service: one policy file, or a directory of them
with a declared selector.

A service audits the traces of many agents, and each domain has its own policy. ``--policy`` on
``auditor serve`` and ``auditor stream workers`` takes a policy file (every trace is audited under
it) or a directory: each ``*.yaml`` in it is a policy, known by its ``name``, and ``selector.yaml``
(documented in ``docs/policy.md``) says which trace gets which::

    version: 1
    by: service.name            # resource.<attribute> | header.<field> | header.metadata.<key>
    choose:                     # the selected value (a glob pattern) -> a policy's name
      airline-*: airline
      retail-support: retail
    default: airline            # optional: a trace no pattern matches (else: no policy)

``service.name`` and ``resource.<attribute>`` are read from the OpenTelemetry resource of the
spans the trace was assembled from (OTLP over HTTP or Kafka); ``header.…`` from the canonical
trace's header. A client of ``POST /api/audit`` may also name the policy; a name the service does
not know is an input error that lists the known ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from auditor.audit.policy import Policy, load_policy
from auditor.core.errors import InputError
from schemas import Trace
from schemas.trace import TraceHeader

SELECTOR_FILE = "selector.yaml"
SELECTOR_NAMES = (SELECTOR_FILE, "selector.yml")  # a directory's policies may be *.yml too
RESOURCE = "resource."
HEADER = "header."
_ALIASES = {"service.name": "resource.service.name"}

Resource = Callable[[str], Any]
"""The value of one resource attribute of the trace's spans (None: none carries it), read only
when a selector asks for it."""


class Selector(BaseModel):
    """``selector.yaml``: the trace field that picks the policy, and its values' policies."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1] = 1
    by: str = Field(min_length=1, description="service.name, resource.<attribute> or header.<field>.")
    choose: dict[str, str] = Field(min_length=1, description="Value pattern (glob) -> policy name.")
    default: str | None = None

    @field_validator("by")
    @classmethod
    def _known_source(cls, value: str) -> str:
        value = _ALIASES.get(value, value)
        if not (value.startswith(RESOURCE) or value.startswith(HEADER)) or value in (RESOURCE, HEADER):
            raise ValueError(
                f"'{value}' is no selector: use service.name, resource.<attribute> or header.<field>"
            )
        if value.startswith(HEADER):
            _header_field(value.removeprefix(HEADER))
        return value

    def value_of(self, trace: Trace, resource: Resource) -> str | None:
        """The selected field's value for ``trace`` (None: the trace does not carry it)."""
        if self.by.startswith(RESOURCE):
            found = resource(self.by.removeprefix(RESOURCE))
        else:
            found = _lookup(trace.header.model_dump(mode="json"), self.by.removeprefix(HEADER).split("."))
        if found is None or isinstance(found, dict | list):
            return None
        return ("true" if found else "false") if isinstance(found, bool) else str(found)  # as YAML writes it

    def name_for(self, value: str | None) -> str | None:
        if value is not None:
            for pattern, name in self.choose.items():
                if fnmatchcase(value, pattern):
                    return name
        return self.default


def _header_field(path: str) -> None:
    """Refuse a header field no trace has (a typo would leave every trace on the default): the
    header's own fields, and any key under ``metadata``, which is free."""
    fields = TraceHeader.model_fields
    name, _, rest = path.partition(".")
    if name not in fields:
        raise ValueError(f"'header.{name}' is no field of a trace's header (fields: {', '.join(fields)})")
    if name == "metadata" and not rest:
        raise ValueError("'header.metadata' needs a key: header.metadata.<key>")


def _lookup(found: Any, parts: list[str]) -> Any:
    """The value at ``parts`` under ``found``; a key may itself hold dots (metadata written as
    OpenTelemetry names them: ``service.name``), the longest such key first."""
    if not parts:
        return found
    if not isinstance(found, dict):
        return None
    for end in range(len(parts), 0, -1):
        key = ".".join(parts[:end])
        if key in found:
            return _lookup(found[key], parts[end:])
    return None


@dataclass(frozen=True)
class PolicySet:
    """The policies a service knows, by name, and how a trace's policy is chosen."""

    policies: dict[str, Policy]
    selector: Selector | None = None
    _single: bool = field(default=False, repr=False)

    @property
    def names(self) -> list[str]:
        return sorted(self.policies)

    def named(self, name: str) -> Policy:
        """The policy called ``name``; an unknown name is an input error listing the known ones
        (a client reads it: it names no server path)."""
        if name not in self.policies:
            known = ", ".join(self.names) or "none"
            raise InputError(
                f"unknown policy '{name}' (known: {known})",
                field="policy",
                hint="GET /api/policies lists them",
            )
        return self.policies[name]

    def for_trace(self, trace: Trace, resource: Resource = lambda _: None) -> Policy | None:
        """The policy ``trace`` is audited under: the only one of a file, else the selector's."""
        if self._single:
            return next(iter(self.policies.values()))
        if self.selector is None:
            return None
        name = self.selector.name_for(self.selector.value_of(trace, resource))
        return self.policies[name] if name is not None else None


def load_policies(path: str | Path) -> PolicySet:
    """A policy file, or a directory of policies with its ``selector.yaml``; every mistake is an
    input error naming the file, the line and the field."""
    p = Path(path)
    if not p.is_dir():
        policy = load_policy(p)
        return PolicySet({policy.name: policy}, _single=True)
    policies: dict[str, Policy] = {}
    files = sorted(f for f in p.iterdir() if f.suffix in (".yaml", ".yml") and f.name not in SELECTOR_NAMES)
    for f in files:
        policy = load_policy(f)
        if policy.name in policies:
            raise InputError(
                f"policy name '{policy.name}' is declared by two files of the directory",
                path=str(f),
                field="name",
                hint="each policy in a directory needs its own name",
            )
        policies[policy.name] = policy
    if not policies:
        raise InputError("the policy directory holds no policy (*.yaml)", path=str(p))
    found = [p / name for name in SELECTOR_NAMES if (p / name).exists()]
    if len(found) > 1:
        raise InputError(
            "the directory holds two selectors", path=str(found[1]), hint=f"keep only {SELECTOR_FILE}"
        )
    selector = _load_selector(found[0], policies) if found else None
    return PolicySet(policies, selector, _single=selector is None and len(policies) == 1)


def _load_selector(path: Path, policies: dict[str, Policy]) -> Selector:
    from auditor.audit.policy import line_of, read_utf8, yaml_mapping

    text = read_utf8(path, "selector", "the selector")
    data, root = yaml_mapping(text, str(path), "a selector is a YAML mapping with 'by' and 'choose'")
    try:
        selector = Selector.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = list(err["loc"])
        raise InputError(
            err["msg"].removeprefix("Value error, "),
            path=str(path),
            line=line_of(root, loc),
            field=".".join(str(x) for x in loc) or None,
            hint="see docs/policy.md, 'Policies on the service'",
        ) from exc
    for loc in [["choose", k] for k in selector.choose] + [["default"]]:
        name = selector.choose[loc[1]] if len(loc) == 2 else selector.default
        if name is not None and name not in policies:
            raise InputError(
                f"'{name}' names no policy of the directory (known: {', '.join(sorted(policies))})",
                path=str(path),
                line=line_of(root, loc),
                field=".".join(loc),
            )
    return selector


def span_resource(store: Any, trace: Trace, key: str) -> Any:
    """The resource attribute ``key`` of the spans ``trace`` was assembled from (the first span
    that carries it), or None: a trace that came from no spans has none."""
    from ingest.span_assembly import RECEIVED, spans_stream
    from ingest.spans import attributes

    otel_id = trace.header.metadata.get("otel_trace_id")
    if store is None or not isinstance(otel_id, str):
        return None
    for ev in store.read_stream(spans_stream(otel_id)):
        if ev.type == RECEIVED:
            value = attributes((ev.payload.get("resource") or {}).get("attributes")).get(key)
            if value is not None:
                return value
    return None
