"""Fast transforms against their naive definitions on random games and hand-known games."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from scoring.transforms import (
    as_game,
    estimand_coefficients,
    full_context,
    masks_up_to_order,
    moebius,
    shapley_interaction,
    shapley_values,
)


def subsets(mask: int) -> list[int]:
    out, sub = [], mask
    while True:
        out.append(sub)
        if sub == 0:
            return out
        sub = (sub - 1) & mask


def derivative(v: np.ndarray, b: int, background: int) -> float:
    """Δ_B v(T) = Σ_{Z⊆B} (−1)^{|B|−|Z|} v(T ∪ Z), straight from the definition."""
    return sum((-1) ** (b.bit_count() - z.bit_count()) * v[background | z] for z in subsets(b))


def naive_sii(v: np.ndarray, n: int, b: int) -> float:
    full, s = (1 << n) - 1, b.bit_count()
    rest = full & ~b
    return sum(
        math.factorial(n - t.bit_count() - s)
        * math.factorial(t.bit_count())
        / math.factorial(n - s + 1)
        * derivative(v, b, t)
        for t in subsets(rest)
    )


def naive_shapley(v: np.ndarray, n: int) -> np.ndarray:
    phi = np.zeros(n)
    for perm in itertools.permutations(range(n)):
        mask = 0
        for i in perm:
            phi[i] += v[mask | 1 << i] - v[mask]
            mask |= 1 << i
    return phi / math.factorial(n)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_random_games_match_naive_definitions(n: int) -> None:
    v = np.random.default_rng(n).normal(size=1 << n)
    full = (1 << n) - 1
    m, fc, sii = moebius(v), full_context(v), shapley_interaction(v)
    for b in range(1 << n):
        assert m[b] == pytest.approx(derivative(v, b, 0), abs=1e-12)
        assert fc[b] == pytest.approx(derivative(v, b, full & ~b), abs=1e-12)
        assert sii[b] == pytest.approx(naive_sii(v, n, b), abs=1e-12)
    assert shapley_values(v) == pytest.approx(naive_shapley(v, n), abs=1e-12)


def test_moebius_inverts_to_the_game() -> None:
    v = np.random.default_rng(8).normal(size=256)
    m = moebius(v)
    rebuilt = np.array([sum(m[z] for z in subsets(s)) for s in range(256)])
    assert rebuilt == pytest.approx(v, abs=1e-10)


def test_unanimity_game_by_hand() -> None:
    # v(Z) = 1 iff {0, 2} ⊆ Z, over four factors.
    n, a = 4, 0b0101
    v = np.array([1.0 if s & a == a else 0.0 for s in range(1 << n)])
    m = moebius(v)
    assert m[a] == 1.0 and np.count_nonzero(m) == 1
    assert shapley_values(v) == pytest.approx([0.5, 0, 0.5, 0])
    sii = shapley_interaction(v)
    assert sii[a] == pytest.approx(1.0) and sii[0b0001] == pytest.approx(0.5)
    assert sii[0b0010] == pytest.approx(0.0) and sii[0b0111] == pytest.approx(0.0)
    fc = full_context(v)
    # Deleting any subset of {0, 2} from the full prompt removes the whole unit.
    assert [fc[b] for b in (0b0001, 0b0100, 0b0101)] == [1.0, 1.0, 1.0]
    assert fc[0b0010] == 0.0


def test_additive_game_has_only_first_order_terms() -> None:
    w = np.array([0.5, -2.0, 3.0])
    v = np.array([sum(w[i] for i in range(3) if s >> i & 1) for s in range(8)]) + 7.0
    for coefs in (moebius(v), shapley_interaction(v), full_context(v)):
        assert [coefs[1], coefs[2], coefs[4]] == pytest.approx(w.tolist())
        assert [coefs[b] for b in (3, 5, 6, 7)] == pytest.approx([0, 0, 0, 0], abs=1e-12)
    assert moebius(v)[0] == 7.0


def test_efficiency_of_shapley_values() -> None:
    v = np.random.default_rng(3).normal(size=1 << 8)
    assert shapley_values(v).sum() == pytest.approx(v[-1] - v[0])


def test_masks_up_to_order_counts() -> None:
    masks = masks_up_to_order(8, 3)
    assert masks.size == 92  # 8 + 28 + 56 candidate interactions, as in the seed's §12.2
    assert [int(m).bit_count() for m in masks[:9]] == [1] * 8 + [2]


def test_bad_games_are_refused() -> None:
    with pytest.raises(ValueError, match="2\\^n"):
        as_game([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="non-finite"):
        moebius([0.0, float("inf")])
    with pytest.raises(ValueError, match="unknown estimand"):
        estimand_coefficients([0.0, 1.0], "banzhaf")  # type: ignore[arg-type]


def test_sixteen_factors_is_fast() -> None:
    import time

    v = np.random.default_rng(0).normal(size=1 << 16)
    start = time.perf_counter()
    shapley_interaction(v)
    assert time.perf_counter() - start < 2.0
