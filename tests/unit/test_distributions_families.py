"""Parametric families: closed forms, inversion from a mean AL, fitting, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from distributions import units
from distributions.errors import DistributionError, FitError
from distributions.families import ConstantConditional, DecayingConditional


class TestConstantConditional:
    @pytest.mark.parametrize(("c", "k"), [(0.7, 1), (0.7, 4), (0.35, 8), (0.95, 6)])
    def test_truncated_geometric_closed_form(self, c, k):
        d = ConstantConditional(c).distribution(k)
        expected = [c**i * (1 - c) for i in range(k)] + [c**k]
        np.testing.assert_allclose(d.probs, expected, atol=1e-15)
        assert ConstantConditional(c).al(k) == pytest.approx(1 + c * (1 - c**k) / (1 - c), abs=1e-12)

    def test_endpoints(self):
        assert ConstantConditional(0.0).al(5) == 1.0
        assert ConstantConditional(1.0).al(5) == 6.0
        assert ConstantConditional.from_al(1.0, 3).c == 0.0
        assert ConstantConditional.from_al(4.0, 3).c == 1.0

    @given(st.integers(1, 10), st.floats(0.0, 1.0))
    def test_from_al_round_trip(self, k, frac):
        al = 1.0 + frac * k
        fam = ConstantConditional.from_al(al, k)
        assert fam.al(k) == pytest.approx(al, abs=1e-9)
        assert fam.distribution(k).mean() == pytest.approx(al, abs=1e-9)

    def test_curve_uses_the_one_formula(self):
        fam = ConstantConditional(0.6)
        np.testing.assert_allclose(fam.curve([1, 3, 5]), units.al_curve_from_conditional([0.6] * 5, [1, 3, 5]))

    def test_fit_recovers_c(self):
        ks = [1, 2, 4, 8]
        assert ConstantConditional.fit(ks, ConstantConditional(0.73).curve(ks)).c == pytest.approx(0.73, abs=1e-7)

    @pytest.mark.parametrize("c", [-0.1, 1.5, float("nan")])
    def test_bad_c(self, c):
        with pytest.raises(DistributionError, match=r"in \[0, 1\]"):
            ConstantConditional(c)

    def test_bad_al(self):
        with pytest.raises(DistributionError, match=r"outside \[1, 4\]"):
            ConstantConditional.from_al(4.5, 3)


class TestDecayingConditional:
    def test_profile_closed_form(self):
        np.testing.assert_allclose(DecayingConditional(0.9, 0.8).conditional_rates(4), [0.9, 0.72, 0.576, 0.4608])

    def test_r_one_is_the_constant_family(self):
        np.testing.assert_allclose(DecayingConditional(0.7, 1.0).curve(range(1, 9)),
                                   ConstantConditional(0.7).curve(range(1, 9)))

    @given(st.integers(1, 8), st.floats(0.0, 1.0), st.floats(0.05, 1.0))
    def test_from_al_round_trip_when_reachable(self, k, frac, r):
        top = DecayingConditional(1.0, r).al(k)
        al = 1.0 + frac * (top - 1.0)
        fam = DecayingConditional.from_al(al, k, r=r)
        assert fam.r == r
        assert fam.al(k) == pytest.approx(al, abs=1e-9)

    def test_unreachable_al(self):
        with pytest.raises(DistributionError, match=r"out of reach.*largest AL"):
            DecayingConditional.from_al(3.9, 3, r=0.5)

    def test_fit_recovers_both_parameters(self):
        ks = [1, 2, 3, 5, 8]
        truth = DecayingConditional(0.85, 0.9)
        fam = DecayingConditional.fit(ks, truth.curve(ks))
        assert fam.c1 == pytest.approx(0.85, abs=1e-6)
        assert fam.r == pytest.approx(0.9, abs=1e-6)

    def test_one_draft_length_is_not_identifiable(self):
        with pytest.raises(FitError, match="does not identify"):
            DecayingConditional.fit([4], [2.5])

    def test_distribution_conditional_rates(self):
        d = DecayingConditional(0.8, 0.5).distribution(3)
        np.testing.assert_allclose(d.conditional_rates(), [0.8, 0.4, 0.2])


@given(st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.integers(1, 12))
def test_family_curves_are_chain_consistent(c1, r, k):
    """AL(k) within [1, k+1], non-decreasing, with non-increasing increments; truncation agrees."""
    fam = DecayingConditional(c1, r)
    curve = fam.curve(range(1, k + 1))
    inc = np.diff(np.concatenate(([1.0], curve)))
    assert np.all(curve >= 1.0 - 1e-12)
    assert np.all(curve <= np.arange(2, k + 2) + 1e-12)
    assert np.all(inc >= -1e-12)
    assert np.all(np.diff(inc) <= 1e-12)
    big = fam.distribution(k)
    for j in range(1, k + 1):
        assert big.truncate(j).mean() == pytest.approx(curve[j - 1], abs=1e-12)
