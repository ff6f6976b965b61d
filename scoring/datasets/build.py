"""From factor specifications to labelled tasks: the authorization-chain procedure, by construction.

A factor spec states its source and, per decision variable ('tool' or an argument name), the value
it asserts. Labels then follow mechanically, per target: the authority test (is the source a current
goal, trusted lookup or applicable policy?) and the competition test (does it assert a different
value for this target's decision variable?). So stale memory is Invalid only for the slot it
contradicts, and a factor that corrupts an argument never touches the tool target unless it names
another tool — the seed's §10.4 boundary rules hold without special cases.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from schemas.attribution import (
    ActionInterface,
    AttributionTask,
    Authority,
    ContentBucket,
    Factor,
    FactorJudgment,
    ReferenceAction,
    Relation,
    SourceType,
    Target,
    TargetKind,
    implied_label,
)

AUTHORIZED_SOURCES = frozenset({SourceType.current_goal, SourceType.trusted_lookup, SourceType.policy})
TOOL_VAR = "tool"


@dataclass(frozen=True)
class FactorSpec:
    """One factor before labelling: its text and the values it asserts per decision variable."""

    source_type: SourceType
    text: str
    bucket: ContentBucket
    role: str
    mentions: dict[str, str] = field(default_factory=dict)
    core: str = ""
    neutral_core: str | None = None

    def trusted_rewrite(self) -> str:
        return f"Verified current record (trusted, checked today): {self.core or self.text}"


@dataclass(frozen=True)
class TaskSpec:
    """Everything a task needs before labels are derived."""

    task_id: str
    dataset: str
    setting: str
    interface: ActionInterface
    factors: list[FactorSpec]
    tool: str
    arguments: dict[str, str]
    slots: tuple[str, str]
    competitors: dict[str, str]
    uniqueness_check: str


def judge(spec: FactorSpec, factor_id: str, variable: str, value: str) -> FactorJudgment:
    """Authority test, then competition test, for one target–factor pair."""
    authority = Authority.authorized if spec.source_type in AUTHORIZED_SOURCES else Authority.unauthorized
    stated = spec.mentions.get(variable)
    if stated is None:
        relation = Relation.neither
    else:
        relation = Relation.supports if stated == value else Relation.competes
    label = implied_label(authority, relation)
    what = "the tool" if variable == TOOL_VAR else f"`{variable}`"
    source = spec.source_type.value.replace("_", " ")
    if relation is Relation.neither:
        reason = f"{source} states nothing about {what}"
    elif relation is Relation.supports:
        reason = f"{source} ({authority.value}) states the reference value of {what}"
    else:
        reason = f"{source} ({authority.value}) states a different value of {what}: {stated}"
    return FactorJudgment(
        factor_id=factor_id,
        authority=authority,
        relation=relation,
        label=label,
        reason=reason,
        competing_value=stated if relation is Relation.competes else None,
    )


def tool_question() -> str:
    return "Which tool should be called next? Answer with the tool name only."


def slot_question(tool: str, slot: str) -> str:
    return (
        f"The next call is {tool}. What value should its argument `{slot}` take? Answer with the value only."
    )


def _placeholder(spec: FactorSpec) -> str:
    return f"[{spec.source_type.value.replace('_', ' ')} entry withheld]"


def assemble(spec: TaskSpec) -> AttributionTask:
    """Label every target–factor pair and validate the result against the contract."""
    if len(spec.factors) != 8:
        raise ValueError(f"{spec.task_id}: {len(spec.factors)} factors, need 8")
    ids = [f"f{i}" for i in range(len(spec.factors))]
    variables = [(TargetKind.tool, None, TOOL_VAR, spec.tool)] + [
        (TargetKind.slot, s, s, spec.arguments[s]) for s in spec.slots
    ]
    targets = []
    for kind, slot, var, value in variables:
        judgments = [judge(f, fid, var, value) for f, fid in zip(spec.factors, ids, strict=True)]
        what = "the next tool" if slot is None else f"the {slot}"
        targets.append(
            Target(
                target_id="tool" if slot is None else f"slot:{slot}",
                kind=kind,
                slot=slot,
                value=value,
                target_string=f" {value}",
                question=tool_question() if slot is None else slot_question(spec.tool, slot),
                judgments=judgments,
                supporting_proposition=f"For this request, {what} is {value}.",
                competing_proposition=f"For this request, {what} is {spec.competitors[var]}.",
                competing_value=spec.competitors[var],
            )
        )
    invalid_somewhere = {j.factor_id for t in targets for j in t.judgments if j.label.value == "invalid"}
    factors = [
        Factor(
            factor_id=fid,
            source_type=f.source_type,
            text=f.text,
            bucket=f.bucket,
            role=f.role,
            placeholder=_placeholder(f),
            trusted_rewrite=f.trusted_rewrite() if fid in invalid_somewhere else None,
            noncompeting_rewrite=f.text.replace(f.core, f.neutral_core)
            if f.neutral_core and f.core
            else None,
        )
        for f, fid in zip(spec.factors, ids, strict=True)
    ]
    return AttributionTask(
        task_id=spec.task_id,
        dataset=spec.dataset,
        setting=spec.setting,
        interface=spec.interface,
        factors=factors,
        reference_action=ReferenceAction(tool=spec.tool, arguments=spec.arguments),
        uniqueness_check=spec.uniqueness_check,
        targets=targets,
    )
