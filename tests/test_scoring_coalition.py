"""Top-K selection, invalid shares, the label-count-matched null, and cell summaries."""

from __future__ import annotations

import numpy as np
import pytest

from scoring.cells import summarise_cells
from scoring.coalition import (
    baseline_shares,
    label_masks,
    permuted_labelings,
    select_top_k,
    shares_for_labelings,
    target_shares,
)
from scoring.transforms import moebius


def game_from_dividends(n: int, dividends: dict[int, float]) -> np.ndarray:
    return np.array([sum(c for b, c in dividends.items() if s & b == b) for s in range(1 << n)])


def test_shares_by_hand() -> None:
    # Factors: 0 invalid, 1 valid, 2 neutral. Dividends on {0}, {0,1}, {1,2}, {0,2}.
    v = game_from_dividends(3, {0b001: 2.0, 0b011: -4.0, 0b110: 1.0, 0b101: 3.0})
    labels = ["invalid", "valid", "neutral"]
    res = target_shares(v, labels, target_key="t", estimand="harsanyi", k=None, n_perm=20)
    total = 2 + 4 + 1 + 3
    assert res.observed["s_any"] == pytest.approx((2 + 4 + 3) / total)
    assert res.observed["s_frac"] == pytest.approx((2 + 4 / 2 + 3 / 2) / total)
    assert res.observed["invalid_only"] == pytest.approx(2 / total)
    assert res.observed["invalid_valid"] == pytest.approx(4 / total)
    assert res.observed["invalid_neutral"] == pytest.approx(3 / total)
    # Signed: positive mass 2 + 1 + 3, negative mass 4.
    assert res.observed["s_frac_pos"] == pytest.approx((2 + 3 / 2) / 6)
    assert res.observed["s_frac_neg"] == pytest.approx(0.5)


def test_top_k_keeps_strongest_low_order_terms() -> None:
    coefs = moebius(game_from_dividends(4, {0b0001: 0.1, 0b0011: 5.0, 0b0111: -3.0, 0b1111: 9.0}))
    kept = select_top_k(coefs, 4, k=2, max_order=3)
    assert kept.tolist() == [0b0011, 0b0111]  # order 4 is never a candidate
    assert select_top_k(coefs, 4, k=None, max_order=1).size == 4


def test_null_preserves_label_counts_and_is_seeded() -> None:
    labels = ["valid", "invalid", "neutral", "neutral", "invalid", "valid", "neutral", "neutral"]
    rows = permuted_labelings(labels, "task-1/tool", 500, 17)
    assert rows.shape == (500, 3)
    assert all(int(r[0]).bit_count() == 2 and int(r[1]).bit_count() == 2 for r in rows)
    assert (rows == permuted_labelings(labels, "task-1/tool", 500, 17)).all()
    assert not (rows == permuted_labelings(labels, "task-2/tool", 500, 17)).all()


def test_null_mean_matches_exact_expectation() -> None:
    # With all terms kept at order 1, E[s_any] under a uniform relabelling is |I| / n exactly.
    v = np.random.default_rng(1).normal(size=1 << 6)
    labels = ["invalid", "valid", "neutral", "neutral", "neutral", "invalid"]
    res = target_shares(v, labels, target_key="x", estimand="harsanyi", k=None, max_order=1, n_perm=4000)
    assert res.null_mean["s_any"] == pytest.approx(2 / 6, abs=0.02)


def test_planted_invalid_interaction_has_positive_excess() -> None:
    rng = np.random.default_rng(4)
    labels = ["valid", "neutral", "invalid", "neutral", "neutral", "valid", "invalid", "neutral"]
    dividends = {1 << i: rng.normal(scale=0.1) for i in range(8)}
    dividends.update({0b00000101: 4.0, 0b01000001: -3.0, 0b01000100: 2.5})
    v = game_from_dividends(8, dividends)
    for estimand in ("harsanyi", "shapley", "full"):
        res = target_shares(v, labels, target_key="p", estimand=estimand)
        assert res.excess["s_frac"] > 0.2 and res.excess["s_any"] > 0.3


def test_baselines_are_loo_and_first_order() -> None:
    v = game_from_dividends(3, {0b001: 1.0, 0b010: 1.0, 0b011: 2.0})
    labels = ["invalid", "valid", "neutral"]
    base = baseline_shares(v, labels, target_key="b", n_perm=10)
    # LOO: v(N) − v(N∖i) = 3, 3, 0; first order: 1, 1, 0.
    assert base["leave_one_out"].observed["s_any"] == pytest.approx(0.5)
    assert base["first_order"].observed["s_any"] == pytest.approx(0.5)


def test_zero_game_share_is_undefined() -> None:
    shares = shares_for_labelings(
        np.array([1, 2]), np.zeros(4), 2, np.asarray([label_masks(["invalid", "valid"])])
    )
    assert np.isnan(shares["s_any"][0])


def test_cells_report_p_values_holm_and_intervals() -> None:
    rng = np.random.default_rng(9)
    labels = ["valid", "neutral", "invalid", "neutral", "neutral", "valid", "invalid", "neutral"]
    planted, noise, task_of = [], [], {}
    for t in range(6):
        d = {1 << i: rng.normal(scale=0.2) for i in range(8)}
        d[0b01000100] = 3.0  # the two Invalid factors interact
        planted.append(target_shares(game_from_dividends(8, d), labels, target_key=f"a{t}", n_perm=200))
        noise.append(target_shares(rng.normal(size=256), labels, target_key=f"b{t}", n_perm=200))
        task_of[f"a{t}"], task_of[f"b{t}"] = f"task{t // 2}", f"task{t // 2}"
    rows = summarise_cells({"planted": planted, "noise": noise}, task_of, n_resamples=500)
    by = {r.cell: r for r in rows}
    assert by["planted"].p_value == pytest.approx(1 / 201)
    assert by["planted"].p_holm == pytest.approx(2 / 201)
    assert by["planted"].excess_ci is not None and by["planted"].excess_ci.low > 0
    assert by["noise"].p_value > 0.01
    assert by["planted"].n_tasks == 3 and by["planted"].n_targets == 6
