"""vLLM's synthetic rejection sampler (``rejection_sample_method: "synthetic"``).

Reproduces vLLM 0.33.0 (commit g4ba787ec9):

* ``vllm/config/speculative.py``: ``_resolve_synthetic_acceptance_rates`` takes
  exactly one of ``synthetic_acceptance_rates`` (length ``num_speculative_tokens``,
  entries in [0, 1], non-increasing) or ``synthetic_acceptance_length`` (in
  ``[1, n + 1]``), and ``_acceptance_length_to_rates`` turns a length into the
  minimum-variance schedule ``[1.0] * m + [d - m] + [0.0] * ...``
  (:func:`distributions.units.min_variance_unconditional_rates`).
* ``vllm/v1/spec_decode/utils.py``: unconditional -> conditional rates
  ``c_i = p_i / p_{i-1}`` (:func:`distributions.units.unconditional_to_conditional`).
* ``vllm/v1/sample/rejection_sampler.py`` (``SYNTHETIC_MODE``) and the V2 runner
  ``vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py``: per request, for
  each position i in order draw ``u_i ~ U(0, 1)``; accept iff ``u_i < c_i``; stop at
  the first rejection. Independent across requests and steps.

So ``P(L - 1 >= j) = p_j`` and, for the length form, ``L`` takes only
``floor(AL)`` and ``floor(AL) + 1`` with mean exactly AL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from distributions import AcceptanceDistribution, units
from simulators.base import EngineSampler, SamplerError, register

__all__ = ["VllmSynthetic", "per_position_simulate", "validate_vllm_rates"]

_UPSTREAM = (
    "vllm-project/vllm vllm/config/speculative.py _resolve_synthetic_acceptance_rates + "
    "vllm/v1/sample/rejection_sampler.py SYNTHETIC_MODE (vLLM 0.33.0, g4ba787ec9)"
)

def validate_vllm_rates(rates: Sequence[float], n: int) -> list[float]:
    """Validate ``synthetic_acceptance_rates`` exactly as vLLM does, with vLLM's messages.

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


class _SyntheticRatesSampler(EngineSampler):
    """Shared by vLLM and ATOM: min-variance schedule or explicit unconditional rates."""

    draw_unit = "request-step"
    guarantees_mean = True

    def __init__(self, rates: Sequence[float] | None = None) -> None:
        self.rates = None if rates is None else [float(r) for r in rates]

    def unconditional_rates(self, al: float | None, k: int) -> NDArray[np.float64]:
        """``p_1..p_k`` the engine resolves: explicit rates, or the min-variance schedule for ``al``."""
        k = units.check_draft_len(k)
        if self.rates is not None:
            rates = np.asarray(self._validate_rates(self.rates, k))
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

    def _validate_rates(self, rates: Sequence[float], k: int) -> list[float]:
        return validate_vllm_rates(rates, k)

    def implied_al(self, k: int) -> float:
        """AL the explicit rates give (``1 + sum p_j``)."""
        return units.al_from_pmf(units.pmf_from_unconditional(self.unconditional_rates(None, k)))

    def pmf(self, al: float | None, k: int) -> AcceptanceDistribution:
        return AcceptanceDistribution.from_unconditional_rates(self.unconditional_rates(al, k))

    def simulate(self, al: float | None, k: int, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        cond = units.unconditional_to_conditional(self.unconditional_rates(al, k))
        return per_position_simulate(cond, size, rng)


@register("vllm", "synthetic")
class VllmSynthetic(_SyntheticRatesSampler):
    """vLLM ``synthetic``: from ``synthetic_acceptance_length`` or ``synthetic_acceptance_rates``."""

    engine: ClassVar[str] = "vllm"
    method: ClassVar[str] = "synthetic"
    upstream = _UPSTREAM
    summary = (
        "per request per step: accept position i iff u_i < c_i, stop at the first rejection; "
        "a length resolves to the two-point minimum-variance schedule"
    )

    def warnings(self, al: float | None, k: int) -> list[str]:
        return [
            "vLLM images before PR #40662 do not know synthetic_acceptance_length/_rates (PR #38045 "
            "had synthetic_acceptance_rate, MRV2 only, with a geometric decay): check the image's version"
        ]
