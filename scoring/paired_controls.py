"""Paired comparisons of a construction run against the original coalition run (seed §15.7–15.9).

A construction run (``order-shuffle``, ``placeholder``, ``no-invalid``; see
``scoring.construction``) scores the same targets as a coalition run of the same dataset and
model, so each of its targets pairs with an original one by key:

- order shuffle: invalid share after shuffling (labels follow their factors) against the original;
  small changes argue against a fixed-position explanation;
- placeholder mask: invalid share with omitted factors replaced by placeholders against deletion;
  the cell means say whether the aggregate is stable, Spearman ρ whether target-level shares are;
- no-invalid rewrite: the share of the rewritten run's kept strength at the positions that were
  Invalid in the original, against the original invalid share there. The rewritten targets have no
  Invalid factor (their own invalid share is undefined by construction, which is counted); the
  question is whether the positions stay interaction-relevant without being counted as invalid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from auditor.core.errors import InputError
from scoring.coalition import label_masks, select_top_k, shares_for_labelings
from scoring.comparison import ComparisonRow, PairedShare, compare_cells
from scoring.report import SHARE_GROUPS
from scoring.runs import check_coalition_partner, default_run_id, read_run
from scoring.transforms import ESTIMANDS, Estimand, estimand_coefficients

READINGS = {
    "order-shuffle": ("higher after shuffling", "lower after shuffling"),
    "placeholder": ("higher under placeholders", "lower under placeholders"),
    "no-invalid": ("higher after rewriting", "lower after rewriting"),
}


@dataclass(frozen=True)
class PairedControl:
    """A construction run's comparison rows; targets without a partner or a comparable share are counted."""

    control: str
    run_id: str
    coalition_run: str
    rows: list[ComparisonRow]
    n_paired: int
    n_unpaired: int
    n_rewritten_with_invalid: int


def _shares(
    game: np.ndarray, labeling: tuple[int, int, int], estimand: Estimand, k: int | None, max_order: int
) -> dict[str, float]:
    """One labeling's shares on the estimand's kept top-K set (each run keeps its own set)."""
    n = game.size.bit_length() - 1
    coefs = estimand_coefficients(game, estimand)
    shares = shares_for_labelings(select_top_k(coefs, n, k, max_order), coefs, n, np.asarray([labeling]))
    return {f: float(v[0]) for f, v in shares.items()}


def original_run(store: Any, config: dict[str, Any], coalition_run: str | None) -> str:
    """The coalition run to compare with (default: the default run id of the same dataset and model);
    another experiment, dataset or model is the user's one-line mistake."""
    rid = coalition_run or default_run_id(config["dataset"], config["model"], "coalition")
    check_coalition_partner(store, config, rid)
    return rid


def paired_control(
    store: Any,
    run_id: str,
    coalition_run: str | None = None,
    *,
    score_field: str = "sum_logodds",
    k: int | None = 50,
    max_order: int = 3,
    fields: Sequence[str] = SHARE_GROUPS["primary"],
    n_resamples: int = 20_000,
) -> PairedControl:
    """Rows of a construction run (its experiment picks the comparison) against its coalition run."""
    config, targets = read_run(store, run_id)
    control = config.get("experiment")
    if control not in READINGS:
        raise InputError(
            f"run {run_id} is a {control!r} run", field="run_id", hint=f"give a {', '.join(READINGS)} run"
        )
    rid = original_run(store, config, coalition_run)
    originals = {t.key: t for t in read_run(store, rid)[1]}
    pairs: dict[tuple[str, str], list[PairedShare]] = {(e, f): [] for e in ESTIMANDS for f in fields}
    paired = unpaired = with_invalid = 0
    for new in targets:
        if control == "no-invalid" and "invalid" in new.labels:
            with_invalid += 1
        old = originals.get(new.key)
        if old is None or "invalid" not in old.labels:
            unpaired += 1
            continue
        paired += 1
        own = label_masks(new.labels)
        if control == "no-invalid":  # the formerly Invalid positions, now labelled Neutral
            own = (label_masks(old.labels)[0], own[1], own[2])
        for e in ESTIMANDS:
            a = _shares(new.game(score_field), own, e, k, max_order)
            b = _shares(old.game(score_field), label_masks(old.labels), e, k, max_order)
            for f in fields:
                pairs[e, f].append(PairedShare(new.task_id, new.kind, a[f], b[f]))
    rows = [
        row
        for (e, f), ps in pairs.items()
        for row in compare_cells(control, e, f, ps, n_resamples=n_resamples, with_spearman=True)
    ]
    return PairedControl(control, run_id, rid, rows, paired, unpaired, with_invalid)
