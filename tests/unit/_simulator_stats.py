"""Tolerances derived from the sample size, shared by the simulator tests."""

from __future__ import annotations

import numpy as np
from scipy.stats import chisquare

from distributions.acceptance import AcceptanceDistribution

#: How many standard errors a statistic may stray before a test fails (fixed seeds).
Z = 5.0


def assert_mean_within(draws: np.ndarray, dist: AcceptanceDistribution, target: float | None = None) -> None:
    """The sample mean lies within Z standard errors (from the exact std) of the target."""
    n = draws.size
    target = dist.mean() if target is None else target
    se = dist.std() / np.sqrt(n)
    got = float(draws.mean())
    if se == 0.0:
        assert got == target, f"zero-variance pmf: expected every draw to be {target}, mean {got}"
        return
    assert abs(got - target) <= Z * se, f"sampled mean {got:.6f} vs {target:.6f}: {abs(got - target) / se:.2f} SE (n={n})"


def assert_pmf_matches(draws: np.ndarray, dist: AcceptanceDistribution) -> None:
    """Per-bin frequencies within Z binomial SEs, and a chi-square test on bins with >= 5 expected."""
    n = draws.size
    k = dist.k
    assert draws.min() >= 1, f"draws below 1: min {draws.min()}"
    assert draws.max() <= k + 1, f"draws above k+1={k + 1}: max {draws.max()}"
    counts = np.bincount(draws, minlength=k + 2)[1:]
    freq = counts / n
    p = dist.probs
    se = np.sqrt(p * (1 - p) / n)
    zero = p == 0
    assert np.all(counts[zero] == 0), f"draws in zero-probability bins: {counts[zero]}"
    bad = np.abs(freq - p) > Z * se + 1e-12
    assert not np.any(bad), f"bins off by more than {Z} SE: freq {freq[bad]} vs p {p[bad]}"
    expected = p * n
    keep = expected >= 5
    if keep.sum() >= 2:
        obs = counts[keep].astype(float)
        exp = expected[keep]
        exp = exp * obs.sum() / exp.sum()
        stat = chisquare(obs, exp)
        assert stat.pvalue > 1e-6, f"chi-square rejects the exact pmf: p={stat.pvalue:.2e}"
