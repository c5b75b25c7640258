"""Fit the curve of one prompt set: a mixture of chain-draft profiles (default), one profile, or a free one.

For a chain draft (EAGLE/EAGLE3/MTP with ``topk = 1``, draft-model), the first
``k`` drafted tokens do not depend on ``k``, so one conditional profile
``c_1..c_K`` (``c_j = P(position j accepted | positions < j accepted)``)
explains the whole curve:

    AL(k) = 1 + sum_{j<=k} prod_{i<=j} c_i = 1 + sum_{j<=k} p_j

(:func:`distributions.units.al_curve_from_conditional`, the one home of this
formula). With ``0 <= c_j <= 1`` the unconditional rates ``p_j`` are
non-increasing, so a curve it can explain is non-decreasing in ``k`` with
non-increasing increments ``AL(k) - AL(k-1) = p_k``. A prompt *set* is a mixture of such
profiles (one per prompt), pooled by verify steps: its conditional rates ``p_k / p_(k-1)`` may
rise with position (the survivors of long accepted runs are the easy prompts) while its
increments still fall. :func:`fit_profile` fits, by default, that mixture
(``profile="mixture"``, :mod:`distributions.mixture`: the prompts' token shares of a grid of
decaying profiles, generalized least squares in ``1/AL`` where it is linear); a point is flagged
when setting it aside drops the misfit by more than :func:`deletion_critical` (calibrated on clean
and planted populations by ``experiments/fit-calibration``), and the curve as a whole when the
mixture misfits it. ``profile="decaying"`` fits one smooth profile with two parameters,
``c_j = c1 * r^(j-1)`` (:class:`~distributions.families.DecayingConditional`): right for one
homogeneous prompt, wrong for a prompt set (it flagged 44-98 % of clean heterogeneous curves of 80
prompts in ``experiments/fit-calibration``). Its residuals are reported in standard errors, and a goodness-of-fit test (the
weighted residual sum of squares against the free profile, chi-square with ``points - 2`` degrees
of freedom) says whether a richer profile is needed (``profile="free"``: one rate per position,
as many parameters as points, which can follow any monotone curve and so can only flag what no
chain draft can do). It flags
what it cannot explain:

* ``drop``: ``AL(k)`` below ``AL(k')`` at a smaller ``k'`` beyond noise
  (``p_k < 0`` is impossible);
* ``jump``: an increment larger than an earlier one beyond noise (``p``
  cannot grow);
* ``residual``: a fitted value further from the observation than the tolerance
  (``noise_z`` standard errors, or the absolute default without noise estimates);
* ``shape``: the goodness-of-fit test rejects the decaying profile (p < ``SHAPE_ALPHA``):
  a richer profile is needed (flagged at the point with the largest standardized residual).

Noise: with ``ci95`` the standard error of each point is ``(hi - lo) / 3.92``;
with ``steps`` it is ``sqrt(var(L_k) / steps_k)`` under the fitted profile
(i.i.d. steps: optimistic); with neither, the points are taken as exact except
for the rounding of the printed values (a drop in rounded values is always a
drop in the true ones, since rounding is monotone; an increment computed from
rounded values can be off by up to one rounding unit). The residual tolerance is then an absolute
``DEFAULT_TOLERANCE = 0.03``.

Default constraint: ``0 <= c_j <= 1`` only (non-increasing unconditional
rates; solved exactly as non-negative least squares). ``monotone_conditional=True``
also requires ``c_1 >= c_2 >= ...`` (non-convex; multi-start bounded least squares).

The curve of one run at ``K`` for smaller ``k`` is :meth:`AcceptanceDistribution.truncate` (chain drafts: the
first ``k`` drafts do not depend on ``K``; block drafts such as DFlash must be validated by measuring).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from distributions import units
from distributions.acceptance import AcceptanceDistribution
from distributions.errors import DistributionError, FitError
from distributions.families import ConstantConditional, DecayingConditional
from distributions.mixture import MixtureFit, deletion_statistics
from distributions.uncertainty import se_from_ci

__all__ = [
    "DEFAULT_TOLERANCE",
    "DELETION_ALPHA",
    "PROFILES",
    "SHAPE_ALPHA",
    "CurveFlag",
    "FitResult",
    "curve_flags",
    "fit_profile",
]

#: Residual tolerance (absolute AL) when neither CIs nor counts are given.
DEFAULT_TOLERANCE = 0.03

#: Profiles :func:`fit_profile` knows: a mixture of prompts' decaying profiles (default; needs the points' noise),
#: the 2-parameter decaying family of one profile, or one rate per position.
PROFILES = ("mixture", "decaying", "free")
#: Family-wise level of the mixture's deletion test: the chance that a clean curve has any point flagged.
DELETION_ALPHA = 0.0025
#: Goodness-of-fit level below which a richer profile than the decaying one is needed.
SHAPE_ALPHA = 0.01
_Z95 = 1.959963984540054  # the two-sided 95 % normal quantile

FlagKind = Literal["drop", "jump", "residual", "shape"]
ProfileName = Literal["mixture", "decaying", "free"]


@dataclass(frozen=True)
class CurveFlag:
    """A point of the curve that a chain-draft profile cannot explain.

    ``by``: how far off, in AL (a drop's fall, a jump's excess over the earlier increment, a
    residual); ``interval``: the 95% interval of ``by`` under the points' (joint) noise, which
    excludes 0 at the flag's ``noise_z`` (None without noise estimates).
    """

    k: int
    kind: FlagKind
    message: str
    by: float | None = None
    interval: tuple[float, float] | None = None

    def __str__(self) -> str:
        return f"k={self.k} {self.kind}: {self.message}"

    def as_dict(self) -> dict[str, object]:
        return {"k": self.k, "kind": self.kind, "what": self.kind, "by": self.by,
                "interval": None if self.interval is None else [self.interval[0], self.interval[1]],
                "message": self.message}


@dataclass(frozen=True, repr=False)
class FitResult:
    """Result of :func:`fit_profile` (scipy-like: ``x``, ``success``, ``message``).

    Attributes:
        ks: draft lengths observed (sorted).
        al: observed AL per ``k``.
        conditional: fitted ``c_1..c_K``, ``K = max(ks)`` (the mixture: the pooled steps' rates at ``K``).
        fitted: fitted AL per ``k``.
        residuals: ``al - fitted``.
        tolerance: residual tolerance per ``k``.
        sigma: standard error per ``k`` (None when unknown).
        weights: least-squares weights per ``k`` (mean 1).
        weighting: ``"equal"``, ``"steps"`` or ``"ci"``.
        monotone_conditional: whether ``c`` was constrained non-increasing.
        success / message: solver status.
        flags: points the profile cannot explain (empty when it explains all).
        cost: weighted sum of squared residuals.
        resolution: rounding unit inferred from the observed values (0 if none).
        profile: ``"mixture"`` (prompts' shares of grid profiles), ``"decaying"`` (2 parameters) or ``"free"``
            (one rate per position).
        num_params: parameters of the profile (the mixture: grid profiles with a share).
        chi2 / dof / p_value: goodness of fit of the profile against the free one, in
            standard errors (None without noise estimates or without spare points).
    """

    ks: NDArray[np.int64]
    al: NDArray[np.float64]
    conditional: NDArray[np.float64]
    fitted: NDArray[np.float64]
    residuals: NDArray[np.float64]
    tolerance: NDArray[np.float64]
    sigma: NDArray[np.float64] | None
    weights: NDArray[np.float64]
    weighting: str
    monotone_conditional: bool
    success: bool
    message: str
    flags: tuple[CurveFlag, ...]
    cost: float
    resolution: float
    profile: str = "free"
    num_params: int = 0
    chi2: float | None = None
    dof: int | None = None
    p_value: float | None = None
    residual_se: NDArray[np.float64] | None = None
    cov: NDArray[np.float64] | None = None
    #: the prompts' mixture (profile ``"mixture"``): the curve and each k's pmf come from it, not from ``conditional``
    mixture: MixtureFit | None = None

    @property
    def joint(self) -> bool:
        """True when the points' joint covariance (one run's shared prompts) was used."""
        return self.cov is not None

    @property
    def standardized_residuals(self) -> NDArray[np.float64] | None:
        """Residuals in their own standard errors (None without noise estimates).

        Independent points: ``(al - fitted) / sigma``. Joint points: the residual's standard
        error under the generalized least-squares fit, ``sqrt(((I - H) cov (I - H)')_kk)``, which
        is much smaller than ``sigma`` when the points move together.
        """
        if self.residual_se is not None:
            return self.residuals / self.residual_se
        return None if self.sigma is None else self.residuals / self.sigma

    @property
    def richer_profile_needed(self) -> bool:
        """True when the goodness-of-fit test rejects the profile at :data:`SHAPE_ALPHA`."""
        return self.p_value is not None and self.p_value < SHAPE_ALPHA

    @property
    def x(self) -> NDArray[np.float64]:
        """The fitted parameters: the conditional profile ``c_1..c_K``."""
        return self.conditional

    @property
    def unconditional(self) -> NDArray[np.float64]:
        """``p_j = prod_{i<=j} c_i``."""
        return units.conditional_to_unconditional(self.conditional)

    @property
    def explained(self) -> bool:
        """True when no point is flagged."""
        return not self.flags

    @property
    def max_abs_residual(self) -> float:
        """Largest ``|al - fitted|``."""
        return float(np.max(np.abs(self.residuals)))

    def curve(self, ks: ArrayLike | None = None) -> dict[int, float]:
        """Fitted AL at ``ks`` (default: every ``k`` from 1 to ``K``)."""
        k = np.arange(1, self.conditional.size + 1) if ks is None else units.check_draft_lens(ks)
        if self.mixture is not None:
            if int(k.max()) > self.conditional.size:
                raise DistributionError(f"the fit covers k <= {self.conditional.size}, got k={int(k.max())}")
            values = self.mixture.curve(k)
        else:
            values = units.al_curve_from_conditional(self.conditional, k)
        return {int(kk): float(v) for kk, v in zip(k, values, strict=True)}

    def through_data(self) -> dict[int, float]:
        """AL at every ``k`` from 1 to ``K`` on a curve that passes through the observed points: the observed value at
        each measured ``k``; between two, the fit plus the residuals of its neighbours interpolated linearly (beyond
        the last, plus its residual), kept between its measured neighbours. This is what a derived value for a
        missing ``k`` should be: the fit's shape, anchored to the data (a fit whose every point lies below the
        observations, as a generalized least-squares fit with strongly correlated points may, would otherwise hand
        its offset to the derived values)."""
        fit = self.curve()
        ks = [int(x) for x in self.ks]
        obs = {kk: float(v) for kk, v in zip(ks, self.al, strict=True)}
        res = {kk: float(r) for kk, r in zip(ks, self.residuals, strict=True)}
        out: dict[int, float] = {}
        for kk in range(1, self.conditional.size + 1):
            if kk in obs:
                out[kk] = obs[kk]
                continue
            lo = max((x for x in ks if x < kk), default=None)
            hi = min((x for x in ks if x > kk), default=None)
            if lo is None and hi is None:
                out[kk] = fit[kk]
            elif lo is None or hi is None:
                out[kk] = fit[kk] + res[lo if hi is None else hi]  # type: ignore[index]
            else:
                t = (kk - lo) / (hi - lo)
                out[kk] = fit[kk] + (1.0 - t) * res[lo] + t * res[hi]
            floor = obs[lo] if lo is not None else 1.0
            if kk - 1 in out and kk - 1 not in obs:
                floor = max(floor, out[kk - 1])  # a run of filled points rises too
            ceiling = obs[hi] if hi is not None else float(kk + 1)
            out[kk] = min(max(out[kk], floor), max(ceiling, floor), float(kk + 1))
        return out

    def distribution(self, k: int) -> AcceptanceDistribution:
        """The fitted pmf of ``L`` at draft length ``k <= K``."""
        k = units.check_draft_len(k)
        if k > self.conditional.size:
            raise DistributionError(f"the profile covers k <= {self.conditional.size}, got k={k}")
        if self.mixture is not None:
            return self.mixture.distribution(k)
        return AcceptanceDistribution.from_conditional_rates(self.conditional[:k])

    def __repr__(self) -> str:
        def row(label: str, values: Iterable[float], fmt: str) -> str:
            return f"  {label:<6}" + " ".join(format(v, fmt) for v in values)

        gof = "" if self.p_value is None else f", chi2={self.chi2:.2f} on {self.dof} dof (p={self.p_value:.3g})"
        lines = [
            f"FitResult(profile={self.profile!r}{gof}, success={self.success}, explained={self.explained}, "
            f"weighting={self.weighting!r}, "
            f"monotone_conditional={self.monotone_conditional}, max|resid|={self.max_abs_residual:.4f},",
            "  c     [" + ", ".join(f"{v:.3f}" for v in self.conditional) + "]",
            row("k", self.ks, ">7d"),
            row("AL", self.al, ">7.3f"),
            row("fit", self.fitted, ">7.3f"),
            row("resid", self.residuals, ">+7.3f"),
        ]
        lines += [f"  flag  {f}" for f in self.flags] or ["  flags none"]
        lines[-1] += ")"
        return "\n".join(lines)


# ---------------------------------------------------------------------------- helpers
def _resolution(values: NDArray[np.float64]) -> float:
    """The rounding unit of printed values (0.01 for 1.83, 2.43, ...); 0 when none fits."""
    for decimals in range(0, 10):
        scaled = values * 10.0**decimals
        if np.all(np.abs(scaled - np.round(scaled)) <= 1e-6):
            return 10.0 ** (-decimals)
    return 0.0


def _prepare(ks: ArrayLike, als: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]]:
    k = units.check_draft_lens(ks)
    a = np.asarray(als, dtype=np.float64)
    if a.ndim != 1 or a.shape != k.shape:
        raise FitError(f"got {k.size} draft lengths but {np.size(a)} AL values")
    uniq, counts = np.unique(k, return_counts=True)
    if np.any(counts > 1):
        raise FitError(f"draft length k={int(uniq[counts > 1][0])} is given more than once",
                       hint="give one AL per draft length")
    for kk, aa in zip(k, a, strict=True):
        units.check_al(float(aa), int(kk))
    order = np.argsort(k)
    return k[order], a[order], order


def _per_k(values: ArrayLike | None, order: NDArray[np.int64], name: str) -> NDArray[np.float64] | None:
    if values is None:
        return None
    arr = np.asarray(values, dtype=np.float64)
    if arr.shape[0] != order.size:
        raise FitError(f"{name} must have one entry per draft length ({order.size}), got {arr.shape[0]}")
    return arr[order]


# ---------------------------------------------------------------------------- flags
def _points_cov(k: NDArray[np.int64], order: NDArray[np.int64], sigma: ArrayLike | None,
                cov: ArrayLike | None) -> NDArray[np.float64]:
    """The covariance of the points in the order of ``k``: ``cov`` (finite, symmetric) reordered, else ``diag(sigma^2)``
    (0: exact)."""
    if cov is None:
        s = np.zeros(k.size) if sigma is None else _per_k(sigma, order, "sigma")
        assert s is not None
        return np.diag(s**2)
    c = np.asarray(cov, dtype=np.float64)
    if c.shape != (k.size, k.size) or not np.all(np.isfinite(c)) or not np.allclose(c, c.T):
        raise FitError(f"cov must be a finite symmetric {k.size}x{k.size} matrix, got shape {c.shape}")
    return c[np.ix_(order, order)]


def curve_flags(
    ks: ArrayLike,
    als: ArrayLike,
    *,
    sigma: ArrayLike | None = None,
    cov: ArrayLike | None = None,
    resolution: float | None = None,
    noise_z: float = 3.0,
) -> list[CurveFlag]:
    """Model-free checks that AL(k) is non-decreasing with non-increasing increments.

    Args:
        ks, als: the curve.
        sigma: standard error per point (independent points), or None (exact values).
        cov: covariance of the points (in the order of ``ks``), for points measured on the same
            prompts: every difference is then judged by its own variance (two points that move
            together differ by much less noise than either has). Takes precedence over ``sigma``.
        resolution: rounding unit of the values; inferred when None.
        noise_z: how many standard errors count as "beyond noise".
    """
    k, a, order = _prepare(ks, als)
    c = _points_cov(k, order, sigma, cov)
    noisy = cov is not None or sigma is not None
    res = _resolution(a) if resolution is None else float(resolution)
    places = max(2, round(-math.log10(res))) if res > 0 else 4

    def v(x: float) -> str:
        return f"{x:.{places}f}"

    def dv(x: float) -> str:
        return f"{x:+.{places}f}"

    # anchor AL(0) = 1 exactly (no drafts, only the bonus token): index 0 of the extended vectors
    kk, aa = np.concatenate(([0], k)), np.concatenate(([1.0], a))
    ext = np.pad(c, ((1, 0), (1, 0)))
    rr = np.concatenate(([0.0], np.full(a.size, res)))

    def sd(weights: dict[int, float]) -> float:
        w = np.zeros(kk.size)
        for i, x in weights.items():
            w[i] += x
        return math.sqrt(max(float(w @ ext @ w), 0.0))

    def interval(by: float, se: float) -> tuple[float, float] | None:
        return (by - _Z95 * se, by + _Z95 * se) if noisy else None

    flags: list[CurveFlag] = []
    # (increment per position, index i of its upper end, its gap, its rounding error bound)
    incs: list[tuple[float, int, int, float]] = []
    for i in range(1, kk.size):
        gap = int(kk[i] - kk[i - 1])
        diff = float(aa[i] - aa[i - 1])
        inc = diff / gap
        round_err = float(rr[i] + rr[i - 1]) / (2.0 * gap)  # each endpoint is off by <= res/2
        if i >= 2:
            se = sd({i: 1.0, i - 1: -1.0})
            tol = noise_z * se + 1e-12
            if diff < -tol:
                beyond = f" beyond noise (tolerance {tol:.3g})" if noisy else ""
                flags.append(CurveFlag(int(kk[i]), "drop",
                    f"AL({kk[i]})={v(aa[i])} is below AL({kk[i - 1]})={v(aa[i - 1])} ({dv(diff)}){beyond}: "
                    f"a chain draft's AL cannot decrease with k (each position adds p_j >= 0)",
                    by=diff, interval=interval(diff, se)))
        if incs:
            clamped = [max(x[0], 0.0) for x in incs]
            j = int(np.argmin(clamped))
            prev, j_hi, j_gap, err_prev = incs[j]
            se = sd({i: 1.0 / gap, i - 1: -1.0 / gap, j_hi: -1.0 / j_gap, j_hi - 1: 1.0 / j_gap})
            tol = round_err + err_prev + noise_z * se + 1e-12
            if inc > clamped[j] + tol:
                per = "" if gap == 1 and j_gap == 1 else " per position"
                excess = inc - clamped[j]
                flags.append(CurveFlag(int(kk[i]), "jump",
                    f"AL rises by {dv(inc)}{per} from k={kk[i - 1]} to k={kk[i]} after rising only "
                    f"{dv(prev)}{per} from k={kk[j_hi - 1]} to k={kk[j_hi]} (tolerance {tol:.3g}): the increments "
                    f"p_k = AL(k) - AL(k-1) of a chain draft cannot grow with k",
                    by=excess, interval=interval(excess, se)))
        incs.append((inc, i, gap, round_err))
    return flags


# ---------------------------------------------------------------------------- fitting
def _design(ks: NDArray[np.int64], big_k: int) -> NDArray[np.float64]:
    """Column j: AL(ks) - 1 for the unconditional profile that is 1 up to j+1 and 0 after."""
    cols = []
    for j in range(1, big_k + 1):
        step = np.concatenate((np.ones(j), np.zeros(big_k - j)))
        cols.append(units.al_curve_from_unconditional(step, ks) - 1.0)
    return np.stack(cols, axis=1)


def _fit_nonincreasing_p(k: NDArray[np.int64], a: NDArray[np.float64], w: NDArray[np.float64],
                         big_k: int, whiten: NDArray[np.float64] | None = None) -> tuple[NDArray[np.float64], bool, str]:
    """Exact weighted LS over ``1 >= p_1 >= ... >= p_K >= 0`` via d_j = p_j - p_{j+1} >= 0
    (generalized LS when ``whiten`` is given: see :meth:`DecayingConditional.fit`)."""
    from scipy import optimize  # lazy: keeps `import distributions` light for the CLI

    design = _design(k, big_k)
    m = np.diag(np.sqrt(w)) if whiten is None else whiten
    ridge = math.sqrt(1e-10 * float(np.sum(m * m)))  # picks the smoothest split where ks leave gaps
    lhs = np.vstack((m @ design, ridge * np.eye(big_k)))
    rhs = np.concatenate((m @ (a - 1.0), np.zeros(big_k)))
    d, _ = optimize.nnls(lhs, rhs)
    if d.sum() <= 1.0 + 1e-12:
        return np.clip(np.cumsum(d[::-1])[::-1], 0.0, 1.0), True, "non-negative least squares (exact)"
    # p_1 <= 1 binds: solve the convex QP with the extra constraint sum(d) <= 1
    res = optimize.minimize(
        lambda x: float(np.sum((lhs @ x - rhs) ** 2)),
        d / d.sum(),
        jac=lambda x: 2.0 * lhs.T @ (lhs @ x - rhs),
        method="SLSQP",
        bounds=[(0.0, 1.0)] * big_k,
        constraints=[{"type": "ineq", "fun": lambda x: 1.0 - x.sum(), "jac": lambda x: -np.ones_like(x)}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    d = np.clip(res.x, 0.0, None)
    d = d / max(1.0, d.sum())
    return np.clip(np.cumsum(d[::-1])[::-1], 0.0, 1.0), bool(res.success), f"SLSQP with p_1 <= 1: {res.message}"


def _fit_monotone_c(k: NDArray[np.int64], a: NDArray[np.float64], w: NDArray[np.float64], big_k: int,
                    start_p: NDArray[np.float64],
                    whiten: NDArray[np.float64] | None = None) -> tuple[NDArray[np.float64], bool, str]:
    """Weighted LS over ``1 >= c_1 >= ... >= c_K >= 0`` with ``c = cumprod(g)``, ``g`` in [0, 1]."""
    from scipy import optimize

    m = np.diag(np.sqrt(w)) if whiten is None else whiten

    def resid(g: NDArray[np.float64]) -> NDArray[np.float64]:
        c = np.cumprod(np.clip(g, 0.0, 1.0))
        return m @ (units.al_curve_from_conditional(c, k) - a)

    def g_from_c(c: NDArray[np.float64]) -> NDArray[np.float64]:
        c = np.minimum.accumulate(np.clip(c, 0.0, 1.0))
        prev = np.concatenate(([1.0], c[:-1]))
        return np.clip(np.where(prev > 0, c / np.where(prev > 0, prev, 1.0), 0.0), 0.0, 1.0)

    starts = [g_from_c(units.unconditional_to_conditional(start_p))]
    if np.unique(k).size >= 2:
        starts.append(g_from_c(DecayingConditional.fit(k, a, w).conditional_rates(big_k)))
    starts.append(g_from_c(ConstantConditional.fit(k, a, w).conditional_rates(big_k)))
    starts += [g_from_c(np.full(big_k, c0)) for c0 in (0.5, 0.8, 0.95)]
    best = None
    for g0 in starts:
        res = optimize.least_squares(resid, g0, bounds=(0.0, 1.0), xtol=1e-15, ftol=1e-15, gtol=1e-15)
        if best is None or res.cost < best.cost:
            best = res
    assert best is not None
    c = np.cumprod(np.clip(best.x, 0.0, 1.0))
    return (units.conditional_to_unconditional(c), bool(best.success),
            f"trust-region least squares, best of {len(starts)} starts: {best.message}")


def _residual_se(k: NDArray[np.int64], conditional_of: object, params: NDArray[np.float64],
                 cov: NDArray[np.float64]) -> NDArray[np.float64]:
    """Standard error of each GLS residual: ``sqrt(diag((I - H) cov (I - H)'))`` with the hat matrix
    ``H = J (J' cov^-1 J)^+ J' cov^-1`` of the profile's Jacobian ``J`` at ``params``."""
    f = conditional_of  # params -> fitted AL at k
    eps = 1e-6
    base = f(params)  # type: ignore[operator]
    cols = []
    for i in range(params.size):
        step = np.zeros_like(params)
        h = eps if params[i] + eps <= 1.0 else -eps
        step[i] = h
        cols.append((f(params + step) - base) / h)  # type: ignore[operator]
    jac = np.stack(cols, axis=1)
    inv = np.linalg.inv(cov)
    hat = jac @ np.linalg.pinv(jac.T @ inv @ jac) @ jac.T @ inv
    rest = np.eye(k.size) - hat
    var = np.diag(rest @ cov @ rest.T)
    return np.sqrt(np.maximum(var, 1e-18))


@dataclass(frozen=True)
class _Outlier:
    index: int
    predicted: float
    by: float
    se: float


def _gls_decaying(k: NDArray[np.int64], a: NDArray[np.float64], cov: NDArray[np.float64]) -> DecayingConditional:
    return DecayingConditional.fit(k, a, whiten=np.linalg.inv(np.linalg.cholesky(cov)))


def _misfit_p(chi2: float, dof: int, clusters: int | None) -> float:
    """p-value of a goodness-of-fit statistic on ``dof`` degrees of freedom: Hotelling's F when the
    covariance was estimated from ``clusters`` clusters (and ``clusters > dof``), else chi-square."""
    from scipy import stats

    if clusters is not None and clusters > dof:
        return float(stats.f.sf(chi2 * (clusters - dof) / ((clusters - 1) * dof), dof, clusters - dof))
    return float(stats.chi2.sf(chi2, dof))


def _gls_misfit_p(k: NDArray[np.int64], a: NDArray[np.float64], cov: NDArray[np.float64], big_k: int,
                  clusters: int | None = None) -> float:
    """Goodness of fit (p-value) of the decaying profile against the free one, by generalized LS."""
    if k.size <= 2:
        return 1.0
    wh = np.linalg.inv(np.linalg.cholesky(cov))
    dec = DecayingConditional.fit(k, a, whiten=wh)
    p_free, _, _ = _fit_nonincreasing_p(k, a, np.ones_like(a), big_k, wh)
    free = a - units.al_curve_from_unconditional(np.minimum.accumulate(np.clip(p_free, 0, 1)), k)
    chi2 = max(0.0, float(np.sum((wh @ (a - dec.curve(k))) ** 2) - np.sum((wh @ free) ** 2)))
    return _misfit_p(chi2, k.size - 2, clusters)


def _deletion_outliers(k: NDArray[np.int64], a: NDArray[np.float64], cov: NDArray[np.float64],
                       noise_z: float, max_outliers: int = 2) -> list[_Outlier]:
    """Points the decaying profile of the *other* points cannot predict, worst first, one at a time.

    For each point i, the profile is fitted (GLS) to the points not yet set aside except i, and
    ``a_i`` is compared with its prediction; the difference's variance is
    ``cov_ii - 2 G cov_-i,i + G cov_-i,-i G'`` with ``G`` the linearized map from the other points to
    the prediction. The worst point beyond ``noise_z`` is set aside and the search repeats, so one
    bad point is named by itself rather than smeared over the neighbours a joint fit pulls with it.
    """
    out: list[_Outlier] = []
    aside: set[int] = set()
    while k.size - len(aside) >= 4 and len(out) < max_outliers:  # a 2-parameter fit of the others keeps a spare point
        best: _Outlier | None = None
        best_z = 0.0
        for i in (j for j in range(k.size) if j not in aside):
            rest = np.array([j for j in range(k.size) if j not in aside and j != i])
            sub = cov[np.ix_(rest, rest)]
            dec = _gls_decaying(k[rest], a[rest], sub)
            x = np.array([dec.c1, dec.r])

            def curve_at(params: NDArray[np.float64], ks_: NDArray[np.int64]) -> NDArray[np.float64]:
                return DecayingConditional(float(np.clip(params[0], 0, 1)), float(np.clip(params[1], 0, 1))).curve(ks_)

            pred = float(curve_at(x, k[i:i + 1])[0])
            jac_rest, jac_i = [], []
            for t in range(2):
                h = 1e-6 if x[t] + 1e-6 <= 1.0 else -1e-6
                step = x.copy()
                step[t] += h
                jac_rest.append((curve_at(step, k[rest]) - curve_at(x, k[rest])) / h)
                jac_i.append((curve_at(step, k[i:i + 1])[0] - pred) / h)
            jr, ji = np.stack(jac_rest, axis=1), np.array(jac_i)
            inv = np.linalg.inv(sub)
            g = ji @ np.linalg.pinv(jr.T @ inv @ jr) @ jr.T @ inv
            var = float(cov[i, i] - 2.0 * g @ cov[rest, i] + g @ sub @ g)
            se = math.sqrt(max(var, 1e-18))
            by = float(a[i] - pred)
            if abs(by) / se > best_z:
                best, best_z = _Outlier(i, pred, by, se), abs(by) / se
        if best is None or best_z <= noise_z:
            break
        out.append(best)
        aside.add(best.index)
    return out


def deletion_critical(points: int, clusters: int | None) -> float:
    """The misfit drop above which :func:`fit_profile`'s mixture sets one point aside (and, as a squared z, the level
    of its drops and jumps over their comparisons): Bonferroni over the ``points`` at :data:`DELETION_ALPHA`, in Hotelling's F(1, clusters - 1) when the covariance was estimated from
    ``clusters`` clusters, else chi-square(1). Calibrated against clean prompt populations by
    ``experiments/fit-calibration/fit_calibration.py``."""
    from scipy import stats

    q = 1.0 - DELETION_ALPHA / max(points, 1)
    if clusters is not None and clusters > 1:
        return float(stats.f.ppf(q, 1, clusters - 1))
    return float(stats.chi2.ppf(q, 1))


@dataclass(frozen=True)
class _MixtureOutcome:
    fit: MixtureFit  # of the points kept
    outlier: _Outlier | None
    chi2: float
    dof: int
    p_value: float
    residual_se: NDArray[np.float64]


def _mixture_flags(k: NDArray[np.int64], a: NDArray[np.float64], cov: NDArray[np.float64],
                   clusters: int | None) -> _MixtureOutcome:
    """The prompts' mixture fitted to the curve, with at most one point set aside: the one whose removal drops the
    misfit by more than :func:`deletion_critical`, provided the others then fit (else the curve as a whole misfits,
    and no single point is to blame)."""
    full, drop, fits = deletion_statistics(k, a, cov)
    sigma = np.sqrt(np.diag(cov))
    i = int(np.argmax(drop))
    outlier: _Outlier | None = None
    used = full
    if drop[i] > deletion_critical(k.size, clusters) and (rest := fits[i]) is not None:
        if _misfit_p(rest.chi2, k.size - 2, clusters) >= SHAPE_ALPHA:
            pred = float(rest.curve([int(k[i])])[0])
            by = float(a[i] - pred)
            outlier, used = _Outlier(i, pred, by, abs(by) / math.sqrt(drop[i])), rest
    fitted = used.curve(k)
    resid = a - fitted
    # each point's residual in its own standard error: the signed root of its deletion statistic
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.where((drop > 1e-12) & (np.abs(resid) > 0), np.abs(resid) / np.sqrt(drop), sigma)
    if outlier is not None:
        se[outlier.index] = outlier.se
    dof = k.size - (2 if outlier is not None else 1)
    return _MixtureOutcome(used, outlier, used.chi2, dof, _misfit_p(used.chi2, dof, clusters) if dof > 0 else 1.0,
                           np.maximum(se, 1e-12))


def fit_profile(
    ks: ArrayLike,
    als: ArrayLike,
    *,
    steps: ArrayLike | None = None,
    ci95: Sequence[tuple[float, float]] | ArrayLike | None = None,
    cov: ArrayLike | None = None,
    clusters: int | None = None,
    monotone_conditional: bool = False,
    tolerance: float | None = None,
    noise_z: float = 3.0,
    profile: ProfileName = "mixture",
) -> FitResult:
    """Fit one conditional profile ``c_1..c_K`` (``K = max(ks)``) to AL at several ``k``.

    Args:
        ks: draft lengths (distinct, any order).
        als: observed AL at each ``k`` (one model, one thinking mode).
        steps: verify steps behind each AL; weights the fit by counts and sets the
            noise (i.i.d. steps, optimistic).
        ci95: ``(lo, hi)`` 95% CI per ``k``; weights by ``1/sigma^2`` and sets the
            noise (takes precedence over ``steps``).
        cov: the covariance of the ALs (rows in the order of ``ks``) when they were measured on
            the same prompts (:func:`distributions.uncertainty.joint_al_bootstrap`): the fit is
            then generalized least squares, residuals are judged by their own GLS standard
            errors, drops and jumps by the variance of each difference, and the goodness of fit
            is ``r' cov^-1 r`` (takes precedence over ``ci95`` and ``steps``).
        clusters: the clusters ``cov`` was estimated from: the goodness of fit is then referred
            to Hotelling's F, ``T^2 (n - q) / ((n - 1) q) ~ F(q, n - q)``, not the chi-square,
            because an estimated covariance makes the chi-square too eager (95 % ellipses covered
            66-90 % at 16 clusters, 76-94 % at 80, in
            ``experiments/interval-calibration/new_scenarios.md``; with F 89-100 % and 82-95 %).
        monotone_conditional: also require ``c_1 >= c_2 >= ... >= c_K``.
        tolerance: absolute residual tolerance overriding the noise-based one.
        noise_z: standard errors that count as "beyond noise" in the flags: the residual tolerance, and the least
            level of drops and jumps, which with noise estimates are judged at :func:`deletion_critical`'s level
            over their comparisons when that is stricter.
        profile: ``"mixture"`` (default: the prompts' token shares of a grid of decaying profiles,
            :mod:`distributions.mixture`; needs the points' noise, ``cov`` or ``ci95``, else the decaying
            profile is used), ``"decaying"`` (``c_j = c1 r^(j-1)``, 2 parameters) or ``"free"`` (the free
            profile also when fewer than three draft lengths leave no spare point).

    Returns:
        A :class:`FitResult`; ``result.flags`` names every unexplained ``k`` and why.

    Raises:
        FitError / DistributionError: on malformed input (AL outside [1, k+1],
            repeated ``k``, mismatched lengths, zero-width CI, non-positive steps, a
            covariance that is not symmetric positive definite).
    """
    k, a, order = _prepare(ks, als)
    noise = _noise(k, order, steps, ci95, cov)
    if profile not in PROFILES:
        raise FitError(f"unknown profile {profile!r}", hint=f"one of {', '.join(PROFILES)}")
    family = _fit_family(k, a, noise, profile, monotone_conditional, tolerance, noise_z, clusters)
    return _judge(k, a, noise, family, tolerance=tolerance, noise_z=noise_z, clusters=clusters,
                  monotone_conditional=monotone_conditional)


@dataclass(frozen=True)
class _Noise:
    """The points' weights and noise, in the order of ``k`` (:func:`_noise`)."""

    w: NDArray[np.float64]  #: weights, mean 1
    weighting: str  #: what they came from: "joint", "ci", "steps" or "equal"
    steps: NDArray[np.float64] | None
    sigma: NDArray[np.float64] | None  #: standard error per point (None: not given)
    cov: NDArray[np.float64] | None  #: the points' joint covariance (measured on the same prompts)
    whiten: NDArray[np.float64] | None  #: the inverse of ``cov``'s Cholesky factor


def _noise(k: NDArray[np.int64], order: NDArray[np.int64], steps: ArrayLike | None,
           ci95: Sequence[tuple[float, float]] | ArrayLike | None, cov: ArrayLike | None) -> _Noise:
    """The points' weights and noise from ``cov``, else ``ci95``, else ``steps`` (:func:`fit_profile`'s arguments)."""
    st = _per_k(steps, order, "steps")
    ci = None if ci95 is None else _per_k(np.asarray(ci95, dtype=np.float64).reshape(-1, 2), order, "ci95")
    if st is not None and (np.any(~np.isfinite(st)) or np.any(st <= 0)):
        raise FitError(f"steps must be positive counts, got {np.asarray(steps).tolist()}",
                       hint="a draft length with zero verify steps has no AL; drop it")
    if cov is not None:
        c_mat = _points_cov(k, order, None, cov)
        try:
            chol = np.linalg.cholesky(c_mat)
        except np.linalg.LinAlgError:
            raise FitError("cov is not positive definite", hint="add the continuity floor to its diagonal") from None
        sigma = np.sqrt(np.diag(c_mat))
        return _Noise((w := 1.0 / sigma**2) / w.mean(), "joint", st, sigma, c_mat, np.linalg.inv(chol))
    if ci is not None:
        width = ci[:, 1] - ci[:, 0]
        if np.any(~np.isfinite(width)) or np.any(width <= 0):
            bad = int(k[np.argmax(~np.isfinite(width) | (width <= 0))])
            raise FitError(f"the 95% CI at k={bad} has zero or negative width: {ci.tolist()}",
                           hint="give (lo, hi) with lo < hi, or omit ci95")
        sigma = se_from_ci(ci[:, 0], ci[:, 1])
        return _Noise((w := 1.0 / sigma**2) / w.mean(), "ci", st, sigma, None, None)
    if st is not None:
        return _Noise(st / st.mean(), "steps", st, None, None, None)
    return _Noise(np.ones(k.size), "equal", None, None, None, None)


@dataclass(frozen=True)
class _Family:
    """One family's profile fitted to the points (:func:`_fit_family`)."""

    used: str  #: the family: the one asked for, or the one that stood in for it
    conditional: NDArray[np.float64]
    n_params: int
    success: bool
    message: str
    outliers: list[_Outlier]  #: points set aside (the others fit)
    residual_se: NDArray[np.float64] | None  #: each residual's own standard error, where known
    mixture: _MixtureOutcome | None
    free_resid: NDArray[np.float64]  #: the free profile's residuals


def _fit_family(k: NDArray[np.int64], a: NDArray[np.float64], n: _Noise, profile: str, monotone_conditional: bool,
                tolerance: float | None, noise_z: float, clusters: int | None) -> _Family:
    """The free profile, then the family asked for (the free one with fewer than three points, the decaying one
    for a mixture without the points' noise)."""
    big_k = int(k.max())
    p_free, success, message = _fit_nonincreasing_p(k, a, n.w, big_k, n.whiten)
    if monotone_conditional:
        p_free, success, message = _fit_monotone_c(k, a, n.w, big_k, p_free, n.whiten)
    free_conditional = units.unconditional_to_conditional(np.minimum.accumulate(np.clip(p_free, 0.0, 1.0)))
    free_resid = a - units.al_curve_from_conditional(free_conditional, k)
    used = profile if (profile == "free" or k.size >= 3) else "free"
    if used == "mixture" and n.sigma is None:
        used = "decaying"  # the mixture is judged in the points' noise: without it, one profile
    if used == "free":
        return _Family("free", free_conditional, int(k.size), success, message, [], None, None, free_resid)
    if used == "decaying":
        return _decaying_family(k, a, n, tolerance, noise_z, clusters, free_resid)
    assert n.sigma is not None
    mixture = _mixture_flags(k, a, n.cov if n.cov is not None else np.diag(n.sigma**2),
                             clusters if n.cov is not None else None)
    outliers = [mixture.outlier] if mixture.outlier is not None else []
    conditional = units.unconditional_to_conditional(mixture.fit.distribution(big_k).unconditional_rates())
    n_params = int(np.count_nonzero(mixture.fit.weights > 1e-9))
    message = f"mixture of {n_params} prompt profiles: {mixture.fit.summary()}"
    if outliers:
        message += f" (fitted without k={int(k[outliers[0].index])})"
    return _Family("mixture", conditional, n_params, True, message, outliers, mixture.residual_se, mixture, free_resid)


def _decaying_family(k: NDArray[np.int64], a: NDArray[np.float64], n: _Noise, tolerance: float | None,
                     noise_z: float, clusters: int | None, free_resid: NDArray[np.float64]) -> _Family:
    """The decaying profile; with a joint covariance, fitted without the one point the others predict badly."""
    c_mat, big_k = n.cov, int(k.max())
    keep = np.arange(k.size)
    outliers: list[_Outlier] = []
    if c_mat is not None and tolerance is None:
        # one point the others predict badly while the others fit: that point is the anomaly. Two or
        # more, or the others misfit too: the shape is the problem (judged on every point below).
        outliers = _deletion_outliers(k, a, c_mat, noise_z)
        if len(outliers) == 1:
            rest = np.array([i for i in range(k.size) if i != outliers[0].index])
            if _gls_misfit_p(k[rest], a[rest], c_mat[np.ix_(rest, rest)], big_k, clusters) < SHAPE_ALPHA:
                outliers = []
        else:
            outliers = []
        keep = np.array([i for i in range(k.size) if i not in {o.index for o in outliers}])
    residual_se: NDArray[np.float64] | None = None
    if c_mat is None:
        dec = DecayingConditional.fit(k, a, n.w)
    else:
        dec = _gls_decaying(k[keep], a[keep], c_mat[np.ix_(keep, keep)])

        def curve_of(x: NDArray[np.float64]) -> NDArray[np.float64]:
            return DecayingConditional(float(np.clip(x[0], 0, 1)), float(np.clip(x[1], 0, 1))).curve(k[keep])

        residual_se = np.sqrt(np.diag(c_mat)).copy()
        residual_se[keep] = _residual_se(k[keep], curve_of, np.array([dec.c1, dec.r]), c_mat[np.ix_(keep, keep)])
        for o in outliers:
            residual_se[o.index] = o.se
    message = f"decaying profile c_j = {dec.c1:.4f} * {dec.r:.4f}^(j-1)"
    if outliers:
        message += " (fitted without " + ", ".join(f"k={int(k[o.index])}" for o in outliers) + ")"
    return _Family("decaying", dec.conditional_rates(big_k), 2, True, message, outliers, residual_se, None,
                   free_resid)


def _judge(k: NDArray[np.int64], a: NDArray[np.float64], n: _Noise, fam: _Family, *, tolerance: float | None,
           noise_z: float, clusters: int | None, monotone_conditional: bool) -> FitResult:
    """The fitted family judged against the points: tolerances, the goodness of fit (against the free profile) and
    the flags."""
    fitted = fam.mixture.fit.curve(k) if fam.mixture is not None else units.al_curve_from_conditional(fam.conditional, k)
    residuals = a - fitted
    sigma = n.sigma
    if sigma is None and n.steps is not None:
        var = np.array([AcceptanceDistribution.from_conditional_rates(fam.conditional[:kk]).var() for kk in k])
        sigma = np.sqrt(var / n.steps)
    resolution = _resolution(a)
    noise = fam.residual_se if fam.residual_se is not None else sigma
    if tolerance is not None:
        if not tolerance > 0:
            raise FitError(f"tolerance must be > 0, got {tolerance!r}")
        tol = np.full_like(a, float(tolerance))
    elif noise is not None:
        tol = np.maximum(noise_z * noise, resolution / 2.0 + 1e-9)
    else:
        tol = np.full_like(a, DEFAULT_TOLERANCE)
    chi2 = dof = p_value = None
    if fam.mixture is not None:
        chi2, dof, p_value = fam.mixture.chi2, fam.mixture.dof, fam.mixture.p_value
    elif sigma is not None and fam.used == "decaying" and k.size > fam.n_params:
        # in standard errors; the free profile's own misfit (monotonicity binding) is not the family's fault
        if n.whiten is not None and n.cov is not None and fam.outliers:  # the points not set aside
            kept = np.array([i for i in range(k.size) if i not in {o.index for o in fam.outliers}])
            wk = np.linalg.inv(np.linalg.cholesky(n.cov[np.ix_(kept, kept)]))
            p_kept, _, _ = _fit_nonincreasing_p(k[kept], a[kept], n.w[kept], int(k.max()), wk)
            free_kept = a[kept] - units.al_curve_from_unconditional(np.minimum.accumulate(np.clip(p_kept, 0, 1)), k[kept])
            chi2 = max(0.0, float(np.sum((wk @ residuals[kept]) ** 2) - np.sum((wk @ free_kept) ** 2)))
        elif n.whiten is not None:
            chi2 = max(0.0, float(np.sum((n.whiten @ residuals) ** 2) - np.sum((n.whiten @ fam.free_resid) ** 2)))
        else:
            chi2 = max(0.0, float(np.sum((residuals / sigma) ** 2) - np.sum((fam.free_resid / sigma) ** 2)))
        dof = int(k.size - len(fam.outliers) - fam.n_params)
        p_value = _misfit_p(chi2, dof, clusters if n.whiten is not None else None) if dof > 0 else None
    flag_z = noise_z
    if tolerance is None and sigma is not None:
        # drops and jumps at a calibrated level: Bonferroni over the 2 (points - 1) comparisons at DELETION_ALPHA, in
        # Hotelling's F(1, clusters - 1) for a covariance estimated from clusters (at a flat 3 standard errors, 2 % of
        # clean homogeneous curves of 16 prompts showed a jump: experiments/fit-calibration)
        flag_z = max(noise_z, math.sqrt(deletion_critical(2 * (k.size - 1), clusters if n.cov is not None else None)))
    flags = curve_flags(k, a, sigma=sigma, cov=n.cov, resolution=resolution, noise_z=flag_z)
    flags += _residual_flags(k, a, fitted, residuals, tol, noise, n, fam, tolerance)
    if p_value is not None and p_value < SHAPE_ALPHA and noise is not None:
        zs = residuals / noise
        worst = int(np.argmax(np.abs(zs)))
        what, remedy = (("no mixture of prompts' chain-draft profiles explains", "the points are not of one prompt set "
                         "measured with one chain draft: check each k's settings, or fit with profile 'free'")
                        if fam.mixture is not None else
                        ("the decaying profile misfits", "a richer profile is needed (fit with profile 'mixture' or "
                         "'free')"))
        flags.append(CurveFlag(int(k[worst]), "shape",
            f"{what} the curve (chi-square {chi2:.1f} on {dof} degrees of freedom, "
            f"p = {p_value:.2g}; largest residual {zs[worst]:+.1f} standard errors at "
            f"k={int(k[worst])}): {remedy}",
            by=float(residuals[worst]),
            interval=(float(residuals[worst] - _Z95 * noise[worst]), float(residuals[worst] + _Z95 * noise[worst]))))
    flags.sort(key=lambda f: (f.k, ("drop", "jump", "residual", "shape").index(f.kind)))
    return FitResult(
        ks=k, al=a, conditional=fam.conditional, fitted=fitted, residuals=residuals, tolerance=tol, sigma=sigma,
        weights=n.w, weighting=n.weighting, monotone_conditional=monotone_conditional, success=fam.success,
        message=fam.message, flags=tuple(flags), cost=float(np.dot(n.w, residuals**2)), resolution=resolution,
        profile=fam.used, num_params=fam.n_params, chi2=chi2, dof=dof, p_value=p_value, residual_se=fam.residual_se,
        cov=n.cov, mixture=None if fam.mixture is None else fam.mixture.fit,
    )


def _residual_flags(k: NDArray[np.int64], a: NDArray[np.float64], fitted: NDArray[np.float64],
                    residuals: NDArray[np.float64], tol: NDArray[np.float64], noise: NDArray[np.float64] | None,
                    n: _Noise, fam: _Family, tolerance: float | None) -> list[CurveFlag]:
    """A ``residual`` flag for each point set aside, and for each other one beyond its tolerance."""
    source = "given" if tolerance is not None else {
        "ci": "from the CI", "steps": "from the step counts",
        "joint": "from the joint law of the points (shared prompts)"}.get(n.weighting, "absolute default")
    by_outlier = {o.index: o for o in fam.outliers}
    flags = []
    for i, (kk, obs, fit, r, t) in enumerate(zip(k, a, fitted, residuals, tol, strict=True)):
        if i in by_outlier:
            o = by_outlier[i]
            flags.append(CurveFlag(int(kk), "residual",
                f"the {'mixture' if fam.mixture is not None else 'profile'} of the other points predicts AL({kk})={o.predicted:.4g} but {obs:.4g} was observed "
                f"({o.by:+.4f}, {abs(o.by) / o.se:.1f} standard errors of that difference {source})",
                by=o.by, interval=(o.by - _Z95 * o.se, o.by + _Z95 * o.se)))
        elif (n.cov is not None and tolerance is None and fam.outliers) or (fam.mixture is not None and tolerance is None):
            continue  # one point set aside by the deletion search (the others fit), or none beyond its threshold
        elif abs(r) > t:
            se_i = None if noise is None else float(noise[i])
            flags.append(CurveFlag(int(kk), "residual",
                f"the fitted profile gives AL({kk})={fit:.4g} but {obs:.4g} was observed "
                f"(residual {r:+.4f}, tolerance {t:.3g} {source})",
                by=float(r), interval=None if se_i is None else (float(r) - _Z95 * se_i, float(r) + _Z95 * se_i)))
    return flags
