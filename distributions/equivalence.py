"""Is a measured AL still its golden value? An equivalence test against a relative band, with three verdicts.

A golden AL ``g`` (with its own 95 % interval, from the run that measured it) and a real run's AL ``m`` (with its
intervals at 90 % and 95 %, over the run's independent units: :func:`distributions.uncertainty.al_interval_result`)
are compared on the relative difference ``d = m / g - 1`` against a band ``b`` (InferenceX's real-acceptance eval
passes ``m`` in ``[0.95, 1.05] x g``: ``b = 0.05``):

* ``consistent``: the two one-sided tests (TOST) at level 5 % both reject a difference beyond the band, i.e. the
  90 % interval of ``d`` lies inside ``(-b, b)``;
* ``drifted``: the 95 % interval of ``d`` lies entirely outside the band (the run is off by more than ``b``, with
  confidence); the direction and the size are reported;
* ``inconclusive``: neither; :attr:`EquivalenceResult.needed_units` says how many units (requests, log windows) would
  decide it at the observed variance (half-widths shrink like ``1/sqrt(n)``), or None when no amount of this run can:
  the golden's own interval already fills the room the band leaves.

The interval of ``d`` combines the run's and the golden's half-widths side by side in quadrature (``d = m - g``: the
run's lower side with the golden's upper side, and the reverse), the golden's 95 % half-widths scaled to the level
used. Either test errs at the band's edge with probability at most 5 % (consistent) or 2.5 % (drifted) when the
intervals hold their coverage; ``experiments/verify-calibration`` measures both against known truth.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

from distributions.errors import DistributionError

__all__ = ["EquivalenceResult", "equivalence_test"]

Verdict = Literal["consistent", "drifted", "inconclusive"]
_Z90 = NormalDist().inv_cdf(0.95)
_Z95 = NormalDist().inv_cdf(0.975)


@dataclass(frozen=True)
class EquivalenceResult:
    """The verdict on one measured AL against its golden value."""

    verdict: Verdict
    measured: float
    golden: float
    band: float
    relative_diff: float  #: m / g - 1
    diff_ci90: tuple[float, float]  #: of the relative difference, both uncertainties combined
    diff_ci95: tuple[float, float]
    direction: Literal["above", "below"] | None  #: of a drift
    units: int  #: the run's independent units
    needed_units: int | None  #: units that would decide an inconclusive run (None: decided, or undecidable)
    reason: str


def _side(m_half: float, g_half: float) -> float:
    return math.hypot(m_half, g_half)


def _needed(units: int, m_half: float, g_half: float, room: float) -> int | None:
    """Units at which ``hypot(m_half * sqrt(units / n), g_half) <= room`` (None: not even with infinite units)."""
    if room <= 0 or g_half >= room:
        return None
    if m_half <= 0:
        return units
    target = math.sqrt(room * room - g_half * g_half)
    return max(units + 1, math.ceil(units * (m_half / target) ** 2))


def equivalence_test(measured: float, measured_ci90: tuple[float, float], measured_ci95: tuple[float, float],
                     golden: float, golden_ci95: tuple[float, float] | None, *, units: int,
                     band: float = 0.05) -> EquivalenceResult:
    """The verdict of ``measured`` against ``golden`` within a relative ``band`` (see the module docstring).

    ``golden_ci95`` None: the golden value is taken as exact (a bare expected value). ``units``: how many independent
    units the measured intervals rest on (for the sample-size projection).

    Raises:
        DistributionError: a band outside (0, 1), a golden AL below 1, or intervals that do not hold the estimate.
    """
    if not 0.0 < band < 1.0:
        raise DistributionError(f"the band must be in (0, 1), got {band}")
    if not golden >= 1.0:
        raise DistributionError(f"a golden AL is >= 1, got {golden}")
    for name, (lo, hi), mid in (("measured 90%", measured_ci90, measured), ("measured 95%", measured_ci95, measured),
                                ("golden 95%", golden_ci95 or (golden, golden), golden)):
        if not lo <= mid <= hi:
            raise DistributionError(f"the {name} interval [{lo}, {hi}] does not hold its estimate {mid}")
    g_lo, g_hi = golden_ci95 or (golden, golden)
    scale90 = _Z90 / _Z95
    d = measured - golden
    # d's lower side: the run's lower half-width with the golden's upper one; its upper side: the reverse
    lo90 = d - _side(measured - measured_ci90[0], (g_hi - golden) * scale90)
    hi90 = d + _side(measured_ci90[1] - measured, (golden - g_lo) * scale90)
    lo95 = d - _side(measured - measured_ci95[0], g_hi - golden)
    hi95 = d + _side(measured_ci95[1] - measured, golden - g_lo)
    margin = band * golden
    def rel(x: float) -> float:
        return x / golden

    ci90, ci95 = (rel(lo90), rel(hi90)), (rel(lo95), rel(hi95))
    direction: Literal["above", "below"] | None = "above" if d > 0 else ("below" if d < 0 else None)

    def result(verdict: Verdict, drift: Literal["above", "below"] | None, needed: int | None,
               reason: str) -> EquivalenceResult:
        return EquivalenceResult(verdict, measured, golden, band, rel(d), ci90, ci95, drift, units, needed, reason)

    if -margin < lo90 and hi90 < margin:
        return result("consistent", None, None, f"the 90% interval of the difference [{ci90[0]:+.2%}, "
                                                f"{ci90[1]:+.2%}] lies inside +-{band:.0%}")
    if lo95 > margin or hi95 < -margin:
        return result("drifted", direction, None, f"{abs(rel(d)):.1%} {direction} the golden value; the 95% "
                                                  f"interval of the difference [{ci95[0]:+.2%}, {ci95[1]:+.2%}] lies "
                                                  f"outside +-{band:.0%}")
    m90 = max(measured - measured_ci90[0], measured_ci90[1] - measured)
    m95 = max(measured - measured_ci95[0], measured_ci95[1] - measured)
    g95 = max(g_hi - golden, golden - g_lo)
    if abs(d) < margin:
        needed = _needed(units, m90, g95 * scale90, margin - abs(d))
        goal = "show it is within the band"
    else:
        needed = _needed(units, m95, g95, abs(d) - margin)
        goal = "show it is outside the band"
    if needed is None:
        why = ("the golden value's own interval leaves no room in the band: re-measure the golden curve with more "
               "prompts" if g95 > 0 else "the estimate sits on the band's edge")
        return result("inconclusive", direction, None, f"the interval of the difference [{ci95[0]:+.2%}, "
                                                       f"{ci95[1]:+.2%}] overlaps the band's edge, and {why}")
    return result("inconclusive", direction, needed,
                  f"the run is too small to decide: the interval of the difference [{ci95[0]:+.2%}, {ci95[1]:+.2%}] "
                  f"overlaps the band's edge; about {needed} units ({needed - units} more) would {goal} at the "
                  "observed variance")
