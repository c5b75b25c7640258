"""Fit one conditional acceptance profile shared by every draft length.

For a chain draft (EAGLE/EAGLE3/MTP with ``topk = 1``, draft-model), the first
``k`` drafted tokens do not depend on ``k``, so one conditional profile
``c_1..c_K`` (``c_j = P(position j accepted | positions < j accepted)``)
explains the whole curve:

    AL(k) = 1 + sum_{j<=k} prod_{i<=j} c_i = 1 + sum_{j<=k} p_j

(:func:`distributions.units.al_curve_from_conditional`, the one home of this
formula). With ``0 <= c_j <= 1`` the unconditional rates ``p_j`` are
non-increasing, so a curve it can explain is non-decreasing in ``k`` with
non-increasing increments ``AL(k) - AL(k-1) = p_k``. :func:`fit_profile` finds
the profile by weighted least squares. By default the profile is a smooth decaying
family with two parameters, ``c_j = c1 * r^(j-1)``
(:class:`~distributions.families.DecayingConditional`), so with more points than
parameters the residuals carry information: they are reported in standard errors, and a
goodness-of-fit test (the weighted residual sum of squares against the free profile,
chi-square with ``points - 2`` degrees of freedom) says whether a richer profile is needed
(``profile="free"``: one rate per position, as many parameters as points, which can
follow any monotone curve and so can only flag what no chain draft can do). It flags
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

:func:`derive_curve` gives the curve of one run at ``K`` for smaller ``k``
(:meth:`AcceptanceDistribution.truncate`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from distributions import units
from distributions.acceptance import AcceptanceDistribution
from distributions.errors import DistributionError, FitError
from distributions.families import ConstantConditional, DecayingConditional
from distributions.uncertainty import se_from_ci

__all__ = [
    "DEFAULT_TOLERANCE",
    "PROFILES",
    "SHAPE_ALPHA",
    "CurveFlag",
    "FitResult",
    "curve_flags",
    "derive_curve",
    "derive_distributions",
    "fit_curve",
    "fit_profile",
]

#: Residual tolerance (absolute AL) when neither CIs nor counts are given.
DEFAULT_TOLERANCE = 0.03

#: Profiles :func:`fit_profile` knows: the 2-parameter decaying family (default) or one rate per position.
PROFILES = ("decaying", "free")
#: Goodness-of-fit level below which a richer profile than the decaying one is needed.
SHAPE_ALPHA = 0.01

FlagKind = Literal["drop", "jump", "residual", "shape"]
ProfileName = Literal["decaying", "free"]


@dataclass(frozen=True)
class CurveFlag:
    """A point of the curve that a chain-draft profile cannot explain."""

    k: int
    kind: FlagKind
    message: str

    def __str__(self) -> str:
        return f"k={self.k} {self.kind}: {self.message}"


@dataclass(frozen=True, repr=False)
class FitResult:
    """Result of :func:`fit_profile` (scipy-like: ``x``, ``success``, ``message``).

    Attributes:
        ks: draft lengths observed (sorted).
        al: observed AL per ``k``.
        conditional: fitted ``c_1..c_K``, ``K = max(ks)``.
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
        profile: ``"decaying"`` (2 parameters) or ``"free"`` (one rate per position).
        num_params: parameters of the profile.
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

    @property
    def standardized_residuals(self) -> NDArray[np.float64] | None:
        """Residuals in standard errors, ``(al - fitted) / sigma`` (None without noise estimates)."""
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
        return {int(kk): float(v) for kk, v in zip(k, units.al_curve_from_conditional(self.conditional, k), strict=True)}

    def distribution(self, k: int) -> AcceptanceDistribution:
        """The fitted pmf of ``L`` at draft length ``k <= K``."""
        k = units.check_draft_len(k)
        if k > self.conditional.size:
            raise DistributionError(f"the profile covers k <= {self.conditional.size}, got k={k}")
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
def curve_flags(
    ks: ArrayLike,
    als: ArrayLike,
    *,
    sigma: ArrayLike | None = None,
    resolution: float | None = None,
    noise_z: float = 3.0,
) -> list[CurveFlag]:
    """Model-free checks that AL(k) is non-decreasing with non-increasing increments.

    Args:
        ks, als: the curve.
        sigma: standard error per point (independent points), or None (exact values).
        resolution: rounding unit of the values; inferred when None.
        noise_z: how many standard errors count as "beyond noise".
    """
    k, a, order = _prepare(ks, als)
    s = np.zeros_like(a) if sigma is None else _per_k(sigma, order, "sigma")
    assert s is not None
    res = _resolution(a) if resolution is None else float(resolution)
    places = max(2, round(-math.log10(res))) if res > 0 else 4

    def v(x: float) -> str:
        return f"{x:.{places}f}"

    def dv(x: float) -> str:
        return f"{x:+.{places}f}"

    flags: list[CurveFlag] = []
    # anchor AL(0) = 1 exactly (no drafts, only the bonus token)
    kk = np.concatenate(([0], k))
    aa = np.concatenate(([1.0], a))
    ss = np.concatenate(([0.0], s))
    rr = np.concatenate(([0.0], np.full(a.size, res)))
    # (increment per position, k_from, k_to, its variance, its rounding error bound)
    incs: list[tuple[float, int, int, float, float]] = []
    for i in range(1, kk.size):
        gap = int(kk[i] - kk[i - 1])
        diff = float(aa[i] - aa[i - 1])
        inc = diff / gap
        var_inc = float(ss[i] ** 2 + ss[i - 1] ** 2) / gap**2
        round_err = float(rr[i] + rr[i - 1]) / (2.0 * gap)  # each endpoint is off by <= res/2
        if i >= 2:
            tol = noise_z * math.sqrt(ss[i] ** 2 + ss[i - 1] ** 2) + 1e-12
            if diff < -tol:
                beyond = f" beyond noise (tolerance {tol:.3g})" if sigma is not None else ""
                flags.append(CurveFlag(int(kk[i]), "drop",
                    f"AL({kk[i]})={v(aa[i])} is below AL({kk[i - 1]})={v(aa[i - 1])} ({dv(diff)}){beyond}: "
                    f"a chain draft's AL cannot decrease with k (each position adds p_j >= 0)"))
        if incs:
            clamped = [max(v[0], 0.0) for v in incs]
            j = int(np.argmin(clamped))
            prev, k_from, k_to, var_prev, err_prev = incs[j]
            tol = round_err + err_prev + noise_z * math.sqrt(var_inc + var_prev) + 1e-12
            if inc > clamped[j] + tol:
                per = "" if gap == 1 and k_to - k_from == 1 else " per position"
                flags.append(CurveFlag(int(kk[i]), "jump",
                    f"AL rises by {dv(inc)}{per} from k={kk[i - 1]} to k={kk[i]} after rising only "
                    f"{dv(prev)}{per} from k={k_from} to k={k_to} (tolerance {tol:.3g}): the increments "
                    f"p_k = AL(k) - AL(k-1) of a chain draft cannot grow with k"))
        incs.append((inc, int(kk[i - 1]), int(kk[i]), var_inc, round_err))
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
                         big_k: int) -> tuple[NDArray[np.float64], bool, str]:
    """Exact weighted LS over ``1 >= p_1 >= ... >= p_K >= 0`` via d_j = p_j - p_{j+1} >= 0."""
    from scipy import optimize  # lazy: keeps `import distributions` light for the CLI

    design = _design(k, big_k)
    sw = np.sqrt(w)
    ridge = math.sqrt(1e-10 * float(w.sum()))  # picks the smoothest split where ks leave gaps
    lhs = np.vstack((sw[:, None] * design, ridge * np.eye(big_k)))
    rhs = np.concatenate((sw * (a - 1.0), np.zeros(big_k)))
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
                    start_p: NDArray[np.float64]) -> tuple[NDArray[np.float64], bool, str]:
    """Weighted LS over ``1 >= c_1 >= ... >= c_K >= 0`` with ``c = cumprod(g)``, ``g`` in [0, 1]."""
    from scipy import optimize

    sw = np.sqrt(w)

    def resid(g: NDArray[np.float64]) -> NDArray[np.float64]:
        c = np.cumprod(np.clip(g, 0.0, 1.0))
        return sw * (units.al_curve_from_conditional(c, k) - a)

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


