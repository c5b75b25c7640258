"""fit judges a curve by the joint law of its points (one run's shared prompts).

Anomalies are planted in copies of the committed HumanEval records (experiments/qwen-coder-curve):
every request line of one k gets extra accepted drafts step by step (its accept lengths, histogram,
accepted per position and totals stay consistent), and the record's totals are rewritten from its
lines. A point shifted by an amount the marginal intervals cannot see must be flagged, at that k
and nowhere else; the committed curve must pass clean.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from distributions.fit import fit_profile
from distributions.uncertainty import joint_al_bootstrap
from golden_al.cli.main import main

REPO = Path(__file__).resolve().parents[2]
RECORDS = REPO / "experiments" / "qwen-coder-curve" / "humaneval"


def plant(kdir: Path, delta: float) -> float:
    """Shift AL at this k by about ``delta`` (>0: accept more; <0: fewer), consistently; returns the new AL."""
    rec = json.loads((kdir / "measurement.json").read_text())
    k = rec["draft_len"]
    rows = [json.loads(x) for x in (kdir / "requests.jsonl").read_text().splitlines()]
    for r in rows:
        lengths = list(r["accept_lengths"])
        todo = round(abs(delta) * r["num_verify_steps"])
        order = np.argsort(lengths) if delta > 0 else np.argsort(lengths)[::-1]
        for i in order:
            if todo == 0:
                break
            room = (k + 1 - lengths[i]) if delta > 0 else (lengths[i] - 1)
            step = min(room, todo)
            lengths[i] += step if delta > 0 else -step
            todo -= step
        accepted = [n - 1 for n in lengths]
        r["accept_lengths"] = lengths
        r["num_accepted_drafts"] = sum(accepted)
        r["histogram"] = [accepted.count(j) for j in range(k + 1)]
        r["per_position_accepted"] = [sum(1 for n in accepted if n > j) for j in range(k)]
    (kdir / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    steps = sum(r["num_verify_steps"] for r in rows)
    acc = sum(r["num_accepted_drafts"] for r in rows)
    rec.update(num_accepted_drafts=acc, al=1 + acc / steps,
               histogram=[sum(r["histogram"][j] for r in rows) for j in range(k + 1)],
               per_position_accepted=[sum(r["per_position_accepted"][j] for r in rows) for j in range(k)])
    (kdir / "measurement.json").write_text(json.dumps(rec, indent=2))
    return rec["al"]


@pytest.fixture
def records(tmp_path):
    out = tmp_path / "humaneval"
    shutil.copytree(RECORDS, out)
    return out


def _fit(records: Path, tmp_path: Path, *extra: str) -> tuple[int, dict]:
    code = main(["fit", str(records), "--out", str(tmp_path / "curve.yaml"), "--format", "json", *extra])
    return code, json.loads((tmp_path / "curve.fit.json").read_text())


def test_the_committed_curve_passes_clean_under_its_joint_law(records, tmp_path, capsys):
    code, diag = _fit(records, tmp_path)
    assert code == 0
    assert diag["flags"] == []
    prof = diag["modes"]["thinking_off"]["profile"]
    assert prof["weighting"] == "joint"
    assert prof["joint"]["clusters"] == 80
    assert prof["joint"]["corr"][6][7] > 0.8  # neighbouring k move together
    assert prof["goodness_of_fit"]["p_value"] > 0.05


@pytest.mark.parametrize(("k", "delta"), [(8, -0.30), (5, 0.10), (5, -0.10), (3, 0.05)])
def test_a_shift_the_marginal_intervals_cannot_see_is_flagged_at_its_k(records, tmp_path, capsys, k, delta):
    plant(records / f"k{k}", delta)
    recs = [json.loads((records / f"k{j}" / "measurement.json").read_text()) for j in range(1, 9)]
    marginal = fit_profile(range(1, 9), [r["al"] for r in recs], ci95=[r["al_ci95"] for r in recs])
    assert not marginal.flags  # the points taken as independent: the shift is invisible
    code, diag = _fit(records, tmp_path)
    assert code == 1
    flagged = {f["k"] for f in diag["flags"] if f["kind"] == "residual"}
    assert flagged == {k}
    flag = next(f for f in diag["flags"] if f["k"] == k and f["kind"] == "residual")
    assert flag["what"] == "residual"
    # by: the shift plus the point's own clean deviation from what the others predict (a few hundredths)
    assert flag["by"] == pytest.approx(delta, abs=0.07)
    lo_f, hi_f = flag["interval"]
    assert lo_f < flag["by"] < hi_f
    assert not lo_f < 0 < hi_f  # the interval of the shift excludes no shift
    assert "mixture of the other points predicts" in flag["message"]


def test_a_curve_that_falls_with_k_is_a_drop_and_allow_flags_keeps_exit_0(records, tmp_path, capsys):
    al7 = json.loads((records / "k7" / "measurement.json").read_text())["al"]
    al8 = plant(records / "k8", -1.0)
    assert al8 < al7
    code, diag = _fit(records, tmp_path)
    assert code == 1
    drop = next(f for f in diag["flags"] if f["kind"] == "drop")
    assert drop["k"] == 8
    assert drop["by"] == pytest.approx(al8 - al7, abs=1e-9)
    assert drop["interval"][1] < 0
    capsys.readouterr()
    assert main(["fit", str(records), "--out", str(tmp_path / "c2.yaml"), "--allow-flags"]) == 0
    out = capsys.readouterr().out
    assert "flag k=8 drop" in out
    assert "95% interval" in out


def keep_prompts(kdir: Path, keep) -> None:
    """Drop the request lines of prompts ``keep(index)`` rejects and rewrite the totals."""
    rec = json.loads((kdir / "measurement.json").read_text())
    k = rec["draft_len"]
    rows = [r for r in (json.loads(x) for x in (kdir / "requests.jsonl").read_text().splitlines()) if keep(r["index"])]
    (kdir / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    steps = sum(r["num_verify_steps"] for r in rows)
    acc = sum(r["num_accepted_drafts"] for r in rows)
    rec.update(num_requests=len(rows), num_verify_steps=steps, num_accepted_drafts=acc, al=1 + acc / steps,
               histogram=[sum(r["histogram"][j] for r in rows) for j in range(k + 1)],
               per_position_accepted=[sum(r["per_position_accepted"][j] for r in rows) for j in range(k)])
    (kdir / "measurement.json").write_text(json.dumps(rec, indent=2))


def test_points_measured_on_different_prompts_are_judged_independently(records, tmp_path, capsys):
    for k in range(1, 9):  # odd k on one half of the prompts, even k on the other: no prompt is shared
        keep_prompts(records / f"k{k}", (lambda i: i % 2 == 0) if k % 2 else (lambda i: i % 2 == 1))
    code, diag = _fit(records, tmp_path, "--allow-flags")
    assert code == 0
    prof = diag["modes"]["thinking_off"]["profile"]
    assert prof["joint"] is None
    assert prof["weighting"] == "ci"


def test_joint_bootstrap_covariance_matches_the_estimators_own_by_simulation():
    """Known truth: per-prompt acceptance drawn from a Beta law, the same prompt at every k.

    The average bootstrap covariance of (AL(1), ..., AL(4)) over 40 data sets must match the
    covariance of the estimator over 400 simulated data sets: variances within 25% (the Monte-Carlo
    error of a variance over 400 draws is about 7%) and correlations within 0.1.
    """
    rng = np.random.default_rng(2026)
    ks = [1, 2, 3, 4]
    n = 40

    def dataset() -> tuple[np.ndarray, np.ndarray]:
        rate = rng.beta(6, 2, size=n)
        steps = rng.integers(20, 200, size=n).astype(float)
        acc = np.empty((n, len(ks)))
        st = np.empty((n, len(ks)))
        for j, k in enumerate(ks):
            s = np.maximum(1, np.round(steps / (1 + rate * k))).astype(int)
            # accepted drafts per step: a run of successes at the prompt's rate, at most k
            a = np.array([np.minimum(rng.geometric(1 - r, size=si) - 1, k).sum() for r, si in zip(rate, s, strict=True)])
            acc[:, j], st[:, j] = a, s
        return acc, st

    ests, covs = [], []
    for i in range(400):
        acc, st = dataset()
        ests.append(1 + acc.sum(axis=0) / st.sum(axis=0))
        if i < 40:
            covs.append(joint_al_bootstrap(acc, st, ks, seed=i).cov)
    truth = np.cov(np.array(ests), rowvar=False)
    boot = np.mean(covs, axis=0)
    ratio = np.diag(boot) / np.diag(truth)
    assert np.all((ratio > 0.75) & (ratio < 1.25)), ratio
    corr = lambda c: c / np.sqrt(np.outer(np.diag(c), np.diag(c)))  # noqa: E731
    assert np.max(np.abs(corr(boot) - corr(truth))) < 0.1


def test_generalized_least_squares_needs_a_positive_definite_covariance():
    from distributions.errors import FitError

    with pytest.raises(FitError, match="positive definite"):
        fit_profile([1, 2, 3], [1.9, 2.7, 3.4], cov=np.ones((3, 3)))


def test_the_goodness_of_fit_is_referred_to_hotellings_f_when_the_covariance_is_estimated():
    """With the covariance estimated from n clusters the statistic is T^2, not chi-square
    (experiments/interval-calibration/new_scenarios.md: chi-square ellipses undercover)."""
    from scipy import stats

    from distributions.fit import _misfit_p

    chi2, dof, n = 12.0, 6, 20
    expected = stats.f.sf(chi2 * (n - dof) / ((n - 1) * dof), dof, n - dof)
    assert _misfit_p(chi2, dof, n) == pytest.approx(expected)
    assert _misfit_p(chi2, dof, n) > _misfit_p(chi2, dof, None) == pytest.approx(stats.chi2.sf(chi2, dof))
    assert _misfit_p(chi2, dof, 1000) == pytest.approx(stats.chi2.sf(chi2, dof), rel=0.05)  # F -> chi-square
    assert _misfit_p(chi2, dof, dof) == pytest.approx(stats.chi2.sf(chi2, dof))  # too few clusters for F
