"""The curve of a prompt set: a mixture of its prompts' chain-draft profiles.

A run's AL at draft length ``k`` pools verify steps over prompts, ``AL(k) = sum(tokens) /
sum(steps)``. A prompt with its own curve ``AL_p(k)`` spends ``T_p / AL_p(k)`` verify steps on its
``T_p`` output tokens (renewal: each step emits ``AL_p(k)`` tokens on average), so

    1 / AL(k) = sum_p (T_p / T) / AL_p(k):

the reciprocal of the pooled curve is a *linear* mixture of the prompts' reciprocal curves, with
weights (the prompts' shares of the output tokens) that are the same at every ``k``. Prompts
differ (one is echoed and accepts every draft, another is free prose), so the pooled conditional
acceptance rises with position even when every prompt's own falls: the survivors of long accepted
runs are the easy prompts. No single profile follows that; a mixture does by construction.

:func:`deletion_statistics` fits each prompt's profile from the decaying family ``c_j = p r^(j-1)``
(:class:`distributions.families.DecayingConditional`; ``r = 1`` is the geometric one) on the grid
:data:`P_GRID` x :data:`R_GRID` and fits the token shares ``w >= 0``, ``sum(w) = 1`` by generalized
least squares in ``y = 1 / AL`` coordinates, where the model is linear: an exact non-negative least
squares problem, with the covariance of ``y`` from the points' joint covariance by the delta method
(``cov_y = D cov D``, ``D = diag(-1 / AL^2)``). The set of curves it can reach is convex and holds
every homogeneous decaying profile, every Beta- or group-heterogeneous prompt set of them, and
nothing that decreases in ``k`` (its increments do not grow either: the pooled conditional rates
``p_j / p_(j-1)`` rise, the increments ``p_j`` still fall, so the model-free drop and jump checks
stay valid). A misfit therefore cannot be absorbed by moving the whole curve:
a curve inside the set is followed point by point, and a point outside it is named by
:func:`deletion_statistics` (how much the misfit falls when that point alone is set aside).

The grid's decay stops at :data:`MIN_DECAY`: a prompt whose acceptance halved at every position
would let the mixture bend its first point away from the rest, and a planted error at ``k = 1``
would go unseen (``experiments/fit-calibration``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray

from distributions import units
from distributions.acceptance import AcceptanceDistribution
from distributions.errors import FitError

__all__ = ["MIN_DECAY", "P_GRID", "R_GRID", "MixtureFit", "deletion_statistics"]

#: Per-prompt first-position acceptance ``p`` of the grid's profiles.
P_GRID: tuple[float, ...] = tuple(float(x) for x in np.linspace(0.0, 1.0, 41))
#: The smallest per-position decay ``r`` a prompt's profile may have (see the module's note).
MIN_DECAY = 0.8
#: Per-position decay ``r`` of the grid's profiles, from 1 (geometric) down to :data:`MIN_DECAY`.
R_GRID: tuple[float, ...] = tuple(float(x) for x in np.linspace(1.0, MIN_DECAY, 9))


@lru_cache(maxsize=1)
def _grid() -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``(p, r)`` of every grid profile, in the order of :attr:`MixtureFit.weights`."""
    return np.repeat(np.asarray(P_GRID), len(R_GRID)), np.tile(np.asarray(R_GRID), len(P_GRID))


@lru_cache(maxsize=16)
def _component_rates(big_k: int) -> NDArray[np.float64]:
    """Conditional rates ``c_1..c_K`` of every grid profile, shape ``(components, K)``."""
    p, r = _grid()
    return np.asarray(p[:, None] * r[:, None] ** np.arange(big_k)[None, :], dtype=np.float64)


def _component_curves(ks: NDArray[np.int64]) -> NDArray[np.float64]:
    """``AL_m(k)`` of every grid profile at ``ks``, shape ``(len(ks), components)``."""
    rates = _component_rates(int(ks.max()))
    al = 1.0 + np.cumsum(np.cumprod(rates, axis=1), axis=1)
    return np.asarray(al[:, ks - 1].T, dtype=np.float64)


