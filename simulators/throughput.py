"""Draft-length trade-offs: step time, tokens/s, speedup over no speculation, the best k and its neighbours.

A decode step with draft length ``k`` drafts ``k`` tokens per request, verifies ``k + 1`` per request
in one target forward and emits ``L`` tokens per request (``E[L] = AL``); its time is the step-cost
model of :mod:`distributions.stepcost` (:data:`~distributions.stepcost.FORMULA`), fitted to timed steps
or assumed (:data:`ASSUMED_COSTS`: illustrative, every term overridable). Verifying k+1 tokens is nearly
free at batch 1 and costs in proportion at large batch, so the best k shrinks with the batch.

Tokens/s is ``AL * B / step(k)``; the speedup over no speculation is ``AL * step(0) / step(k)``; the best
k maximizes tokens/s, and every k whose 95 % interval reaches the best one's is named beside it (the
intervals carry AL's and the cost's). :func:`latency_spread` compares per-request latency percentiles of
the engines' two-point (minimum-variance) schedule with a measured-shaped distribution of the same mean.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from distributions import units
from distributions.acceptance import AcceptanceDistribution
from distributions.errors import DistributionError
from distributions.stepcost import FORMULA, StepCostFit
from simulators.batch import DEFAULT_QUANTILES, completion_percentiles

__all__ = [
    "ASSUMED_COSTS",
    "DraftLengthRow",
    "DraftLengthTable",
    "curve_shape",
    "evaluate_draft_lengths",
    "latency_spread",
]


#: Illustrative step costs (ms): a dense target of tens of billions of parameters on one accelerator (10 ms to read
#: its weights, 1 ms of scheduling and launches, 0.02 ms of compute per verified token per request) with an
#: EAGLE-style one-layer draft (0.5 ms per drafted token). Assumed, not measured: override every term, or fit them
#: to timed runs (:func:`distributions.stepcost.fit_step_costs`).
ASSUMED_COSTS: dict[str, float] = {"fixed_ms": 11.0, "draft_ms_per_token": 0.5, "draft_ms_per_token_per_request": 0.0,
                                   "verify_ms_per_token": 0.02}


@dataclass(frozen=True)
class DraftLengthRow:
    """One draft length's throughput at one batch size (``*_ci95``: None where nothing is uncertain)."""

    k: int
    al: float
    batch_size: int
    step_ms: float
    tokens_per_s_predicted: float
    tokens_per_s_per_user: float
    speedup: float
    al_ci95: list[float] | None = None
    tokens_per_s_predicted_ci95: list[float] | None = None
    speedup_ci95: list[float] | None = None
    tokens_per_s_measured: float | None = None
    latency: dict[str, Any] | None = None


@dataclass(frozen=True)
class DraftLengthTable:
    """Where the costs come from, the best draft length and those within its interval, a row per draft length, the
    no-speculation baseline; :meth:`to_dict` is ``draft-lengths``' JSON."""

    source: str
    cost_model: dict[str, Any]
    best_k: int
    overlaps_best: list[int]
    draft_lengths: list[DraftLengthRow]
    baseline: dict[str, float]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _al_of(value: float | AcceptanceDistribution, k: int) -> float:
    if isinstance(value, AcceptanceDistribution):
        if value.k != k:
            raise DistributionError(f"the distribution given for draft length {k} has k={value.k}")
        return value.mean()
    return units.check_al(float(value), k)


def curve_shape(curve: Mapping[int, float], k: int) -> tuple[AcceptanceDistribution, str]:
    """A measured-shaped pmf at draft length ``k`` with mean ``curve[k]``, and how it was made.

    For a chain draft ``AL(k) = 1 + sum_{j<=k} p_j``, so the curve's increments
    ``p_j = AL(j) - AL(j-1)`` (``AL(0) = 1``) are the unconditional per-position
    rates (``"curve-increments"``). When the curve lacks a point below ``k`` or its
    increments are not a valid non-increasing profile in [0, 1] (a noisy tail),
    the shape falls back to the constant conditional rate with that mean (``"geometric"``,
    :class:`distributions.families.ConstantConditional`).
    """
    al_k = units.check_al(float(curve[k]), k)
    if all(j in curve for j in range(1, k + 1)):
        prev = np.concatenate(([1.0], [float(curve[j]) for j in range(1, k)]))
        inc = np.array([float(curve[j]) for j in range(1, k + 1)]) - prev
        if np.all(inc >= 0) and np.all(inc <= 1) and np.all(np.diff(inc) <= 1e-12):
            return AcceptanceDistribution.from_unconditional_rates(np.minimum.accumulate(inc)), "curve-increments"
    from distributions.families import ConstantConditional

    return ConstantConditional.from_al(al_k, k).distribution(k), "geometric"


