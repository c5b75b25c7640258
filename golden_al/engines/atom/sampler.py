"""ATOM's forced speculative acceptance (``--spec-decode-acceptance-length`` / ``-rate``).

Reproduces ROCm/ATOM at HEAD ffdf3bb5d:

* ``atom/config.py`` ``SpeculativeConfig._resolve_synthetic_acceptance``: the length
  (in ``[1, n + 1]``) and the rate (in ``[0, 1]``, ``length = 1 + n * rate``) are
  mutually exclusive; the length resolves through ``acceptance_length_to_rates``.
* ``atom/model_ops/rejection_sampler.py``: ``acceptance_length_to_rates`` is vLLM's
  minimum-variance schedule; ``_get_synthetic_cond_rates`` gives ``c_i = p_i / p_{i-1}``
  (float32 on device); ``rejection_synthetic_sample_kernel`` walks positions per
  request, accepting while ``u < c_pos``, and stops at the first rejection. The
  uniforms come from a device generator reseeded with ``0x5EED + step`` every forward,
  so a run is reproducible; they are modelled here as independent draws.
* ``atom/config.py`` (around line 1619) rejects forced acceptance together with the
  DSpark ``confidence_schedule``.

Per request and per step the distribution is vLLM's: ``floor(AL)`` or
``floor(AL) + 1`` with mean exactly AL.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from distributions import units
from distributions.acceptance import AcceptanceDistribution
from golden_al import plugin

__all__ = ["AtomSynthetic"]


class AtomSynthetic(plugin.SyntheticRatesSampler):
    """ATOM forced acceptance: the length form, or the rate form ``(AL - 1) / k``.

    Args:
        rate: ``--spec-decode-acceptance-rate``; when given, ``al`` must be ``None``
            (ATOM rejects both knobs together).
    """

    engine: ClassVar[str] = "atom"
    method: ClassVar[str] = "synthetic"
    upstream = (
        "ROCm/ATOM atom/config.py _resolve_synthetic_acceptance + atom/model_ops/rejection_sampler.py "
        "acceptance_length_to_rates, rejection_synthetic_sample_kernel (HEAD ffdf3bb5d)"
    )
    summary = (
        "same as vLLM's length form: per request per step, min-variance two-point schedule; "
        "also takes the rate (AL-1)/k"
    )

    def __init__(self, rate: float | None = None) -> None:
        super().__init__(rates=None)
        if rate is not None and not (0.0 <= float(rate) <= 1.0):
            raise plugin.SamplerError(f"--spec-decode-acceptance-rate must be in [0, 1], got {rate!r}")
        self.rate = None if rate is None else float(rate)

    def resolve_al(self, al: float | None, k: int) -> float:
        """The AL ATOM resolves from the length or the rate knob (exactly one)."""
        k = units.check_draft_len(k)
        if self.rate is not None:
            if al is not None:
                raise plugin.SamplerError(
                    "ATOM's --spec-decode-acceptance-length and --spec-decode-acceptance-rate are "
                    "mutually exclusive; give one"
                )
            return units.al_from_acceptance_rate(self.rate, k)
        if al is None:
            raise plugin.SamplerError("ATOM needs an acceptance length or rate")
        return units.check_al(al, k)

    def pmf(self, al: float | None, k: int) -> AcceptanceDistribution:
        return super().pmf(self.resolve_al(al, k), k)

    def simulate(self, al: float | None, k: int, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        return super().simulate(self.resolve_al(al, k), k, size, rng)
