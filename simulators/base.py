"""What every engine sampler offers (:class:`EngineSampler`) and the errors a sampler raises.

An :class:`EngineSampler` answers one question: *given an injected AL and draft
length k, what does this engine really emit per verify step?* It gives

* :meth:`~EngineSampler.pmf`: the exact pmf of ``L`` (tokens per request-step,
  accepted drafts + bonus) that the engine realizes;
* :meth:`~EngineSampler.sample`: fast draws of ``L`` (inverse cdf of that pmf);
* :meth:`~EngineSampler.simulate`: draws made the way the engine makes them
  (normal-clamp-round, per-position uniforms against conditional rates, ...),
  vectorized; tests use it to check :meth:`~EngineSampler.pmf` independently;
* :meth:`~EngineSampler.warnings`: what a user must know (bias, silently
  disabled forcing, impossible targets);
* :attr:`~EngineSampler.draw_unit`: ``"batch-step"`` when one ``L`` is drawn per
  verify step for the whole batch (SGLang), ``"request-step"`` when every request
  draws its own (vLLM, TensorRT-LLM, ATOM).

Each engine's samplers live in its folder (``golden_al/engines/<name>/sampler.py``) and its profile names
them by method (:attr:`golden_al.plugin.profile.SimulateSupport.samplers`);
:func:`golden_al.plugin.registry.get_sampler` finds one by ``(engine, method)``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Literal

import numpy as np
from numpy.typing import NDArray

from distributions import units
from distributions.acceptance import AcceptanceDistribution
from distributions.errors import DistributionError

__all__ = [
    "DrawUnit",
    "EngineSampler",
    "ForcingDisabledError",
    "SamplerError",
    "UnknownSamplerError",
    "fast_inverse_cdf",
]

DrawUnit = Literal["batch-step", "request-step"]


class SamplerError(DistributionError):
    """Bad input to an engine sampler (a :class:`DistributionError`, so the CLI exits 2)."""


class UnknownSamplerError(SamplerError):
    """No sampler is registered under the requested engine or method."""


class ForcingDisabledError(SamplerError):
    """The engine would ignore the injected value and run *real* acceptance.

    Raised by :meth:`EngineSampler.pmf` where no synthetic pmf exists: TensorRT-LLM
    with ``F = AL - 1 = 0`` (0 means "off"), or a fractional ``F`` on its two-model
    path (``int()`` fails and forcing silently turns off).
    """


def fast_inverse_cdf(probs: NDArray[np.float64], size: int | tuple[int, ...], rng: np.random.Generator) -> NDArray[np.int64]:
    """Draw ``L`` (1-based) from ``probs`` by inverse cdf, as fast as numpy allows.

    One uniform per draw. A point mass needs none; two adjacent atoms (every
    two-point engine schedule) are a single comparison; otherwise the count of
    cdf thresholds at or below ``u`` (one vectorized comparison per atom, faster
    than ``np.searchsorted`` for the <= 17 atoms of a draft pmf).
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError("rng must be a numpy.random.Generator (use numpy.random.default_rng(seed))")
    probs = np.asarray(probs, dtype=np.float64)
    nz = np.flatnonzero(probs > 0.0)
    if nz.size == 1:
        return np.full(size, nz[0] + 1, dtype=np.int64)
    if nz.size == 2 and nz[1] == nz[0] + 1:
        u = rng.random(size)
        out = (u >= probs[nz[0]]).astype(np.int64)
        out += nz[0] + 1
        return out
    cdf = np.cumsum(probs)
    u = rng.random(size)
    out = np.full(u.shape, nz[0] + 1, dtype=np.int64)
    # L = 1 + #{j : cdf[j] <= u}; atoms below the first nonzero one never count.
    for j in range(nz[0], nz[-1]):
        out += u >= cdf[j]
    return out


class EngineSampler(ABC):
    """One engine's synthetic-acceptance sampler for one method."""

    #: engine name as the CLI spells it (``sglang``, ``vllm``, ``trtllm``, ``atom``)
    engine: ClassVar[str]
    #: method name as the engine spells it (``match-expected``, ``synthetic``, ...)
    method: ClassVar[str]
    #: ``"batch-step"`` (one draw per verify step for the whole batch) or ``"request-step"``
    draw_unit: ClassVar[DrawUnit]
    #: whether E[L] equals the injected AL for every AL in [1, k+1] the engine accepts
    guarantees_mean: ClassVar[bool]
    #: the upstream file(s) and version this sampler reproduces
    upstream: ClassVar[str]
    #: one line saying what the sampler does
    summary: ClassVar[str]

    @property
    def name(self) -> str:
        """``engine/method``."""
        return f"{self.engine}/{self.method}"

    def check(self, al: float, k: int) -> tuple[float, int]:
        """Validate ``(al, k)``: ``k >= 1`` and ``1 <= al <= k + 1``."""
        k = units.check_draft_len(k)
        return units.check_al(al, k), k

    @abstractmethod
    def pmf(self, al: float, k: int) -> AcceptanceDistribution:
        """Exact pmf of ``L`` the engine realizes for injected ``al`` at draft length ``k``."""

    def sample(self, al: float, k: int, size: int | tuple[int, ...], rng: np.random.Generator) -> NDArray[np.int64]:
        """``size`` draws of ``L`` (one per :attr:`draw_unit`), by inverse cdf of :meth:`pmf`."""
        return fast_inverse_cdf(self.pmf(al, k).probs, size, rng)

    @abstractmethod
    def simulate(self, al: float, k: int, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        """``size`` draws of ``L`` made the way the engine makes them (vectorized)."""

    def warnings(self, al: float, k: int) -> list[str]:
        """What a user must know about this (al, k) on this engine. Never raises for valid input."""
        return []

    def describe(self) -> dict[str, Any]:
        """Static facts about the sampler (for JSON output)."""
        return {
            "name": self.name,
            "engine": self.engine,
            "method": self.method,
            "draw_unit": self.draw_unit,
            "guarantees_mean": self.guarantees_mean,
            "upstream": self.upstream,
            "summary": self.summary,
        }

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
