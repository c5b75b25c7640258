"""llama-server's spec-decode counters (``--metrics``; names in :mod:`golden_al.engines.llamacpp`):
vLLM's meaning under llama.cpp's own names, plus the busy gauges."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from golden_al import plugin

from . import (
    ACCEPTED_METRIC,
    ACCEPTED_PER_POS_METRIC,
    DRAFT_TOKENS_METRIC,
    DRAFTS_METRIC,
    FLAG_N_MAX,
    REQUESTS_DEFERRED_METRIC,
    REQUESTS_PROCESSING_METRIC,
)

__all__ = ["LlamaCppSpecCounters", "read"]


@dataclass(frozen=True)
class LlamaCppSpecCounters(plugin.DraftCounters):
    """llama-server's counters (``golden_al/engines/llamacpp/__init__.py``): vLLM's meaning, its own names; one
    verify step per request step with a draft (``n_draft_verif_steps``).

    ``busy`` is ``requests_processing + requests_deferred`` (None when not exposed, and in a delta).
    """

    busy: float | None = None
    engine: ClassVar[str] = "llamacpp"
    display: ClassVar[str] = "llama.cpp"
    k_setting: ClassVar[str] = FLAG_N_MAX
    names: ClassVar[tuple[str, str, str, str, str]] = (DRAFTS_METRIC, DRAFT_TOKENS_METRIC, ACCEPTED_METRIC,
                                                       ACCEPTED_PER_POS_METRIC, "position")


def read(snap: plugin.MetricsSnapshot, labels: Mapping[str, str] | None = None) -> LlamaCppSpecCounters:
    """The :class:`LlamaCppSpecCounters` of a ``MetricsSnapshot``, with the busy gauges.

    Raises:
        MetricMissingError: ``spec_decode_num_drafts_total`` is absent (no ``--metrics``).
        InputFileError: a counter is not a finite count, or a position label is not an integer.
    """
    busy = None
    if snap.has(REQUESTS_PROCESSING_METRIC):
        busy = float(snap.total(REQUESTS_PROCESSING_METRIC, labels))
        if snap.has(REQUESTS_DEFERRED_METRIC):
            busy += float(snap.total(REQUESTS_DEFERRED_METRIC, labels))
    return LlamaCppSpecCounters.from_snapshot(snap, labels, busy=busy)
