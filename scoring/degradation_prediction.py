"""§4.4: do a target's teacher-forced scores predict how its actions respond to degradation?

Each degradation row (a target and one of its Valid factors x, with full/mixed/clean generations)
is joined to the target's complete subset game from a coalition run of the same dataset and
model, so every predictor is fixed before the actions are observed. With F the full context and
I the target's Invalid set, the mixed context is F∖{x} and the clean one F∖({x} ∪ I):

- **aligned Shapley share**: of the Shapley interaction mass (|I_Sh(S)|, 1 ≤ |S| ≤ 3) of the terms
  that contain x, the part whose terms also contain an Invalid factor — how much of the removed
  factor's interactions run through the invalid set that the mixed context retains;
- **absolute score effect**: |v(mixed) − v(clean)|, the score change that the joint deletion of
  I causes once x is gone (the simpler baseline);
- **signed score harm**: v(clean) − v(mixed), positive when retaining I lowers the target score.

Endpoints: mixed–clean action change (the canonical values differ) for the first two and the
combined source-task-held-out model (five-fold GroupKFold logistic regression on [effect] and on
[effect, aligned share]); the retained-invalid pattern (1, 0, 1) for the harm. AUROCs carry
cluster-bootstrap intervals over source tasks; deciles compare the top and bottom tenth of a
predictor. Exploratory, not a calibrated risk model; scikit-learn is imported lazily.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from auditor.core.errors import InputError
from schemas.attribution import AttributionTask
from scoring.action_stats import rate
from scoring.degradation_stats import DegradationRow
from scoring.runs import ScoredTarget
from scoring.stats import BootstrapInterval, Rate, cluster_bootstrap
from scoring.stats.auroc import auroc as stats_auroc
from scoring.transforms import popcounts, shapley_interaction

FOLDS = 5
MAX_ORDER = 3


@dataclass(frozen=True)
class PredictionRow:
    task_id: str
    target_key: str
    kind: str
    changed: bool  # mixed and clean actions differ
    retained_invalid: bool
    aligned_share: float
    abs_effect: float
    signed_harm: float


def aligned_share(interactions: np.ndarray, x: int, invalid: int) -> float:
    """Share of x's low-order Shapley interaction mass in terms that also hold an Invalid factor."""
    masks = np.arange(interactions.size)
    order = popcounts(interactions.size.bit_length() - 1)
    with_x = ((masks >> x) & 1).astype(bool) & (order >= 1) & (order <= MAX_ORDER)
    mass = np.abs(interactions[with_x])
    total = mass.sum()
    return float(mass[(masks[with_x] & invalid) != 0].sum() / total) if total > 0 else 0.0


def prediction_rows(
    rows: Iterable[DegradationRow],
    scored: Iterable[ScoredTarget],
    tasks: Mapping[str, AttributionTask],
    score_field: str = "sum_logodds",
) -> list[PredictionRow]:
    """Rows whose target has a complete game and at least one Invalid factor (else no I to retain)."""
    games = {t.key: t for t in scored}
    out = []
    for row in rows:
        target = games.get(row.full.target_key)
        task = tasks.get(row.full.task_id)
        if target is None or task is None or "invalid" not in target.labels:
            continue
        ids = [f.factor_id for f in task.factors]
        if row.factor_id not in ids:
            raise InputError(
                f"factor {row.factor_id!r} of {row.full.target_key} is not in task {task.task_id}",
                field="coalition-run",
                hint="the degradation and coalition runs must come from the same dataset build",
            )
        x = ids.index(row.factor_id)
        invalid = sum(1 << i for i, label in enumerate(target.labels) if label == "invalid")
        game = target.game(score_field)
        full = game.size - 1
        mixed, clean = full & ~(1 << x), full & ~(1 << x) & ~invalid
        out.append(
            PredictionRow(
                row.full.task_id,
                row.full.target_key,
                row.full.kind,
                row.mixed.value != row.clean.value,
                row.retained_invalid,
                aligned_share(shapley_interaction(game), x, invalid),
                abs(float(game[mixed] - game[clean])),
                float(game[clean] - game[mixed]),
            )
        )
    return out


def auroc(scores: np.ndarray, y: np.ndarray) -> float:
    """The AUROC of ``scores`` for the rows where ``y`` is 1 (ties one half); NaN when one class
    is absent."""
    label = y.astype(bool)
    return stats_auroc(scores[label], scores[~label])


