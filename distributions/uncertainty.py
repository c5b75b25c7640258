"""Uncertainty of AL: the one AL interval, the joint law of AL at several k, counts-only intervals, exact tails of
printed values, measuring to a precision, and per-position rates.

:func:`al_interval` is the interval every part of golden-al reports. Its input
is one pair of totals per *cluster*: an independent unit of measurement. A
cluster is whatever the data's independence rests on: a request (per-request
counts from SGLang ``meta_info``, vLLM per-request metrics or our reference
engine), or a time window of aggregate counters (batch means: the deltas of
vLLM/ATOM counters over consecutive windows long enough to be nearly
independent). The function neither knows nor cares which; callers say what
their clusters are in the record's ``uncertainty`` block.

Verify steps within one request are correlated (a request that echoes its prompt
accepts everything for hundreds of steps), so the sampling unit is the request:
resample whole requests and recompute the ratio estimator
``AL = 1 + sum(accepted_i) / sum(steps_i)``. The i.i.d. per-step model
``var(AL) = var(L) / steps`` (:func:`iid_ci_from_counts`) ignores that correlation and is therefore optimistic.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from distributions import units
from distributions.errors import DistributionError

__all__ = [
    "AL_INTERVAL_METHOD",
    "AL_INTERVAL_METHOD_NO_K",
    "AL_INTERVAL_RULE",
    "AL_INTERVAL_RULE_NO_K",
    "FEW_CLUSTERS",
    "JOINT_METHOD",
    "ALInterval",
    "CountsInterval",
    "JointAL",
    "LatticeLaw",
    "RateProfile",
    "al_interval",
    "al_interval_result",
    "al_intervals_batch",
    "chernoff_half_width",
    "few_clusters_warning",
    "gaussian_tail_for_sigma",
    "iid_ci_from_counts",
    "joint_al_bootstrap",
    "next_sample_size",
    "printed_interval_law",
    "rate_profile",
    "representation_warning",
    "se_from_ci",
    "z_for_confidence",
]


# ---------------------------------------------------------------------------- the AL interval
#: The rule :func:`al_interval_result` ships when the draft length is known (every record knows it): the hull of the
#: studentized cluster bootstrap and the CR2 sandwich with Bell-McCaffrey degrees of freedom built on the logit of the
#: share of drafts accepted (``studentized+logit-cr2-bm`` of :func:`al_intervals_batch`): the narrowest rule that covers
#: 93 % at 16 clusters on every scenario where the sample holds the information
#: (experiments/interval-calibration/interval_choice.md).
AL_INTERVAL_RULE = "studentized+logit-cr2-bm"
#: Its name in records (``uncertainty.method``).
AL_INTERVAL_METHOD = "studentized-cluster-bootstrap+logit-cr2-bm"
#: The rule without a draft length (the logit needs k): the same hull with CR2 on AL itself (the previous rule).
AL_INTERVAL_RULE_NO_K = "studentized+cr2-bm"
AL_INTERVAL_METHOD_NO_K = "studentized-cluster-bootstrap+cr2-bm"
#: Above this many clusters the bootstrap and the delta-t interval agree to well under
#: 1% of the width, and the bootstrap's memory grows; the delta-t interval is used.
LARGE_CLUSTERS = 1000
#: Fewer clusters than this earns a warning in the record and on stderr.
FEW_CLUSTERS = 10
#: Bootstrap resamples of :func:`al_interval`.
NUM_RESAMPLES = 2000
#: Continuity floor of the standard error of AL: ``FLOOR_C * AL / n`` (as if one pseudo-cluster
#: in ``n`` were ``FLOOR_C * AL`` off the others); keeps all-identical data from a zero width.
FLOOR_C = 0.1
#: Studentized resamples are divided by at least this fraction of the sample's own standard
#: error, so that resamples of near-identical clusters cannot produce unbounded t values.
STUDENT_FLOOR = 0.3
#: Methods :func:`al_intervals_batch` knows, and hulls of two of them (``a+b``).
METHODS = ("studentized", "delta-t", "cr2-bm", "logit-cr2-bm")


@dataclass(frozen=True)
class ALInterval:
    """The AL interval and what it rests on.

    Attributes:
        al: the ratio estimate ``1 + sum(accepted) / sum(steps)``.
        low / high: the interval.
        confidence: two-sided coverage it aims at.
        method: how it was computed (:data:`AL_INTERVAL_METHOD`, or ``delta-t`` for very many clusters).
        clusters: independent units with at least one verify step.
        resamples: bootstrap resamples (0 for the delta-t interval).
        seed: the bootstrap's seed.
    """

    al: float
    low: float
    high: float
    confidence: float
    method: str
    clusters: int
    resamples: int
    seed: int

    @property
    def ci(self) -> tuple[float, float]:
        """``(low, high)``."""
        return (self.low, self.high)

    @property
    def half_width(self) -> float:
        """``(high - low) / 2``."""
        return (self.high - self.low) / 2.0

    @property
    def warning(self) -> str | None:
        """A sentence when the interval rests on too few clusters (a record's requests also get
        :func:`representation_warning`)."""
        return few_clusters_warning(self.clusters)

    def uncertainty(self) -> dict[str, Any]:
        """The ``uncertainty`` block of records: ``{"method", "clusters", "confidence"}``."""
        return {"method": self.method, "clusters": int(self.clusters), "confidence": float(self.confidence)}


def few_clusters_warning(clusters: int) -> str | None:
    """The warning for an interval over fewer than :data:`FEW_CLUSTERS` clusters, else None."""
    if clusters >= FEW_CLUSTERS:
        return None
    return (f"the interval rests on {clusters} independent cluster{'s' if clusters != 1 else ''} "
            f"(fewer than {FEW_CLUSTERS}): it is wide and its coverage is only approximate; "
            "measure more prompts")


#: Issue 54 item 9, from experiments/interval-calibration/representativeness.md (re-run by representativeness.py):
#: from this many requests on, every simulated population whose rare kinds make up RARE_SHARE of requests is covered
#: (below it, samples holding none of such a kind miss); a heavy request has more than HEAVY_RATIO times the median
#: request's verify steps, and a sample holding fewer than HEAVY_HELD of them shows a kind rarer than that.
REPRESENTATIVE_REQUESTS = 32
HEAVY_RATIO = 4.0
RARE_SHARE = 0.10
HEAVY_HELD = RARE_SHARE * REPRESENTATIVE_REQUESTS  #: how often 32 requests hold a 10 % kind


def representation_warning(steps: Sequence[float]) -> str | None:
    """The warning for requests too few or too uneven to hold the population's rare kinds, naming how many would
    (:data:`REPRESENTATIVE_REQUESTS`, :data:`HEAVY_HELD`); ``steps``: each request's (or conversation's) verify
    steps. None when neither holds."""
    st = sorted(float(s) for s in steps if s > 0)
    n = len(st)
    if n < 2:
        return None
    median = st[n // 2] if n % 2 else (st[n // 2 - 1] + st[n // 2]) / 2.0
    heavy = [s for s in st if s > HEAVY_RATIO * median]
    where = "experiments/interval-calibration/representativeness.md"
    if 0 < len(heavy) < HEAVY_HELD:
        need = math.ceil(n * HEAVY_HELD / len(heavy))
        return (f"too uneven to hold its rare kinds: {len(heavy)} of the {n} requests hold {sum(heavy) / sum(st):.0%} "
                f"of the verify steps (each more than {HEAVY_RATIO:g}x the median request's), a long or slow kind held "
                f"fewer than the {HEAVY_HELD:g} times {REPRESENTATIVE_REQUESTS} requests hold one of {RARE_SHARE:.0%} "
                f"({where}); about {need} requests ({need - n} more) would hold it as often")
    if n < REPRESENTATIVE_REQUESTS:
        return (f"too few to hold rare kinds: {n} requests miss a kind making up {RARE_SHARE:.0%} of the population in "
                f"{(1 - RARE_SHARE) ** n:.0%} of samples, and where such requests run longer or accept less the "
                f"interval then covers below 95 % ({where}); {REPRESENTATIVE_REQUESTS} requests "
                f"({REPRESENTATIVE_REQUESTS - n} more) cover such populations")
    return None


def _clusters(accepted: ArrayLike, steps: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Validated per-cluster totals of shape ``(..., n)``, sorted within each row, zero-step clusters dropped."""
    acc = np.asarray(accepted, dtype=np.float64)
    st = np.asarray(steps, dtype=np.float64)
    if acc.shape != st.shape or acc.ndim < 1:
        raise DistributionError(f"accepted and steps must have equal shapes, got {acc.shape} and {st.shape}")
    if not (np.all(np.isfinite(acc)) and np.all(np.isfinite(st))) or np.any(acc < 0) or np.any(st < 0):
        raise DistributionError("per-cluster counts must be finite and >= 0")
    if np.any((st == 0) & (acc > 0)):
        raise DistributionError("a cluster has accepted drafts but zero verify steps",
                                hint="accepted and steps must be totals of the same cluster")
    # Sorting makes the result a function of the multiset of clusters: the order of rows
    # (completion order under concurrency) cannot change it.
    order = np.lexsort((acc, st), axis=-1)
    acc = np.take_along_axis(acc, order, axis=-1)
    st = np.take_along_axis(st, order, axis=-1)
    return acc, st


