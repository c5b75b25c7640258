"""Pure math on per-step speculative-decoding acceptance distributions.

No I/O, no engine knowledge (no engine's field, metric or flag names), no torch:
numpy and scipy only. Modules:

* :mod:`distributions.units`: the one home of every AL formula and conversion
  (AL from counts, AL <-> rate, accepted drafts AL-1, rates, AL(k) from a profile).
* :mod:`distributions.acceptance`: :class:`AcceptanceDistribution`, the pmf of L.
* :mod:`distributions.counts`: :class:`AcceptanceCounts` (verify steps, accepted
  drafts, histogram), and :func:`delta` of cumulative snapshots.
* :mod:`distributions.families`: constant and decaying conditional profiles.
* :mod:`distributions.mixture`: the curve of a prompt set, a mixture of its prompts' profiles.
* :mod:`distributions.fit`: the curve model fitted to AL at several draft lengths (the mixture by
  default), with flags for points it cannot explain.
* :mod:`distributions.uncertainty`: :func:`al_interval` (the one AL interval, over
  independent clusters), the joint law of AL at several k, counts-only intervals.
* :mod:`distributions.errors`: :class:`DistributionError` and subclasses.
"""

from __future__ import annotations

from distributions.acceptance import AcceptanceDistribution
from distributions.counts import (
    AcceptanceCounts,
    delta,
    from_histogram,
)
from distributions.errors import CounterWentBackwardsError, DistributionError, FitError
from distributions.families import ConstantConditional, DecayingConditional
from distributions.fit import (
    CurveFlag,
    FitResult,
    curve_flags,
    fit_profile,
)
from distributions.uncertainty import (
    ALInterval,
    CountsInterval,
    al_interval,
    al_interval_result,
    iid_ci_from_counts,
)
from distributions.units import al_curve_from_conditional, al_curve_from_unconditional

__all__ = [
    "ALInterval",
    "AcceptanceCounts",
    "AcceptanceDistribution",
    "ConstantConditional",
    "CounterWentBackwardsError",
    "CountsInterval",
    "CurveFlag",
    "DecayingConditional",
    "DistributionError",
    "FitError",
    "FitResult",
    "al_curve_from_conditional",
    "al_curve_from_unconditional",
    "al_interval",
    "al_interval_result",
    "curve_flags",
    "delta",
    "fit_profile",
    "from_histogram",
    "iid_ci_from_counts",
]
