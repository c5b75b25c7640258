"""A batch of B requests over S verify steps, and per-request completion in steps.

Two draw units exist (sgl-project/sglang ``python/sglang/srt/speculative/spec_utils.py``, one draw per
batch step; vLLM ``vllm/v1/sample/rejection_sampler.py``, one per request-step): SGLang draws **one** ``L`` per verify step
for the whole batch (``shared=True``); vLLM, TensorRT-LLM and ATOM draw one per
request per step (``shared=False``). Both give every request the same marginal
``L`` and the same mean, but they differ in everything a batch sees:

* per-step batch tokens ``T = sum_i L_i``: ``Var(T) = B^2 var(L)`` when shared,
  ``B var(L)`` when independent, so the shared draw's variance is ``B`` times
  larger;
* the correlation between concurrent requests' ``L``: 1 when shared, 0 otherwise;
* how a batch drains: with a shared draw requests of equal length finish on the
  same step; with independent draws the batch waits for its slowest request.

:func:`completion_steps_pmf` gives the exact distribution of the number of verify
steps a request needs to emit ``n`` tokens (a renewal count, by dynamic
programming), so latency tails (P50/P90/P99) of a two-point schedule and a
measured-shaped distribution with the same mean can be compared exactly (the Monte Carlo of whole batches
draining is experiments/synthetic-acceptance-effects/completion.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from distributions.acceptance import AcceptanceDistribution
from simulators.base import SamplerError, fast_inverse_cdf

__all__ = [
    "BatchResult",
    "completion_percentiles",
    "completion_steps_pmf",
    "simulate_batch",
]

#: Draws generated per chunk (bounds memory at ~8 bytes each).
_CHUNK_DRAWS = 1 << 22
DEFAULT_QUANTILES: tuple[float, ...] = (50.0, 90.0, 99.0)


def _check_positive(name: str, value: int) -> int:
    if isinstance(value, bool) or int(value) != value or value < 1:
        raise SamplerError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class BatchResult:
    """What B requests realized over S verify steps.

    Attributes:
        shared: one draw per step for the whole batch (SGLang) or per request.
        per_request_al: realized AL of each request (tokens / steps), shape (B,).
        per_step_tokens: tokens the whole batch emitted in each step, shape (S,).
        per_request_var: sample variance of each request's L over the steps, shape (B,).
    """

    shared: bool
    batch_size: int
    num_steps: int
    per_request_al: NDArray[np.float64]
    per_step_tokens: NDArray[np.int64]
    per_request_var: NDArray[np.float64]

    @property
    def per_step_al(self) -> NDArray[np.float64]:
        """Mean tokens per request in each step (the batch's per-step AL), shape (S,)."""
        return self.per_step_tokens / self.batch_size

    @property
    def mean_al(self) -> float:
        """AL over all request-steps."""
        return float(self.per_step_tokens.sum() / (self.batch_size * self.num_steps))

    @property
    def per_step_tokens_var(self) -> float:
        """Sample variance (ddof=1) of the batch's tokens per step."""
        return float(np.var(self.per_step_tokens, ddof=1)) if self.num_steps > 1 else float("nan")

    @property
    def mean_pairwise_correlation(self) -> float:
        """Average correlation of ``L`` between two concurrent requests (nan if undefined).

        From ``Var(T) = sum_i s_i^2 + rho * sum_{i != j} s_i s_j`` with the per-request
        standard deviations ``s_i``, so it needs no B x B matrix.
        """
        s = np.sqrt(np.clip(self.per_request_var, 0.0, None))
        denom = s.sum() ** 2 - np.sum(s**2)
        if self.batch_size < 2 or self.num_steps < 2 or denom <= 0:
            return float("nan")
        return float((self.per_step_tokens_var - np.sum(s**2)) / denom)

    def summary(self) -> dict[str, Any]:
        """Plain numbers for JSON and tables."""
        rho = self.mean_pairwise_correlation
        return {
            "draws": "one per step for the whole batch" if self.shared else "one per request per step",
            "batch_size": self.batch_size,
            "steps": self.num_steps,
            "mean_al": self.mean_al,
            "per_step_tokens_mean": float(self.per_step_tokens.mean()),
            "per_step_tokens_std": float(np.sqrt(self.per_step_tokens_var)) if self.num_steps > 1 else None,
            "per_step_al_std": float(np.std(self.per_step_al, ddof=1)) if self.num_steps > 1 else None,
            "per_request_al_min": float(self.per_request_al.min()),
            "per_request_al_max": float(self.per_request_al.max()),
            "per_request_al_std": float(np.std(self.per_request_al, ddof=1)) if self.batch_size > 1 else 0.0,
            "mean_pairwise_correlation": None if np.isnan(rho) else rho,
        }


def simulate_batch(
    dist: AcceptanceDistribution,
    batch_size: int,
    num_steps: int,
    rng: np.random.Generator,
    *,
    shared: bool,
) -> BatchResult:
    """Run ``batch_size`` requests for ``num_steps`` verify steps, drawing ``L`` from ``dist``.

    Args:
        shared: True for one draw per step applied to every request (SGLang),
            False for independent draws per request per step.
    """
    b = _check_positive("batch size", batch_size)
    s = _check_positive("steps", num_steps)
    probs = dist.probs
    if shared:
        draws = fast_inverse_cdf(probs, s, rng)
        per_step = draws * b
        total = float(draws.sum())
        var = float(np.var(draws, ddof=1)) if s > 1 else 0.0
        return BatchResult(
            shared=True,
            batch_size=b,
            num_steps=s,
            per_request_al=np.full(b, total / s),
            per_step_tokens=per_step.astype(np.int64),
            per_request_var=np.full(b, var),
        )
    per_step = np.empty(s, dtype=np.int64)
    sums = np.zeros(b, dtype=np.float64)
    sumsq = np.zeros(b, dtype=np.float64)
    rows = max(1, _CHUNK_DRAWS // b)
    for start in range(0, s, rows):
        stop = min(s, start + rows)
        draws = fast_inverse_cdf(probs, (stop - start, b), rng)
        per_step[start:stop] = draws.sum(axis=1)
        sums += draws.sum(axis=0)
        sumsq += np.square(draws, dtype=np.float64).sum(axis=0)
    per_request_var = (sumsq - sums**2 / s) / (s - 1) if s > 1 else np.zeros(b)
    return BatchResult(
        shared=False,
        batch_size=b,
        num_steps=s,
        per_request_al=sums / s,
        per_step_tokens=per_step,
        per_request_var=np.clip(per_request_var, 0.0, None),
    )


# ---------------------------------------------------------------------- completion


def completion_steps_pmf(dist: AcceptanceDistribution, output_tokens: int) -> NDArray[np.float64]:
    """Exact pmf of the verify steps a request needs to emit ``output_tokens`` tokens.

    ``out[s] = P(min{s : L_1 + ... + L_s >= n} = s)`` for iid ``L`` from ``dist``
    (the last step may overshoot; the engine then stops at the length limit).
    Computed by propagating the distribution of tokens emitted so far, O(n^2 k).
    """
    n = _check_positive("output tokens", output_tokens)
    probs = dist.probs
    step_kernel = np.concatenate(([0.0], probs))  # index = tokens emitted in one step
    alive = np.zeros(n)
    alive[0] = 1.0  # mass over "tokens emitted so far" among unfinished requests
    out = np.zeros(n + 1)
    for s in range(1, n + 1):
        nxt = np.convolve(alive, step_kernel)
        out[s] = nxt[n:].sum()
        alive = nxt[:n]
        if alive.sum() < 1e-15:
            break
    out[-1] += max(0.0, 1.0 - out.sum())  # float dust: n steps always suffice (L >= 1)
    return out


def completion_percentiles(
    dist: AcceptanceDistribution,
    output_tokens: int,
    quantiles: Sequence[float] = DEFAULT_QUANTILES,
) -> dict[str, float]:
    """Exact step-count percentiles (``{"p50": ..., "p90": ..., "p99": ..., "mean": ...}``)."""
    pmf = completion_steps_pmf(dist, output_tokens)
    cdf = np.cumsum(pmf)
    out: dict[str, float] = {}
    for q in quantiles:
        out[f"p{q:g}"] = float(np.searchsorted(cdf, q / 100.0 - 1e-12, side="left"))
    out["mean"] = float(np.dot(np.arange(pmf.size), pmf))
    out["std"] = float(np.sqrt(max(0.0, np.dot(np.arange(pmf.size) ** 2, pmf) - out["mean"] ** 2)))
    return out
