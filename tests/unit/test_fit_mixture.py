"""Issue 39, item 1: the default curve model is a mixture of the prompts' chain-draft profiles.

A prompt set's pooled AL is ``1 / AL(k) = sum_p share_p / AL_p(k)``; the mixture contains it, so a clean
curve of a heterogeneous prompt set is not flagged, while one point moved off it is, at its k.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from distributions import units
from distributions.errors import FitError
from distributions.fit import DELETION_ALPHA, deletion_critical, fit_profile
from distributions.mixture import MIN_DECAY, deletion_statistics
from distributions.uncertainty import joint_al_bootstrap

REPO = Path(__file__).resolve().parents[2]
KS = tuple(range(1, 9))
sys.path.insert(0, str(REPO / "experiments" / "interval-calibration"))
from populations import Component, RequestPopulation  # noqa: E402


def _pooled(groups: list[tuple[float, float, float]], ks: tuple[int, ...] = KS) -> np.ndarray:
    """Exact pooled AL of prompts ``(token share, p, r)``: the reciprocal mixture of their own curves."""
    y = sum(w / units.al_curve_from_conditional(p * r ** np.arange(max(ks)), ks) for w, p, r in groups)
    return 1.0 / np.asarray(y)


def test_a_two_group_prompt_set_is_followed_point_by_point() -> None:
    al = _pooled([(0.5, 0.95, 1.0), (0.5, 0.3, 0.9)])
    cov = np.diag((0.002 * al) ** 2)
    fit = deletion_statistics(KS, al, cov)[0]
    np.testing.assert_allclose(fit.curve(KS), al, atol=5e-4)
    res = fit_profile(KS, al, cov=cov, clusters=80)
    assert (res.profile, res.explained) == ("mixture", True)
    # the same curve is beyond one decaying profile: its pooled conditional rate rises with position
    c = units.unconditional_to_conditional(np.diff(np.concatenate(([1.0], al))))
    assert c[-1] > c[1]
    assert not fit_profile(KS, al, cov=cov, clusters=80, profile="decaying").explained


def test_each_ks_pmf_has_the_curves_mean() -> None:
    al = _pooled([(0.3, 0.9, 0.95), (0.7, 0.5, 1.0)])
    fit = deletion_statistics(KS, al, np.diag((0.002 * al) ** 2))[0]
    for k in (1, 4, 8):
        assert fit.distribution(k).mean() == pytest.approx(float(fit.curve([k])[0]), abs=1e-9)


def test_no_mixture_has_growing_increments_so_drop_and_jump_stay_impossible() -> None:
    from distributions.mixture import _component_curves

    g = 1.0 / _component_curves(np.arange(1, 9))
    rng = np.random.default_rng(39)
    for _ in range(3000):
        idx = rng.choice(g.shape[1], int(rng.integers(1, 4)), replace=False)
        al = np.concatenate(([1.0], 1.0 / (g[:, idx] @ rng.dirichlet(np.ones(idx.size)))))
        inc = np.diff(al)
        assert np.all(inc >= -1e-12)
        assert np.all(np.diff(inc) <= 1e-12)


def _sample(pop: RequestPopulation, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    acc, st = pop.sample_ks(np.random.default_rng(seed), n, KS)
    joint = joint_al_bootstrap(acc, st, KS, seed=seed)
    return joint.al, joint.cov


def test_a_beta_heterogeneous_prompt_set_is_clean_and_a_moved_point_is_named() -> None:
    """The issue's case: p ~ Beta(3, 1.5), 80 prompts. The decaying profile flags the clean curve (93 % of runs in
    the issue); the mixture does not, and names a point moved by 2.5 of its standard errors, at its k only."""
    al, cov = _sample(RequestPopulation(8, (Component(1, 3, 1.5),), 64, 1024), 80, seed=5)
    assert not fit_profile(KS, al, cov=cov, clusters=80, profile="decaying").explained
    clean = fit_profile(KS, al, cov=cov, clusters=80)
    assert clean.explained, clean
    moved = al.copy()
    moved[3] += 2.5 * np.sqrt(cov[3, 3])
    res = fit_profile(KS, moved, cov=cov, clusters=80)
    assert {(f.k, f.kind) for f in res.flags} >= {(4, "residual")}
    assert all(f.k in (4, 5) for f in res.flags)  # a rise at 4 may also make 5 a drop; nothing else
    flag = next(f for f in res.flags if f.kind == "residual")
    assert flag.interval is not None
    assert flag.interval[0] > 0
    assert "mixture of the other points predicts AL(4)" in flag.message


def test_derived_values_pass_through_the_data_and_stay_monotone() -> None:
    al, cov = _sample(RequestPopulation(8, (Component(1, 3, 1.5),), 64, 1024), 16, seed=7)
    idx = [0, 1, 2, 4, 7]
    res = fit_profile([KS[i] for i in idx], al[idx], cov=cov[np.ix_(idx, idx)], clusters=16)
    filled = res.through_data()
    assert sorted(filled) == list(KS)
    for i in idx:
        assert filled[KS[i]] == al[i]  # measured points are kept as measured
    curve = np.array([filled[k] for k in KS])
    assert np.all(np.diff(curve) >= 0)
    # the filled ones land near the same prompts measured there (a few standard errors of the differences)
    for k in (4, 6, 7):
        assert abs(filled[k] - al[k - 1]) < 0.1


def test_the_deletion_threshold_follows_the_clusters() -> None:
    from scipy import stats

    assert deletion_critical(8, None) == pytest.approx(stats.chi2.ppf(1 - DELETION_ALPHA / 8, 1))
    assert deletion_critical(8, 16) > deletion_critical(8, 80) > deletion_critical(8, None)
    assert 0.5 <= MIN_DECAY < 1.0


def test_a_mixture_needs_its_shapes_to_agree() -> None:
    with pytest.raises(FitError):
        deletion_statistics(KS, _pooled([(1.0, 0.8, 1.0)]), np.eye(3))
    with pytest.raises(FitError, match="positive definite"):
        deletion_statistics(KS, _pooled([(1.0, 0.8, 1.0)]), np.zeros((8, 8)))


def test_without_noise_the_fit_falls_back_to_one_decaying_profile() -> None:
    al = _pooled([(1.0, 0.8, 0.9)])
    assert fit_profile(KS, np.round(al, 3)).profile == "decaying"


@pytest.mark.slow
def test_the_calibration_experiment_holds_its_claims_at_small_size() -> None:
    """experiments/fit-calibration, re-run small on the issue's worst case (Beta(3, 1.5), 80 prompts): the mixture's
    false flags stay within the 1 % goal plus three binomial standard errors of 40 replications, the decaying
    profile's do not (the issue measured 93 %), and a 2.5-standard-error shift at k=4 is flagged."""
    sys.path.insert(0, str(REPO / "experiments" / "fit-calibration"))
    import fit_calibration as fc

    reps = {"mixture": 40, "decaying": 6, "free": 40}
    power = {"mixture": 10, "decaying": 0, "free": 0}
    (row,) = fc.run(reps, power, scenarios=["Beta(3, 1.5)"], clusters=(80,))
    rates = row["false_flag_rate"]
    assert rates["mixture"] <= fc.GOAL + 3 * np.sqrt(fc.GOAL / reps["mixture"])
    assert rates["decaying"] >= 0.5
    assert row["power"]["mixture"]["4+"] >= 0.8
    assert row["fill"]["monotone_rate"] == 1.0
    md = fc.markdown([row], 1.0)
    assert "| Beta(3, 1.5) | 80 |" in md


def test_the_readme_false_flag_table_is_the_experiments() -> None:
    import json

    sys.path.insert(0, str(REPO / "experiments" / "fit-calibration"))
    import fit_calibration as fc

    rows = json.loads((REPO / "experiments" / "fit-calibration" / "fit_calibration.json").read_text())["rows"]
    from _docs import marked

    block = marked("fit-false-flags")
    assert block == fc.readme_table(rows)
    worst = max(r["false_flag_rate"]["mixture"] for r in rows)
    assert worst <= fc.GOAL  # the committed run meets the goal
