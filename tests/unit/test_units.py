"""The one home of the AL formulas: closed-form values, round trips, edge cases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from distributions import units
from distributions.acceptance import AcceptanceDistribution
from distributions.errors import DistributionError


def test_al_from_counts_includes_bonus():
    assert units.al_from_counts(303, 101) == pytest.approx(4.0)
    assert units.al_from_counts(0, 10) == 1.0


def test_al_from_counts_zero_steps_is_an_error_not_zero():
    with pytest.raises(DistributionError, match="zero verify steps"):
        units.al_from_counts(0, 0)


def test_trtllm_forced_value_has_no_float_noise():
    assert units.drafts_from_al(4.05) == 3.05
    assert repr(units.drafts_from_al(2.6)) == "1.6"
    assert units.al_from_drafts(3.05) == 4.05


def test_min_variance_schedule_matches_vllm_example():
    # vLLM docstring example: L=2.6, n=3 -> [1.0, 0.6, 0.0]
    np.testing.assert_allclose(units.min_variance_unconditional_rates(2.6, 3), [1.0, 0.6, 0.0])
    np.testing.assert_allclose(units.min_variance_unconditional_rates(4.0, 3), [1.0, 1.0, 1.0])
    np.testing.assert_allclose(units.min_variance_unconditional_rates(1.0, 3), [0.0, 0.0, 0.0])


def test_conditional_rates_zero_after_zero():
    np.testing.assert_allclose(units.unconditional_to_conditional([0.5, 0.0, 0.0]), [0.5, 0.0, 0.0])
    np.testing.assert_allclose(units.unconditional_to_conditional([0.8, 0.4, 0.2]), [0.8, 0.5, 0.5])


def test_increasing_unconditional_rates_rejected():
    with pytest.raises(DistributionError, match="non-increasing"):
        units.unconditional_to_conditional([0.5, 0.6])


def test_al_outside_range_rejected():
    with pytest.raises(DistributionError, match=r"outside \[1, 8\]"):
        units.check_al(9, 7)


rates_st = st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=10)


@given(rates_st)
def test_conditional_unconditional_round_trip(c):
    p = units.conditional_to_unconditional(c)
    assert np.all(np.diff(p) <= 1e-12)
    back = units.conditional_to_unconditional(units.unconditional_to_conditional(p))
    np.testing.assert_allclose(back, p, atol=1e-12)


@given(rates_st)
def test_pmf_round_trip_and_al_in_range(c):
    d = AcceptanceDistribution.from_conditional_rates(c)
    k = len(c)
    assert 1.0 - 1e-12 <= d.mean() <= k + 1 + 1e-12
    np.testing.assert_allclose(d.unconditional_rates(), units.conditional_to_unconditional(c), atol=1e-9)
    # AL = 1 + sum of unconditional rates
    assert d.mean() == pytest.approx(1.0 + d.unconditional_rates().sum(), abs=1e-9)


@given(st.integers(1, 12), st.floats(0.0, 1.0))
def test_min_variance_mean_exact(k, frac):
    al = 1.0 + frac * k
    d = AcceptanceDistribution.min_variance(al, k)
    assert d.mean() == pytest.approx(al, abs=1e-9)
    assert np.count_nonzero(d.probs > 1e-15) <= 2


@given(st.floats(1.0, 9.0), st.integers(8, 8))
def test_rate_round_trip(al, k):
    assert units.al_from_acceptance_rate(units.acceptance_rate_from_al(al, k), k) == pytest.approx(al)


def test_truncate_folds_tail():
    d = AcceptanceDistribution.from_unconditional_rates([0.9, 0.7, 0.4])
    t = d.truncate(2)
    np.testing.assert_allclose(t.unconditional_rates(), [0.9, 0.7])
    assert t.mean() == pytest.approx(1 + 0.9 + 0.7)


def test_rvs_mean_within_five_standard_errors(rng):
    d = AcceptanceDistribution.from_unconditional_rates([0.9, 0.7, 0.4])
    n = 200_000
    x = d.rvs(n, rng)
    assert x.min() >= 1
    assert x.max() <= 4
    assert abs(x.mean() - d.mean()) < 5 * d.std() / np.sqrt(n)
