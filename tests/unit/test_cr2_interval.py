"""The CR2 candidates of issue 39's interval comparison: the bias-reduced cluster-robust variance of the AL ratio
and its Bell-McCaffrey (shipped) / Welch-Satterthwaite (experiments/interval-calibration/candidates.py) degrees of
freedom, checked against their definitions."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from distributions.uncertainty import al_intervals_batch, cr2_se_df

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "experiments" / "interval-calibration"))
from candidates import intervals, welch_df


def test_equal_steps_give_n_minus_1_degrees_and_the_delta_method_variance() -> None:
    rng = np.random.default_rng(7)
    n = 12
    st = np.full((1, n), 50.0)
    acc = rng.binomial(150, 0.5, (1, n)).astype(float)
    se, nu = cr2_se_df(acc, st)
    e = acc[0] - acc[0].sum() / st[0].sum() * st[0]
    assert nu[0] == pytest.approx(n - 1)
    assert se[0] == pytest.approx(np.sqrt((e**2).sum() * n / (n - 1)) / st[0].sum())


def test_bell_mccaffrey_degrees_follow_their_matrix_definition() -> None:
    rng = np.random.default_rng(11)
    n = 9
    st = rng.integers(10, 400, (1, n)).astype(float)
    acc = np.round(st * rng.uniform(0.3, 2.5, (1, n)))
    se, nu = cr2_se_df(acc, st)
    s, total = st[0], st[0].sum()
    h = s / total
    m = np.eye(n) - np.outer(s, np.ones(n)) / total  # I - H for the WLS slope with weights 1/s
    g = m / np.sqrt(1.0 - h)[None, :]
    lam = np.linalg.eigvalsh(g.T @ np.diag(s) @ g)
    assert nu[0] == pytest.approx(lam.sum() ** 2 / (lam**2).sum())
    e = acc[0] - acc[0].sum() / total * s
    assert se[0] == pytest.approx(np.sqrt((e**2 / (1.0 - h)).sum()) / total)
    u = e**2 / (1.0 - h)
    assert welch_df(acc, st)[0] == pytest.approx(u.sum() ** 2 / (u**2).sum())


@pytest.mark.parametrize("method", ["cr2-bm", "cr2-welch"])
def test_the_cr2_intervals_hold_the_estimate_and_widen_with_fewer_degrees(method: str) -> None:
    rng = np.random.default_rng(3)
    st = rng.integers(20, 600, (50, 16)).astype(float)
    acc = np.round(st * rng.uniform(0.5, 2.0, (50, 16)))
    lo, hi = intervals(acc, st, method=method)
    al = 1.0 + acc.sum(axis=1) / st.sum(axis=1)
    assert np.all((lo <= al) & (al <= hi))
    lo_t, hi_t = al_intervals_batch(acc, st, method="delta-t")  # n - 1 degrees: never more than CR2's
    assert np.median(hi - lo) >= np.median(hi_t - lo_t)


def test_a_counter_only_cell_says_how_much_wider_its_interval_is() -> None:
    """Issue 39, item 3: three counter windows are the only independent units a counters-only server leaves; the
    record says how far that is from treating the steps as independent (the steps' own histogram sets that width)."""
    from distributions.uncertainty import iid_ci_from_counts
    from golden_al.measure.schema import RequestResult
    from golden_al.measure.totals import cell_totals

    k = 3
    hists = [[10, 20, 30, 40], [30, 30, 20, 20], [5, 15, 30, 50]]
    rows = []
    for i, h in enumerate(hists):
        steps = sum(h)
        acc = sum(j * n for j, n in enumerate(h))
        pos = [sum(h[j:]) for j in range(1, k + 1)]
        rows.append(RequestResult(index=i * 4, request_id=f"w{i}", draft_len=k, prompt_hash="0" * 64,
                                  num_output_tokens=steps + acc + 1, num_verify_steps=steps, num_accepted_drafts=acc,
                                  histogram=h, per_position_accepted=pos,
                                  extra={"unit": [i * 4 + j for j in range(4)]}))
    totals = cell_totals(rows, k)
    (note,) = [n for n in totals.notes if "counter unit" in n]
    merged = [sum(col) for col in zip(*hists, strict=True)]
    iid = iid_ci_from_counts(sum(j * n for j, n in enumerate(merged)), sum(merged), histogram=merged, k=k)
    ratio = (totals.interval.high - totals.interval.low) / (iid.ci_high - iid.ci_low)
    assert ratio > 1.0
    assert f"it is {ratio:.1f}x as wide as one that treated each of the 300 verify steps as independent" in note
    request_rows = [r.model_copy(update={"extra": None}) for r in rows]
    assert not [n for n in cell_totals(request_rows, k).notes if "as wide as" in n]  # requests: no such note
