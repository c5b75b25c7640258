"""Parametric families of per-position acceptance for chain drafts.

Both families are written as conditional profiles ``c_j = P(L-1 >= j | L-1 >= j-1)``
(draft position ``j`` accepted given every earlier one was), so a single
instance gives the pmf and AL at every draft length ``k`` through the one
curve formula :func:`distributions.units.al_curve_from_conditional`:

* :class:`ConstantConditional`: ``c_j = c`` (one parameter). ``L - 1`` is a
  geometric variable truncated at ``k``: ``P(L = i + 1) = c^i (1 - c)`` for
  ``i < k``, ``P(L = k + 1) = c^k``, and ``AL(k) = 1 + c (1 - c^k) / (1 - c)``.
  This is the "i.i.d. per-token acceptance" model of the speculative-decoding
  papers (Leviathan et al. 2023).
* :class:`DecayingConditional`: ``c_j = c1 * r^(j - 1)`` with ``c1, r`` in
  ``[0, 1]`` (two parameters): acceptance that decays geometrically with depth,
  as drafts drift further from the target. ``r = 1`` is the constant family.
  One mean AL at one ``k`` does not identify both parameters: fix ``r`` and
  solve for ``c1`` (:meth:`DecayingConditional.from_al`), or fit both to AL at
  two or more draft lengths (:meth:`DecayingConditional.fit`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from distributions import units
from distributions.acceptance import AcceptanceDistribution
from distributions.errors import DistributionError, FitError

__all__ = ["ConstantConditional", "DecayingConditional"]


def _check_unit(value: float, name: str) -> float:
    v = float(value)
    if not np.isfinite(v) or not 0.0 <= v <= 1.0:
        raise DistributionError(f"{name} must lie in [0, 1], got {value!r}")
    return v


def _curve_data(ks: ArrayLike, als: ArrayLike, weights: ArrayLike | None) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    k = units.check_draft_lens(ks)
    a = np.asarray(als, dtype=np.float64)
    if a.shape != k.shape:
        raise FitError(f"got {k.size} draft lengths but {a.size} AL values")
    for kk, aa in zip(k, a, strict=True):
        units.check_al(float(aa), int(kk))
    w = np.ones_like(a) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != a.shape or np.any(~np.isfinite(w)) or np.any(w < 0) or not np.any(w > 0):
        raise FitError(f"weights must be {a.size} finite values >= 0, not all zero, got {weights!r}")
    return k, a, w


def _solve_monotone(fn: Callable[[float], float], target: float, what: str) -> float:
    """Root in ``[0, 1]`` of ``fn(x) = target`` for a non-decreasing ``fn``."""
    from scipy import optimize  # lazy: keeps `import distributions` light for the CLI

    lo, hi = fn(0.0), fn(1.0)
    if target <= lo + 1e-15:
        return 0.0
    if target >= hi - 1e-15:
        if target > hi + 1e-9:
            raise DistributionError(
                f"AL {target:g} is out of reach of {what}: its largest AL is {hi:.6g}",
                hint="use a slower decay (larger r) or the constant family",
            )
        return 1.0
    return float(optimize.brentq(lambda x: fn(x) - target, 0.0, 1.0, xtol=1e-14, rtol=1e-14))


class _Profile:
    """Shared views of a conditional profile family (subclasses define ``conditional_rates``)."""

    def conditional_rates(self, k: int) -> NDArray[np.float64]:  # pragma: no cover - abstract
        raise NotImplementedError

    def unconditional_rates(self, k: int) -> NDArray[np.float64]:
        """``p_j = prod_{i<=j} c_i`` for ``j = 1..k``."""
        return units.conditional_to_unconditional(self.conditional_rates(k))

    def distribution(self, k: int) -> AcceptanceDistribution:
        """The pmf of ``L`` at draft length ``k``."""
        return AcceptanceDistribution.from_conditional_rates(self.conditional_rates(k))

    def curve(self, ks: ArrayLike) -> NDArray[np.float64]:
        """AL at each draft length in ``ks``."""
        k = units.check_draft_lens(ks)
        return units.al_curve_from_conditional(self.conditional_rates(int(k.max())), k)

    def al(self, k: int) -> float:
        """AL at draft length ``k``."""
        return float(self.curve([units.check_draft_len(k)])[0])


@dataclass(frozen=True)
class ConstantConditional(_Profile):
    """Constant per-position conditional acceptance ``c`` (truncated geometric ``L - 1``)."""

    c: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "c", _check_unit(self.c, "conditional acceptance c"))

    def conditional_rates(self, k: int) -> NDArray[np.float64]:
        """``[c] * k``."""
        return np.full(units.check_draft_len(k), self.c)

    @classmethod
    def from_al(cls, al: float, k: int) -> ConstantConditional:
        """The constant profile whose AL at draft length ``k`` is ``al`` (always identifiable)."""
        al = units.check_al(al, k)
        return cls(_solve_monotone(lambda c: cls(c).al(k), al, f"a constant profile at k={k}"))

    @classmethod
    def fit(cls, ks: ArrayLike, als: ArrayLike, weights: ArrayLike | None = None) -> ConstantConditional:
        """Weighted least-squares ``c`` for AL observed at draft lengths ``ks``."""
        from scipy import optimize

        k, a, w = _curve_data(ks, als, weights)
        res = optimize.minimize_scalar(lambda c: float(np.dot(w, (cls(c).curve(k) - a) ** 2)),
                                       bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-12})
        return cls(float(np.clip(res.x, 0.0, 1.0)))


@dataclass(frozen=True)
class DecayingConditional(_Profile):
    """Geometrically decaying conditional acceptance ``c_j = c1 * r^(j-1)``, ``c1, r`` in ``[0, 1]``."""

    c1: float
    r: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "c1", _check_unit(self.c1, "first-position acceptance c1"))
        object.__setattr__(self, "r", _check_unit(self.r, "decay ratio r"))

    def conditional_rates(self, k: int) -> NDArray[np.float64]:
        """``c1 * r^(j-1)`` for ``j = 1..k``."""
        return self.c1 * self.r ** np.arange(units.check_draft_len(k), dtype=np.float64)

    @classmethod
    def from_al(cls, al: float, k: int, *, r: float) -> DecayingConditional:
        """The profile with decay ``r`` whose AL at ``k`` is ``al``.

        One AL identifies only one parameter, so ``r`` must be given.

        Raises:
            DistributionError: if ``al`` exceeds the AL of ``c1 = 1`` at this decay.
        """
        al = units.check_al(al, k)
        r = _check_unit(r, "decay ratio r")
        c1 = _solve_monotone(lambda c: cls(c, r).al(k), al, f"a profile with decay r={r:g} at k={k}")
        return cls(c1, r)

    @classmethod
    def fit(cls, ks: ArrayLike, als: ArrayLike, weights: ArrayLike | None = None, *,
            whiten: ArrayLike | None = None) -> DecayingConditional:
        """Weighted least-squares ``(c1, r)`` for AL at two or more draft lengths.

        ``whiten``: a matrix ``M`` (``len(ks)`` square, rows in the order of ``ks``) such that the
        residuals ``M (curve - al)`` are independent with unit variance (``M = L^-1`` for the
        Cholesky factor ``L`` of the ALs' covariance): generalized least squares, for points
        measured on the same prompts. It replaces ``weights``.

        Raises:
            FitError: with fewer than two distinct draft lengths (not identifiable).
        """
        from scipy import optimize

        k, a, w = _curve_data(ks, als, weights)
        if np.unique(k).size < 2:
            raise FitError(
                "a decaying profile has two parameters; one draft length does not identify them",
                hint="give AL at two or more draft lengths, or fix r and use DecayingConditional.from_al",
            )
        if whiten is not None:
            m = np.asarray(whiten, dtype=np.float64)
            if m.shape != (k.size, k.size) or not np.all(np.isfinite(m)):
                raise FitError(f"whiten must be a finite {k.size}x{k.size} matrix, got shape {m.shape}")
        else:
            m = np.diag(np.sqrt(w))

        def resid(x: NDArray[np.float64]) -> NDArray[np.float64]:
            return m @ (cls(float(np.clip(x[0], 0, 1)), float(np.clip(x[1], 0, 1))).curve(k) - a)

        grid = [(c1, r) for c1 in (0.3, 0.6, 0.9) for r in (0.5, 0.8, 0.95)]
        starts = sorted(grid, key=lambda x: float(np.sum(resid(np.asarray(x)) ** 2)))[:3]
        best = None
        for x0 in starts:
            res = optimize.least_squares(resid, x0, bounds=([0.0, 0.0], [1.0, 1.0]), xtol=1e-14, ftol=1e-14)
            if best is None or res.cost < best.cost:
                best = res
        assert best is not None
        return cls(float(np.clip(best.x[0], 0, 1)), float(np.clip(best.x[1], 0, 1)))
