"""The shared-profile fit: the two public contract curves, exact recovery, weights, flags, derivation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distributions import units
from distributions.acceptance import AcceptanceDistribution
from distributions.errors import DistributionError, FitError
from distributions.fit import DEFAULT_TOLERANCE, curve_flags, fit_profile

KS = list(range(1, 9))
# Public golden curves (InferenceX golden_al_distribution/), thinking_on, k = 1..8.
KIMI_K25_EAGLE3_ON = [1.83, 2.43, 2.88, 3.24, 3.46, 3.62, 3.71, 3.77]
DSV4_MTP_ON = [1.79, 2.27, 2.49, 2.54, 2.55, 2.55, 2.54, 2.58]


# ---------------------------------------------------------------------------- contracts
def test_contract_kimi_curve_reproduced_with_residuals_under_003():
    res = fit_profile(KS, KIMI_K25_EAGLE3_ON)
    assert res.success
    assert res.weighting == "equal"
    assert np.all(np.abs(res.residuals) < 0.03), res
    assert res.explained, res
    assert np.all((res.conditional >= 0) & (res.conditional <= 1))
    np.testing.assert_allclose(list(res.curve(KS).values()), res.fitted)


def test_contract_kimi_also_fits_a_non_increasing_conditional_profile():
    res = fit_profile(KS, KIMI_K25_EAGLE3_ON, monotone_conditional=True)
    assert np.all(np.abs(res.residuals) < 0.03), res
    assert np.all(np.diff(res.conditional) <= 1e-9)
    assert res.explained


def test_contract_dsv4_tail_flagged_as_not_explained():
    res = fit_profile(KS, DSV4_MTP_ON)
    assert not res.explained
    by_kind = {(f.k, f.kind): f.message for f in res.flags}
    # AL(7)=2.54 after AL(6)=2.55: a chain draft's AL cannot decrease
    assert (7, "drop") in by_kind
    assert "AL(7)=2.54" in by_kind[(7, "drop")]
    assert "AL(6)=2.55" in by_kind[(7, "drop")]
    # +0.04 at k=8 after +0.00 at k=6: increments cannot grow
    assert (8, "jump") in by_kind
    assert "+0.04" in by_kind[(8, "jump")]
    assert "+0.00" in by_kind[(8, "jump")]
    assert {f.k for f in res.flags} <= {7, 8}
    assert "k=7 drop" in repr(res)
    assert "k=8 jump" in repr(res)


def test_contract_dsv4_flagged_with_monotone_conditional_too():
    res = fit_profile(KS, DSV4_MTP_ON, monotone_conditional=True)
    assert {(f.k, f.kind) for f in res.flags} >= {(7, "drop"), (8, "jump")}


# ---------------------------------------------------------------------------- exact recovery
def test_exact_profile_recovered_from_its_own_curve():
    c = np.array([0.9, 0.6, 0.8, 0.5, 0.7, 0.3])
    als = units.al_curve_from_conditional(c, range(1, 7))
    res = fit_profile(range(1, 7), als, profile="free")
    np.testing.assert_allclose(res.conditional, c, atol=1e-6)
    assert res.max_abs_residual < 1e-8
    assert res.explained


def test_order_of_points_does_not_matter():
    shuffled = [5, 1, 8, 3, 2, 7, 4, 6]
    res = fit_profile(shuffled, [KIMI_K25_EAGLE3_ON[k - 1] for k in shuffled])
    assert list(res.ks) == KS
    res2 = fit_profile(KS, KIMI_K25_EAGLE3_ON)
    np.testing.assert_allclose(res.fitted, res2.fitted, atol=1e-9)


def test_gaps_in_k_are_fine():
    truth = np.array([0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.5])
    ks = [1, 3, 5, 8]
    res = fit_profile(ks, units.al_curve_from_conditional(truth, ks), profile="free")
    assert res.conditional.size == 8
    assert res.max_abs_residual < 1e-6
    assert res.explained


def test_p1_at_most_one_binds():
    res = fit_profile([1, 2], [1.95, 3.0])
    assert res.success
    assert res.unconditional[0] <= 1.0 + 1e-12
    assert np.all(np.diff(res.unconditional) <= 1e-12)


# ---------------------------------------------------------------------------- weights and noise
def test_steps_weight_pulls_the_fit_toward_the_heavy_point():
    ks, als = [1, 2, 3], [1.8, 2.2, 2.9]  # k=3 jumps: cannot be fit exactly
    light = fit_profile(ks, als, steps=[1e6, 1e6, 10])
    heavy = fit_profile(ks, als, steps=[10, 1e6, 1e6])
    assert light.weighting == heavy.weighting == "steps"
    assert abs(heavy.residuals[2]) < abs(light.residuals[2])
    assert abs(light.residuals[0]) < abs(heavy.residuals[0])


def test_ci_weights_and_tolerance():
    ks = [1, 2, 3, 4]
    truth = units.al_curve_from_conditional([0.8, 0.7, 0.6, 0.5], ks)
    ci = [(a - 0.01, a + 0.01) for a in truth]
    ok = fit_profile(ks, truth, ci95=ci)
    assert ok.weighting == "ci"
    assert ok.explained
    np.testing.assert_allclose(ok.sigma, 0.01 / 1.959964, rtol=1e-5)
    bent = truth.copy()
    bent[2] -= 0.15  # p_3 falls to 0.186 and p_4 jumps to 0.318: far beyond sigma = 0.005
    res = fit_profile(ks, bent, ci95=ci)
    assert not res.explained
    kinds = {(f.k, f.kind) for f in res.flags}
    assert (4, "jump") in kinds
    assert any(kind == "residual" for _, kind in kinds)


def test_drop_within_ci_noise_is_not_flagged():
    ks, als = [1, 2, 3], [1.8, 2.3, 2.29]
    assert any(f.kind == "drop" for f in fit_profile(ks, als).flags)
    wide = [(a - 0.05, a + 0.05) for a in als]
    assert not any(f.kind == "drop" for f in fit_profile(ks, als, ci95=wide).flags)


def test_absolute_default_tolerance_and_override():
    assert DEFAULT_TOLERANCE == 0.03
    res = fit_profile(KS, DSV4_MTP_ON, tolerance=0.01)
    assert any(f.kind == "residual" and "given" in f.message for f in res.flags)


def test_steps_give_an_iid_tolerance_from_the_fitted_variance():
    ks = [1, 2]
    res = fit_profile(ks, [1.8, 2.4], steps=[1000, 4000])
    d = AcceptanceDistribution.from_conditional_rates(res.conditional[:2])
    assert res.sigma is not None
    assert res.sigma[1] == pytest.approx(np.sqrt(d.var() / 4000))


# ---------------------------------------------------------------------------- flags alone
def test_rounding_alone_does_not_make_a_jump():
    # true p = 0.0098 twice from 2.5451: rounds to 2.55, 2.55, 2.56 (increments 0.00 then 0.01)
    assert curve_flags([1, 2, 3], [1.55, 1.55, 1.56]) == []


def test_jump_across_a_gap_is_per_position():
    flags = curve_flags([1, 2, 4], [1.8, 2.05, 2.65])  # +0.30 per position after +0.25
    assert [(f.k, f.kind) for f in flags] == [(4, "jump")]
    assert "per position" in flags[0].message


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("ks", "als", "kwargs", "error", "match"),
    [
        ([1, 2], [1.8, 3.5], {}, DistributionError, r"outside \[1, 3\]"),
        ([1, 1], [1.8, 1.9], {}, FitError, "k=1 is given more than once"),
        ([1, 2], [1.8], {}, FitError, "2 draft lengths but 1 AL"),
        ([0, 2], [1.0, 2.0], {}, DistributionError, "integers >= 1"),
        ([1, 2], [1.8, 2.4], {"steps": [10, 0]}, FitError, "positive counts"),
        ([1, 2], [1.8, 2.4], {"ci95": [(1.7, 1.9), (2.4, 2.4)]}, FitError, "k=2 has zero or negative width"),
        ([1, 2], [1.8, 2.4], {"steps": [10]}, FitError, "one entry per draft length"),
    ],
)
def test_bad_input(ks, als, kwargs, error, match):
    with pytest.raises(error, match=match):
        fit_profile(ks, als, **kwargs)


def test_empty_curve():
    with pytest.raises(DistributionError, match="non-empty"):
        fit_profile([], [])


# ---------------------------------------------------------------------------- derivation
def test_derive_curve_from_one_run():
    d = AcceptanceDistribution.from_unconditional_rates([0.9, 0.7, 0.4, 0.2])
    assert [d.truncate(k).mean() for k in (1, 2, 3, 4)] == pytest.approx([1.9, 2.6, 3.0, 3.2])
    with pytest.raises(DistributionError, match="cannot derive draft length 5"):
        d.truncate(5)


profiles = st.lists(st.floats(0.0, 1.0), min_size=1, max_size=10)


@given(profiles)
def test_derivation_is_truncation_consistent(c):
    k = len(c)
    big = AcceptanceDistribution.from_conditional_rates(c)
    dists = {j: big.truncate(j) for j in range(1, k + 1)}
    curve = [d.mean() for d in dists.values()]
    np.testing.assert_allclose(curve, units.al_curve_from_conditional(c, range(1, k + 1)), atol=1e-12)
    for j, dj in dists.items():
        np.testing.assert_allclose(dj.unconditional_rates(), big.unconditional_rates()[:j], atol=1e-12)
        for i in range(1, j + 1):
            np.testing.assert_allclose(dj.truncate(i).probs, big.truncate(i).probs, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(profiles)
def test_any_chain_curve_is_explained_and_reproduced(c):
    k = len(c)
    als = units.al_curve_from_conditional(c, range(1, k + 1))
    res = fit_profile(range(1, k + 1), als, profile="free")
    assert res.explained, res
    assert res.max_abs_residual < 1e-6
    assert np.all(np.diff(res.unconditional) <= 1e-12)


def test_monotone_conditional_fit_reproduces_monotone_profiles(rng):
    for _ in range(40):
        k = int(rng.integers(1, 11))
        c = np.sort(rng.random(k))[::-1]
        als = units.al_curve_from_conditional(c, range(1, k + 1))
        res = fit_profile(range(1, k + 1), als, monotone_conditional=True, profile="free")
        assert res.max_abs_residual < 1e-6, (c, res)
        assert np.all(np.diff(res.conditional) <= 1e-9)


# ---------------------------------------------------------------------------- power of the default profile
def test_decaying_profile_has_residuals_in_standard_errors_and_power():
    ks = list(range(1, 7))
    bumpy = units.al_curve_from_conditional([0.9, 0.6, 0.8, 0.5, 0.7, 0.3], ks)  # a chain curve, not decaying
    ci = [(a - 0.01, a + 0.01) for a in bumpy]
    free = fit_profile(ks, bumpy, ci95=ci, profile="free")
    assert free.explained  # as many parameters as points: cannot flag it
    assert free.max_abs_residual < 1e-6
    res = fit_profile(ks, bumpy, ci95=ci, profile="decaying")
    assert res.profile == "decaying"
    assert res.num_params == 2
    assert res.dof == 4
    assert res.richer_profile_needed
    assert any(f.kind == "shape" for f in res.flags)
    assert res.standardized_residuals is not None
    np.testing.assert_allclose(res.standardized_residuals, res.residuals / res.sigma)


@pytest.mark.slow
def test_goodness_of_fit_is_calibrated_on_decaying_truth(rng):
    """Under a decaying truth with known noise the test rejects about SHAPE_ALPHA of the time."""
    from distributions.fit import SHAPE_ALPHA

    truth = units.al_curve_from_conditional(0.85 * 0.9 ** np.arange(8), KS)
    sigma = 0.01
    reps = 150
    rejected = 0
    for _ in range(reps):
        obs = np.clip(truth + rng.normal(0.0, sigma, truth.size), 1.0, None)
        res = fit_profile(KS, obs, ci95=[(a - 1.959964 * sigma, a + 1.959964 * sigma) for a in obs])
        rejected += res.richer_profile_needed
    assert rejected / reps <= SHAPE_ALPHA + 4 * np.sqrt(SHAPE_ALPHA / reps)


def test_few_points_fall_back_to_the_free_profile():
    res = fit_profile([1, 2], [1.8, 2.4])
    assert res.profile == "free"
    assert res.p_value is None