def _weights(n: int, num_resamples: int, seed: int) -> np.ndarray:
    """Multinomial resampling counts ``(num_resamples, n)``, a function of ``(n, seed)`` only."""
    if n <= 512:
        return _cached_weights(n, num_resamples, seed)
    return _draw_weights(n, num_resamples, seed)


def _draw_weights(n: int, num_resamples: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng([int(seed), int(n), 0x61C1])
    w = rng.multinomial(n, np.full(n, 1.0 / n), size=num_resamples).astype(np.float64)
    w.flags.writeable = False
    return w


@functools.lru_cache(maxsize=16)
def _cached_weights(n: int, num_resamples: int, seed: int) -> np.ndarray:
    return _draw_weights(n, num_resamples, seed)


def _t_quantile(p: float, df: int) -> float:
    from scipy import stats  # scipy is a core dependency; imported here to keep import time low

    return float(stats.t.ppf(p, df))


def _t_quantiles(p: float, nu: np.ndarray, fallback: int) -> np.ndarray:
    """Student-t quantiles at ``floor(nu)`` degrees of freedom (at least 1; ``fallback`` where nu is not finite)."""
    from scipy import stats

    df = np.where(np.isfinite(nu), np.maximum(1.0, np.floor(np.where(np.isfinite(nu), nu, 1.0))), fallback)
    return np.asarray(stats.t.ppf(p, df), dtype=np.float64)


@dataclass(frozen=True)
class ClusterRows:
    """Rows of clusters and what every method builds on: the ratio, the delta-method se and the continuity floor."""

    acc: np.ndarray
    st: np.ndarray
    al: np.ndarray
    resid: np.ndarray  #: influence of each cluster on the ratio, times sum(s)/n
    se: np.ndarray
    floor: np.ndarray
    t_floor: np.ndarray  #: no interval is narrower than AL -/+ t_{n-1} * floor
    alpha: float
    df: int


def cluster_rows(accepted: ArrayLike, steps: ArrayLike, confidence: float) -> ClusterRows:
    """:class:`ClusterRows` of ``(R, n)`` per-cluster totals (every cluster with steps > 0)."""
    if not 0.0 < confidence < 1.0:
        raise DistributionError(f"confidence must be in (0, 1), got {confidence!r}")
    acc, st = _clusters(accepted, steps)
    acc, st = np.atleast_2d(acc), np.atleast_2d(st)
    if acc.ndim != 2 or np.any(st <= 0):
        raise DistributionError("al_intervals_batch needs (R, n) arrays of clusters with steps > 0")
    n = acc.shape[1]
    rate = acc.sum(axis=1) / st.sum(axis=1)
    al = 1.0 + rate
    resid = acc - rate[:, None] * st
    df = max(n - 1, 1)
    floor = FLOOR_C * al / n
    se = np.maximum(np.sqrt((resid**2).sum(axis=1) * n / df) / st.sum(axis=1), floor)
    alpha = (1.0 - confidence) / 2.0
    return ClusterRows(acc, st, al, resid, se, floor, _t_quantile(1.0 - alpha, df) * floor, alpha, df)


def al_intervals_batch(accepted: ArrayLike, steps: ArrayLike, *, method: str = "studentized",
                       confidence: float = 0.95, seed: int = 0, num_resamples: int = NUM_RESAMPLES,
                       draft_len: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """AL intervals of many data sets at once (rows of ``(R, n)`` arrays, every cluster with steps > 0).

    The vectorized engine behind :func:`al_interval`, also used by the calibration experiment
    so that what is calibrated is what ships (the candidates that lost live in
    experiments/interval-calibration/candidates.py). Methods:

    * ``studentized``: bootstrap-t of the ratio. Each resample is studentized by its own
      delta-method standard error (computed in closed form from weighted sums, so it costs
      no more than the percentile bootstrap), with the denominators floored at
      :data:`STUDENT_FLOOR` times the sample's standard error.
    * ``delta-t``: ``AL +/- t_{n-1} se`` with the delta-method se.
    * ``cr2-bm``: ``AL +/- t_nu se_CR2``. The ratio is the weighted least-squares slope of accepted on steps
      (weights 1/steps), so its bias-reduced cluster-robust variance (CR2, Bell and McCaffrey 2002) divides each
      squared residual by ``1 - h_i`` with leverage ``h_i = s_i / sum(s)``; ``nu`` is Bell-McCaffrey's (working
      variance proportional to steps), :func:`cr2_se_df`.
    * ``logit-cr2-bm``: the same CR2 interval built on the logit of the share of drafts accepted,
      ``theta = (AL - 1) / k`` (``draft_len`` is needed), :func:`cr2_bounds`.
    * ``a+b`` (``studentized+cr2-bm``, ``studentized+logit-cr2-bm``): the hull of two intervals: it covers
      wherever either does, at the width of the wider.

    All methods share the continuity floor ``se >= FLOOR_C * AL / n`` (the bootstrap through the interval being
    at least ``AL +/- t_{n-1} * floor``), so all-identical clusters still give a positive width.
    """
    if any(m not in METHODS for m in method.split("+")):
        raise DistributionError(f"unknown interval method {method!r}", hint=f"one of {', '.join(METHODS)}, or a+b")
    if "+" in method:
        parts = [al_intervals_batch(accepted, steps, method=m, confidence=confidence, seed=seed,
                                    num_resamples=num_resamples, draft_len=draft_len) for m in method.split("+")]
        return np.minimum.reduce([lo for lo, _ in parts]), np.maximum.reduce([hi for _, hi in parts])
    b = cluster_rows(accepted, steps, confidence)
    if method.endswith("cr2-bm"):
        se2, nu = cr2_se_df(b.acc, b.st)
        return cr2_bounds(b, se2, nu, draft_len=draft_len, logit=method.startswith("logit-"))
    if method == "delta-t":
        q = _t_quantile(1.0 - b.alpha, b.df)
        return np.maximum(1.0, b.al - q * b.se), b.al + q * b.se
    lo = np.empty_like(b.al)
    hi = np.empty_like(b.al)
    n = b.acc.shape[1]
    for sl, s_b, d, w in resampled_rates(b, seed, num_resamples):
        # sum_i w_i (a_i - r* s_i)^2 with a_i - r* s_i = resid_i - d s_i
        ss = ((b.resid[sl] ** 2) @ w.T - 2.0 * d * ((b.resid[sl] * b.st[sl]) @ w.T) + d * d * ((b.st[sl] ** 2) @ w.T))
        se_b = np.sqrt(np.maximum(ss, 0.0) * n / b.df) / s_b
        se_b = np.maximum(se_b, np.maximum(FLOOR_C * (b.al[sl, None] + d) / n, STUDENT_FLOOR * b.se[sl, None]))
        t_lo, t_hi = np.quantile(d / se_b, [b.alpha, 1.0 - b.alpha], axis=1)
        lo[sl], hi[sl] = b.al[sl] - t_hi * b.se[sl], b.al[sl] - t_lo * b.se[sl]
    return np.maximum(1.0, np.minimum(lo, b.al - b.t_floor)), np.maximum(hi, b.al + b.t_floor)


def resampled_rates(b: ClusterRows, seed: int,
                    num_resamples: int) -> Iterator[tuple[slice, np.ndarray, np.ndarray, np.ndarray]]:
    """Chunks of rows (``(rows, resamples)`` matrices near 16 MB): each resample's steps and rate minus the sample's,
    and the resampling counts (a function of ``(n, seed)`` only)."""
    w = _weights(b.acc.shape[1], num_resamples, seed)
    step = max(1, 2_000_000 // max(num_resamples, 1))
    for r0 in range(0, b.al.size, step):
        sl = slice(r0, r0 + step)
        s_b = b.st[sl] @ w.T
        yield sl, s_b, (b.resid[sl] @ w.T) / s_b, w


def cr2_se_df(acc: np.ndarray, st: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CR2 standard error of the ratio ``sum(a) / sum(s)`` over ``(R, n)`` clusters, and its degrees of freedom.

    The ratio is the WLS slope of ``a`` on ``s`` with weights ``1/s`` (so ``w_i s_i = 1``): leverages
    ``h_i = s_i / S``, residuals ``e_i = a_i - r s_i``, ``var = sum(e_i^2 / (1 - h_i)) / S^2``. Degrees of freedom:
    Bell-McCaffrey ``tr(B)^2 / tr(B^2)`` with ``B = D^-1/2 M' diag(s) M D^-1/2`` (``M = I - H``, ``D = diag(1 - h)``,
    working variance proportional to steps).
    """
    s_sum = st.sum(axis=1, keepdims=True)
    rate = acc.sum(axis=1, keepdims=True) / s_sum
    one_h = np.maximum(1.0 - st / s_sum, 1e-12)
    se = np.sqrt(((acc - rate * st) ** 2 / one_h).sum(axis=1)) / s_sum[:, 0]
    # K = M' diag(s) M = diag(s) - (s^2 1' + 1 s^2') / S + (sum s^3 / S^2) 1 1'
    q = (st**3).sum(axis=1, keepdims=True) / s_sum**2
    sq = st**2 / s_sum
    d = 1.0 / one_h
    k_diag = st - 2.0 * sq + q
    tr_b = (d * k_diag).sum(axis=1)
    k_full = -(sq[:, :, None] + sq[:, None, :]) + q[:, :, None]
    idx = np.arange(st.shape[1])
    k_full[:, idx, idx] += st
    tr_b2 = np.einsum("ri,rij,rj->r", d, k_full**2, d)
    return se, tr_b**2 / np.maximum(tr_b2, 1e-300)


def cr2_bounds(b: ClusterRows, se_cr2: np.ndarray, nu: np.ndarray, *, draft_len: int | None,
               logit: bool) -> tuple[np.ndarray, np.ndarray]:
    """``AL +/- t_nu se_CR2`` (floored), or with ``logit`` the same on the logit of ``theta = (AL - 1) / k``
    (continuity-corrected to ``(sum a + 1/2) / (k sum s + 1)``, its se ``se_CR2 / (k theta (1 - theta))``) mapped
    back: it stays inside ``[1, k + 1]`` and reaches further from the ceiling than towards it, as a ratio near the
    ceiling does."""
    se_c = np.maximum(se_cr2, b.floor)
    q_nu = _t_quantiles(1.0 - b.alpha, nu, b.df)
    if not logit:
        return np.maximum(1.0, b.al - q_nu * se_c), b.al + q_nu * se_c
    if draft_len is None:
        raise DistributionError("the logit CR2 interval needs the draft length k",
                                hint="pass draft_len (a record always knows its k)")
    k = float(units.check_draft_len(draft_len))
    if np.any(b.acc > k * b.st * (1.0 + 1e-9) + 1e-9):  # beyond rounding of windowed counts
        raise DistributionError(f"more drafts accepted than k={draft_len} per verify step allows")
    theta = (b.acc.sum(axis=1) + 0.5) / (k * b.st.sum(axis=1) + 1.0)
    g = np.log(theta / (1.0 - theta))
    half = q_nu * se_c / (k * theta * (1.0 - theta))
    from scipy.special import expit

    lo, hi = 1.0 + k * expit(g - half), 1.0 + k * expit(g + half)
    return (np.maximum(1.0, np.minimum(lo, b.al - b.t_floor)),
            np.minimum(np.maximum(hi, b.al + b.t_floor), k + 1.0))


def al_interval_result(accepted: ArrayLike, steps: ArrayLike, *, confidence: float = 0.95, seed: int = 0,
                       draft_len: int | None = None, num_resamples: int = NUM_RESAMPLES) -> ALInterval:
    """:func:`al_interval` with the estimate and what the interval rests on (:class:`ALInterval`).

    Args:
        accepted: accepted draft tokens per cluster (request or counter window).
        steps: verify steps per cluster; clusters with zero steps carry no weight and are not counted.
        confidence: two-sided coverage.
        seed: seed of the resampling (the result is a function of the multiset of clusters and the seed).
        draft_len: ``k``, if known: the upper bound is then capped at ``k + 1``.
        num_resamples: bootstrap resamples.

    Raises:
        DistributionError: no cluster has a verify step, or the counts are invalid.
    """
    acc, st = _clusters(accepted, steps)
    if acc.ndim != 1:
        raise DistributionError(f"accepted and steps must be 1-D, got shape {acc.shape}")
    keep = st > 0
    acc, st = acc[keep], st[keep]
    if acc.size == 0:
        raise DistributionError("AL is undefined: no cluster has a verify step",
                                hint="no request reached a decode step with drafts; send more or longer requests")
    n = int(acc.size)
    al = units.al_from_counts(acc.sum(), st.sum())
    if n > LARGE_CLUSTERS:
        method, resamples = "delta-t", 0
        lo_a, hi_a = al_intervals_batch(acc[None], st[None], method="delta-t", confidence=confidence)
    else:
        rule, method = ((AL_INTERVAL_RULE, AL_INTERVAL_METHOD) if draft_len is not None
                        else (AL_INTERVAL_RULE_NO_K, AL_INTERVAL_METHOD_NO_K))
        resamples = int(num_resamples)
        lo_a, hi_a = al_intervals_batch(acc[None], st[None], method=rule, confidence=confidence,
                                        seed=seed, num_resamples=num_resamples, draft_len=draft_len)
    lo, hi = float(lo_a[0]), float(hi_a[0])
    if draft_len is not None:
        cap = float(units.check_draft_len(draft_len)) + 1.0
        hi = min(hi, cap)
        lo = min(lo, cap)
    return ALInterval(al=al, low=lo, high=hi, confidence=float(confidence), method=method,
                      clusters=n, resamples=resamples, seed=int(seed))


def al_interval(accepted: ArrayLike, steps: ArrayLike, *, confidence: float = 0.95,
                seed: int = 0, draft_len: int | None = None) -> tuple[float, float]:
    """The AL interval over independent clusters: ``(low, high)``.

    ``accepted`` and ``steps`` are per-cluster totals (one cluster = one independent unit:
    a request, or a window of aggregate counters). With the draft length ``k``, the interval is the hull of a
    studentized (bootstrap-t) cluster bootstrap of the ratio estimator ``1 + sum(a) / sum(s)`` and its CR2
    sandwich interval with Bell-McCaffrey degrees of freedom built on the logit of ``(AL - 1) / k``
    (:data:`AL_INTERVAL_RULE`); without it, the CR2 half is built on AL itself (:data:`AL_INTERVAL_RULE_NO_K`).
    Chosen by simulation against known truth (experiments/interval-calibration/interval_choice.md), with a
    continuity floor so that fewer than 30 identical clusters still give a positive width. It is deterministic:
    a function of the multiset of clusters, ``confidence`` and ``seed``.
    """
    return al_interval_result(accepted, steps, confidence=confidence, seed=seed, draft_len=draft_len).ci


# ---------------------------------------------------------------------------- AL at several k, jointly
#: Name of the joint method (recorded in a fit's diagnostics).
JOINT_METHOD = "joint-cluster-bootstrap"


@dataclass(frozen=True)
class JointAL:
    """AL at several draft lengths measured on the same clusters (prompts), with their joint law.

    The records of one run share their prompts, so their ALs move together: a prompt the draft
    predicts well raises every k. One cluster bootstrap over prompts, the same resample for every k,
    gives replicates of the whole vector; their covariance is what a fit's residuals, drops and
    jumps are judged against (marginal standard errors would treat the points as independent).

    Attributes:
        ks: the draft lengths.
        al: ``1 + sum(accepted) / sum(steps)`` per k.
        replicates: ``(resamples, len(ks))`` resampled ALs (rows where a k drew no steps dropped).
        clusters: clusters resampled (their union over the k).
        floor: the continuity floor added to each variance (:data:`FLOOR_C` ``* AL / n``), so
            identical clusters still give a positive-definite covariance.
    """

    ks: tuple[int, ...]
    al: np.ndarray
    replicates: np.ndarray
    clusters: int
    floor: np.ndarray
    seed: int

    @property
    def cov(self) -> np.ndarray:
        """Covariance of the ALs (bootstrap, plus the continuity floor on the diagonal)."""
        c = np.atleast_2d(np.cov(self.replicates, rowvar=False, ddof=1))
        return c + np.diag(self.floor**2)

    @property
    def se(self) -> np.ndarray:
        return np.sqrt(np.diag(self.cov))

    @property
    def corr(self) -> np.ndarray:
        se = self.se
        return self.cov / np.outer(se, se)

    def as_dict(self) -> dict[str, Any]:
        return {"method": JOINT_METHOD, "ks": list(self.ks), "clusters": int(self.clusters),
                "resamples": int(self.replicates.shape[0]), "seed": int(self.seed),
                "se": [float(v) for v in self.se], "corr": [[round(float(v), 4) for v in row] for row in self.corr]}


def joint_al_bootstrap(accepted: ArrayLike, steps: ArrayLike, ks: Sequence[int], *, seed: int = 0,
                       num_resamples: int = NUM_RESAMPLES) -> JointAL:
    """:class:`JointAL` from per-cluster totals ``(n, len(ks))``: row i is one cluster (a prompt)
    at every k, zeros where the cluster was not measured at that k.

    Raises:
        DistributionError: shapes disagree, counts are invalid, or a k has no verify step.
    """
    acc = np.asarray(accepted, dtype=np.float64)
    st = np.asarray(steps, dtype=np.float64)
    if acc.ndim != 2 or acc.shape != st.shape or acc.shape[1] != len(ks):
        raise DistributionError(f"accepted and steps must be (clusters, {len(ks)}) arrays, got {acc.shape}, {st.shape}")
    if not (np.all(np.isfinite(acc)) and np.all(np.isfinite(st))) or np.any(acc < 0) or np.any(st < 0):
        raise DistributionError("per-cluster counts must be finite and >= 0")
    keep = st.sum(axis=1) > 0
    acc, st = acc[keep], st[keep]
    s_sum = st.sum(axis=0)
    if acc.shape[0] == 0 or np.any(s_sum <= 0):
        bad = [int(k) for k, s in zip(ks, s_sum, strict=True) if s <= 0] if acc.shape[0] else list(ks)
        raise DistributionError(f"AL is undefined at k={bad}: no cluster has a verify step there")
    n = int(acc.shape[0])
    al = 1.0 + acc.sum(axis=0) / s_sum
    w = _weights(n, num_resamples, seed)
    s_b = w @ st
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = 1.0 + (w @ acc) / s_b
    reps = reps[np.all(s_b > 0, axis=1)]
    if reps.shape[0] < 2:
        raise DistributionError("too few usable resamples for a joint law", hint="measure more prompts")
    per_k = (st > 0).sum(axis=0)
    floor = FLOOR_C * al / np.maximum(per_k, 1)
    return JointAL(ks=tuple(int(k) for k in ks), al=al, replicates=reps, clusters=n, floor=floor, seed=int(seed))


# ---------------------------------------------------------------------------- planning
def z_for_confidence(confidence: float) -> float:
    """Two-sided normal quantile: 1.95996 for 0.95."""
    if not 0.0 < confidence < 1.0:
        raise DistributionError(f"confidence must be in (0, 1), got {confidence!r}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def se_from_ci(lo: ArrayLike, hi: ArrayLike, confidence: float = 0.95) -> Any:
    """Normal-approximation standard error behind a two-sided CI ``(lo, hi)``: width / (2 z).

    Broadcasts like numpy: floats give a float, arrays of bounds an array.
    """
    return (np.asarray(hi, dtype=np.float64) - np.asarray(lo, dtype=np.float64)) / (2.0 * z_for_confidence(confidence))


def _check_half_width(half_width: float) -> float:
    if not (isinstance(half_width, (int, float, np.floating)) and math.isfinite(half_width) and half_width > 0):
        raise DistributionError(
            f"target CI half-width must be a number > 0, got {half_width!r}",
            hint="e.g. 0.02 for AL +/- 0.02",
        )
    return float(half_width)


# ---------------------------------------------------------------------------- counts only
IID_LABEL = "i.i.d. per-step normal approximation (optimistic: ignores correlation within requests)"


@dataclass(frozen=True)
class CountsInterval:
    """A CI for AL from aggregate counts alone; see ``label`` for what it assumes."""

    al: float
    ci_low: float
    ci_high: float
    confidence: float
    std_error: float
    num_verify_steps: float
    step_variance: float
    variance_source: str
    label: str = IID_LABEL

    @property
    def ci(self) -> tuple[float, float]:
        """``(low, high)``."""
        return (self.ci_low, self.ci_high)


def iid_ci_from_counts(num_accepted_drafts: float, num_verify_steps: float, *,
                       histogram: ArrayLike | None = None, k: int | None = None,
                       step_variance: float | None = None, confidence: float = 0.95) -> CountsInterval:
    """CI for AL when no per-request data exists (Prometheus deltas, ATOM stats).

    Treats every verify step as an independent draw of ``L``: ``se = sqrt(var(L) / steps)``.
    This is OPTIMISTIC for real text, where steps within a request are correlated
    (prefer :func:`al_interval` whenever per-request data exists).
    ``var(L)`` comes from, in order: ``step_variance``; the ``histogram`` of
    accepted drafts; or, with only ``k``, the largest variance any distribution on
    ``[1, k+1]`` with this mean can have, ``(AL - 1)(k + 1 - AL)`` (Bhatia-Davis).
    """
    al = units.al_from_counts(num_accepted_drafts, num_verify_steps)
    z = z_for_confidence(confidence)
    if step_variance is not None:
        var, src = float(step_variance), "given"
        if not var >= 0:
            raise DistributionError(f"step variance must be >= 0, got {step_variance!r}")
    elif histogram is not None:
        h = np.asarray(histogram, dtype=np.float64)
        if h.ndim != 1 or np.any(h < 0) or h.sum() <= 0:
            raise DistributionError(f"histogram must be counts >= 0 with a positive total, got {histogram!r}")
        j = np.arange(h.size)
        mean_j = float(np.dot(j, h) / h.sum())
        var, src = float(np.dot((j - mean_j) ** 2, h) / h.sum()), "histogram"
        if abs(mean_j - (al - 1.0)) > 1e-6 * max(1.0, al):
            raise DistributionError(
                f"the histogram's mean accepted drafts {mean_j:.6g} disagrees with the counts ({al - 1.0:.6g})",
                hint="pass the histogram of the same run as the totals",
            )
        k = k if k is not None else max(1, h.size - 1)
    elif k is not None:
        units.check_al(al, k)
        var, src = max(0.0, (al - 1.0) * (k + 1.0 - al)), "upper bound (AL-1)(k+1-AL)"
    else:
        raise DistributionError(
            "the per-step variance is unknown: give step_variance, histogram or k",
            hint="with only k the widest (most conservative) i.i.d. interval is used",
        )
    se = math.sqrt(var / float(num_verify_steps))
    hi_cap = float(k) + 1.0 if k is not None else math.inf
    return CountsInterval(al=al, ci_low=max(1.0, al - z * se), ci_high=min(hi_cap, al + z * se),
                          confidence=confidence, std_error=se, num_verify_steps=float(num_verify_steps),
                          step_variance=var, variance_source=src)


# ---------------------------------------------------------------------------- checking a run (exact tails)
@dataclass(frozen=True)
class LatticeLaw:
    """A discrete law: ``values`` with ``probs`` (the law of one independent unit of evidence)."""

    values: np.ndarray
    probs: np.ndarray

    def mean(self) -> float:
        """``E[X]``."""
        return float(np.dot(self.values, self.probs))

    def var(self) -> float:
        """``Var[X]``."""
        m = self.mean()
        return float(np.dot((self.values - m) ** 2, self.probs))


def _power_pmf(probs: np.ndarray, n: int) -> np.ndarray:
    """pmf of the sum of ``n`` i.i.d. draws with pmf ``probs`` (on 0..len-1), by repeated squaring."""
    out = np.array([1.0])
    base = probs
    while n:
        if n & 1:
            out = np.convolve(out, base)
        n >>= 1
        if n:
            base = np.convolve(base, base)
        out = np.maximum(out, 0.0)
    return out / out.sum()


def printed_interval_law(probs: ArrayLike, steps: int, decimals: int = 2) -> LatticeLaw:
    """Law of ``f"{mean:.2f}"`` for the mean of ``steps`` i.i.d. draws of ``L`` (``probs[i] = P(L = i + 1)``).

    This is what an SGLang decode line prints as ``accept len`` when the batch size is
    constant over its ``--decode-log-interval`` steps and one ``L`` is drawn per batch step:
    ``sum(bs * L) / sum(bs) = S / steps`` lies on a ``1/steps`` grid and is then rounded to
    ``decimals`` decimals (sgl-project/sglang
    ``python/sglang/srt/managers/scheduler_components/metrics_reporter.py``, 0.5.23). The
    rounding is reproduced with Python's own formatting, value by value.
    """
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 1 or p.size < 1 or np.any(p < 0) or not math.isclose(float(p.sum()), 1.0, abs_tol=1e-9):
        raise DistributionError(f"probs must be a pmf over L = 1..k+1, got {probs!r}")
    if not (isinstance(steps, (int, np.integer)) and steps >= 1):
        raise DistributionError(f"steps per line must be an integer >= 1, got {steps!r}")
    return _printed_law(tuple(p.tolist()), int(steps), int(decimals))


@functools.lru_cache(maxsize=64)
def _printed_law(p_tuple: tuple[float, ...], steps: int, decimals: int) -> LatticeLaw:
    p = np.array(p_tuple)
    sums = _power_pmf(p, int(steps))  # S - steps, i.e. sum of (L - 1)
    keep = sums > 1e-300
    s = np.nonzero(keep)[0] + int(steps)
    printed = np.array([float(f"{v / steps:.{decimals}f}") for v in s.tolist()])
    vals, inv = np.unique(printed, return_inverse=True)
    pr = np.bincount(inv, weights=sums[keep], minlength=vals.size)
    return LatticeLaw(values=vals, probs=pr / pr.sum())


def chernoff_half_width(groups: Sequence[tuple[LatticeLaw, float, float]], tail_probability: float) -> tuple[float, float]:
    """Thresholds ``(t_low, t_high)`` with ``P(D >= t_high) <= p`` and ``P(D <= -t_low) <= p``.

    ``D = sum_g sum_{units in g} w_g (X_u - E X_u)`` over independent units; ``groups`` holds
    ``(law of X, weight w_g, number of units in g)``. The bound is Chernoff's,
    ``P(D >= t) <= exp(K(lam) - lam t)`` with the exact cumulant generating function ``K``
    of the laws, minimized over a grid of ``lam``: valid for any number of units (one line
    of a skewed sampler included), and within a few percent of the normal quantile when the
    units are many (``t -> sqrt(2 ln(1/p)) * se``).
    """
    if not 0.0 < tail_probability < 1.0:
        raise DistributionError(f"tail probability must be in (0, 1), got {tail_probability!r}")
    var = math.fsum(w * w * n * law.var() for law, w, n in groups)
    if var <= 0:
        return 0.0, 0.0
    se = math.sqrt(var)
    lams = np.geomspace(1e-3, 1e3, 400) / se
    log_inv = math.log(1.0 / tail_probability)
    out = []
    for sign in (-1.0, 1.0):
        k_tot = np.zeros_like(lams)
        for law, w, n in groups:
            support = law.probs > 0  # a value of probability 0 must not set the log-sum-exp's shift:
            probs = law.probs[support]  # exp(e - top) of every possible value would underflow to 0
            y = sign * w * (law.values[support] - law.mean())
            e = lams[:, None] * y[None, :]
            top = e.max(axis=1, keepdims=True)
            k_tot += n * (top[:, 0] + np.log(np.exp(e - top) @ probs))
        out.append(float(np.min((k_tot + log_inv) / lams)))
    return out[0], out[1]


def gaussian_tail_for_sigma(z: float) -> float:
    """``exp(-z^2 / 2)``: the one-sided tail whose Chernoff threshold is ``z`` standard errors for normal data.

    With it, a check at ``z`` sigma has the familiar width on long logs, and its false-alarm
    rate is at most ``2 exp(-z^2/2)`` (6.7e-4 at z = 4) for any log: Chernoff's bound holds
    at every sample size.
    """
    if not (z > 0 and math.isfinite(z)):
        raise DistributionError(f"z must be > 0, got {z!r}")
    return math.exp(-0.5 * z * z)


# ---------------------------------------------------------------------------- measuring to a precision
def next_sample_size(clusters: int, half_width: float, target_half_width: float, *, batch: int,
                     available: int) -> int | None:
    """How many clusters (prompts) to have after the next batch, or None to stop.

    Stops (None) when ``half_width <= target_half_width`` or every prompt is used. Otherwise
    grows by at least one ``batch``, and towards the planner's estimate
    ``clusters * (half_width / target)^2`` (half-widths shrink like ``1/sqrt(n)``), rounded
    up to whole batches and at most doubling per step, so a noisy early estimate cannot
    overshoot far.
    """
    hw = _check_half_width(target_half_width)
    if batch < 1 or available < 1 or clusters < 0:
        raise DistributionError(f"need batch >= 1, available >= 1, clusters >= 0; got {batch}, {available}, {clusters}")
    if (clusters > 0 and half_width <= hw) or clusters >= available:
        return None
    planned = clusters * (half_width / hw) ** 2 if clusters > 0 and math.isfinite(half_width) else 0.0
    grow = max(clusters + batch, min(2 * clusters, math.ceil(planned / batch) * batch))
    return int(min(available, grow))


# ----------------------------------------------------------------- both rate conventions


@dataclass(frozen=True)
class RateProfile:
    """Per-position acceptance in both conventions, with intervals.

    ``marginal[j-1] = P(position j accepted)`` (accepted-at-j / verify steps, specdec_bench's
    ``marginal_accept_rates``); ``conditional[j-1] = P(j accepted | j-1 accepted)``
    (``conditional_accept_rates``). ``design_effect``: how much the steps' correlation inflates
    a variance, read off the AL's own cluster interval (1.0 when none is given, and then the
    intervals treat steps as independent: ``basis`` says which).
    """

    k: int
    al: float
    marginal: tuple[float, ...]
    conditional: tuple[float, ...]
    marginal_ci95: tuple[tuple[float, float], ...]
    conditional_ci95: tuple[tuple[float, float], ...]
    design_effect: float
    basis: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, rounded to 6 decimals."""
        def r(xs: Sequence[float]) -> list[float]:
            return [round(float(x), 6) for x in xs]

        return {"k": self.k, "acceptance_length": round(self.al, 6),
                "conditional_accept_rates": r(self.conditional), "marginal_accept_rates": r(self.marginal),
                "conditional_accept_rates_ci95": [r(c) for c in self.conditional_ci95],
                "marginal_accept_rates_ci95": [r(c) for c in self.marginal_ci95],
                "design_effect": round(self.design_effect, 4), "interval_basis": self.basis}


def _wilson(successes: float, n: float, z: float) -> tuple[float, float]:
    """Wilson score interval for a proportion from ``n`` (possibly fractional, effective) trials."""
    if n <= 0:
        return (0.0, 1.0)
    p = min(max(successes / n, 0.0), 1.0)
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def rate_profile(per_position_accepted: Sequence[float], verify_steps: float, *,
                 al_ci95: tuple[float, float] | None = None, confidence: float = 0.95) -> RateProfile:
    """Conditional and marginal per-position rates of one (k) point, with intervals.

    The counts say how often each position was accepted (a prefix: position j only after j-1).
    Steps within a request are correlated, so a rate's interval is a Wilson interval over an
    *effective* number of trials, the raw count divided by the design effect
    ``deff = (cluster SE of AL / i.i.d. SE of AL)^2`` (at least 1). The i.i.d. SE follows from
    the same counts: with ``X`` the accepted drafts of a step, ``P(X >= j) = m_j``, so
    ``E[X] = sum m_j`` and ``E[X^2] = sum (2j - 1) m_j``. Given ``al_ci95`` (the point's cluster
    interval), ``deff`` comes from its half-width; without one the intervals assume independent
    steps and say so in ``basis``. Calibrated in ``tests/unit/test_rate_profile.py`` by
    simulation of correlated requests.

    Raises:
        DistributionError: counts that are not a non-increasing prefix within ``verify_steps``.
    """
    a = np.asarray(per_position_accepted, dtype=float)
    k = int(a.size)
    if k < 1 or verify_steps < 1:
        raise DistributionError(f"need k >= 1 positions and at least one verify step (k={k}, steps={verify_steps})")
    if np.any(a < 0) or a[0] > verify_steps or np.any(np.diff(a) > 0):
        raise DistributionError(f"per-position accepted counts {a.astype(int).tolist()} are not a non-increasing "
                                f"prefix within {verify_steps} verify steps")
    n = float(verify_steps)
    marginal = a / n
    prev = np.concatenate(([n], a[:-1]))
    conditional = np.where(prev > 0, a / np.where(prev > 0, prev, 1.0), 0.0)
    al = 1.0 + float(marginal.sum())
    z = z_for_confidence(confidence)
    mean_x = float(marginal.sum())
    var_x = float(np.sum((2 * np.arange(1, k + 1) - 1) * marginal)) - mean_x ** 2
    deff, basis = 1.0, "independent verify steps (no cluster interval given)"
    if al_ci95 is not None and var_x > 0:
        iid_half = z * math.sqrt(var_x / n)
        half = (al_ci95[1] - al_ci95[0]) / 2
        deff = max(1.0, (half / iid_half) ** 2)
        basis = "design effect from the AL's cluster interval"
    marginal_ci = tuple(_wilson(float(a[j]) / deff, n / deff, z) for j in range(k))
    conditional_ci = tuple(_wilson(float(a[j]) / deff, float(prev[j]) / deff, z) for j in range(k))
    return RateProfile(k, al, tuple(marginal.tolist()), tuple(conditional.tolist()), marginal_ci, conditional_ci,
                       deff, basis)
