"""llama-server's spec-decode counters (``--metrics``; names in :mod:`golden_al.engines.llamacpp`):
vLLM's meaning under llama.cpp's own names, plus the busy gauges."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from distributions import units
from distributions.counts import AcceptanceCounts
from golden_al.engines import llamacpp as llamacpp_profile
from golden_al.engines.vllm.counters import VllmSpecCounters
from golden_al.errors import InputFileError
from golden_al.formats.counters import check_not_backwards as _check_not_backwards
from golden_al.formats.counters import counter as _counter
from golden_al.formats.counters import no_steps as _no_steps
from golden_al.formats.prometheus import MetricsSnapshot

__all__ = ["LlamaCppSpecCounters", "read"]


@dataclass(frozen=True)
class LlamaCppSpecCounters(VllmSpecCounters):
    """llama-server's counters (``golden_al/engines/llamacpp/__init__.py``): vLLM's meaning, its own names.

    ``busy`` is ``requests_processing + requests_deferred`` (None when not exposed).
    """

    busy: float | None = None
    engine: Literal["llamacpp"] = "llamacpp"  # type: ignore[assignment]

    @property
    def al(self) -> float:
        """``1 + accepted / verify steps``; NoVerifyStepsError when there were none."""
        if self.num_drafts <= 0:
            raise _no_steps("llama.cpp", f"{self.source}: " if self.source else "")
        return units.al_from_counts(self.num_accepted_tokens, self.num_drafts)

    def to_counts(self, k: int | None = None) -> AcceptanceCounts:
        """Counts (:func:`golden_al.engines.llamacpp.counts_from_counters`)."""
        return llamacpp_profile.counts_from_counters(self.num_drafts, self.num_draft_tokens, self.num_accepted_tokens,
                                                     list(self.accepted_per_position) or None, k=k)

    def minus(self, before: VllmSpecCounters) -> LlamaCppSpecCounters:
        """``self - before``; CounterResetError when a counter went backwards (a restart)."""
        where = f"{self.source}: " if self.source else ""
        n = max(len(before.accepted_per_position), len(self.accepted_per_position))
        pb = list(before.accepted_per_position) + [0.0] * (n - len(before.accepted_per_position))
        pa = list(self.accepted_per_position) + [0.0] * (n - len(self.accepted_per_position))
        names = (llamacpp_profile.DRAFTS_METRIC, llamacpp_profile.DRAFT_TOKENS_METRIC, llamacpp_profile.ACCEPTED_METRIC)
        pairs = [*zip(names, (before.num_drafts, before.num_draft_tokens, before.num_accepted_tokens),
                      (self.num_drafts, self.num_draft_tokens, self.num_accepted_tokens), strict=True),
                 *((f'{llamacpp_profile.ACCEPTED_PER_POS_METRIC}{{position="{i}"}}', b, a)
                   for i, (b, a) in enumerate(zip(pb, pa, strict=True)))]
        for name, b, a in pairs:
            _check_not_backwards(name, b, a, where)
        return LlamaCppSpecCounters(self.num_drafts - before.num_drafts, self.num_draft_tokens - before.num_draft_tokens,
                                    self.num_accepted_tokens - before.num_accepted_tokens,
                                    tuple(a - b for a, b in zip(pa, pb, strict=True)), source=self.source)


def read(snap: MetricsSnapshot, labels: Mapping[str, str] | None = None) -> LlamaCppSpecCounters:
    """The :class:`LlamaCppSpecCounters` of a ``MetricsSnapshot``.

    Raises:
        MetricMissingError: ``spec_decode_num_drafts_total`` is absent (no ``--metrics``).
        InputFileError: a counter is not a finite count, or a position label is not an integer.
    """
    per_pos: tuple[float, ...] = ()
    if snap.select(llamacpp_profile.ACCEPTED_PER_POS_METRIC, labels):
        by_pos = snap.by_label(llamacpp_profile.ACCEPTED_PER_POS_METRIC, "position", labels)
        idx: dict[int, float] = {}
        for key, value in by_pos.items():
            if not str(key).isdigit():
                raise InputFileError(f"metric {llamacpp_profile.ACCEPTED_PER_POS_METRIC} has a non-integer position label "
                                     f"{key!r}", path=snap.source, hint='expected position="0", "1", ...')
            if not (math.isfinite(value) and value >= 0):
                raise InputFileError(f"counter {llamacpp_profile.ACCEPTED_PER_POS_METRIC}{{position={key!r}}} is {value!r}",
                                     path=snap.source)
            idx[int(key)] = float(value)
        per_pos = tuple(idx.get(i, 0.0) for i in range(max(idx) + 1))
    busy = None
    if snap.has(llamacpp_profile.REQUESTS_PROCESSING_METRIC):
        busy = float(snap.total(llamacpp_profile.REQUESTS_PROCESSING_METRIC, labels))
        if snap.has(llamacpp_profile.REQUESTS_DEFERRED_METRIC):
            busy += float(snap.total(llamacpp_profile.REQUESTS_DEFERRED_METRIC, labels))
    return LlamaCppSpecCounters(_counter(snap, llamacpp_profile.DRAFTS_METRIC, labels),
                                _counter(snap, llamacpp_profile.DRAFT_TOKENS_METRIC, labels),
                                _counter(snap, llamacpp_profile.ACCEPTED_METRIC, labels), per_pos, source=snap.source,
                                busy=busy)
