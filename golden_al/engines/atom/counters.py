"""ATOM's MTP counters (``atom/entrypoints/openai/metrics.py``, ROCm/ATOM HEAD ffdf3bb5d):
``atom:mtp_draft_tokens_total``, ``atom:mtp_accepted_tokens_total`` and
``atom:mtp_decode_steps_total{accepted_tokens="k"}`` (k = accepted *draft* tokens), gauge
``atom:mtp_average_tokens_per_forward``. ATOM reports 0 for the two token counters when MTP is off,
but then exposes no ``decode_steps`` sample. Names in :mod:`golden_al.engines.atom`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from distributions import units
from distributions.counts import AcceptanceCounts
from golden_al import plugin

from . import (
    ACCEPTED_LABEL,
    FLAG_K,
    FLAG_METHOD,
    METRIC_ACCEPTED,
    METRIC_AVG_TOKENS_PER_FORWARD,
    METRIC_DECODE_STEPS,
    METRIC_DRAFT_TOKENS,
    STATS_ACCEPTED,
    STATS_DISTRIBUTION,
    STATS_DRAFT_TOKENS,
    STATS_ENABLED,
    counts_from_mtp_stats,
)

__all__ = ["AtomSpecCounters", "read"]


@dataclass(frozen=True)
class AtomSpecCounters:
    """ATOM's MTP counters (or a delta): tokens and steps by accepted-draft count."""

    draft_tokens: float
    accepted_tokens: float
    decode_steps: tuple[tuple[int, float], ...]  # (accepted draft tokens j, steps)
    avg_tokens_per_forward_gauge: float | None = None
    source: str | None = None

    engine: Literal["atom"] = "atom"

    @property
    def num_verify_steps(self) -> float:
        """Request-steps (sum of the ``decode_steps`` distribution)."""
        return math.fsum(v for _, v in self.decode_steps)

    @property
    def num_accepted_drafts(self) -> float:
        """Accepted draft tokens (``atom:mtp_accepted_tokens``)."""
        return self.accepted_tokens

    @property
    def histogram(self) -> tuple[float, ...]:
        """Steps indexed by accepted draft tokens (0..max seen)."""
        if not self.decode_steps:
            return ()
        top = max(j for j, _ in self.decode_steps)
        out = [0.0] * (top + 1)
        for j, v in self.decode_steps:
            out[j] += v
        return tuple(out)

    @property
    def al(self) -> float:
        """``1 + accepted / steps`` (ATOM's ``average_tokens_per_forward``)."""
        steps = self.num_verify_steps
        if steps <= 0:
            raise plugin.no_steps("ATOM", f"{self.source}: " if self.source else "")
        return units.al_from_counts(self.accepted_tokens, steps)

    def to_counts(self, k: int | None = None) -> AcceptanceCounts:
        """:class:`~distributions.counts.AcceptanceCounts`; ``k`` defaults to draft tokens / steps."""
        stats = {STATS_ENABLED: True, STATS_DRAFT_TOKENS: self.draft_tokens,
                 STATS_ACCEPTED: self.accepted_tokens,
                 STATS_DISTRIBUTION: dict(self.decode_steps)}
        return plugin.to_counts(lambda: counts_from_mtp_stats(stats, k=k), self.source)

    def minus(self, before: AtomSpecCounters) -> AtomSpecCounters:
        """``self - before``, checking for resets."""
        where = f"{self.source}: " if self.source else ""
        plugin.check_not_backwards(METRIC_DRAFT_TOKENS, before.draft_tokens, self.draft_tokens, where)
        plugin.check_not_backwards(METRIC_ACCEPTED, before.accepted_tokens, self.accepted_tokens, where)
        b = dict(before.decode_steps)
        a = dict(self.decode_steps)
        out = []
        for j in sorted(set(a) | set(b)):
            plugin.check_not_backwards(f'{METRIC_DECODE_STEPS}{{{ACCEPTED_LABEL}="{j}"}}', b.get(j, 0.0), a.get(j, 0.0), where)
            out.append((j, a.get(j, 0.0) - b.get(j, 0.0)))
        return AtomSpecCounters(
            self.draft_tokens - before.draft_tokens,
            self.accepted_tokens - before.accepted_tokens,
            tuple(out),
            self.avg_tokens_per_forward_gauge,
            source=self.source,
        )

    def order_key(self) -> float:
        """Draft plus accepted tokens."""
        return self.draft_tokens + self.accepted_tokens

    def validate(self, k: int | None = None) -> None:
        """:func:`~golden_al.formats.validate.check_counts` on these counters."""
        plugin.check_counts(what=f"{self.engine} Prometheus counters" + (" (delta)" if self.source is None else ""), accepted=self.accepted_tokens,
                            drafted=self.draft_tokens, drafts=self.num_verify_steps if self.decode_steps else None, k=k,
                            path=self.source)

    def independent_draws(self, batch_size: float | None) -> tuple[float, list[str]]:
        """Every request-step is its own draw."""
        return self.num_verify_steps, []



def read(snap: plugin.MetricsSnapshot, labels: Mapping[str, str] | None = None) -> AtomSpecCounters:
    """ATOM's MTP counters in a snapshot (``validate``d).

    Raises:
        MetricMissingError: a counter is absent, or ``decode_steps`` (MTP off).
        InputFileError: a value is not a finite count, or a label is not an integer.
    """
    draft = plugin.counter(snap, METRIC_DRAFT_TOKENS, labels)
    accepted = plugin.counter(snap, METRIC_ACCEPTED, labels)
    if not snap.select(METRIC_DECODE_STEPS, labels):
        raise plugin.MetricMissingError(
            f"{snap._where()}metric {METRIC_DECODE_STEPS} is absent: ATOM exposes it only when MTP is enabled",
            hint=f"start ATOM with {FLAG_METHOD} and {FLAG_K}",
        )
    by_j = snap.by_label(METRIC_DECODE_STEPS, ACCEPTED_LABEL, labels)
    steps = tuple(sorted((plugin.int_label(snap, METRIC_DECODE_STEPS, ACCEPTED_LABEL, k), v) for k, v in by_j.items()))
    if not all(math.isfinite(v) and v >= 0 for _, v in steps):
        raise plugin.InputFileError(f"counter {METRIC_DECODE_STEPS} has a value that is not a finite count", path=snap.source)
    out = AtomSpecCounters(draft, accepted, steps, plugin.optional(snap, METRIC_AVG_TOKENS_PER_FORWARD, labels),
                           source=snap.source)
    out.validate()
    return out
