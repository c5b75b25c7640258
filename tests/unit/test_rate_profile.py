"""Both rate conventions with honest intervals (distributions.uncertainty.rate_profile), and the
specdec_bench-shaped export of a committed curve."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from distributions import units
from distributions.errors import DistributionError
from distributions.uncertainty import al_interval_result, rate_profile


def test_the_two_conventions_are_one_profile() -> None:
    prof = rate_profile([1717, 1670, 1601, 1565, 1518, 1492, 1466], 1767)
    m, c = np.array(prof.marginal), np.array(prof.conditional)
    assert np.allclose(units.conditional_to_unconditional(c), m)
    assert np.allclose(units.unconditional_to_conditional(m), c)
    assert prof.al == pytest.approx(1 + 11029 / 1767)
    assert all(lo <= x <= hi for x, (lo, hi) in zip(m, prof.marginal_ci95, strict=True))
    assert all(lo <= x <= hi for x, (lo, hi) in zip(c, prof.conditional_ci95, strict=True))


@pytest.mark.parametrize(("counts", "steps"), [([5, 6], 10), ([11], 10), ([-1], 10), ([], 10), ([1], 0)])
def test_counts_that_are_no_prefix_are_refused(counts: list[int], steps: int) -> None:
    with pytest.raises(DistributionError):
        rate_profile(counts, steps)


def _simulate(rng: np.random.Generator, requests: int, k: int, a: float, b: float) -> tuple[np.ndarray, np.ndarray]:
    """Per request: its own conditional rate q ~ Beta(a, b) at every position (correlated steps)."""
    q = rng.beta(a, b, size=requests)
    steps = rng.integers(20, 120, size=requests)
    pos = np.zeros((requests, k), dtype=np.int64)
    for i in range(requests):
        accepted = rng.geometric(1 - q[i], size=steps[i]) - 1  # drafts accepted before the first rejection
        accepted = np.minimum(accepted, k)
        pos[i] = [(accepted >= j).sum() for j in range(1, k + 1)]
    return pos, steps


def test_rate_intervals_cover_under_correlated_requests_and_naive_ones_do_not() -> None:
    """Coverage against known truth: E[q^j] for marginal j (Beta moments), over 300 replicate runs of
    40 requests. Tolerance: 3 binomial standard errors of a 95 % coverage at 300 replicates."""
    rng = np.random.default_rng(20261203)
    k, a, b, reps = 4, 6.0, 2.0, 300
    truth = [math.prod((a + r) / (a + b + r) for r in range(j)) for j in range(1, k + 1)]
    hit = np.zeros(k)
    naive_hit = np.zeros(k)
    for _ in range(reps):
        pos, steps = _simulate(rng, 40, k, a, b)
        al = al_interval_result(pos.sum(axis=1), steps, seed=int(rng.integers(1 << 30)))
        prof = rate_profile(pos.sum(axis=0).tolist(), int(steps.sum()), al_ci95=al.ci)
        naive = rate_profile(pos.sum(axis=0).tolist(), int(steps.sum()))
        hit += [lo <= t <= hi for t, (lo, hi) in zip(truth, prof.marginal_ci95, strict=True)]
        naive_hit += [lo <= t <= hi for t, (lo, hi) in zip(truth, naive.marginal_ci95, strict=True)]
    floor = 0.95 - 3 * math.sqrt(0.95 * 0.05 / reps)
    print("coverage", hit / reps, "naive", naive_hit / reps)
    assert (hit / reps).min() >= floor, hit / reps
    assert (naive_hit / reps).max() < floor, naive_hit / reps  # the correlation is real: ignoring it undercovers


def test_the_shipped_curve_exports_both_conventions_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    from golden_al.cli.main import main

    assert main(["curves", "show", "qwen2.5-coder-1.5b-instruct", "--format", "speculation-profile"]) == 0
    (doc,) = json.loads(capsys.readouterr().out)
    assert set(doc["conventions"]) == {"conditional_accept_rates", "marginal_accept_rates"}
    assert [p["k"] for p in doc["profiles"]] == list(range(1, 9))
    for p in doc["profiles"]:
        c, m = np.array(p["conditional_accept_rates"]), np.array(p["marginal_accept_rates"])
        assert len(c) == len(m) == p["k"]
        assert np.allclose(np.cumprod(c), m, atol=2e-6)
        assert p["acceptance_length"] == pytest.approx(1 + m.sum(), abs=1e-5)
        assert round(p["acceptance_length"], 2) == p["golden_al"]
        assert p["interval_basis"].startswith("design effect")
    assert main(["curves", "show", "qwen2.5-coder-1.5b-instruct", "--format", "json"]) == 0
    (curve,) = json.loads(capsys.readouterr().out)
    assert curve["thinking_off"]["points"]["7"]["rates"]["k"] == 7


def test_every_record_carries_both_conventions_recomputed_never_trusted() -> None:
    from pathlib import Path

    from golden_al.measure.records import load_record
    from golden_al.measure.schema import MeasurementRecord

    root = Path(__file__).resolve().parents[2]
    rec = load_record(root / "experiments/qwen-coder-curve/humaneval/k7/measurement.json")
    rates = rec.model_dump(mode="json")["acceptance_rates"]
    assert rates["k"] == 7
    assert np.allclose(np.cumprod(rates["conditional_accept_rates"]), rates["marginal_accept_rates"], atol=2e-6)
    forged = {**rec.model_dump(mode="json"), "acceptance_rates": {"marginal_accept_rates": [1.0] * 7}}
    assert MeasurementRecord.model_validate(forged).acceptance_rates == rates  # recomputed from the counts
    totals_only = rec.model_copy(update={"histogram_known": False})
    assert totals_only.acceptance_rates is None
