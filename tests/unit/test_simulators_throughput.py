"""Throughput model: step times, speedup, best draft length, measured-shaped latency."""

from __future__ import annotations

import numpy as np
import pytest

from distributions.acceptance import AcceptanceDistribution
from distributions.errors import DistributionError
from distributions.stepcost import StepCostFit
from simulators.throughput import (
    ASSUMED_COSTS,
    curve_shape,
    evaluate_draft_lengths,
    latency_spread,
)

KIMI = {1: 1.83, 2: 2.43, 3: 2.88, 4: 3.24, 5: 3.46, 6: 3.62, 7: 3.71, 8: 3.77}
DSV4 = {1: 1.79, 2: 2.27, 3: 2.49, 4: 2.54, 5: 2.55, 6: 2.55, 7: 2.54, 8: 2.58}


def _cost(**terms: float) -> StepCostFit:
    return StepCostFit.assumed(**{**ASSUMED_COSTS, **terms})


def test_step_time_formula():
    cm = _cost(draft_ms_per_token=1.0, draft_ms_per_token_per_request=0.1, fixed_ms=12.0, verify_ms_per_token=0.5)
    assert cm.step_ms(0, 4) == pytest.approx(12 + 0.5 * 4 * 1)
    assert cm.step_ms(3, 4) == pytest.approx(12 + 3 * (1.0 + 0.1 * 4) + 0.5 * 4 * 4)
    assert cm.log_half_width(3, 4, ref=0) == 0.0  # assumed: nothing is uncertain


def test_speedup_and_best_k_by_hand():
    cm = _cost(draft_ms_per_token=1.0, fixed_ms=10.0, verify_ms_per_token=0.0)
    table = evaluate_draft_lengths({1: 1.8, 2: 2.4, 3: 2.55}, cm)
    # speedup = AL * step(0) / step(k) = AL * 10 / (10 + k)
    assert [r.speedup for r in table.draft_lengths] == pytest.approx([1.8 * 10 / 11, 2.4 * 10 / 12, 2.55 * 10 / 13])
    assert table.best_k == 2
    assert table.baseline["tokens_per_s_per_user"] == pytest.approx(100.0)
    row = table.draft_lengths[1]
    assert row.tokens_per_s_per_user == pytest.approx(1000 * 2.4 / 12)
    assert row.speedup_ci95 is None  # assumed costs, a bare curve: nothing is uncertain


def test_batch_scales_total_throughput_and_verify_cost():
    small = evaluate_draft_lengths(KIMI, batch=1)
    large = evaluate_draft_lengths(KIMI, _cost(verify_ms_per_token=0.05), batch=256)
    assert large.draft_lengths[0].tokens_per_s_predicted == pytest.approx(256 * large.draft_lengths[0].tokens_per_s_per_user)
    # verifying k+1 tokens for 256 requests is expensive: the best k shrinks
    assert large.best_k < small.best_k


def test_distribution_inputs_and_mismatch():
    dist = AcceptanceDistribution.min_variance(2.5, 3)
    table = evaluate_draft_lengths({3: dist})
    assert table.draft_lengths[0].al == pytest.approx(2.5)
    with pytest.raises(DistributionError, match="k=3"):
        evaluate_draft_lengths({4: dist})
    with pytest.raises(DistributionError, match="outside"):
        evaluate_draft_lengths({2: 3.5})


def test_curve_shape_uses_increments_for_a_chain_curve():
    for k in range(1, 9):
        dist, how = curve_shape(KIMI, k)
        assert how == "curve-increments"
        assert dist.mean() == pytest.approx(KIMI[k], abs=1e-12)
    dist, _ = curve_shape(KIMI, 8)
    inc = np.diff([1.0] + [KIMI[k] for k in range(1, 9)])
    np.testing.assert_allclose(dist.unconditional_rates(), inc, atol=1e-12)


def test_curve_shape_falls_back_to_geometric_for_a_noisy_tail():
    dist, how = curve_shape(DSV4, 8)  # increments go negative at k=7
    assert how == "geometric"
    assert dist.mean() == pytest.approx(DSV4[8], abs=1e-9)
    c = dist.conditional_rates()
    np.testing.assert_allclose(c, c[0], atol=1e-9)


@pytest.mark.parametrize(("al", "k"), [(1.0, 3), (4.0, 3), (2.2, 5), (3.77, 8)])
def test_geometric_shape_has_the_curves_mean(al, k):
    dist, how = curve_shape({k: al}, k)  # no lower points: the constant conditional rate with that mean
    assert how == "geometric"
    assert dist.mean() == pytest.approx(al, abs=1e-9)


def test_latency_spread_rows():
    table = evaluate_draft_lengths(KIMI, output_tokens=256)
    for row in table.draft_lengths:
        lat = row.latency
        assert lat["shape"] == "curve-increments"
        assert lat["shaped"]["steps"]["p99"] >= lat["two_point"]["steps"]["p99"]
        assert lat["two_point"]["ms"]["p50"] == pytest.approx(lat["two_point"]["steps"]["p50"] * row.step_ms)
    with pytest.raises(DistributionError, match="not the AL"):
        latency_spread(3.0, 4, AcceptanceDistribution.min_variance(2.9, 4), 100, 10.0)


def test_cost_model_validation():
    with pytest.raises(DistributionError, match="fixed_ms"):
        _cost(fixed_ms=-1)
    with pytest.raises(DistributionError, match="some time"):
        _cost(fixed_ms=0, verify_ms_per_token=0)
    with pytest.raises(DistributionError, match="exactly"):
        StepCostFit.assumed(fixed_ms=1.0)


def test_intervals_carry_al_and_cost_and_name_the_overlapping_k():
    """AL's log half-widths and the cost's add in quadrature; every k whose interval reaches the best one's
    lower end is named."""
    import math

    class Cost:  # a fitted model's interface: step 10 ms + 1 ms per drafted token, log half-width 0.05
        def step_ms(self, k: int, batch: int) -> float:
            return 10.0 + k

        def log_half_width(self, k: int, batch: int, ref: int | None = None) -> float:
            return 0.05

    ci = {1: (1.7, 1.9), 2: (2.2, 2.6), 3: (2.3, 2.9)}
    table = evaluate_draft_lengths({1: 1.8, 2: 2.4, 3: 2.6}, Cost(), batch=1, al_ci95=ci, cost_model={})
    row = table.draft_lengths[1]
    lo = 1000 * 2.4 / 12 * math.exp(-math.hypot(math.log(2.4 / 2.2), 0.05))
    hi = 1000 * 2.4 / 12 * math.exp(math.hypot(math.log(2.6 / 2.4), 0.05))
    assert row.tokens_per_s_predicted_ci95 == pytest.approx([lo, hi])
    assert table.best_k == 2  # 200 tokens/s against 2.6 / 13 ms = 200: the tie goes to the shorter draft
    assert table.overlaps_best == [2, 3]  # k=1: about 176 tokens/s at most, below k=2's lower end
