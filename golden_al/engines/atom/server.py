"""ATOM's self-description: ``GET /server_info`` (model, tp, dp); the draft length from
``/debug/mtp_stats`` (drafted tokens / steps) once it has steps."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from distributions.counts import AcceptanceCounts
from golden_al.engines import atom
from golden_al.errors import MetricMissingError, ServerError
from golden_al.httpclient import ServerClient
from golden_al.plugin.sources import CounterSource, Snapshot, require_distribution, server_errors
from golden_al.servers import synthetic
from golden_al.servers.probe import ServerFacts, filter_args

__all__ = ["AtomMtpStatsSource", "probe"]


async def probe(client: ServerClient, facts: ServerFacts, *, log_text: str | None) -> None:
    """Fill ``facts`` from what the server reports."""
    info = await client.get_json(atom.SERVER_INFO_PATH, label=f"GET {atom.SERVER_INFO_PATH}", optional=True)
    if isinstance(info, Mapping):
        synthetic.check_server_info("atom", info)
        facts.server_args = filter_args(info)
    stats = await client.get_json(atom.MTP_STATS_PATH, label=f"GET {atom.MTP_STATS_PATH}", optional=True)
    if stats is None:
        raise MetricMissingError(f"the ATOM server has no {atom.MTP_STATS_PATH}",
                                 hint="is this an ATOM server? (--engine)")
    if isinstance(stats, Mapping):
        if stats.get(atom.STATS_ENABLED) is False:
            raise ServerError("the ATOM server runs without speculative decoding (mtp_stats enabled: false)",
                              hint=f"launch it with {atom.FLAG_METHOD} and {atom.FLAG_K}")
        dist = stats.get(atom.STATS_DISTRIBUTION) or {}
        steps = sum(float(v) for v in dist.values()) if isinstance(dist, Mapping) else 0.0
        drafted = float(stats.get(atom.STATS_DRAFT_TOKENS) or 0)
        if steps > 0 and drafted > 0 and abs(drafted / steps - round(drafted / steps)) < 1e-9:
            facts.draft_len = round(drafted / steps)
            facts.draft_len_rule = f"{atom.MTP_STATS_PATH} {atom.STATS_DRAFT_TOKENS} / steps"
    if not log_text is not None:
        facts.warnings.append("attached ATOM server: forced acceptance is only detected from its log "
                              "(pass --server-log FILE, or --launch)")


# ------------------------------------------------------------------ AL source
class AtomMtpStatsSource(CounterSource):
    """ATOM ``GET /debug/mtp_stats`` (``atom/model_engine/llm_engine.py``, HEAD ffdf3bb5d)."""

    name = "atom-mtp-stats"
    engine = atom.PROFILE.name

    async def snapshot(self, client: ServerClient) -> Snapshot:
        path = atom.MTP_STATS_PATH
        stats = await client.get_json(path, label=f"GET {path}")
        if not isinstance(stats, Mapping):
            raise ServerError(f"{path} answered {str(stats)[:200]}")
        if stats.get(atom.STATS_ENABLED) is False:
            raise MetricMissingError(f"ATOM {path} reports {atom.STATS_ENABLED}: false (speculative decoding is off)",
                                     hint=f"start ATOM with {atom.FLAG_METHOD} and {atom.FLAG_K}")
        return Snapshot(dict(stats))

    def delta_counts(self, before: Snapshot, after: Snapshot, k: int, label: str) -> AcceptanceCounts:
        from golden_al.engines import atom as atom_engine

        with server_errors(label):
            counts = atom_engine.mtp_stats_delta(before.counts, after.counts, k=k)
        return require_distribution(counts, label, self.name)

    def assert_not_backwards(self, before: Snapshot, after: Snapshot, label: str) -> None:
        from distributions import counts as dcounts

        def pick(s: Snapshot) -> dict[str, Any]:
            return {key: s.counts.get(key) for key in (atom.STATS_DISTRIBUTION, atom.STATS_ACCEPTED,
                                                       atom.STATS_DRAFT_TOKENS)}

        with server_errors(label):
            dcounts.delta(pick(before), pick(after), name="atom-mtp-stats")