@dataclass(frozen=True)
class MixtureFit:
    """Token shares of the grid's prompt profiles that best explain a curve.

    Attributes:
        ks: the draft lengths fitted (sorted).
        weights: token share of each grid profile (``sum = 1``), in :func:`components` order.
        chi2: the generalized least-squares misfit ``(y - G w)' cov_y^-1 (y - G w)`` in ``y = 1/AL``.
        big_k: the largest draft length the fit describes.
    """

    ks: NDArray[np.int64]
    weights: NDArray[np.float64]
    chi2: float
    big_k: int

    def curve(self, ks: ArrayLike | None = None) -> NDArray[np.float64]:
        """Pooled AL at ``ks`` (default ``1..K``): ``1 / sum_m w_m / AL_m(k)``."""
        k = np.arange(1, self.big_k + 1) if ks is None else units.check_draft_lens(ks)
        return np.asarray(1.0 / ((1.0 / _component_curves(k)) @ self.weights), dtype=np.float64)

    def distribution(self, k: int) -> AcceptanceDistribution:
        """The pmf of ``L`` over the pooled verify steps at draft length ``k``: each profile's pmf, weighted by
        its share of the steps (``w_m / AL_m(k)``, normalized)."""
        k = units.check_draft_len(k)
        rates = _component_rates(max(k, self.big_k))[:, :k]
        steps = self.weights / _component_curves(np.array([k]))[0]
        pmfs = np.stack([units.pmf_from_unconditional(np.cumprod(c)) for c in rates[self.weights > 0]])
        share = steps[self.weights > 0] / steps.sum()
        return AcceptanceDistribution.from_pmf(share @ pmfs)

    def components(self) -> list[tuple[float, float, float]]:
        """``(p, r, token share)`` of each grid profile with a share, largest share first."""
        p, r = _grid()
        on = np.flatnonzero(self.weights > 1e-9)
        return sorted(((float(p[i]), float(r[i]), float(self.weights[i])) for i in on), key=lambda t: -t[2])

    def summary(self) -> str:
        """Token-weighted mean and spread of the prompts' first-position acceptance, and their mean decay."""
        p, r = _grid()
        mean_p = float(self.weights @ p)
        sd_p = math.sqrt(max(float(self.weights @ (p - mean_p) ** 2), 0.0))
        return f"prompts' acceptance p = {mean_p:.3f} +- {sd_p:.3f} (token-weighted), decay r = {float(self.weights @ r):.3f}"


def _check(ks: ArrayLike, als: ArrayLike, cov: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.float64],
                                                                    NDArray[np.float64]]:
    k = units.check_draft_lens(ks)
    a = np.asarray(als, dtype=np.float64)
    c = np.asarray(cov, dtype=np.float64)
    if a.shape != k.shape or c.shape != (k.size, k.size):
        raise FitError(f"got {k.size} draft lengths, {a.size} AL values and a {c.shape} covariance")
    if np.unique(k).size != k.size or np.any(np.diff(k) <= 0):
        raise FitError(f"draft lengths must be distinct and sorted, got {k.tolist()}")
    for kk, aa in zip(k, a, strict=True):
        units.check_al(float(aa), int(kk))
    return k, a, c


def _solve(k: NDArray[np.int64], a: NDArray[np.float64], cov: NDArray[np.float64]) -> tuple[NDArray[np.float64], float]:
    from scipy import linalg, optimize  # lazy: keeps `import distributions` light for the CLI

    jac = np.diag(-1.0 / a**2)
    try:
        chol = linalg.cholesky(jac @ cov @ jac, lower=True)
    except linalg.LinAlgError:
        raise FitError("cov is not positive definite", hint="add the continuity floor to its diagonal") from None
    lhs = linalg.solve_triangular(chol, 1.0 / _component_curves(k), lower=True)
    rhs = linalg.solve_triangular(chol, 1.0 / a, lower=True)
    # sum(w) = 1 as a heavily weighted row: the shares of all the output tokens
    big = 1e4 * (1.0 + float(np.abs(lhs).max()))
    w, _ = optimize.nnls(np.vstack((lhs, np.full((1, lhs.shape[1]), big))), np.concatenate((rhs, [big])),
                         maxiter=50 * lhs.shape[1])
    w = w / w.sum()
    resid = rhs - lhs @ w
    return w, float(resid @ resid)


def deletion_statistics(ks: ArrayLike, als: ArrayLike,
                        cov: ArrayLike) -> tuple[MixtureFit, NDArray[np.float64], list[MixtureFit | None]]:
    """The fit to every point, and for each point ``i`` how much its misfit falls when ``i`` is set aside:
    ``chi2(all) - chi2(all but i)``, with the fits without each ``i``. A clean point costs about one chi-square
    degree of freedom; a point the others cannot reach costs its whole distance from them."""
    k, a, c = _check(ks, als, cov)
    big_k = int(k.max())
    w, chi2 = _solve(k, a, c)
    full = MixtureFit(ks=k, weights=w, chi2=chi2, big_k=big_k)
    drop = np.zeros(k.size)
    fits: list[MixtureFit | None] = [None] * k.size
    for i in range(k.size):
        sub = np.delete(np.arange(k.size), i)
        if sub.size == 0:
            continue
        wi, ci = _solve(k[sub], a[sub], c[np.ix_(sub, sub)])
        drop[i] = max(chi2 - ci, 0.0)
        fits[i] = MixtureFit(ks=k[sub], weights=wi, chi2=ci, big_k=big_k)
    return full, drop, fits
