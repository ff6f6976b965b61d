"""Matched source interventions scored teacher-forced: the T/U × S/C factorial of seed §2.4/§4.2.

Each target is scored on its valid-and-neutral base (v_0) and on the base plus one line
``Source status: [frame]. Proposition: [text]`` per cell (v_{a,r}, a ∈ {T, U}, r ∈ {S, C}); the
contexts come from ``scoring.action_contexts``, the same prompts the generated-action experiment
decodes. With v the summed target-token log-odds (§2.2):

    G_a = v_{a,S} − v_0          (support gain under authority a)
    D_a = v_0 − v_{a,C}          (competition drop under authority a)
    δ_S = G_T − G_U              (matched authority effect, support)
    δ_C = D_T − D_U              (matched authority effect, competition)
    ΔΔ  = δ_C − δ_S              (secondary: propositions are not matched across relations)

The same-proposition control (§2.4, last paragraph; §4.2; contexts of the §15.5 flip) keeps one
existing competitor, the target's first Invalid factor, in its place and changes only its source
marker: as written (U) or as its trusted/current rewrite (T). Its removal gain under marker a is

    R_a = v_0 − v_{flip,a}       (score recovered by removing the competitor)
    gap = R_T − R_U              (positive: the trusted marker costs the target more)

Targets without an Invalid factor have no control (not a zero gap).

The authority-by-relation supporting arm (§15.6) starts from the base without the target's first
Valid factor (v_drop); trusted restores the factor in place (the base itself), untrusted appends
the supporting proposition as an untrusted external note (v_{drop,U}):

    trusted = v_0 − v_drop,   untrusted = v_{drop,U} − v_drop,   gap = trusted − untrusted

The exact-text co-present check (§15.6, last paragraphs) keeps the whole base and appends an exact
duplicate of the target's first Valid factor's text as a source-marked line, trusted (dup_T) or
untrusted (dup_U); no evidence is omitted in either arm:

    dup_a = v_{dup,a} − v_0,   gap = dup_T − dup_U,   ΔΔ = (D_T − D_U) − gap

Every context is the base plus one line (appended, or the competitor in place) or a subsequence
of those lines (the support arm), so all of a target's prompts are masks over one factor list,
scored in one trie pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from auditor.core.errors import ContractError
from schemas.attribution import AttributionLabel, AttributionTask, Target
from scoring.action_contexts import (
    BASE,
    DROP,
    DROP_U,
    FACTORIAL,
    FLIP_T,
    FLIP_U,
    TRUSTED_FRAME,
    UNTRUSTED_FRAME,
    ActionContext,
    action_contexts,
    source_marked,
)
from scoring.prompts import PromptParts, query_text, scaffold_text
from scoring.runs import SCORE_FIELDS
from scoring.scorer import TrieScorer, tokenize_parts

CELLS = tuple(FACTORIAL.values())  # T_S, U_S, T_C, U_C
CONTEXTS = (BASE, *CELLS)
CONTROL = (FLIP_U, FLIP_T)  # present only where the target has an Invalid factor
SUPPORT = (DROP, DROP_U)
DUP_T, DUP_U = "dup_T", "dup_U"
COPRESENT = (DUP_T, DUP_U)
EFFECTS = ("G_T", "G_U", "D_T", "D_U", "delta_S", "delta_C", "delta_delta")


@dataclass(frozen=True)
class MatchedEffects:
    """One target's gains, drops and authority gaps (log-odds; see the module docstring)."""

    G_T: float
    G_U: float
    D_T: float
    D_U: float
    delta_S: float
    delta_C: float
    delta_delta: float


def matched_effects(v: Mapping[str, float]) -> MatchedEffects:
    """The §2.4 effects from the base and cell scores ``v`` (keys ``CONTEXTS``)."""
    missing = [c for c in CONTEXTS if c not in v]
    if missing:
        raise ContractError(f"matched scores lack {missing}")
    g_t, g_u = v["T_S"] - v[BASE], v["U_S"] - v[BASE]
    d_t, d_u = v[BASE] - v["T_C"], v[BASE] - v["U_C"]
    delta_s, delta_c = g_t - g_u, d_t - d_u
    return MatchedEffects(g_t, g_u, d_t, d_u, delta_s, delta_c, delta_c - delta_s)


@dataclass(frozen=True)
class SameProposition:
    """One target's removal gains of its competitor under each marker, and their gap."""

    R_U: float
    R_T: float
    gap: float


def same_proposition(v: Mapping[str, float]) -> SameProposition | None:
    """The control's effects from the base and flip scores; None where the target has none."""
    if not all(c in v for c in CONTROL):
        return None
    r_u, r_t = v[BASE] - v[FLIP_U], v[BASE] - v[FLIP_T]
    return SameProposition(r_u, r_t, r_t - r_u)


