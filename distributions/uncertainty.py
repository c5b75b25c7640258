"""Uncertainty of AL: cluster bootstrap over requests, and sample-size planning.

Verify steps within one request are correlated (a request that echoes its prompt
accepts everything for hundreds of steps), so the sampling unit is the request:
resample whole requests and recompute the ratio estimator
``AL = 1 + sum(accepted_i) / sum(steps_i)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from distributions import units
from distributions.errors import DistributionError

__all__ = ["BootstrapResult", "cluster_bootstrap_al"]


@dataclass(frozen=True)
class BootstrapResult:
    """AL point estimate with a percentile bootstrap interval over requests."""

    al: float
    ci_low: float
    ci_high: float
    confidence: float
    num_requests: int
    num_resamples: int
    std_error: float

    @property
    def ci(self) -> tuple[float, float]:
        """``(low, high)``."""
        return (self.ci_low, self.ci_high)


def cluster_bootstrap_al(
    accepted: ArrayLike,
    steps: ArrayLike,
    *,
    rng: np.random.Generator,
    num_resamples: int = 2000,
    confidence: float = 0.95,
) -> BootstrapResult:
    """Percentile cluster bootstrap of AL over requests.

    Args:
        accepted: accepted draft tokens per request.
        steps: verify steps per request (requests with zero steps carry no weight).
        rng: the generator that drives the resampling.
        num_resamples: bootstrap replicates.
        confidence: two-sided coverage of the interval.
    """
    acc = np.asarray(accepted, dtype=np.float64)
    st = np.asarray(steps, dtype=np.float64)
    if acc.shape != st.shape or acc.ndim != 1:
        raise DistributionError(f"accepted and steps must be 1-D of equal length, got {acc.shape} and {st.shape}")
    if np.any(acc < 0) or np.any(st < 0):
        raise DistributionError("per-request counts must be >= 0")
    if not 0.0 < confidence < 1.0:
        raise DistributionError(f"confidence must be in (0, 1), got {confidence}")
    n = acc.size
    al = units.al_from_counts(acc.sum(), st.sum())
    if n < 2:
        return BootstrapResult(al, al, al, confidence, n, 0, float("nan"))
    chunk = max(1, min(num_resamples, 4_000_000 // max(n, 1)))
    stats: list[np.ndarray] = []
    done = 0
    while done < num_resamples:
        b = min(chunk, num_resamples - done)
        weights = rng.multinomial(n, np.full(n, 1.0 / n), size=b).astype(np.float64)
        den = weights @ st
        num = weights @ acc
        with np.errstate(divide="ignore", invalid="ignore"):
            stats.append(np.where(den > 0, 1.0 + num / np.where(den > 0, den, 1.0), np.nan))
        done += b
    boot = np.concatenate(stats)
    boot = boot[np.isfinite(boot)]
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.quantile(boot, [alpha, 1.0 - alpha])
    return BootstrapResult(
        al=al,
        ci_low=float(lo),
        ci_high=float(hi),
        confidence=confidence,
        num_requests=n,
        num_resamples=int(boot.size),
        std_error=float(np.std(boot, ddof=1)),
    )
