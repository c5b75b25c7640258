"""ATOM's self-description: ``GET /server_info`` (model, tp, dp); the draft length from
``/debug/mtp_stats`` (drafted tokens / steps) once it has steps."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from distributions.counts import AcceptanceCounts
from golden_al import plugin

from . import (
    FLAG_K,
    FLAG_METHOD,
    MTP_STATS_PATH,
    PROFILE,
    SERVER_INFO_PATH,
    STATS_ACCEPTED,
    STATS_DISTRIBUTION,
    STATS_DRAFT_TOKENS,
    STATS_ENABLED,
)

__all__ = ["AtomMtpStatsSource", "probe"]


async def probe(client: plugin.ServerClient, facts: plugin.ServerFacts, *, log_text: str | None) -> None:
    """Fill ``facts`` from what the server reports."""
    info = await client.get_json(SERVER_INFO_PATH, label=f"GET {SERVER_INFO_PATH}", optional=True)
    if isinstance(info, Mapping):
        facts.described(info)
        facts.server_args = plugin.filter_args(info)
    stats = await client.get_json(MTP_STATS_PATH, label=f"GET {MTP_STATS_PATH}", optional=True)
    if stats is None:
        raise plugin.MetricMissingError(f"the ATOM server has no {MTP_STATS_PATH}",
                                        hint="is this an ATOM server? (--engine)")
    if isinstance(stats, Mapping):
        if stats.get(STATS_ENABLED) is False:
            raise plugin.ServerError("the ATOM server runs without speculative decoding (mtp_stats enabled: false)",
                                     hint=f"launch it with {FLAG_METHOD} and {FLAG_K}")
        dist = stats.get(STATS_DISTRIBUTION) or {}
        steps = sum(float(v) for v in dist.values()) if isinstance(dist, Mapping) else 0.0
        drafted = float(stats.get(STATS_DRAFT_TOKENS) or 0)
        if steps > 0 and drafted > 0 and abs(drafted / steps - round(drafted / steps)) < 1e-9:
            facts.draft_len = round(drafted / steps)
            facts.draft_len_rule = f"{MTP_STATS_PATH} {STATS_DRAFT_TOKENS} / steps"
    if not log_text is not None:
        facts.warnings.append("attached ATOM server: forced acceptance is only detected from its log "
                              "(pass --server-log FILE, or --launch)")


# ------------------------------------------------------------------ AL source
class AtomMtpStatsSource(plugin.CounterSource):
    """ATOM ``GET /debug/mtp_stats`` (``atom/model_engine/llm_engine.py``, HEAD ffdf3bb5d)."""

    name = "atom-mtp-stats"
    engine = PROFILE.name

    async def snapshot(self, client: plugin.ServerClient) -> plugin.Snapshot:
        path = MTP_STATS_PATH
        stats = await client.get_json(path, label=f"GET {path}")
        if not isinstance(stats, Mapping):
            raise plugin.ServerError(f"{path} answered {str(stats)[:200]}")
        if stats.get(STATS_ENABLED) is False:
            raise plugin.MetricMissingError(f"ATOM {path} reports {STATS_ENABLED}: false (speculative decoding is off)",
                                            hint=f"start ATOM with {FLAG_METHOD} and {FLAG_K}")
        return plugin.Snapshot(dict(stats))

    def delta_counts(self, before: plugin.Snapshot, after: plugin.Snapshot, k: int, label: str) -> AcceptanceCounts:
        from . import mtp_stats_delta

        with plugin.server_errors(label):
            counts = mtp_stats_delta(before.counts, after.counts, k=k)
        return plugin.require_distribution(counts, label, self.name)

    def assert_not_backwards(self, before: plugin.Snapshot, after: plugin.Snapshot, label: str) -> None:
        from distributions import counts as dcounts

        def pick(s: plugin.Snapshot) -> dict[str, Any]:
            return {key: s.counts.get(key) for key in (STATS_DISTRIBUTION, STATS_ACCEPTED,
                                                       STATS_DRAFT_TOKENS)}

        with plugin.server_errors(label):
            dcounts.delta(pick(before), pick(after), name="atom-mtp-stats")
