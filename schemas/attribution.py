"""The attribution-audit dataset contract: tasks, removable factors, audited targets and labels.

A task fixes an action interface and eight removable factors; each of its three targets (one tool,
two argument assignments) carries, per factor, the two judgments the audit separates — authority
(may this source determine the target?) and relation (does it support the target, compete with it,
or neither?) — and the structural label they imply: Valid = authorized and supporting, Invalid =
unauthorized and competing, Neutral otherwise; Excluded marks ambiguous material. The model never
sees labels; they only partition factors when interactions are summarised.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, model_validator

ATTRIBUTION_FORMAT_VERSION = 1
N_FACTORS = 8


class SourceType(StrEnum):
    current_goal = "current_goal"
    trusted_lookup = "trusted_lookup"
    policy = "policy"
    memory = "memory"
    retrieved_record = "retrieved_record"
    previous_action = "previous_action"
    metadata = "metadata"
    untrusted_note = "untrusted_note"


class ContentBucket(StrEnum):
    """Coarse content type, for the content-type-matched random-label control."""

    identifier = "identifier"  # identifier, e-mail or code value
    tool_mention = "tool_mention"
    directive = "directive"
    policy = "policy"
    metadata = "metadata"
    narrative = "narrative"


class Authority(StrEnum):
    authorized = "authorized"
    unauthorized = "unauthorized"


class Relation(StrEnum):
    supports = "supports"
    competes = "competes"
    neither = "neither"


class AttributionLabel(StrEnum):
    valid = "valid"
    invalid = "invalid"
    neutral = "neutral"
    excluded = "excluded"


class TargetKind(StrEnum):
    tool = "tool"
    slot = "slot"


def implied_label(authority: Authority, relation: Relation) -> AttributionLabel:
    """The authorization-chain rule: authority test first, then the competition test."""
    if authority is Authority.authorized:
        return AttributionLabel.valid if relation is Relation.supports else AttributionLabel.neutral
    return AttributionLabel.invalid if relation is Relation.competes else AttributionLabel.neutral


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ToolSchema(_Model):
    name: str = Field(description="Tool name as the model must emit it.")
    description: str = Field(description="One line on what the tool does.")
    parameters: dict[str, str] = Field(description="Argument name → short description.")


class ActionInterface(_Model):
    """The fixed frame: never annotated, never removed."""

    system_instruction: str
    tools: list[ToolSchema] = Field(min_length=1)
    output_format: str = Field(description="How the next action must be written.")


class Factor(_Model):
    factor_id: str = Field(description="Stable id, unique in the task (f0..f7).")
    source_type: SourceType
    text: str = Field(min_length=1, description="The factor as it appears in the prompt (one line).")
    bucket: ContentBucket
    role: str = Field(description="The factor's role or slot (e.g. 'recipient lookup', 'stale memory').")
    placeholder: str = Field(description="Text that stands in for the factor in placeholder-masking checks.")
    trusted_rewrite: str | None = Field(
        default=None, description="Same content presented as trusted and current (authority flip)."
    )
    noncompeting_rewrite: str | None = Field(
        default=None, description="Same source, competing content replaced by non-competing content."
    )


class FactorJudgment(_Model):
    factor_id: str
    authority: Authority
    relation: Relation
    label: AttributionLabel
    reason: str = Field(min_length=1, description="Why this label, in one sentence.")
    competing_value: str | None = Field(default=None, description="For Invalid: the concrete competitor.")

    @model_validator(mode="after")
    def _label_follows_judgments(self) -> FactorJudgment:
        if self.label is not AttributionLabel.excluded and self.label is not implied_label(
            self.authority, self.relation
        ):
            raise ValueError(
                f"factor {self.factor_id}: label {self.label} contradicts "
                f"{self.authority}/{self.relation} (expected {implied_label(self.authority, self.relation)})"
            )
        if self.label is AttributionLabel.invalid and not self.competing_value:
            raise ValueError(f"factor {self.factor_id}: an Invalid label needs its competing_value")
        return self


class Target(_Model):
    target_id: str = Field(description="'tool', or 'slot:<argument name>'.")
    kind: TargetKind
    slot: str | None = Field(default=None, description="Argument name, for slot targets.")
    value: str = Field(min_length=1, description="The reference value (tool name or argument value).")
    target_string: str = Field(min_length=1, description="Exact teacher-forced continuation after the query.")
    question: str = Field(description="The fixed target question appended after the factors.")
    judgments: list[FactorJudgment] = Field(min_length=N_FACTORS, max_length=N_FACTORS)
    supporting_proposition: str = Field(description="A proposition supporting the value (T/U × S arm).")
    competing_proposition: str = Field(
        description="A proposition naming a concrete competitor (T/U × C arm)."
    )
    competing_value: str = Field(description="The competitor named by competing_proposition.")

    @model_validator(mode="after")
    def _coherent(self) -> Target:
        if (self.kind is TargetKind.slot) != (self.slot is not None):
            raise ValueError(f"target {self.target_id}: slot is required exactly for slot targets")
        if self.competing_value == self.value:
            raise ValueError(f"target {self.target_id}: the competing value equals the reference value")
        for j in self.judgments:
            if j.competing_value is not None and j.competing_value == self.value:
                raise ValueError(f"target {self.target_id}, {j.factor_id}: competitor equals the reference")
        if not any(j.label is AttributionLabel.valid for j in self.judgments):
            raise ValueError(f"target {self.target_id}: no Valid factor (no authorization chain)")
        return self

    def labels(self) -> list[str]:
        return [j.label.value for j in self.judgments]


class ReferenceAction(_Model):
    tool: str
    arguments: dict[str, str]


class AttributionTask(_Model):
    """One fixed next-action decision with its factors and three audited targets."""

    format_version: int = ATTRIBUTION_FORMAT_VERSION
    task_id: str
    dataset: str
    setting: str = Field(description="Domain of the task (workflow/e-mail, retail, airline, …).")
    interface: ActionInterface
    factors: list[Factor] = Field(min_length=N_FACTORS, max_length=N_FACTORS)
    reference_action: ReferenceAction
    uniqueness_check: str = Field(description="Why no other action is equally acceptable.")
    targets: list[Target] = Field(min_length=3, max_length=3)

    @model_validator(mode="after")
    def _consistent(self) -> AttributionTask:
        ids = [f.factor_id for f in self.factors]
        if len(set(ids)) != len(ids):
            raise ValueError(f"task {self.task_id}: duplicate factor ids")
        tools = {t.name: t for t in self.interface.tools}
        ref = self.reference_action
        if ref.tool not in tools:
            raise ValueError(f"task {self.task_id}: reference tool {ref.tool!r} is not in the interface")
        unknown = set(ref.arguments) - set(tools[ref.tool].parameters)
        if unknown:
            raise ValueError(f"task {self.task_id}: arguments {sorted(unknown)} not in {ref.tool}'s schema")
        kinds = [t.kind for t in self.targets]
        if kinds != [TargetKind.tool, TargetKind.slot, TargetKind.slot]:
            raise ValueError(f"task {self.task_id}: targets must be one tool then two slots, got {kinds}")
        for target in self.targets:
            if [j.factor_id for j in target.judgments] != ids:
                raise ValueError(
                    f"task {self.task_id}, {target.target_id}: judgments must follow factor order"
                )
            expected = ref.tool if target.kind is TargetKind.tool else ref.arguments.get(target.slot or "")
            if target.value != expected:
                raise ValueError(f"task {self.task_id}, {target.target_id}: value differs from the reference")
        by_id = {f.factor_id: f for f in self.factors}
        for target in self.targets:
            for j in target.judgments:
                if j.label is AttributionLabel.invalid and not by_id[j.factor_id].trusted_rewrite:
                    raise ValueError(
                        f"task {self.task_id}, {j.factor_id}: Invalid factor lacks trusted_rewrite"
                    )
        return self

    def target_key(self, target: Target) -> str:
        return f"{self.task_id}/{target.target_id}"
