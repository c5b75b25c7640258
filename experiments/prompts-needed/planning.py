"""The sample-size planner and the percentile cluster bootstrap of this experiment (and of one-run-vs-per-k).

Planning uses the delta method for the ratio estimator ``AL = 1 + sum(a_i) / sum(s_i)``:
``var(AL) ~= var(a_i - (AL - 1) s_i) / (n * mean(s)^2)`` over ``n`` requests (:class:`RatioStats`,
:func:`requests_needed`, :func:`plan_sample_size`), and, for comparison, the i.i.d. per-step model
``var(AL) = var(L) / steps`` (:func:`verify_steps_needed`), which ignores the correlation within requests and is
therefore optimistic. golden-al itself measures to a precision by its interval (``measure --ci-half-width``,
:func:`distributions.uncertainty.next_sample_size`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from distributions import units
from distributions.errors import DistributionError
from distributions.uncertainty import _check_half_width, z_for_confidence


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
