"""Synthetic request populations with known AL, for calibrating intervals against truth.

Real text is heterogeneous across requests: one prompt is echoed and accepts every draft,
another is free prose. A :class:`RequestPopulation` draws each request's acceptance
probability ``p`` from a mixture of Beta components and its output length (tokens) from a
log-uniform range (times the component's length factor, so "few long echo requests" can
be modelled). Within a request, drafts are accepted left to right, each with probability
``p`` given the previous ones (a constant conditional profile, as
:class:`distributions.families.ConstantConditional`), so a verify step emits
``L = 1 + min(Geometric(p), k)`` tokens, and the request runs verify steps until its
output reaches its length. Requests with at most :data:`EXACT_STEPS` expected steps are
simulated step by step; longer ones use the renewal central limit theorem for the step
count (``accepted = tokens - steps``), exact to well under the intervals' resolution.

The truth a population's intervals must cover is the ratio of expectations
``1 + E[accepted] / E[steps]`` (:meth:`RequestPopulation.true_al`), the limit of the
estimator AL = 1 + sum(accepted) / sum(steps) over many requests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from distributions.errors import DistributionError

__all__ = ["EXACT_STEPS", "Component", "RequestPopulation"]

#: Requests expected to take at most this many verify steps are simulated step by step.
EXACT_STEPS = 64


@dataclass(frozen=True)
class Component:
    """One Beta component of the per-request acceptance probability.

    Attributes:
        weight: mixture weight (normalized over the population's components).
        a / b: Beta parameters of ``p``.
        length_factor: multiplies the drawn output length (e.g. 8 for long echo requests).
    """

    weight: float
    a: float
    b: float
    length_factor: float = 1.0
    #: position dependence: the conditional rate at position j is ``p * decay^(j-1)`` (1: constant)
    decay: float = 1.0


@dataclass(frozen=True)
class RequestPopulation:
    """A population of requests: draft length, acceptance mixture, output lengths in tokens."""

    draft_len: int
    components: tuple[Component, ...]
    min_tokens: int = 128
    max_tokens: int = 128
    #: output lengths: ``loguniform`` on [min_tokens, max_tokens], or ``lognormal`` with median
    #: ``min_tokens`` and log-sd ``length_sigma`` (heavy right tail), capped at ``max_tokens``
    lengths: str = "loguniform"
    length_sigma: float = 1.0

    def __post_init__(self) -> None:
        if self.draft_len < 1 or not self.components or not 2 <= self.min_tokens <= self.max_tokens:
            raise DistributionError(f"invalid population {self!r}",
                                    hint="need k >= 1, a component, and 2 <= min_tokens <= max_tokens")

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Per-request ``(accepted drafts, verify steps)``, each of ``shape``."""
        acc, steps, _ = self.sample_labelled(rng, shape)
        return acc, steps

    def sample_labelled(self, rng: np.random.Generator,
                        shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`sample` with each request's component (an index into :attr:`components`), the same draws."""
        cond, tokens, comp = self._labelled_requests(rng, shape)
        acc, steps = self._run(rng, cond, tokens, self.draft_len)
        return acc, steps, comp

    def sample_ks(self, rng: np.random.Generator, n: int, ks: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """``n`` requests measured at every draft length in ``ks`` (one run: each request keeps its
        acceptance and output length across k, as a replay of one prompt set does): ``(accepted,
        steps)`` of shape ``(n, len(ks))``. ``max(ks)`` must not exceed :attr:`draft_len`."""
        if not ks or max(ks) > self.draft_len or min(ks) < 1:
            raise DistributionError(f"draft lengths {ks} must lie in 1..{self.draft_len}")
        cond, tokens = self._requests(rng, (n,))
        out = [self._run(rng, cond[:, :k], tokens, k) for k in ks]
        return np.stack([a for a, _ in out], axis=1), np.stack([s for _, s in out], axis=1)

    def _requests(self, rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Each request's conditional rates ``c_1..c_K`` (shape + (K,)) and output tokens."""
        cond, tokens, _ = self._labelled_requests(rng, shape)
        return cond, tokens

    def _labelled_requests(self, rng: np.random.Generator,
                           shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`_requests` and each request's component."""
        k = self.draft_len
        w = np.array([c.weight for c in self.components], dtype=np.float64)
        comp = rng.choice(len(self.components), size=shape, p=w / w.sum())
        a = np.array([c.a for c in self.components])[comp]
        b = np.array([c.b for c in self.components])[comp]
        p = np.clip(rng.beta(a, b), 1e-9, 1.0 - 1e-12)
        lf = np.array([c.length_factor for c in self.components])[comp]
        decay = np.array([c.decay for c in self.components])[comp]
        lo, hi = np.log(self.min_tokens), np.log(self.max_tokens)
        if self.lengths == "lognormal":
            raw = np.minimum(np.exp(rng.normal(lo, self.length_sigma, size=shape)), self.max_tokens)
        else:
            raw = np.exp(rng.uniform(lo, hi, size=shape))
        tokens = np.maximum(np.round(raw * lf), 2.0)
        cond = np.clip(p[..., None] * decay[..., None] ** np.arange(k), 1e-12, 1.0 - 1e-12)
        return cond, tokens, comp

    def _run(self, rng: np.random.Generator, cond: np.ndarray, tokens: np.ndarray,
             k: int) -> tuple[np.ndarray, np.ndarray]:
        """Verify steps until each request's output reaches its tokens, at draft length ``k``."""
        shape = tokens.shape
        j = np.arange(k + 1)
        surv = np.concatenate([np.ones((*shape, 1)), np.cumprod(cond, axis=-1)], axis=-1)  # P(X >= j), j=0..k
        pmf = surv.copy()
        pmf[..., :k] -= surv[..., 1:]
        mu = (pmf * j).sum(-1)
        var = (pmf * j * j).sum(-1) - mu**2
        mean_steps = tokens / (1.0 + mu)
        steps = np.maximum(np.round(rng.normal(mean_steps, np.sqrt(tokens * var / (1.0 + mu) ** 3))), 1.0)
        accepted = np.clip(tokens - steps, 0.0, k * steps)
        exact = np.nonzero(mean_steps <= EXACT_STEPS)
        if exact[0].size:
            self._exact(rng, cond[exact], tokens[exact], accepted, steps, exact)
        return accepted, steps

    def _exact(self, rng: np.random.Generator, cond: np.ndarray, tokens: np.ndarray,
               accepted: np.ndarray, steps: np.ndarray, where: tuple[np.ndarray, ...]) -> None:
        """Step-by-step simulation of short requests (conditional rates ``cond``, one row per request),
        written into ``accepted``/``steps`` at ``where``."""
        max_steps = int(min(tokens.max(), 3 * EXACT_STEPS + 40))
        n = cond.shape[0]
        chunk = max(1, 4_000_000 // (max_steps * max(1, cond.shape[1] // 4)))
        out_a = np.empty(n)
        out_s = np.empty(n)
        surv = np.cumprod(cond, axis=1)  # P(X >= j), j = 1..k
        for i in range(0, n, chunk):
            sv, tt = surv[i:i + chunk], tokens[i:i + chunk]
            u = rng.random((sv.shape[0], max_steps))
            # X = #{j : u < P(X >= j)} (inverse cdf: the survival is non-increasing in j)
            x = (u[:, :, None] < sv[:, None, :]).sum(axis=2).astype(np.float64)
            cum = np.cumsum(1.0 + x, axis=1)
            hit = cum >= tt[:, None]
            last = np.where(hit.any(axis=1), hit.argmax(axis=1), max_steps - 1)
            out_s[i:i + chunk] = last + 1
            out_a[i:i + chunk] = cum[np.arange(sv.shape[0]), last] - (last + 1)
        accepted[where] = out_a
        steps[where] = out_s

    def true_al(self, rng: np.random.Generator, draws: int = 400_000) -> float:
        """``1 + E[accepted] / E[steps]`` by Monte Carlo over ``draws`` requests."""
        acc, st = self.sample(rng, (draws,))
        return 1.0 + float(acc.sum() / st.sum())