@dataclass(frozen=True)
class SupportArm:
    """One target's §15.6 supporting-arm gains over the base that lacks a Valid factor."""

    trusted: float
    untrusted: float
    gap: float


def support_arm(v: Mapping[str, float]) -> SupportArm:
    """Trusted restoring of the Valid factor vs the same proposition as an untrusted note."""
    trusted, untrusted = v[BASE] - v[DROP], v[DROP_U] - v[DROP]
    return SupportArm(trusted, untrusted, trusted - untrusted)


@dataclass(frozen=True)
class CoPresent:
    """One target's gains from a source-marked exact duplicate of a supporting factor."""

    dup_T: float
    dup_U: float
    gap: float
    delta_delta: float  # the competition authority gap (D_T − D_U) minus this support gap


def co_present(v: Mapping[str, float]) -> CoPresent | None:
    """The check's effects; None for a target scored without the duplicate contexts."""
    if not all(c in v for c in (*COPRESENT, "T_C", "U_C")):
        return None
    dup_t, dup_u = v[DUP_T] - v[BASE], v[DUP_U] - v[BASE]
    competition_gap = v["U_C"] - v["T_C"]  # (v0 − v_TC) − (v0 − v_UC)
    return CoPresent(dup_t, dup_u, dup_t - dup_u, competition_gap - (dup_t - dup_u))


def copresent_contexts(task: AttributionTask, target: Target, base: list[str]) -> list[ActionContext]:
    """The base plus a trusted or untrusted duplicate of the target's first Valid factor's text."""
    first = next(i for i, j in enumerate(target.judgments) if j.label is AttributionLabel.valid)
    text = task.factors[first].text
    return [
        ActionContext(DUP_T, [*base, source_marked(TRUSTED_FRAME, text)], None),
        ActionContext(DUP_U, [*base, source_marked(UNTRUSTED_FRAME, text)], None),
    ]


def _insertion(base: list[str], lines: list[str]) -> int:
    """Where ``lines`` adds one line to ``base``, or -1 if it is not ``base`` plus one line."""
    if len(lines) != len(base) + 1:
        return -1
    k = next((i for i, (a, b) in enumerate(zip(base, lines, strict=False)) if a != b), len(base))
    return k if lines[:k] + lines[k + 1 :] == base else -1


def _embed(factors: list[str], lines: list[str]) -> int | None:
    """The mask that picks ``lines`` out of ``factors`` in order, or None if it cannot."""
    mask, i = 0, 0
    for line in lines:
        while i < len(factors) and factors[i] != line:
            i += 1
        if i == len(factors):
            return None
        mask |= 1 << i
        i += 1
    return mask


def matched_parts(task: AttributionTask, target: Target) -> tuple[PromptParts, dict[str, int]]:
    """One factor list holding every scored prompt, and each context's mask over it.

    The list is the base with every added line at its place (the cells' lines at the end, the
    competitor's two versions where it stands); the support arm's contexts are subsequences of it.
    """
    contexts = [c for c in action_contexts(task, target) if c.condition in (*CONTEXTS, *CONTROL, *SUPPORT)]
    base = contexts[0].lines
    contexts += copresent_contexts(task, target, base)
    extras = [(k, c.lines[k]) for c in contexts[1:] if (k := _insertion(base, c.lines)) >= 0]
    factors = [
        line for k in range(len(base) + 1) for line in [*(x for at, x in extras if at == k), *base[k : k + 1]]
    ]
    masks = {c.condition: _embed(factors, c.lines) for c in contexts}
    missing = [name for name, mask in masks.items() if mask is None]
    if missing:
        raise ContractError(f"{task.target_key(target)}: contexts {missing} do not share the base's lines")
    parts = PromptParts(scaffold_text(task), factors, [query_text(target)], [target.target_string])
    return parts, {name: mask for name, mask in masks.items() if mask is not None}


def score_matched(
    scorer: TrieScorer, tokenizer: Any, task: AttributionTask, target: Target
) -> tuple[dict[str, dict[str, float]], int]:
    """Teacher-forced scores of ``target`` per context and score field, and its token count."""
    parts, masks = matched_parts(task, target)
    (scores,) = scorer.score(tokenize_parts(tokenizer, parts), masks=list(masks.values()), queries=[0])
    fields = {f: getattr(scores, f) for f in SCORE_FIELDS}
    by_context = {name: {f: float(a[i]) for f, a in fields.items()} for i, name in enumerate(masks)}
    return by_context, scores.n_target_tokens
