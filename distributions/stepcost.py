"""The cost of a decode step, fitted to measured step times (pure math, no I/O).

A step at draft length ``k`` with ``B`` requests decoding together drafts ``k`` tokens and
verifies ``k + 1`` per request (``k = 0``: no speculation, one token verified). Its time in
milliseconds is modelled as::

    step(k, B) = fixed_ms + k * (draft_ms_per_token + draft_ms_per_token_per_request * B)
                 + verify_ms_per_token * B * (k + 1)

:data:`FORMULA`; :meth:`StepCostFit.assumed` takes the terms as given. :func:`fit_step_costs` fits it by weighted least squares to :class:`StepCell`
medians: one per (k, B), weighted by how many units were timed, so a step slowed by another
process moves a median, not the fit. When the cells carry the draft phase's own time, the
draft terms are fitted to it and the rest to ``step - draft``, which separates the per-drafted
from the per-verified cost even at one batch size; without it, at one batch size the verify
cost per token folds into ``fixed_ms`` and ``draft_ms_per_token`` and only that batch size
can be predicted (:attr:`StepCostFit.notes` says so).

Every prediction carries a 95 % half-width on the log scale (:meth:`StepCostFit.log_half_width`):
the fit's covariance at Student-t quantiles of its residual degrees of freedom (the residuals hold
both the medians' scatter and the model's misfit); a fit with no residual left (as many cells as
terms) takes the cells' own scatter instead (the spread of a median, from its quartiles).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from distributions.errors import DistributionError

__all__ = ["FORMULA", "TERMS", "StepCell", "StepCostFit", "fit_step_costs", "held_out_fits"]

#: The model's terms, in the order of :data:`FORMULA`.
TERMS = ("fixed_ms", "draft_ms_per_token", "draft_ms_per_token_per_request", "verify_ms_per_token")
FORMULA = ("step_ms(k, B) = fixed_ms + k * (draft_ms_per_token + draft_ms_per_token_per_request * B) + "
           "verify_ms_per_token * B * (k + 1); k = 0: no speculation")
_DRAFT = ("draft_ms_per_token", "draft_ms_per_token_per_request")
#: Variance of a sample median relative to ((q3 - q1) / 1.349)^2 / n, for normal scatter: (pi / 2) / 1.349^2.
_MEDIAN_VAR = (math.pi / 2) / 1.349**2


@dataclass(frozen=True)
class StepCell:
    """The timed steps of one draft length at one batch size.

    Attributes:
        k: drafted tokens per request per step (0: no speculation).
        batch: requests decoding together.
        units: how many units were timed (steps, or requests each covering several steps).
        step_ms: median wall time of a step (a request's: its decode time over its steps).
        iqr_ms: interquartile range of that per-unit time (the scatter behind the median).
        draft_ms: median time of the draft phase of a step, when the engine timed it apart.
    """

    k: int
    batch: int
    units: int
    step_ms: float
    iqr_ms: float = 0.0
    draft_ms: float | None = None

    def __post_init__(self) -> None:
        times = (self.step_ms, self.iqr_ms, 0.0 if self.draft_ms is None else self.draft_ms)
        if self.k < 0 or self.batch < 1 or self.units < 1 or not all(math.isfinite(v) and v >= 0 for v in times):
            raise DistributionError(f"{self}: expected k >= 0, batch >= 1, units >= 1 and finite milliseconds >= 0")


def _columns(name: str, k: np.ndarray, b: np.ndarray) -> np.ndarray:
    return {"fixed_ms": np.ones_like(k), "draft_ms_per_token": k, "draft_ms_per_token_per_request": k * b,
            "verify_ms_per_token": b * (k + 1)}[name]


def _wls(names: Sequence[str], cells: Sequence[StepCell], y: np.ndarray) -> tuple[tuple[str, ...], np.ndarray,
                                                                              np.ndarray, int]:
    """Fit ``y`` on ``names``' columns (a column the cells cannot tell from the earlier ones is dropped): the terms
    kept, their coefficients, their 95 % covariance (t-quantile squared) and the residual degrees of freedom."""
    from scipy import stats

    k = np.array([c.k for c in cells], dtype=np.float64)
    b = np.array([c.batch for c in cells], dtype=np.float64)
    w = np.array([c.units for c in cells], dtype=np.float64)
    kept: list[str] = []
    for name in names:
        trial = np.column_stack([_columns(n, k, b) for n in (*kept, name)])
        if np.linalg.matrix_rank(trial * np.sqrt(w)[:, None], tol=1e-9 * max(1.0, float(np.abs(trial).max()))) \
                == len(kept) + 1:
            kept.append(name)
    x = np.column_stack([_columns(n, k, b) for n in kept])
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(x * sw[:, None], y * sw, rcond=None)
    dof = len(cells) - len(kept)
    resid = (y - x @ coef) * sw
    # no residual left (as many cells as terms): the cells' own scatter, w * var(median) ~ this per cell
    s2 = float(resid @ resid) / dof if dof > 0 else _MEDIAN_VAR * float(np.mean([c.iqr_ms**2 for c in cells]))
    q = float(stats.t.ppf(0.975, dof) if dof > 0 else stats.norm.ppf(0.975))
    return tuple(kept), coef, s2 * q * q * np.linalg.pinv(x.T @ (x * w[:, None])), dof


@dataclass(frozen=True)
class StepCostFit:
    """The fitted step-cost model: terms, their 95 % intervals, and predictions with half-widths."""

    names: tuple[str, ...]
    coef: np.ndarray
    cov95: np.ndarray
    dof: int
    batches: tuple[int, ...]
    draft_lens: tuple[int, ...]
    phases: bool
    notes: tuple[str, ...] = field(default=())

    @classmethod
    def assumed(cls, **terms: float) -> StepCostFit:
        """Costs given, not fitted: every one of :data:`TERMS` (milliseconds), no uncertainty, any batch size.

        Raises:
            DistributionError: a term missing, unknown, negative or not finite (named), or a step of no time.
        """
        if set(terms) != set(TERMS):
            raise DistributionError(f"assumed costs need exactly {', '.join(TERMS)}, got {', '.join(sorted(terms))}")
        for name, v in terms.items():
            if not math.isfinite(v) or v < 0:
                raise DistributionError(f"cost model: {name} must be a finite number of milliseconds >= 0, got {v!r}")
        if terms["fixed_ms"] + terms["verify_ms_per_token"] <= 0:
            raise DistributionError("cost model: a step must take some time (fixed_ms or verify_ms_per_token > 0)")
        return cls(TERMS, np.array([float(terms[n]) for n in TERMS]), np.zeros((4, 4)), 0, (), (), False)

    def _x(self, k: int, batch: int) -> np.ndarray:
        if batch not in self.batches and not {"draft_ms_per_token_per_request", "verify_ms_per_token"} <= set(self.names):
            raise DistributionError(
                f"the step times were measured at batch {', '.join(map(str, self.batches))}: the cost of batch {batch} "
                "is not identified", hint="measure at two batch sizes or more, or predict at a measured one")
        kk, bb = np.array([float(k)]), np.array([float(batch)])
        return np.array([float(_columns(n, kk, bb)[0]) for n in self.names])

    def step_ms(self, k: int, batch: int) -> float:
        """Predicted milliseconds of one step at draft length ``k`` (0: no speculation) and ``batch``."""
        value = float(self._x(k, batch) @ self.coef)
        if value <= 0:
            raise DistributionError(f"the fitted step time at k={k}, batch {batch} is {value:.3g} ms, not positive",
                                    hint="the cells do not support a prediction this far from them")
        return value

    def log_half_width(self, k: int, batch: int, ref: int | None = None) -> float:
        """95 % half-width of ``log step(k)``, or with ``ref`` of ``log(step(ref) / step(k))`` (a speedup's)."""
        g = self._x(k, batch) / self.step_ms(k, batch)
        if ref is not None:
            g = g - self._x(ref, batch) / self.step_ms(ref, batch)
        return math.sqrt(max(float(g @ self.cov95 @ g), 0.0))

    def terms(self) -> dict[str, dict[str, float | list[float]] | None]:
        """Each of :data:`TERMS` with its value and 95 % interval (None: not identified by these cells)."""
        out: dict[str, dict[str, float | list[float]] | None] = dict.fromkeys(TERMS)
        for i, name in enumerate(self.names):
            v, h = float(self.coef[i]), math.sqrt(max(float(self.cov95[i, i]), 0.0))
            out[name] = {"value": v, "ci95": [v - h, v + h]}
        return out


def fit_step_costs(cells: Sequence[StepCell]) -> StepCostFit:
    """Fit :data:`TERMS` to ``cells`` (see the module docstring).

    Raises:
        DistributionError: fewer than two cells, or cells of one draft length at one batch size
            (nothing separates a step's fixed cost from its per-token costs).
    """
    from scipy.linalg import block_diag

    cells = list(cells)
    if len({(c.k, c.batch) for c in cells}) < 2:
        raise DistributionError(f"{len(cells)} step cell(s) at {len({(c.k, c.batch) for c in cells})} (k, batch) "
                                "point(s): a step-cost fit needs two draft lengths or batch sizes at least",
                                hint="measure several draft lengths, e.g. --draft-lens 1-4")
    phases = all(c.draft_ms is not None for c in cells)
    y = np.array([c.step_ms for c in cells], dtype=np.float64)
    if phases:
        d = np.array([c.draft_ms for c in cells], dtype=np.float64)
        parts = [_wls(_DRAFT, cells, d), _wls(("fixed_ms", "verify_ms_per_token"), cells, y - d)]
    else:
        parts = [_wls(("fixed_ms", "draft_ms_per_token", "verify_ms_per_token", "draft_ms_per_token_per_request"),
                      cells, y)]
    names, cov = tuple(n for p in parts for n in p[0]), block_diag(*(p[2] for p in parts))
    batches = tuple(sorted({c.batch for c in cells}))
    notes = []
    missing = [n for n in TERMS if n not in names]
    if missing:
        folded = "" if phases else "; the per-verified-token cost is folded into fixed_ms and draft_ms_per_token"
        notes.append(f"not identified by steps at batch {', '.join(map(str, batches))}: {', '.join(missing)}{folded}; "
                     "predictions hold at the measured batch sizes only")
    return StepCostFit(names, np.concatenate([p[1] for p in parts]), cov, min(p[3] for p in parts), batches,
                       tuple(sorted({c.k for c in cells})), phases, tuple(notes))


def held_out_fits(cells: Sequence[StepCell]) -> dict[int, StepCostFit | None]:
    """Per draft length, the fit to every other draft length's cells (None where those cannot be fitted)."""
    out: dict[int, StepCostFit | None] = {}
    for k in sorted({c.k for c in cells}):
        rest = [c for c in cells if c.k != k]
        try:
            out[k] = fit_step_costs(rest)
        except DistributionError:
            out[k] = None
    return out
