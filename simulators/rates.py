"""Forced acceptance by per-position rates, the mechanism vLLM's and ATOM's synthetic samplers share.

An AL resolves to the minimum-variance schedule of unconditional rates ``[1.0] * m + [d - m] + [0.0] * ...``
(:func:`distributions.units.min_variance_unconditional_rates`); per request and step, position i is accepted iff a
uniform ``u_i < c_i`` (the conditional rates), and the first rejection stops. Reproduces vLLM 0.33.0
``vllm/v1/sample/rejection_sampler.py`` (``SYNTHETIC_MODE``) and ROCm/ATOM ffdf3bb5d
``atom/model_ops/rejection_sampler.py``; each engine's sampler (``golden_al/engines/<name>/sampler.py``) cites its
own files.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from distributions import units
from distributions.acceptance import AcceptanceDistribution
from simulators.base import EngineSampler, SamplerError

__all__ = ["SyntheticRatesSampler", "per_position_simulate", "validate_rates"]


def validate_rates(rates: Sequence[float], n: int) -> list[float]:
    """Validate explicit unconditional rates exactly as vLLM does (``synthetic_acceptance_rates``), with its
    messages.

    Raises:
        SamplerError: wrong length, an entry outside [0, 1], or an increase.
    """
    rates = [float(r) for r in rates]
    if len(rates) != n:
        raise SamplerError(
            f"synthetic_acceptance_rates must have length {n}, got {rates}",
            hint="one unconditional rate per draft position: num_speculative_tokens entries",
        )
    if not all(0.0 <= r <= 1.0 for r in rates):
        raise SamplerError(f"synthetic_acceptance_rates entries must be in [0, 1], got {rates}")
    if any(rates[i] > rates[i - 1] for i in range(1, n)):
        raise SamplerError(
            f"synthetic_acceptance_rates must be non-increasing, got {rates}",
            hint="these are unconditional rates p_j = P(accepted drafts >= j), which cannot grow with j",
        )
    return rates


def per_position_simulate(
    conditional: NDArray[np.float64], size: int, rng: np.random.Generator
) -> NDArray[np.int64]:
    """Per-request walk: ``u_i < c_i`` accepts position i, the first rejection stops.

    Returns ``L = 1 + leading accepted positions``. Vectorized over requests: at
    each position only the requests still accepting draw a (float32, as on the
    device) uniform. A position with ``c_i = 1`` accepts every ``u`` in [0, 1) and
    one with ``c_i = 0`` none, so neither needs a draw.
    """
    c = np.asarray(conditional, dtype=np.float64)
    out = np.ones(size, dtype=np.int64)
    alive: NDArray[np.int64] | None = None  # None: every request is still accepting
    for ci in c:
        if ci >= 1.0:
            if alive is None:
                out += 1
            else:
                out[alive] += 1
            continue
        if ci <= 0.0:
            break
        n = size if alive is None else alive.size
        if n == 0:
            break
        accepted = rng.random(n, dtype=np.float32) < np.float32(ci)
        alive = np.flatnonzero(accepted) if alive is None else alive[accepted]
        out[alive] += 1
    return out


class SyntheticRatesSampler(EngineSampler):
    """Forced acceptance by per-position rates: the min-variance schedule of an AL, or explicit unconditional
    rates (vLLM's and ATOM's synthetic samplers derive from it)."""

    draw_unit = "request-step"
    guarantees_mean = True

    def __init__(self, rates: Sequence[float] | None = None) -> None:
        self.rates = None if rates is None else [float(r) for r in rates]

    def unconditional_rates(self, al: float | None, k: int) -> NDArray[np.float64]:
        """``p_1..p_k`` the engine resolves: explicit rates, or the min-variance schedule for ``al``."""
        k = units.check_draft_len(k)
        if self.rates is not None:
            rates = np.asarray(validate_rates(self.rates, k))
            if al is not None:
                implied = units.al_from_pmf(units.pmf_from_unconditional(rates))
                if abs(float(al) - implied) > 1e-6:
                    raise SamplerError(
                        f"AL {al:g} disagrees with the explicit rates {self.rates}, which give AL {implied:.6g}",
                        hint="give either an AL or rates; with rates the AL is 1 + sum of the rates",
                    )
            return rates
        if al is None:
            raise SamplerError("an AL is required when no explicit rates are given")
        return units.min_variance_unconditional_rates(units.check_al(al, k), k)

    def implied_al(self, k: int) -> float:
        """AL the explicit rates give (``1 + sum p_j``)."""
        return units.al_from_pmf(units.pmf_from_unconditional(self.unconditional_rates(None, k)))

    def pmf(self, al: float | None, k: int) -> AcceptanceDistribution:
        return AcceptanceDistribution.from_unconditional_rates(self.unconditional_rates(al, k))

    def simulate(self, al: float | None, k: int, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        cond = units.unconditional_to_conditional(self.unconditional_rates(al, k))
        return per_position_simulate(cond, size, rng)
