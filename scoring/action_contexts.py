"""The contexts an action is generated in, per audited target: three paired designs on one base.

Every design starts from the target's valid-and-neutral base (all factors not labelled Invalid for
it, in their original order):

- matched factorial (§2.4): the base plus one line ``Source status: [frame]. Proposition: [text]``
  with the target's supporting (S) or competing (C) proposition under a trusted (T) or untrusted
  (U) frame — within a relation only the frame differs;
- authority flip (§15.5): the base with the target's first Invalid factor put back in its place,
  as written (U) or as its trusted/current rewrite (T);
- support arm (§15.6): the base without the target's first Valid factor (the rescue base); the
  trusted treatment restores that factor in place (which is the base itself), the untrusted one
  appends the target's supporting proposition as an untrusted external note (the factor's own
  text would carry its trusted source marker into the note).

Valid-evidence degradation (§2.3, §4.4) is a fourth design on the full context instead: ``full``
holds every factor; per Valid factor x, ``mixed:<x>`` removes only x and ``clean:<x>`` removes x
and every Invalid factor — mixed and clean differ by the joint deletion of the Invalid set.

The perturbation consequence check (§15) decodes ``full`` and ``no_invalid`` (every factor but
the target's Invalid ones; absent for a target without one).

The guardrail (§4.6) reruns the base and the two competition cells of the factorial in two
instruction variants: ``plain:<cell>`` as above, ``policy:<cell>`` with the explicit authority
policy (``scoring.prompts.AUTHORITY_POLICY``) added to the system instruction.

Each context names the competitor it presents, for competitor matching. The generated-action
experiment decodes these contexts and ``scoring.interventions`` scores the same ones teacher-forced.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from auditor.core.errors import ContractError
from schemas.attribution import AttributionLabel, AttributionTask, Target
from scoring.prompts import AUTHORITY_POLICY, factor_line

TRUSTED_FRAME = "trusted current record"
UNTRUSTED_FRAME = "untrusted external note"

BASE = "base"
FACTORIAL = {("T", "S"): "T_S", ("U", "S"): "U_S", ("T", "C"): "T_C", ("U", "C"): "U_C"}
FLIP_U, FLIP_T = "flip_U", "flip_T"
DROP, DROP_U = "drop", "drop_U"
CONDITIONS = (BASE, *FACTORIAL.values(), FLIP_U, FLIP_T, DROP, DROP_U)
FULL, MIXED, CLEAN = "full", "mixed", "clean"
NO_INVALID = "no_invalid"
PLAIN, POLICY = "plain", "policy"
GUARDRAIL_VARIANTS = {PLAIN: None, POLICY: AUTHORITY_POLICY}
GUARDRAIL_CELLS = (BASE, FACTORIAL["T", "C"], FACTORIAL["U", "C"])


@dataclass(frozen=True)
class ActionContext:
    """One prompt's factor lines, the competing value it presents (None: none presented), and any
    instruction added to the system instruction (None: the task's own)."""

    condition: str
    lines: list[str]
    competitor: str | None
    instruction: str | None = None


def source_marked(frame: str, text: str) -> str:
    """The exact matched-intervention line: only ``frame`` differs within a relation."""
    return factor_line(f"Source status: {frame}. Proposition: {text}")


def _base(task: AttributionTask, target: Target) -> list[int]:
    """The valid-and-neutral base: every factor not labelled Invalid for ``target``, in order."""
    return [i for i, j in enumerate(target.judgments) if j.label is not AttributionLabel.invalid]


def factorial_contexts(task: AttributionTask, target: Target) -> list[ActionContext]:
    """The base and the four matched cells (``FACTORIAL`` order): each cell appends one line to it."""
    base = [factor_line(task.factors[i].text) for i in _base(task, target)]
    frames = {"T": TRUSTED_FRAME, "U": UNTRUSTED_FRAME}
    props = {
        "S": (target.supporting_proposition, None),
        "C": (target.competing_proposition, target.competing_value),
    }
    out = [ActionContext(BASE, base, None)]
    for (authority, relation), name in FACTORIAL.items():
        text, competitor = props[relation]
        out.append(ActionContext(name, [*base, source_marked(frames[authority], text)], competitor))
    return out


def guardrail_condition(variant: str, cell: str) -> str:
    """``plain:<cell>`` or ``policy:<cell>``."""
    return f"{variant}:{cell}"


def guardrail_contexts(task: AttributionTask, target: Target) -> list[ActionContext]:
    """The base, T_C and U_C cells under each instruction variant (plain first): same lines."""
    cells = [c for c in factorial_contexts(task, target) if c.condition in GUARDRAIL_CELLS]
    return [
        replace(c, condition=guardrail_condition(variant, c.condition), instruction=instruction)
        for variant, instruction in GUARDRAIL_VARIANTS.items()
        for c in cells
    ]


def action_contexts(task: AttributionTask, target: Target) -> list[ActionContext]:
    """Every context of ``target``, in ``CONDITIONS`` order (the flip needs an Invalid factor)."""
    labels = [j.label for j in target.judgments]
    base = _base(task, target)
    lines = lambda keep: [factor_line(task.factors[i].text) for i in keep]  # noqa: E731
    out = factorial_contexts(task, target)
    invalid = [i for i, lab in enumerate(labels) if lab is AttributionLabel.invalid]
    if invalid:
        i = invalid[0]
        factor, judgment = task.factors[i], target.judgments[i]
        if factor.trusted_rewrite is None:
            raise ContractError(
                f"{task.task_id}, {factor.factor_id}: an Invalid factor lacks trusted_rewrite"
            )
        with_invalid = sorted([*base, i])
        at = with_invalid.index(i)
        untrusted = lines(with_invalid)
        trusted = [*untrusted[:at], factor_line(factor.trusted_rewrite), *untrusted[at + 1 :]]
        out += [
            ActionContext(FLIP_U, untrusted, judgment.competing_value),
            ActionContext(FLIP_T, trusted, judgment.competing_value),
        ]
    valid = labels.index(AttributionLabel.valid)  # the dataset contract guarantees one
    dropped = [i for i in base if i != valid]
    out += [
        ActionContext(DROP, lines(dropped), None),
        ActionContext(
            DROP_U, [*lines(dropped), source_marked(UNTRUSTED_FRAME, target.supporting_proposition)], None
        ),
    ]
    return out


def degradation_condition(arm: str, factor_id: str) -> str:
    """``mixed:<factor_id>`` or ``clean:<factor_id>``: one pair per Valid factor of the target."""
    return f"{arm}:{factor_id}"


def degradation_contexts(task: AttributionTask, target: Target) -> list[ActionContext]:
    """``full`` once, then ``mixed``/``clean`` for each Valid factor in order (§2.3)."""
    labels = [j.label for j in target.judgments]
    everything = range(len(task.factors))
    lines = lambda keep: [factor_line(task.factors[i].text) for i in keep]  # noqa: E731
    out = [ActionContext(FULL, lines(everything), None)]
    for x, label in enumerate(labels):
        if label is not AttributionLabel.valid:
            continue
        factor_id = task.factors[x].factor_id
        mixed = [i for i in everything if i != x]
        clean = [i for i in mixed if labels[i] is not AttributionLabel.invalid]
        out += [
            ActionContext(degradation_condition(MIXED, factor_id), lines(mixed), None),
            ActionContext(degradation_condition(CLEAN, factor_id), lines(clean), None),
        ]
    return out


def perturbation_contexts(task: AttributionTask, target: Target) -> list[ActionContext]:
    """``full`` and, where the target has Invalid factors, ``no_invalid`` without all of them."""
    keep = [i for i, j in enumerate(target.judgments) if j.label is not AttributionLabel.invalid]
    full = [factor_line(f.text) for f in task.factors]
    out = [ActionContext(FULL, full, None)]
    if len(keep) < len(full):
        out.append(ActionContext(NO_INVALID, [factor_line(task.factors[i].text) for i in keep], None))
    return out