def latency_spread(
    al: float,
    k: int,
    shaped: AcceptanceDistribution,
    output_tokens: int,
    step_ms: float,
    quantiles: Sequence[float] = DEFAULT_QUANTILES,
) -> dict[str, Any]:
    """Exact per-request latency percentiles: two-point schedule vs ``shaped`` (same mean).

    Returns, for ``"two_point"`` and ``"shaped"``, the step-count percentiles and
    the same in milliseconds (``steps * step_ms``).
    """
    two_point = AcceptanceDistribution.min_variance(al, k)
    if abs(shaped.mean() - al) > 1e-6:
        raise DistributionError(
            f"the shaped distribution has mean {shaped.mean():.6f}, not the AL {al:g} it is compared at"
        )
    out: dict[str, Any] = {"output_tokens": int(output_tokens)}
    for label, dist in (("two_point", two_point), ("shaped", shaped)):
        steps = completion_percentiles(dist, output_tokens, quantiles)
        out[label] = {
            "std_L": dist.std(),
            "steps": steps,
            "ms": {key: val * step_ms for key, val in steps.items() if key != "std"},
        }
    return out


def _interval(value: float, al: float, al_ci95: Sequence[float] | None, half_width: float) -> list[float] | None:
    """``value`` (proportional to AL) with a 95 % interval: AL's and the cost's log half-widths in quadrature."""
    if al_ci95 is None and half_width == 0:
        return None
    lo_al, hi_al = (math.log(al / al_ci95[0]), math.log(al_ci95[1] / al)) if al_ci95 is not None else (0.0, 0.0)
    return [value * math.exp(-math.hypot(max(lo_al, 0.0), half_width)),
            value * math.exp(math.hypot(max(hi_al, 0.0), half_width))]


def evaluate_draft_lengths(
    curve: Mapping[int, float | AcceptanceDistribution],
    cost: StepCostFit | None = None,
    *,
    batch: int = 1,
    al_ci95: Mapping[int, Sequence[float]] | None = None,
    measured: Mapping[int, float] | None = None,
    source: str = "assumed",
    cost_model: dict[str, Any] | None = None,
    output_tokens: int | None = None,
) -> DraftLengthTable:
    """Per draft length: step time, tokens/s, speedup over no speculation, with intervals; the best k and the
    draft lengths whose tokens/s interval overlaps the best one's.

    Args:
        curve: per draft length ``k >= 1``, the AL or a full acceptance distribution.
        cost: fitted step costs, or assumed ones (:meth:`~distributions.stepcost.StepCostFit.assumed`; default:
            :data:`ASSUMED_COSTS`).
        batch: requests decoding together.
        al_ci95: per k, AL's 95 % interval; carried into tokens/s and speedup with the cost's.
        measured: per k, the measured tokens/s at ``batch`` (``tokens_per_s_measured``).
        source: ``assumed`` or ``measured`` (the table says which).
        cost_model: the ``cost_model`` the table shows (default: the formula and the terms).
        output_tokens: when given, each row also carries :func:`latency_spread` for
            requests of that many output tokens (shaped: the distribution given, else
            :func:`curve_shape` of the curve).
    """
    if not curve:
        raise DistributionError("the curve is empty; give AL for at least one draft length")
    cost = cost or StepCostFit.assumed(**ASSUMED_COSTS)
    b = int(batch)
    base_step = cost.step_ms(0, b)
    baseline = {"k": 0, "step_ms": base_step, "tokens_per_s_per_user": 1000.0 / base_step,
                "tokens_per_s_predicted": 1000.0 * b / base_step, "speedup": 1.0}
    plain_curve = {int(k): _al_of(v, int(k)) for k, v in curve.items()}
    rows: list[DraftLengthRow] = []
    for k in sorted(plain_curve):
        units.check_draft_len(k)
        al, ci = plain_curve[k], (al_ci95 or {}).get(k)
        step = cost.step_ms(k, b)
        latency = None
        if output_tokens is not None:
            given = curve[k]
            shaped, how = (given, "given") if isinstance(given, AcceptanceDistribution) else curve_shape(plain_curve, k)
            latency = {**latency_spread(al, k, shaped, output_tokens, step), "shape": how}
        tps = 1000.0 * al * b / step
        rows.append(DraftLengthRow(
            k=k, al=al, batch_size=b, step_ms=step, tokens_per_s_predicted=tps, tokens_per_s_per_user=tps / b,
            speedup=al * base_step / step, al_ci95=None if ci is None else [float(ci[0]), float(ci[1])],
            tokens_per_s_predicted_ci95=_interval(tps, al, ci, cost.log_half_width(k, b)),
            speedup_ci95=_interval(al * base_step / step, al, ci, cost.log_half_width(k, b, ref=0)),
            tokens_per_s_measured=(measured or {}).get(k), latency=latency))
    best = max(rows, key=lambda r: (r.tokens_per_s_predicted, -r.k))
    low = (best.tokens_per_s_predicted_ci95 or [best.tokens_per_s_predicted])[0]
    overlaps = [r.k for r in rows if (r.tokens_per_s_predicted_ci95 or [0, r.tokens_per_s_predicted])[1] >= low]
    notes = ["no draft length beats plain decoding under this cost model"] if best.speedup < 1.0 else []
    return DraftLengthTable(source, cost_model if cost_model is not None else {
        "formula": FORMULA, "terms": cost.terms(), "batch_size": b}, best.k, overlaps, rows, baseline, notes)
