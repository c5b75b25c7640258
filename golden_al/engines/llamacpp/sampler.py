"""llama.cpp server's synthetic acceptance (``--spec-synth-len`` / ``--spec-synth-rates``).

Reproduces ggml-org/llama.cpp at commit 0c1e570 (the tree vendored by
``llama-cpp-python==0.3.36``):

* ``common/speculative.cpp`` ``common_speculative_synth_rates_resolve``: exactly one of a
  length ``L`` in ``[1, n_max + 1]`` (the mean accepted length *including* the target
  token) or ``n_max`` unconditional rates (in [0, 1], non-increasing). From a length it
  finds ONE constant conditional rate ``p`` with ``sum_{j=1..n} p^j = L - 1`` by 32
  bisection steps on [0, 1] (``p = 1`` exactly at ``L = n + 1``, ``p = 0`` at ``L = 1``),
  and the unconditional rates are ``p, p^2, ..., p^n``: a geometric profile.
* ``common_speculative_init``: the conditional probabilities ``c_i = r_i / r_{i-1}``
  (``r_0 = 1``; 0 after a zero rate).
* ``tools/server/server-context.cpp`` ``server_sample_and_accept_synth``: per slot (request),
  for each draft position in order, accept iff ``u < c_i`` (``std::uniform_real_distribution<double>``
  on an ``std::mt19937`` seeded with the request's seed), stop at the first rejection. A
  drafted end-of-generation token is never accepted (not modelled: it ends the request).

Unlike vLLM's minimum-variance two-point schedule (``L`` in ``{floor(AL), floor(AL) + 1}``),
the geometric schedule spreads ``L`` over ``1..k+1``: same mean (to bisection precision),
larger variance.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from distributions import units
from distributions.acceptance import AcceptanceDistribution
from golden_al import plugin

__all__ = ["LlamaCppSynthetic", "geometric_rate", "resolve_rates"]

_UPSTREAM = (
    "ggml-org/llama.cpp common/speculative.cpp common_speculative_synth_rates_resolve + "
    "tools/server/server-context.cpp server_sample_and_accept_synth (commit 0c1e570, llama-cpp-python 0.3.36)"
)
_BISECTION_STEPS = 32


def geometric_rate(length: float, n_max: int) -> float:
    """The constant conditional rate ``p`` llama.cpp solves for a length, bit for bit.

    The same float64 operations in the same order as the C++ loop, so the result is
    identical to what the server uses.
    """
    n = units.check_draft_len(n_max)
    length_max = float(n) + 1.0
    if not (np.isfinite(length) and 1.0 <= length <= length_max):
        raise plugin.SamplerError(f"synthetic acceptance length must be finite and within [1, {n + 1}], got {length!r}",
                                  hint="llama.cpp's --spec-synth-len includes the target token: AL itself")
    if length == length_max:
        return 1.0
    if length <= 1.0:
        return 0.0
    p_min, p_max = 0.0, 1.0
    for _ in range(_BISECTION_STEPS):
        p_mid = 0.5 * (p_min + p_max)
        total = 0.0
        term = p_mid
        for _j in range(n):
            total += term
            term *= p_mid
        if total < length - 1.0:
            p_min = p_mid
        else:
            p_max = p_mid
    return 0.5 * (p_min + p_max)


def resolve_rates(length: float | None, n_max: int, rates: Sequence[float] | None = None) -> NDArray[np.float64]:
    """Unconditional per-position rates llama.cpp uses (``common_speculative_synth_rates_resolve``)."""
    n = units.check_draft_len(n_max)
    if (length is None) == (rates is None):
        raise plugin.SamplerError("synthetic acceptance length and rates are mutually exclusive; give exactly one",
                                  hint="--spec-synth-len L or --spec-synth-rates P0,P1,...")
    if rates is not None:
        r = [float(x) for x in rates]
        if len(r) != n:
            raise plugin.SamplerError(f"synthetic acceptance rates must contain {n} values, got {len(r)}")
        for i, x in enumerate(r):
            if not (np.isfinite(x) and 0.0 <= x <= 1.0):
                raise plugin.SamplerError("synthetic acceptance rates must be finite and within [0, 1]")
            if i > 0 and x > r[i - 1]:
                raise plugin.SamplerError("synthetic acceptance rates must be monotonically non-increasing")
        return np.asarray(r, dtype=np.float64)
    assert length is not None
    p = geometric_rate(float(length), n)
    out = []
    rate = p
    for _ in range(n):
        out.append(rate)
        rate *= p
    return np.asarray(out, dtype=np.float64)


def conditional_probs(rates: NDArray[np.float64]) -> NDArray[np.float64]:
    """``c_i = r_i / r_{i-1}`` as ``common_speculative_init`` computes them (0 after a zero rate)."""
    out = []
    prev = 1.0
    for r in rates:
        out.append(float(r) / prev if prev > 0.0 else 0.0)
        prev = float(r)
    return np.asarray(out, dtype=np.float64)


class LlamaCppSynthetic(plugin.EngineSampler):
    """llama-server ``--spec-synth-len`` (geometric) or ``--spec-synth-rates`` (explicit).

    Args:
        rates: ``--spec-synth-rates``; when given, ``al`` must be ``None`` or agree with them.
    """

    engine: ClassVar[str] = "llamacpp"
    method: ClassVar[str] = "synthetic"
    draw_unit = "request-step"
    #: a length's mean is met to the 32-step bisection's precision (|bias| < 1e-8), not exactly
    guarantees_mean = False
    upstream = _UPSTREAM
    summary = ("per request per step: accept position i iff u < r_i / r_(i-1), stop at the first rejection; a length "
               "resolves to a geometric schedule r_i = p^i (one conditional rate p by bisection)")

    def __init__(self, rates: Sequence[float] | None = None) -> None:
        self.rates = None if rates is None else [float(r) for r in rates]

    def unconditional_rates(self, al: float | None, k: int) -> NDArray[np.float64]:
        """``r_1..r_k`` llama.cpp resolves."""
        if self.rates is not None:
            r = resolve_rates(None, k, self.rates)
            if al is not None and abs(1.0 + float(r.sum()) - float(al)) > 1e-6:
                raise plugin.SamplerError(f"AL {al:g} disagrees with --spec-synth-rates {self.rates}, which give AL "
                                          f"{1.0 + float(r.sum()):.6g}")
            return r
        if al is None:
            raise plugin.SamplerError("an AL is required when no explicit rates are given")
        return resolve_rates(units.check_al(al, k), k)

    def pmf(self, al: float | None, k: int) -> AcceptanceDistribution:
        return AcceptanceDistribution.from_unconditional_rates(self.unconditional_rates(al, k))

    def simulate(self, al: float | None, k: int, size: int, rng: np.random.Generator) -> NDArray[np.int64]:
        """Per request-step: a float64 uniform per position while accepting, ``u < c_i`` accepts."""
        cond = conditional_probs(self.unconditional_rates(al, k))
        out = np.ones(size, dtype=np.int64)
        alive = np.arange(size)
        for c in cond:
            if alive.size == 0:
                break
            alive = alive[rng.random(alive.size) < c]
            out[alive] += 1
        return out

    def warnings(self, al: float | None, k: int) -> list[str]:
        if self.rates is not None or al is None:
            return []
        try:
            mine = self.pmf(al, k)
            two_point = AcceptanceDistribution.min_variance(units.check_al(al, k), k)
        except Exception:  # warnings never raise for valid input; invalid input fails in pmf
            return []
        p = geometric_rate(float(al), k)
        return [
            f"llama.cpp resolves --spec-synth-len {units.format_number(al)} at k={k} to a geometric schedule "
            f"(constant conditional rate p = {p:.6f}): L spreads over 1..{k + 1} with variance {mine.var():.4f}, "
            f"P(L = 1) = {float(mine.probs[0]):.4f}; vLLM's two-point schedule at the same mean has variance "
            f"{two_point.var():.4f} (L in {{{int(np.floor(al))}, {int(np.floor(al)) + 1}}}). Same mean AL, other "
            "per-step shape: throughput and latency under llama.cpp's injection are not vLLM's"
        ]
