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

from typing import ClassVar

from golden_al import plugin

__all__ = ["VllmSynthetic"]

_UPSTREAM = (
    "vllm-project/vllm vllm/config/speculative.py _resolve_synthetic_acceptance_rates + "
    "vllm/v1/sample/rejection_sampler.py SYNTHETIC_MODE (vLLM 0.33.0, g4ba787ec9)"
)

class VllmSynthetic(plugin.SyntheticRatesSampler):
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
