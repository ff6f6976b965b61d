"""§13.3: do the target's interaction shares predict that untrusted support rescues a base error?

The cohort is every target with an Invalid factor whose rescue-base generation (``drop``, one Valid
factor removed) is incorrect; the outcome is whether the untrusted note (``drop_U``) makes it
correct. The predictors come from a coalition run of the same dataset and model, so they are fixed
before the rescue is observed: observed invalid shares (fractional and any) of the empty-coalition
Harsanyi top-50 and of leave-one-out, against the dataset/target-kind baseline (one-hot setting and
kind). Each feature set is a standardised logistic regression under five-fold stratified
GroupKFold by source task; AUROC and AP are computed on the pooled out-of-fold predictions. This
is exploratory, not a calibrated risk model. scikit-learn is imported lazily.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from auditor.core.errors import InputError
from scoring.action_contexts import DROP, DROP_U
from scoring.action_stats import by_target, rate
from scoring.coalition import baseline_shares, target_shares
from scoring.runs import GeneratedAction, ScoredTarget
from scoring.stats import Rate

FEATURE_SETS = ("dataset/target kind", "leave-one-out", "empty Harsanyi")
FOLDS = 5


@dataclass(frozen=True)
class CohortRow:
    task_id: str
    kind: str
    setting: str
    rescued: bool
    loo: tuple[float, float]
    harsanyi: tuple[float, float]


@dataclass(frozen=True)
class RescuePrediction:
    """One feature set's out-of-fold discrimination; None where the cohort cannot support it."""

    features: str
    n_targets: int
    n_tasks: int
    rescued: Rate | None
    auroc: float | None
    ap: float | None


def rescue_cohort(generations: Iterable[GeneratedAction], scored: Iterable[ScoredTarget]) -> list[CohortRow]:
    """Base-error targets with both support-arm generations, an Invalid factor and finite shares."""
    pairs = by_target(generations)
    rows = []
    for target in scored:
        g = pairs.get(target.key, {})
        if DROP not in g or DROP_U not in g or g[DROP].correct or "invalid" not in target.labels:
            continue
        game = target.game()
        harsanyi = target_shares(game, target.labels, target_key=target.key, estimand="harsanyi", n_perm=1)
        loo = baseline_shares(game, target.labels, target_key=target.key, n_perm=1)["leave_one_out"]
        h = (harsanyi.observed["s_frac"], harsanyi.observed["s_any"])
        lo = (loo.observed["s_frac"], loo.observed["s_any"])
        if all(math.isfinite(x) for x in (*h, *lo)):
            rows.append(CohortRow(target.task_id, target.kind, target.setting, g[DROP_U].correct, lo, h))
    return rows


def feature_matrix(rows: list[CohortRow], features: str) -> np.ndarray:
    if features == "leave-one-out":
        return np.array([r.loo for r in rows])
    if features == "empty Harsanyi":
        return np.array([r.harsanyi for r in rows])
    levels = sorted({f"setting={r.setting}" for r in rows} | {f"kind={r.kind}" for r in rows})
    return np.array([[float(x in (f"setting={r.setting}", f"kind={r.kind}")) for x in levels] for r in rows])


def _out_of_fold(x: np.ndarray, y: np.ndarray, groups: np.ndarray) -> np.ndarray | None:
    """Pooled out-of-fold probabilities; None when some training fold lacks a class."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedGroupKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    scores = np.empty(len(y))
    for train, test in StratifiedGroupKFold(n_splits=FOLDS).split(x, y, groups):
        if len(set(y[train])) < 2:
            return None
        model = make_pipeline(StandardScaler(), LogisticRegression()).fit(x[train], y[train])
        scores[test] = model.predict_proba(x[test])[:, 1]
    return scores


def predict_rescue(rows: list[CohortRow]) -> list[RescuePrediction]:
    """AUROC and AP per feature set on one cohort.

    Undefined (None) below five source tasks or five targets of either outcome: five stratified
    folds cannot be formed.
    """
    try:
        from sklearn.metrics import average_precision_score, roc_auc_score
    except ImportError as exc:
        raise InputError(
            "the rescue-prediction study needs scikit-learn",
            field="coalition-run",
            hint="pip install scikit-learn",
        ) from exc
    y = np.array([r.rescued for r in rows], dtype=int)
    groups = np.array([r.task_id for r in rows])
    n_tasks = len(set(groups.tolist()))
    positives = rate(int(y.sum()), len(rows))
    out = []
    for features in FEATURE_SETS:
        scores = None
        if n_tasks >= FOLDS and min(y.sum(), len(y) - y.sum()) >= FOLDS:
            scores = _out_of_fold(feature_matrix(rows, features), y, groups)
        auroc = None if scores is None else float(roc_auc_score(y, scores))
        ap = None if scores is None else float(average_precision_score(y, scores))
        out.append(RescuePrediction(features, len(rows), n_tasks, positives, auroc, ap))
    return out