def fit_profile(
    ks: ArrayLike,
    als: ArrayLike,
    *,
    steps: ArrayLike | None = None,
    ci95: Sequence[tuple[float, float]] | ArrayLike | None = None,
    monotone_conditional: bool = False,
    tolerance: float | None = None,
    noise_z: float = 3.0,
    profile: ProfileName = "decaying",
) -> FitResult:
    """Fit one conditional profile ``c_1..c_K`` (``K = max(ks)``) to AL at several ``k``.

    Args:
        ks: draft lengths (distinct, any order).
        als: observed AL at each ``k`` (one model, one thinking mode).
        steps: verify steps behind each AL; weights the fit by counts and sets the
            noise (i.i.d. steps, optimistic).
        ci95: ``(lo, hi)`` 95% CI per ``k``; weights by ``1/sigma^2`` and sets the
            noise (takes precedence over ``steps``).
        monotone_conditional: also require ``c_1 >= c_2 >= ... >= c_K``.
        tolerance: absolute residual tolerance overriding the noise-based one.
        noise_z: standard errors that count as "beyond noise" in the flags.
        profile: ``"decaying"`` (``c_j = c1 r^(j-1)``, 2 parameters; the free profile when
            fewer than three draft lengths leave no spare point) or ``"free"``.

    Returns:
        A :class:`FitResult`; ``result.flags`` names every unexplained ``k`` and why.

    Raises:
        FitError / DistributionError: on malformed input (AL outside [1, k+1],
            repeated ``k``, mismatched lengths, zero-width CI, non-positive steps).
    """
    k, a, order = _prepare(ks, als)
    big_k = int(k.max())
    st = _per_k(steps, order, "steps")
    ci = None if ci95 is None else _per_k(np.asarray(ci95, dtype=np.float64).reshape(-1, 2), order, "ci95")
    if st is not None and (np.any(~np.isfinite(st)) or np.any(st <= 0)):
        raise FitError(f"steps must be positive counts, got {np.asarray(steps).tolist()}",
                       hint="a draft length with zero verify steps has no AL; drop it")
    sigma: NDArray[np.float64] | None = None
    if ci is not None:
        width = ci[:, 1] - ci[:, 0]
        if np.any(~np.isfinite(width)) or np.any(width <= 0):
            bad = int(k[np.argmax(~np.isfinite(width) | (width <= 0))])
            raise FitError(f"the 95% CI at k={bad} has zero or negative width: {ci.tolist()}",
                           hint="give (lo, hi) with lo < hi, or omit ci95")
        sigma = se_from_ci(ci[:, 0], ci[:, 1])
        w, weighting = 1.0 / sigma**2, "ci"
    elif st is not None:
        w, weighting = st.copy(), "steps"
    else:
        w, weighting = np.ones_like(a), "equal"
    w = w / w.mean()

    if profile not in PROFILES:
        raise FitError(f"unknown profile {profile!r}", hint=f"one of {', '.join(PROFILES)}")
    p_free, success, message = _fit_nonincreasing_p(k, a, w, big_k)
    if monotone_conditional:
        p_free, success, message = _fit_monotone_c(k, a, w, big_k, p_free)
    free_conditional = units.unconditional_to_conditional(np.minimum.accumulate(np.clip(p_free, 0.0, 1.0)))
    free_resid = a - units.al_curve_from_conditional(free_conditional, k)
    used = profile if (profile == "free" or k.size >= 3) else "free"
    if used == "decaying":
        dec = DecayingConditional.fit(k, a, w)
        conditional = dec.conditional_rates(big_k)
        success, message, n_params = True, f"decaying profile c_j = {dec.c1:.4f} * {dec.r:.4f}^(j-1)", 2
    else:
        conditional, n_params = free_conditional, int(k.size)
    fitted = units.al_curve_from_conditional(conditional, k)
    residuals = a - fitted
    if sigma is None and st is not None:
        var = np.array([AcceptanceDistribution.from_conditional_rates(conditional[:kk]).var() for kk in k])
        sigma = np.sqrt(var / st)
    resolution = _resolution(a)
    if tolerance is not None:
        if not tolerance > 0:
            raise FitError(f"tolerance must be > 0, got {tolerance!r}")
        tol = np.full_like(a, float(tolerance))
    elif sigma is not None:
        tol = np.maximum(noise_z * sigma, resolution / 2.0 + 1e-9)
    else:
        tol = np.full_like(a, DEFAULT_TOLERANCE)

    chi2 = dof = p_value = None
    if sigma is not None and used == "decaying" and k.size > n_params:
        from scipy import stats

        # in standard errors; the free profile's own misfit (monotonicity binding) is not the family's fault
        chi2 = max(0.0, float(np.sum((residuals / sigma) ** 2) - np.sum((free_resid / sigma) ** 2)))
        dof = int(k.size - n_params)
        p_value = float(stats.chi2.sf(chi2, dof))

    flags = curve_flags(k, a, sigma=sigma, resolution=resolution, noise_z=noise_z)
    source = "given" if tolerance is not None else {"ci": "from the CI", "steps": "from the step counts"}.get(
        weighting, "absolute default")
    for kk, obs, fit, r, t in zip(k, a, fitted, residuals, tol, strict=True):
        if abs(r) > t:
            flags.append(CurveFlag(int(kk), "residual",
                f"the fitted profile gives AL({kk})={fit:.4g} but {obs:.4g} was observed "
                f"(residual {r:+.4f}, tolerance {t:.3g} {source})"))
    if p_value is not None and p_value < SHAPE_ALPHA and sigma is not None:
        worst = int(np.argmax(np.abs(residuals / sigma)))
        flags.append(CurveFlag(int(k[worst]), "shape",
            f"the decaying profile misfits the curve (chi-square {chi2:.1f} on {dof} degrees of freedom, "
            f"p = {p_value:.2g}; largest residual {residuals[worst] / sigma[worst]:+.1f} standard errors at "
            f"k={int(k[worst])}): a richer profile is needed (fit with profile 'free')"))
    flags.sort(key=lambda f: (f.k, ("drop", "jump", "residual", "shape").index(f.kind)))
    return FitResult(
        ks=k, al=a, conditional=conditional, fitted=fitted, residuals=residuals, tolerance=tol, sigma=sigma,
        weights=w, weighting=weighting, monotone_conditional=monotone_conditional, success=success,
        message=message, flags=tuple(flags), cost=float(np.dot(w, residuals**2)), resolution=resolution,
        profile=used, num_params=n_params, chi2=chi2, dof=dof, p_value=p_value,
    )


def fit_curve(curve: Mapping[int, float], **kwargs: object) -> FitResult:
    """:func:`fit_profile` on a ``{k: AL}`` mapping (the golden YAML's shape)."""
    if not curve:
        raise FitError("the curve is empty", hint="give AL at one or more draft lengths")
    ks = list(curve)
    return fit_profile(ks, [curve[kk] for kk in ks], **kwargs)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- derivation
def derive_distributions(dist_at_k: AcceptanceDistribution, ks: ArrayLike) -> dict[int, AcceptanceDistribution]:
    """The pmf at each smaller draft length from one run at ``K`` (chain drafts; see ``truncate``)."""
    return {int(kk): dist_at_k.truncate(int(kk)) for kk in units.check_draft_lens(ks)}


def derive_curve(dist_at_k: AcceptanceDistribution, ks: ArrayLike) -> dict[int, float]:
    """AL at each draft length ``k <= K`` derived from one run at ``K``.

    Exact in expectation for chain drafts (the first ``k`` drafts do not depend
    on ``K``); block drafts (DFLASH) must be validated by measuring.
    """
    return {kk: d.mean() for kk, d in derive_distributions(dist_at_k, ks).items()}
