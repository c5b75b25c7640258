"""Pure math on per-step speculative-decoding acceptance distributions.

No I/O, no engine knowledge, no torch: numpy and scipy only. Modules:

* :mod:`distributions.units`: the one home of every AL formula and conversion.
* :mod:`distributions.acceptance`: :class:`AcceptanceDistribution`, the pmf of L.
* :mod:`distributions.errors`: :class:`DistributionError`.
"""

from __future__ import annotations

from distributions.acceptance import AcceptanceDistribution
from distributions.errors import DistributionError, FitError

__all__ = ["AcceptanceDistribution", "DistributionError", "FitError"]
