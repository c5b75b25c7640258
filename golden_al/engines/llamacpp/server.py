"""llama-server's self-description: ``GET /props`` (``build_info``, ``model_path``, ``total_slots``,
``endpoint_metrics``; ggml-org/llama.cpp ``tools/server/server-context.cpp``, commit 0c1e570); the
draft length from the number of ``position`` series of the accepted-per-position counter."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from distributions.counts import AcceptanceCounts
from golden_al import plugin

from . import ACCEPTED_PER_POS_METRIC, FIXED_K_HINT, FLAG_METRICS, PROFILE

__all__ = ["LlamaCppPrometheusSource", "probe"]


async def probe(client: plugin.ServerClient, facts: plugin.ServerFacts, *, log_text: str | None) -> None:
    """Fill ``facts`` from what the server reports."""

    from .counters import read as read_counters

    props = await client.get_json("/props", label="GET /props", optional=True)
    if not isinstance(props, Mapping):
        raise plugin.MetricMissingError("the server has no /props: is this llama-server? (--engine)")
    facts.described(props, "/props")
    facts.version = str(props.get("build_info")) if props.get("build_info") is not None else None
    facts.server_args = plugin.filter_args({k: props.get(k) for k in ("model_path", "model_alias", "total_slots",
                                                                "endpoint_metrics", "build_info")})
    if props.get("endpoint_metrics") is False:
        raise plugin.MetricMissingError("llama-server runs without --metrics: its spec-decode counters are off",
                                        hint=f"start it with {FLAG_METRICS}")
    text = await client.get_text("/metrics", label="GET /metrics", optional=True)
    if text is None:
        raise plugin.MetricMissingError("llama-server answered no /metrics", hint=f"start it with {FLAG_METRICS}")
    counters = read_counters(plugin.parse_metrics_text(text, source=f"{client.base_url}/metrics"))
    if counters.accepted_per_position:
        facts.draft_len = len(counters.accepted_per_position)
        facts.draft_len_rule = f"number of position series of {ACCEPTED_PER_POS_METRIC}"
    facts.draft_method = "draft-model"
    facts.chain = True
    total = props.get("total_slots")
    if isinstance(total, int) and total > 1:
        facts.warnings.append(f"llama-server has {total} slots: counter deltas assume nothing else runs on it")
    if not log_text is not None:
        facts.warnings.append("attached llama-server: synthetic acceptance is only detected from its log "
                              "(pass --server-log FILE, or --launch)")


# ------------------------------------------------------------------ AL source
class LlamaCppPrometheusSource(plugin.PrometheusSource):
    """llama-server ``/metrics`` (``--metrics``) spec-decode counters (llama.cpp 0c1e570, ``server-task.cpp``).

    llama.cpp adds a request's counts when its slot is released, and ``/metrics`` is
    answered from the same task queue, so a scrape after the response sees them. There
    is no finished-requests counter: attribution rests on the server being idle
    (``requests_processing`` + ``requests_deferred`` = 0) around the unit, and each
    delta is checked against the responses' own ``timings.draft_n``/``draft_n_accepted``
    (:meth:`cross_check`).
    """

    name = "llamacpp-prometheus"
    engine = PROFILE.name

    def snapshot_of(self, snap: plugin.MetricsSnapshot, counters: Any) -> plugin.Snapshot:
        return plugin.Snapshot(counters, None, counters.busy, None, len(counters.accepted_per_position) or None)

    async def after_unit(self, client: plugin.ServerClient, before: plugin.Snapshot, n_requests: int, label: str) -> plugin.Snapshot:
        """The closing snapshot, once the server is idle again (the unit's slots released)."""
        deadline = self.clock() + 10.0
        after = await self.snapshot(client)
        while after.busy not in (None, 0.0) and self.clock() < deadline:
            await self.sleep(0.1)
            after = await self.snapshot(client)
        self.check_continuity(before, after, label)
        return after

    def cross_check(self, responses: Sequence[Mapping[str, Any]], counts: AcceptanceCounts, k: int,
                    label: str) -> None:
        """The delta must equal the sum of the responses' ``timings.draft_n``/``draft_n_accepted``."""
        from .logs import timings_counts

        drafted = accepted = missing = 0
        for resp in responses:
            try:
                got = timings_counts(resp)
            except plugin.InputFileError as exc:
                raise plugin.ServerError(f"{label}: {exc.message}") from None
            if got is None:
                missing += 1
            else:
                drafted += got[0]
                accepted += got[1]
        steps = float(counts.num_verify_steps)
        if missing == len(responses) and steps > 0:  # evidence absent, not a skip: llama.cpp omits it only undrafted
            raise plugin.ServerError(
                f"{label}: /metrics counts {steps:g} verify steps but no response carries timings.draft_n "
                f"(missing in {missing} of {len(responses)}): the counts cannot be cross-checked, so they are "
                "not believed",
                hint="llama-server reports timings.draft_n for every request that drafted; is --server llama-server?",
            )
        if abs(steps * k - drafted) > 1e-9 or abs(float(counts.num_accepted_drafts) - accepted) > 1e-9:
            raise plugin.ServerError(
                f"{label}: the /metrics delta ({steps:g} verify steps x k={k} = {steps * k:g} draft tokens, "
                f"{float(counts.num_accepted_drafts):g} accepted) disagrees with the responses' timings (draft_n "
                f"{drafted}, draft_n_accepted {accepted}): other traffic reached the server, or its draft length "
                f"is not k={k}",
                hint=f"measure on a server nobody else uses, started so: {FIXED_K_HINT} (golden-al --launch "
                "does)",
            )
        plugin.ran("metrics-vs-timings")
