"""The AL interval candidates this calibration compares beside the ones golden-al ships.

:func:`intervals` is :func:`distributions.uncertainty.al_intervals_batch` (what ships: ``studentized``, ``delta-t``,
``cr2-bm``, ``logit-cr2-bm`` and hulls of them) plus the candidates that lost, built on the same rows, resampling
counts and continuity floor, so that they are compared on equal terms:

* ``percentile``: the plain percentile cluster bootstrap (the old ``al_ci95``);
* ``bca``: bias-corrected and accelerated bootstrap (jackknife acceleration);
* ``delta-z``: ``AL +/- z se`` with the delta-method se;
* ``cr2-welch`` / ``logit-cr2-welch``: the CR2 intervals with Welch-Satterthwaite degrees of freedom,
  ``(sum u)^2 / sum u^2`` over the clusters' variance contributions ``u_i = e_i^2 / (1 - h_i)`` (:func:`welch_df`).
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike

from distributions.uncertainty import (
    METHODS as SHIPPED_METHODS,
)
from distributions.uncertainty import (
    NUM_RESAMPLES,
    al_intervals_batch,
    cluster_rows,
    cr2_bounds,
    cr2_se_df,
    resampled_rates,
)

LOST = ("percentile", "bca", "delta-z", "cr2-welch", "logit-cr2-welch")


def welch_df(acc: np.ndarray, st: np.ndarray) -> np.ndarray:
    """Welch-Satterthwaite degrees of freedom of the CR2 variance of ``sum(a) / sum(s)`` over ``(R, n)`` clusters."""
    s_sum = st.sum(axis=1, keepdims=True)
    u = (acc - acc.sum(axis=1, keepdims=True) / s_sum * st) ** 2 / np.maximum(1.0 - st / s_sum, 1e-12)
    tot = u.sum(axis=1)
    return np.where(tot > 0, tot**2 / np.maximum((u**2).sum(axis=1), 1e-300), np.inf)


def intervals(accepted: ArrayLike, steps: ArrayLike, *, method: str = "studentized", confidence: float = 0.95,
              seed: int = 0, num_resamples: int = NUM_RESAMPLES,
              draft_len: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` per row of ``(R, n)`` clusters by ``method`` (shipped, lost, or ``a+b``: the hull of two)."""
    if "+" in method:
        parts = [intervals(accepted, steps, method=m, confidence=confidence, seed=seed, num_resamples=num_resamples,
                           draft_len=draft_len) for m in method.split("+")]
        return np.minimum.reduce([lo for lo, _ in parts]), np.maximum.reduce([hi for _, hi in parts])
    if method in SHIPPED_METHODS:
        return al_intervals_batch(accepted, steps, method=method, confidence=confidence, seed=seed,
                                  num_resamples=num_resamples, draft_len=draft_len)
    if method not in LOST:
        raise ValueError(f"unknown interval method {method!r}")
    b = cluster_rows(accepted, steps, confidence)
    if method.endswith("cr2-welch"):
        se2, _ = cr2_se_df(b.acc, b.st)
        return cr2_bounds(b, se2, welch_df(b.acc, b.st), draft_len=draft_len, logit=method.startswith("logit-"))
    nd = NormalDist()
    if method == "delta-z":
        q = nd.inv_cdf(1.0 - b.alpha)
        return np.maximum(1.0, b.al - q * b.se), b.al + q * b.se
    lo, hi = np.empty_like(b.al), np.empty_like(b.al)
    n = b.acc.shape[1]
    a_sum, s_sum = b.acc.sum(axis=1), b.st.sum(axis=1)
    for sl, _, d, _ in resampled_rates(b, seed, num_resamples):
        if method == "percentile":
            q_lo, q_hi = np.quantile(d, [b.alpha, 1.0 - b.alpha], axis=1)
            lo[sl], hi[sl] = b.al[sl] + q_lo, b.al[sl] + q_hi
            continue
        frac = np.clip((d < 0).mean(axis=1) + 0.5 * (d == 0).mean(axis=1), 1e-6, 1 - 1e-6)
        z0 = np.array([nd.inv_cdf(float(f)) for f in frac])
        jack = (a_sum[sl, None] - b.acc[sl]) / np.maximum(s_sum[sl, None] - b.st[sl], 1e-300) if n > 1 \
            else np.zeros_like(b.acc[sl])
        dj = jack.mean(axis=1, keepdims=True) - jack
        acc_hat = (dj**3).sum(axis=1) / (6.0 * np.maximum((dj**2).sum(axis=1), 1e-300) ** 1.5)
        d_sorted = np.sort(d, axis=1)
        rows = np.arange(d.shape[0])
        for z_a, out in ((nd.inv_cdf(b.alpha), lo), (nd.inv_cdf(1.0 - b.alpha), hi)):
            zz = z0 + (z0 + z_a) / (1.0 - acc_hat * (z0 + z_a))
            p = np.array([nd.cdf(float(x)) for x in zz])
            idx = np.clip(np.round(p * (num_resamples - 1)).astype(int), 0, num_resamples - 1)
            out[sl] = b.al[sl] + d_sorted[rows, idx]
    return np.maximum(1.0, np.minimum(lo, b.al - b.t_floor)), np.maximum(hi, b.al + b.t_floor)
