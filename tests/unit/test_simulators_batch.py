"""Batch simulation: shared (SGLang) vs per-request draws, and per-request completion in steps.

For B requests with per-request L of variance s^2 and per-step batch tokens T:
shared draw T = B L, so Var(T) = B^2 s^2; independent draws Var(T) = B s^2. The
shared draw's per-step variance is therefore B times the per-request-draw one
(B^2 times one request's). Tolerances come from the standard error of a sample
variance, SE(s^2) = sqrt((mu4 - s^4 (n-3)/(n-1)) / n), with mu4 exact.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from _simulator_stats import Z

from distributions.acceptance import AcceptanceDistribution
from golden_al.plugin.registry import get_sampler
from simulators.batch import completion_percentiles, completion_steps_pmf, simulate_batch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "experiments" / "synthetic-acceptance-effects"))
from completion import simulate_completion

B = 16
S = 40_000
# a spread-out pmf (SGLang multinomial at AL 4.3, k 7) so variances are well defined
DIST = get_sampler("sglang", "multinomial").pmf(4.3, 7)


def _central_moments(dist: AcceptanceDistribution) -> tuple[float, float]:
    x = dist.support.astype(float)
    mu = dist.mean()
    return float(np.dot((x - mu) ** 2, dist.probs)), float(np.dot((x - mu) ** 4, dist.probs))


def _var_se(var: float, mu4: float, n: int) -> float:
    return math.sqrt((mu4 - var**2 * (n - 3) / (n - 1)) / n)


def test_shared_draw_variance_is_b_squared_single_request_variance():
    var, mu4 = _central_moments(DIST)
    rng = np.random.default_rng(7)
    shared = simulate_batch(DIST, B, S, rng, shared=True)
    indep = simulate_batch(DIST, B, S, rng, shared=False)
    exp_shared, mu4_shared = B**2 * var, B**4 * mu4
    exp_indep, mu4_indep = B * var, B * mu4 + 3 * B * (B - 1) * var**2
    se_shared = _var_se(exp_shared, mu4_shared, S)
    se_indep = _var_se(exp_indep, mu4_indep, S)
    assert abs(shared.per_step_tokens_var - exp_shared) < Z * se_shared, (shared.per_step_tokens_var, exp_shared)
    assert abs(indep.per_step_tokens_var - exp_indep) < Z * se_indep, (indep.per_step_tokens_var, exp_indep)
    # the ratio: B, with the relative errors of both estimates combined
    ratio = shared.per_step_tokens_var / indep.per_step_tokens_var
    rel_se = math.hypot(se_shared / exp_shared, se_indep / exp_indep)
    assert abs(ratio / B - 1) < Z * rel_se, ratio


def test_correlation_across_requests():
    rng = np.random.default_rng(8)
    shared = simulate_batch(DIST, B, S, rng, shared=True)
    indep = simulate_batch(DIST, B, S, rng, shared=False)
    assert shared.mean_pairwise_correlation == pytest.approx(1.0, abs=1e-9)
    assert np.all(shared.per_request_al == shared.per_request_al[0])  # every request sees the same L
    se_rho = math.sqrt(2.0 / (B * (B - 1) * S))  # SE of the mean pairwise correlation under independence
    assert abs(indep.mean_pairwise_correlation) < Z * se_rho
    # per-request ALs scatter around the mean with SE std(L)/sqrt(S)
    se = DIST.std() / math.sqrt(S)
    assert np.all(np.abs(indep.per_request_al - DIST.mean()) < Z * se + 4 * se)  # max of 16 within ~5+ SE
    for res in (shared, indep):
        assert abs(res.mean_al - DIST.mean()) < Z * DIST.std() / math.sqrt(S if res.shared else S * B)
        assert res.per_step_tokens.shape == (S,)
        assert res.per_step_al.mean() == pytest.approx(res.mean_al)


def test_engine_batch_uses_the_engine_draw_unit():
    rng = np.random.default_rng(9)
    sglang, vllm = get_sampler("sglang", "match-expected"), get_sampler("vllm", "synthetic")
    assert sglang.draw_unit == "batch-step"
    assert vllm.draw_unit != "batch-step"
    sg = simulate_batch(sglang.pmf(3.4, 5), 8, 5000, rng, shared=True)
    assert sg.summary()["mean_pairwise_correlation"] == pytest.approx(1.0)
    assert set(np.unique(sg.per_step_tokens)) <= {3 * 8, 4 * 8}  # whole batch emits 3 or 4 tokens each


def test_batch_chunks_when_large():
    # more draws than one chunk: results still cover every step
    rng = np.random.default_rng(10)
    res = simulate_batch(DIST, 1024, 5000, rng, shared=False)
    assert res.per_step_tokens.shape == (5000,)
    assert np.all(res.per_step_tokens >= 1024)


# ---------------------------------------------------------------------- completion


def test_completion_point_mass_is_ceiling():
    dist = AcceptanceDistribution(np.array([0.0, 0.0, 1.0]))  # L = 3 always
    pmf = completion_steps_pmf(dist, 100)
    assert pmf[34] == pytest.approx(1.0)  # ceil(100 / 3)
    assert completion_percentiles(dist, 100)["p99"] == 34


def test_completion_exact_vs_monte_carlo():
    rng = np.random.default_rng(11)
    n_tokens = 200
    pmf = completion_steps_pmf(DIST, n_tokens)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    steps = np.arange(pmf.size)
    mean = float(np.dot(steps, pmf))
    sd = math.sqrt(float(np.dot(steps**2, pmf)) - mean**2)
    res = simulate_completion(DIST, n_tokens, rng, num_requests=20_000)
    assert abs(res.steps.mean() - mean) < Z * sd / math.sqrt(res.steps.size)
    # renewal approximation: about n / AL steps
    assert mean == pytest.approx(n_tokens / DIST.mean(), rel=0.02)
    # exact percentiles vs the empirical cdf at them (binomial SE)
    cdf = np.cumsum(pmf)
    for q in (50, 90, 99):
        s = completion_percentiles(DIST, n_tokens)[f"p{q}"]
        emp = float(np.mean(res.steps <= s))
        se = math.sqrt(cdf[int(s)] * (1 - cdf[int(s)]) / res.steps.size)
        assert abs(emp - cdf[int(s)]) < Z * se + 1e-12


def test_shared_draws_drain_batches_together():
    """Same marginal latency, but a per-request batch waits for its slowest member."""
    rng = np.random.default_rng(12)
    shared = simulate_completion(DIST, 300, rng, num_requests=8000, batch_size=8, shared=True)
    indep = simulate_completion(DIST, 300, rng, num_requests=8000, batch_size=8, shared=False)
    assert np.all(shared.steps.reshape(-1, 8) == shared.steps.reshape(-1, 8)[:, :1])
    exact_mean = completion_percentiles(DIST, 300)["mean"]
    exact_sd = completion_percentiles(DIST, 300)["std"]
    # marginal means agree (shared: 1000 independent batches)
    assert abs(shared.steps.mean() - exact_mean) < Z * exact_sd / math.sqrt(1000)
    assert abs(indep.steps.mean() - exact_mean) < Z * exact_sd / math.sqrt(8000)
    # the max of 8 independent requests is later than one request on average
    assert indep.drain_percentiles()["mean"] > shared.drain_percentiles()["mean"] + 2 * exact_sd / math.sqrt(1000)


def test_two_point_has_tighter_latency_tail_than_shaped():
    from simulators.throughput import curve_shape

    curve = {1: 1.83, 2: 2.43, 3: 2.88, 4: 3.24, 5: 3.46, 6: 3.62, 7: 3.71, 8: 3.77}
    shaped, how = curve_shape(curve, 7)
    assert how == "curve-increments"
    two_point = AcceptanceDistribution.min_variance(3.71, 7)
    lat_tp = completion_percentiles(two_point, 512)
    lat_sh = completion_percentiles(shaped, 512)
    assert lat_tp["mean"] == pytest.approx(lat_sh["mean"], rel=0.01)
    assert lat_sh["p99"] - lat_sh["p50"] > 2 * (lat_tp["p99"] - lat_tp["p50"])


def test_completion_rejects_bad_input():
    from distributions.errors import DistributionError

    with pytest.raises(DistributionError, match="multiple of the batch size"):
        simulate_completion(DIST, 10, np.random.default_rng(0), num_requests=10, batch_size=3)
    with pytest.raises(DistributionError, match="output tokens"):
        completion_steps_pmf(DIST, 0)
