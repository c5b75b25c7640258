"""Uncertainty of AL: cluster bootstrap over requests, and sample-size planning.

Verify steps within one request are correlated (a request that echoes its prompt
accepts everything for hundreds of steps), so the sampling unit is the request:
resample whole requests and recompute the ratio estimator
``AL = 1 + sum(accepted_i) / sum(steps_i)``.

Planning uses the delta method for that ratio estimator:
``var(AL) ~= var(a_i - (AL - 1) s_i) / (n * mean(s)^2)`` over ``n`` requests
(:class:`RatioStats`, :func:`requests_needed`, :func:`plan_sample_size`), and,
for comparison, the i.i.d. per-step model ``var(AL) = var(L) / steps``
(:func:`verify_steps_needed`, :func:`iid_ci_from_counts`), which ignores the
correlation within requests and is therefore optimistic. :func:`mean_z_score`
compares a realized mean with the mean a sampler should give over a number of
independent draws (for checking injected AL in benchmark runs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from distributions import units
from distributions.errors import DistributionError

__all__ = [
    "BootstrapResult",
    "CountsInterval",
    "RatioStats",
    "SampleSizePlan",
    "cluster_bootstrap_al",
    "iid_ci_from_counts",
    "mean_tolerance",
    "mean_z_score",
    "plan_sample_size",
    "ratio_stats",
    "requests_needed",
    "se_from_ci",
    "verify_steps_needed",
    "z_for_confidence",
]


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


# ---------------------------------------------------------------------------- planning
def z_for_confidence(confidence: float) -> float:
    """Two-sided normal quantile: 1.95996 for 0.95."""
    if not 0.0 < confidence < 1.0:
        raise DistributionError(f"confidence must be in (0, 1), got {confidence!r}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def se_from_ci(lo: ArrayLike, hi: ArrayLike, confidence: float = 0.95) -> Any:
    """Normal-approximation standard error behind a two-sided CI ``(lo, hi)``: width / (2 z).

    Broadcasts like numpy: floats give a float, arrays of bounds an array.
    """
    return (np.asarray(hi, dtype=np.float64) - np.asarray(lo, dtype=np.float64)) / (2.0 * z_for_confidence(confidence))


def _check_half_width(half_width: float) -> float:
    if not (isinstance(half_width, (int, float, np.floating)) and math.isfinite(half_width) and half_width > 0):
        raise DistributionError(
            f"target CI half-width must be a number > 0, got {half_width!r}",
            hint="e.g. 0.02 for AL +/- 0.02",
        )
    return float(half_width)


def _per_request(accepted: ArrayLike, steps: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    acc = np.asarray(accepted, dtype=np.float64)
    st = np.asarray(steps, dtype=np.float64)
    if acc.shape != st.shape or acc.ndim != 1:
        raise DistributionError(f"accepted and steps must be 1-D of equal length, got {acc.shape} and {st.shape}")
    if np.any(~np.isfinite(acc)) or np.any(~np.isfinite(st)) or np.any(acc < 0) or np.any(st < 0):
        raise DistributionError("per-request counts must be finite and >= 0")
    return acc, st


@dataclass(frozen=True)
class RatioStats:
    """Per-request summary behind the delta-method variance of the ratio estimator.

    Attributes:
        al: ``1 + sum(a) / sum(s)``.
        num_requests: ``n``.
        mean_steps: ``mean(s_i)``.
        residual_var: sample variance (ddof=1) of ``a_i - (AL - 1) * s_i``.
    """

    al: float
    num_requests: int
    mean_steps: float
    residual_var: float

    def std_error(self, num_requests: int | None = None) -> float:
        """Delta-method standard error of AL with ``num_requests`` requests (default: observed)."""
        n = self.num_requests if num_requests is None else int(num_requests)
        if n < 1:
            raise DistributionError(f"num_requests must be >= 1, got {n}")
        return math.sqrt(self.residual_var / (n * self.mean_steps**2))

    def half_width(self, confidence: float = 0.95, num_requests: int | None = None) -> float:
        """CI half-width ``z * std_error``."""
        return z_for_confidence(confidence) * self.std_error(num_requests)


def ratio_stats(accepted: ArrayLike, steps: ArrayLike) -> RatioStats:
    """:class:`RatioStats` from per-request accepted drafts and verify steps.

    Raises:
        DistributionError: with fewer than two requests or no verify steps.
    """
    acc, st = _per_request(accepted, steps)
    if acc.size < 2:
        raise DistributionError(
            f"the variance across requests needs at least 2 requests, got {acc.size}",
            hint="run a pilot of 20 or more prompts first",
        )
    al = units.al_from_counts(acc.sum(), st.sum())
    resid = acc - (al - 1.0) * st
    return RatioStats(al=al, num_requests=int(acc.size), mean_steps=float(st.mean()),
                      residual_var=float(np.var(resid, ddof=1)))


def requests_needed(half_width: float, *, residual_var: float, mean_steps: float,
                    confidence: float = 0.95) -> int:
    """Requests (prompts) for a CI half-width: ``ceil(z^2 var(a - (AL-1)s) / (hw^2 mean(s)^2))`` (>= 2)."""
    hw = _check_half_width(half_width)
    if not (residual_var >= 0 and mean_steps > 0):
        raise DistributionError(f"need residual_var >= 0 and mean_steps > 0, got {residual_var!r}, {mean_steps!r}")
    z = z_for_confidence(confidence)
    return max(2, math.ceil(z * z * residual_var / (hw * hw * mean_steps * mean_steps) - 1e-9))


def verify_steps_needed(half_width: float, *, step_variance: float, confidence: float = 0.95) -> int:
    """Verify steps for a CI half-width if steps were i.i.d.: ``ceil(z^2 var(L) / hw^2)``.

    Optimistic for real text (steps within a request are correlated); exact for
    the engines' synthetic samplers that draw independently per request-step
    (vLLM, ATOM, TensorRT-LLM; for SGLang the independent draws are the batch steps).
    """
    hw = _check_half_width(half_width)
    if not step_variance >= 0:
        raise DistributionError(f"step variance must be >= 0, got {step_variance!r}")
    z = z_for_confidence(confidence)
    return max(1, math.ceil(z * z * step_variance / (hw * hw) - 1e-9))


@dataclass(frozen=True)
class SampleSizePlan:
    """How many requests (and, under i.i.d. steps, verify steps) reach a target CI half-width.

    Attributes:
        target_half_width / confidence: the goal.
        al: AL of the pilot data.
        observed: the pilot's :class:`RatioStats`.
        current_half_width: delta-method half-width of the pilot itself.
        num_requests: requests needed (delta method, clustered by request).
        num_verify_steps: ``num_requests * mean steps per request``.
        num_verify_steps_iid: steps needed if steps were independent (None without ``step_variance``).
        design_effect: ``var(a - (AL-1)s) / (mean(s) var(L))``: how much the
            clustering inflates the variance over i.i.d. steps (None without ``step_variance``).
    """

    target_half_width: float
    confidence: float
    al: float
    observed: RatioStats
    current_half_width: float
    num_requests: int
    num_verify_steps: int
    num_verify_steps_iid: int | None
    design_effect: float | None


def plan_sample_size(accepted: ArrayLike, steps: ArrayLike, half_width: float, *,
                     confidence: float = 0.95, step_variance: float | None = None) -> SampleSizePlan:
    """Plan the number of prompts for a target 95% CI half-width from pilot per-request data.

    Args:
        accepted, steps: per-request accepted drafts and verify steps of a pilot run.
        half_width: target half-width of the CI of AL (e.g. 0.02 or 0.01).
        confidence: CI coverage.
        step_variance: ``var(L)`` per step (e.g. ``AcceptanceDistribution.var()`` of the
            pooled histogram), to report the i.i.d. step count and the design effect.
    """
    hw = _check_half_width(half_width)
    obs = ratio_stats(accepted, steps)
    n = requests_needed(hw, residual_var=obs.residual_var, mean_steps=obs.mean_steps, confidence=confidence)
    iid = deff = None
    if step_variance is not None:
        iid = verify_steps_needed(hw, step_variance=step_variance, confidence=confidence)
        deff = obs.residual_var / (obs.mean_steps * step_variance) if step_variance > 0 else math.inf
    return SampleSizePlan(
        target_half_width=hw, confidence=confidence, al=obs.al, observed=obs,
        current_half_width=obs.half_width(confidence), num_requests=n,
        num_verify_steps=math.ceil(n * obs.mean_steps), num_verify_steps_iid=iid, design_effect=deff,
    )


# ---------------------------------------------------------------------------- counts only
IID_LABEL = "i.i.d. per-step normal approximation (optimistic: ignores correlation within requests)"


@dataclass(frozen=True)
class CountsInterval:
    """A CI for AL from aggregate counts alone; see ``label`` for what it assumes."""

    al: float
    ci_low: float
    ci_high: float
    confidence: float
    std_error: float
    num_verify_steps: float
    step_variance: float
    variance_source: str
    label: str = IID_LABEL

    @property
    def ci(self) -> tuple[float, float]:
        """``(low, high)``."""
        return (self.ci_low, self.ci_high)


def iid_ci_from_counts(num_accepted_drafts: float, num_verify_steps: float, *,
                       histogram: ArrayLike | None = None, k: int | None = None,
                       step_variance: float | None = None, confidence: float = 0.95) -> CountsInterval:
    """CI for AL when no per-request data exists (Prometheus deltas, ATOM stats).

    Treats every verify step as an independent draw of ``L``: ``se = sqrt(var(L) / steps)``.
    This is OPTIMISTIC for real text, where steps within a request are correlated
    (prefer :func:`cluster_bootstrap_al` whenever per-request data exists).
    ``var(L)`` comes from, in order: ``step_variance``; the ``histogram`` of
    accepted drafts; or, with only ``k``, the largest variance any distribution on
    ``[1, k+1]`` with this mean can have, ``(AL - 1)(k + 1 - AL)`` (Bhatia-Davis).
    """
    al = units.al_from_counts(num_accepted_drafts, num_verify_steps)
    z = z_for_confidence(confidence)
    if step_variance is not None:
        var, src = float(step_variance), "given"
        if not var >= 0:
            raise DistributionError(f"step variance must be >= 0, got {step_variance!r}")
    elif histogram is not None:
        h = np.asarray(histogram, dtype=np.float64)
        if h.ndim != 1 or np.any(h < 0) or h.sum() <= 0:
            raise DistributionError(f"histogram must be counts >= 0 with a positive total, got {histogram!r}")
        j = np.arange(h.size)
        mean_j = float(np.dot(j, h) / h.sum())
        var, src = float(np.dot((j - mean_j) ** 2, h) / h.sum()), "histogram"
        if abs(mean_j - (al - 1.0)) > 1e-6 * max(1.0, al):
            raise DistributionError(
                f"the histogram's mean accepted drafts {mean_j:.6g} disagrees with the counts ({al - 1.0:.6g})",
                hint="pass the histogram of the same run as the totals",
            )
        k = k if k is not None else max(1, h.size - 1)
    elif k is not None:
        units.check_al(al, k)
        var, src = max(0.0, (al - 1.0) * (k + 1.0 - al)), "upper bound (AL-1)(k+1-AL)"
    else:
        raise DistributionError(
            "the per-step variance is unknown: give step_variance, histogram or k",
            hint="with only k the widest (most conservative) i.i.d. interval is used",
        )
    se = math.sqrt(var / float(num_verify_steps))
    hi_cap = float(k) + 1.0 if k is not None else math.inf
    return CountsInterval(al=al, ci_low=max(1.0, al - z * se), ci_high=min(hi_cap, al + z * se),
                          confidence=confidence, std_error=se, num_verify_steps=float(num_verify_steps),
                          step_variance=var, variance_source=src)


# ---------------------------------------------------------------------------- checking a sampler
def mean_z_score(realized_mean: float, expected_mean: float, variance: float, num_draws: float) -> float:
    """``(realized - expected) / sqrt(variance / num_draws)``.

    ``variance`` is that of one independent draw of the sampler (e.g. the pmf's
    ``var()``); ``num_draws`` counts independent draws: request-steps for
    vLLM/ATOM/TensorRT-LLM, verify steps (one shared draw per batch) for SGLang.
    With zero variance the score is 0 if the means agree, else +/-inf.
    """
    if not (variance >= 0 and num_draws > 0):
        raise DistributionError(f"need variance >= 0 and num_draws > 0, got {variance!r}, {num_draws!r}")
    diff = float(realized_mean) - float(expected_mean)
    if variance == 0:
        return 0.0 if abs(diff) <= 1e-12 * max(1.0, abs(float(expected_mean))) else math.copysign(math.inf, diff)
    return diff / math.sqrt(float(variance) / float(num_draws))


def mean_tolerance(variance: float, num_draws: float, z: float = 5.0) -> float:
    """``z * sqrt(variance / num_draws)``: how far a realized mean may stray at ``z`` standard errors."""
    if not (variance >= 0 and num_draws > 0 and z > 0):
        raise DistributionError(f"need variance >= 0, num_draws > 0, z > 0, got {variance!r}, {num_draws!r}, {z!r}")
    return float(z) * math.sqrt(float(variance) / float(num_draws))
