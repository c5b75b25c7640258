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

Import names from their modules (``from distributions.acceptance import AcceptanceDistribution``): this package
imports nothing, so that a command that needs no arrays never loads numpy (issue 52).
"""
