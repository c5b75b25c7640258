"""llama-server's spec-decode counters (``--metrics``; names in :mod:`golden_al.engines.llamacpp`):
vLLM's meaning under llama.cpp's own names, plus the busy gauges."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from distributions.counts import AcceptanceCounts
from golden_al.plugin import DraftCounters, InputFileError, MetricsSnapshot
from golden_al.plugin import counter as _counter

from . import (
    ACCEPTED_METRIC,
    ACCEPTED_PER_POS_METRIC,
    DRAFT_TOKENS_METRIC,
    DRAFTS_METRIC,
    REQUESTS_DEFERRED_METRIC,
    REQUESTS_PROCESSING_METRIC,
    counts_from_counters,
)

__all__ = ["LlamaCppSpecCounters", "read"]


@dataclass(frozen=True)
class LlamaCppSpecCounters(DraftCounters):
    """llama-server's counters (``golden_al/engines/llamacpp/__init__.py``): vLLM's meaning, its own names.

    ``busy`` is ``requests_processing + requests_deferred`` (None when not exposed, and in a delta).
    """

    busy: float | None = None
    engine: ClassVar[str] = "llamacpp"
    display: ClassVar[str] = "llama.cpp"
    names: ClassVar[tuple[str, str, str, str, str]] = (
        DRAFTS_METRIC, DRAFT_TOKENS_METRIC, ACCEPTED_METRIC,
        ACCEPTED_PER_POS_METRIC, "position")

    def counts(self, k: int | None) -> AcceptanceCounts:
        """Counts (:func:`golden_al.engines.llamacpp.counts_from_counters`)."""
        return counts_from_counters(self.num_drafts, self.num_draft_tokens, self.num_accepted_tokens,
                                                     list(self.accepted_per_position) or None, k=k)

    def to_counts(self, k: int | None = None) -> AcceptanceCounts:
        """Counts (:meth:`counts`), its own errors unchanged."""
        return self.counts(k)


def read(snap: MetricsSnapshot, labels: Mapping[str, str] | None = None) -> LlamaCppSpecCounters:
    """The :class:`LlamaCppSpecCounters` of a ``MetricsSnapshot``.

    Raises:
        MetricMissingError: ``spec_decode_num_drafts_total`` is absent (no ``--metrics``).
        InputFileError: a counter is not a finite count, or a position label is not an integer.
    """
    per_pos: tuple[float, ...] = ()
    if snap.select(ACCEPTED_PER_POS_METRIC, labels):
        by_pos = snap.by_label(ACCEPTED_PER_POS_METRIC, "position", labels)
        idx: dict[int, float] = {}
        for key, value in by_pos.items():
            if not str(key).isdigit():
                raise InputFileError(f"metric {ACCEPTED_PER_POS_METRIC} has a non-integer position label "
                                     f"{key!r}", path=snap.source, hint='expected position="0", "1", ...')
            if not (math.isfinite(value) and value >= 0):
                raise InputFileError(f"counter {ACCEPTED_PER_POS_METRIC}{{position={key!r}}} is {value!r}",
                                     path=snap.source)
            idx[int(key)] = float(value)
        per_pos = tuple(idx.get(i, 0.0) for i in range(max(idx) + 1))
    busy = None
    if snap.has(REQUESTS_PROCESSING_METRIC):
        busy = float(snap.total(REQUESTS_PROCESSING_METRIC, labels))
        if snap.has(REQUESTS_DEFERRED_METRIC):
            busy += float(snap.total(REQUESTS_DEFERRED_METRIC, labels))
    return LlamaCppSpecCounters(_counter(snap, DRAFTS_METRIC, labels),
                                _counter(snap, DRAFT_TOKENS_METRIC, labels),
                                _counter(snap, ACCEPTED_METRIC, labels), per_pos, source=snap.source,
                                busy=busy)
