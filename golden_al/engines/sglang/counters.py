"""SGLang's spec-decode counters (``python/sglang/srt/observability/metrics_collector.py``, 0.5.23):
``sglang:spec_verify_calls_total`` and ``sglang:generation_tokens_total`` (incremented when a
request *finishes*), ``sglang:num_requests_total``, and the interval gauges
``sglang:spec_accept_length`` / ``sglang:spec_accept_rate``. Names in :mod:`golden_al.engines.sglang`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from distributions import units
from distributions.counts import AcceptanceCounts
from golden_al import plugin

from . import (
    METRIC_ACCEPT_LENGTH,
    METRIC_ACCEPT_RATE,
    METRIC_GENERATION_TOKENS,
    METRIC_NUM_REQUESTS,
    METRIC_VERIFY_CALLS,
)

__all__ = ["SglangSpecCounters", "read"]


@dataclass(frozen=True)
class SglangSpecCounters:
    """SGLang's finished-request counters (or a delta of two snapshots).

    ``generation_tokens`` counts every completion token, including the first one
    produced by prefill, which is not a verify step. :attr:`al` removes one token
    per finished request when ``sglang:num_requests_total`` is present
    (``(generation - requests) / verify_calls``); :attr:`al_as_reported` is SGLang's
    own biased ratio ``generation / verify_calls``.
    """

    verify_calls: float
    generation_tokens: float
    num_requests: float | None = None
    accept_length_gauge: float | None = None
    accept_rate_gauge: float | None = None
    source: str | None = None

    engine: Literal["sglang"] = "sglang"

    @property
    def num_verify_steps(self) -> float:
        """Request-steps (sum of per-request ``spec_verify_ct``)."""
        return self.verify_calls

    @property
    def num_accepted_drafts(self) -> float:
        """Accepted drafts: emitted decode tokens minus one bonus per verify step."""
        first = self.num_requests if self.num_requests is not None else 0.0
        return max(self.generation_tokens - first - self.verify_calls, 0.0)

    @property
    def al_as_reported(self) -> float:
        """``generation_tokens / verify_calls`` (biased up by ~1/verify steps per request)."""
        if self.verify_calls <= 0:
            raise plugin.no_steps("SGLang", f"{self.source}: " if self.source else "")
        return self.generation_tokens / self.verify_calls

    @property
    def al(self) -> float:
        """AL with the prefill token of each finished request removed when possible."""
        if self.verify_calls <= 0:
            raise plugin.no_steps("SGLang", f"{self.source}: " if self.source else "")
        return units.al_from_counts(self.num_accepted_drafts, self.verify_calls)

    def to_counts(self, k: int | None = None) -> AcceptanceCounts:
        """Totals-only :class:`~distributions.counts.AcceptanceCounts` (SGLang exposes no histogram).

        Raises:
            UsageError: no ``k`` (the counters do not say it).
        """
        if k is None:
            raise plugin.UsageError("SGLang's counters do not say the draft length", hint="pass k")
        return plugin.to_counts(lambda: AcceptanceCounts(
            k=k, num_verify_steps=self.verify_calls, num_accepted_drafts=self.num_accepted_drafts,
            source="sglang-prometheus"), self.source)

    def minus(self, before: SglangSpecCounters) -> SglangSpecCounters:
        """``self - before`` (gauges keep the later value), checking for resets."""
        where = f"{self.source}: " if self.source else ""
        plugin.check_not_backwards(METRIC_VERIFY_CALLS, before.verify_calls, self.verify_calls, where)
        plugin.check_not_backwards(METRIC_GENERATION_TOKENS, before.generation_tokens, self.generation_tokens, where)
        requests: float | None = None
        if self.num_requests is not None and before.num_requests is not None:
            plugin.check_not_backwards(METRIC_NUM_REQUESTS, before.num_requests, self.num_requests, where)
            requests = self.num_requests - before.num_requests
        return SglangSpecCounters(
            self.verify_calls - before.verify_calls,
            self.generation_tokens - before.generation_tokens,
            requests,
            self.accept_length_gauge,
            self.accept_rate_gauge,
            source=self.source,
        )

    def order_key(self) -> float:
        """Generated tokens."""
        return self.generation_tokens

    def validate(self, k: int | None = None) -> None:
        """:func:`~golden_al.formats.validate.check_counts` on these counters."""
        plugin.check_counts(what=f"{self.engine} Prometheus counters" + (" (delta)" if self.source is None else ""), accepted=self.num_accepted_drafts,
                            drafts=self.verify_calls, k=k, path=self.source)

    def independent_draws(self, batch_size: float | None) -> tuple[float, list[str]]:
        """Verify calls are batch-level, so they count as ``verify calls / batch_size`` independent draws.

        Raises:
            UsageError: no ``batch_size``.
        """
        if batch_size is None or batch_size <= 0:
            raise plugin.UsageError("SGLang counters do not say how many independent draws (one per batch step) the AL "
                                    "rests on", hint="pass --batch-size (the mean #running-req), or check the decode log")
        notes = [f"independent draws = verify calls / --batch-size {batch_size:g}"]
        if self.num_requests is None:
            notes.append(f"{METRIC_NUM_REQUESTS} is absent: the prefill token of each request is not removed "
                         f"(AL as SGLang reports it, {self.al_as_reported:.4f})")
        return self.num_verify_steps / batch_size, notes



def read(snap: plugin.MetricsSnapshot, labels: Mapping[str, str] | None = None) -> SglangSpecCounters:
    """SGLang's counters in a snapshot (the interval gauges when present).

    Raises:
        MetricMissingError: a counter is absent (SGLang started without ``--enable-metrics``?).
    """
    return SglangSpecCounters(
        plugin.counter(snap, METRIC_VERIFY_CALLS, labels),
        plugin.counter(snap, METRIC_GENERATION_TOKENS, labels),
        plugin.counter(snap, METRIC_NUM_REQUESTS, labels) if snap.select(METRIC_NUM_REQUESTS, labels) else None,
        plugin.optional(snap, METRIC_ACCEPT_LENGTH, labels),
        plugin.optional(snap, METRIC_ACCEPT_RATE, labels),
        source=snap.source,
    )
