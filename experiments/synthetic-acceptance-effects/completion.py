"""Monte Carlo of requests decoding to their length in batches: per-request latency and each batch's drain time.

Checked against the exact renewal percentiles of :func:`simulators.batch.completion_percentiles`; with one draw per
batch step (SGLang) a batch's requests finish together, with one per request-step the batch waits for its slowest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from distributions.acceptance import AcceptanceDistribution
from simulators.base import SamplerError, fast_inverse_cdf
from simulators.batch import DEFAULT_QUANTILES, _check_positive


@dataclass(frozen=True)
class CompletionResult:
    """Verify steps each simulated request needed, and each batch's drain time."""

    steps: NDArray[np.int64]
    output_tokens: NDArray[np.int64]
    batch_size: int
    shared: bool

    @property
    def batch_drain_steps(self) -> NDArray[np.int64]:
        """Steps until the last request of each batch finished, shape (num_batches,)."""
        return self.steps.reshape(-1, self.batch_size).max(axis=1)

    def percentiles(self, quantiles: Sequence[float] = DEFAULT_QUANTILES) -> dict[str, float]:
        """Per-request step-count percentiles (``p50`` ...) and mean."""
        out = {f"p{q:g}": float(np.percentile(self.steps, q, method="inverted_cdf")) for q in quantiles}
        out["mean"] = float(self.steps.mean())
        return out

    def drain_percentiles(self, quantiles: Sequence[float] = DEFAULT_QUANTILES) -> dict[str, float]:
        """Percentiles and mean of the per-batch drain time in steps."""
        drain = self.batch_drain_steps
        out = {f"p{q:g}": float(np.percentile(drain, q, method="inverted_cdf")) for q in quantiles}
        out["mean"] = float(drain.mean())
        return out


def simulate_completion(
    dist: AcceptanceDistribution,
    output_tokens: int | ArrayLike,
    rng: np.random.Generator,
    *,
    num_requests: int,
    batch_size: int = 1,
    shared: bool = False,
) -> CompletionResult:
    """Monte Carlo of requests decoding ``output_tokens`` each, in batches of ``batch_size``.

    Requests ``i`` and ``j`` share a batch when ``i // batch_size == j // batch_size``;
    with ``shared=True`` a batch's requests get the same ``L`` every step (SGLang).
    ``num_requests`` must be a multiple of ``batch_size``.
    """
    r = _check_positive("requests", num_requests)
    b = _check_positive("batch size", batch_size)
    if r % b:
        raise SamplerError(f"requests ({r}) must be a multiple of the batch size ({b})")
    tokens = np.broadcast_to(np.asarray(output_tokens, dtype=np.int64), (r,)).copy()
    if np.any(tokens < 1):
        raise SamplerError("output tokens must be >= 1 for every request")
    remaining = tokens.copy()
    steps = np.zeros(r, dtype=np.int64)
    batch_of = np.arange(r) // b
    probs = dist.probs
    while True:
        active = np.flatnonzero(remaining > 0)
        if active.size == 0:
            break
        if shared:
            per_batch = fast_inverse_cdf(probs, r // b, rng)
            draws = per_batch[batch_of[active]]
        else:
            draws = fast_inverse_cdf(probs, active.size, rng)
        remaining[active] -= draws
        steps[active] += 1
    return CompletionResult(steps=steps, output_tokens=tokens, batch_size=b, shared=shared)