@dataclass(frozen=True)
class Discrimination:
    """One predictor of one endpoint: AUROC with its interval, and the top/bottom decile rates."""

    predictor: str
    endpoint: str
    n_rows: int
    n_tasks: int
    positives: Rate | None
    auroc: BootstrapInterval | None
    top_decile: Rate | None
    bottom_decile: Rate | None

    @property
    def decile_gap(self) -> float | None:
        if self.top_decile is None or self.bottom_decile is None:
            return None
        return self.top_decile.value - self.bottom_decile.value


def _auroc_interval(
    scores: np.ndarray, y: np.ndarray, groups: np.ndarray, resamples: int
) -> BootstrapInterval | None:
    if len(set(groups.tolist())) < 2 or y.min() == y.max():
        return None
    return cluster_bootstrap(lambda idx: auroc(scores[idx], y[idx]), groups.tolist(), n_resamples=resamples)


def discrimination(
    rows: list[PredictionRow],
    predictor: str,
    endpoint: str,
    scores: np.ndarray,
    resamples: int,
) -> Discrimination:
    y = np.array([getattr(r, endpoint) for r in rows], dtype=int)
    groups = np.array([r.task_id for r in rows])
    tenth = len(rows) // 10
    order = np.argsort(scores, kind="stable")
    top = rate(int(y[order[-tenth:]].sum()), tenth) if tenth else None
    bottom = rate(int(y[order[:tenth]].sum()), tenth) if tenth else None
    return Discrimination(
        predictor,
        endpoint,
        len(rows),
        len(set(groups.tolist())),
        rate(int(y.sum()), len(rows)),
        _auroc_interval(scores, y, groups, resamples) if len(rows) else None,
        top,
        bottom,
    )


def held_out_scores(x: np.ndarray, y: np.ndarray, groups: np.ndarray) -> np.ndarray | None:
    """Out-of-fold logistic probabilities under GroupKFold by source task; None when infeasible."""
    try:
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import GroupKFold
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
    except ImportError as exc:
        raise InputError(
            "the held-out degradation model needs scikit-learn",
            field="coalition-run",
            hint="pip install scikit-learn",
        ) from exc
    if len(set(groups.tolist())) < FOLDS:
        return None
    out = np.empty(len(y))
    for train, test in GroupKFold(n_splits=FOLDS).split(x, y, groups):
        if y[train].min() == y[train].max():
            return None
        model = make_pipeline(StandardScaler(), LogisticRegression()).fit(x[train], y[train])
        out[test] = model.predict_proba(x[test])[:, 1]
    return out


@dataclass(frozen=True)
class DegradationPrediction:
    n_rows: int
    single: list[Discrimination]  # aligned share, effect (change); harm (retained-invalid)
    effect_model: BootstrapInterval | None  # held-out AUROC of [effect]
    combined_model: BootstrapInterval | None  # held-out AUROC of [effect, aligned share]
    increment: BootstrapInterval | None  # combined − effect, paired over the same resamples


def predict_degradation(rows: list[PredictionRow], resamples: int = 2_000) -> DegradationPrediction:
    """Every predictor of §4.4 on one joined cohort."""
    share = np.array([r.aligned_share for r in rows])
    effect = np.array([r.abs_effect for r in rows])
    harm = np.array([r.signed_harm for r in rows])
    single = [
        discrimination(rows, "aligned Shapley share", "changed", share, resamples),
        discrimination(rows, "absolute score effect", "changed", effect, resamples),
        discrimination(rows, "signed score harm", "retained_invalid", harm, resamples),
    ]
    y = np.array([r.changed for r in rows], dtype=int)
    groups = np.array([r.task_id for r in rows])
    effect_p = held_out_scores(effect[:, None], y, groups) if len(rows) else None
    combined_p = held_out_scores(np.column_stack([effect, share]), y, groups) if len(rows) else None
    if effect_p is None or combined_p is None:
        return DegradationPrediction(len(rows), single, None, None, None)

    def by_task(statistic: Callable[[np.ndarray], float]) -> BootstrapInterval:
        return cluster_bootstrap(statistic, groups.tolist(), n_resamples=resamples)

    return DegradationPrediction(
        len(rows),
        single,
        by_task(lambda idx: auroc(effect_p[idx], y[idx])),
        by_task(lambda idx: auroc(combined_p[idx], y[idx])),
        by_task(lambda idx: auroc(combined_p[idx], y[idx]) - auroc(effect_p[idx], y[idx])),
    )
