"""vLLM's self-description: ``GET /version``; ``GET /server_info`` only in dev mode
(``VLLM_SERVER_DEV_MODE=1``); the draft length from the number of ``position`` series of the
accepted-per-position counter (all present at 0 from startup); the arguments from the log's
``non-default args: {...}`` line."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from distributions.counts import AcceptanceCounts
from golden_al import plugin

from . import (
    FLAG_SPEC_CONFIG,
    K_KEY,
    METRIC_ACCEPTED_PER_POS,
    METRIC_DRAFTS,
    METRIC_PREFIX,
    POSITION_LABEL,
    PROFILE,
    SPEC_CONFIG_KEY,
    non_default_args,
    require_lossless,
    responses,
)

__all__ = ["PER_REQUEST", "VllmPrometheusSource", "probe", "vllm_args_from_log"]




def vllm_args_from_log(text: str) -> dict[str, Any] | None:
    """The ``non-default args: {...}`` dict vLLM logs at startup (last one wins)."""
    found: dict[str, Any] | None = None
    for line in text.splitlines():
        args = non_default_args(line)
        if args is not None:
            found = args
    return found


async def probe(client: plugin.ServerClient, facts: plugin.ServerFacts, *, log_text: str | None) -> None:
    """Fill ``facts`` from what the server reports."""

    version = await client.get_json("/version", label="GET /version", optional=True)
    if isinstance(version, Mapping) and version.get("version") is not None:
        facts.version = str(version["version"])
    dev_info = await client.get_json("/server_info", label="GET /server_info", optional=True)
    if isinstance(dev_info, Mapping):
        facts.described(dev_info)
    args = vllm_args_from_log(log_text) if log_text else None
    if args is not None:
        facts.server_args = plugin.filter_args(args)
        spec = args.get(SPEC_CONFIG_KEY)
        if isinstance(spec, Mapping):
            method = spec.get("method") or ("draft_model" if spec.get("model") else None)
            facts.draft_method = str(method) if method else None
            require_lossless(spec, "the log's non-default args")
            _require_fixed_k(spec)
            logged = spec.get(K_KEY)
            facts.selectors = PROFILE.selectors({"config": spec}, logged if isinstance(logged, int) else None)
    text = await client.get_text("/metrics", label="GET /metrics", optional=True)
    if text is not None:
        snap = plugin.parse_metrics_text(text, source=f"{client.base_url}/metrics")
        if not snap.has(METRIC_DRAFTS):
            raise plugin.ServerError(f"the vLLM server exposes no {METRIC_PREFIX}* counters: speculative decoding is "
                                     "off (or --disable-log-stats is set)", hint=f"launch it with {FLAG_SPEC_CONFIG}")
        if snap.select(METRIC_ACCEPTED_PER_POS):
            positions = snap.by_label(METRIC_ACCEPTED_PER_POS, POSITION_LABEL)
            facts.draft_len = len(positions)
            facts.draft_len_rule = f"number of {POSITION_LABEL} series of {METRIC_ACCEPTED_PER_POS}"
    spec = (args or {}).get(SPEC_CONFIG_KEY)
    logged_k = spec.get(K_KEY) if isinstance(spec, Mapping) else None
    if isinstance(logged_k, int) and not isinstance(logged_k, bool):
        if facts.draft_len is not None and facts.draft_len != logged_k:
            raise plugin.ServerError(f"the vLLM server's counters have {facts.draft_len} positions but its log's startup "
                                     f"arguments say {K_KEY}={logged_k}: the log is not this server's",
                                     hint="give the --server-log of the server at --server")
        if facts.draft_len is None:
            facts.draft_len, facts.draft_len_rule = logged_k, f"the log's non-default args {K_KEY}"
    facts.chain = plugin.is_chain("vllm", facts.draft_method)
    if dev_info is None and log_text is None:
        facts.warnings.append("attached vLLM server: synthetic acceptance and FLy's lossy verification could not be "
                              "ruled out from the server itself (no /server_info outside dev mode), nor its curve "
                              "selectors read (draft_lm_head_quantization, dspark_draft_topk); pass --server-log FILE "
                              "to check its log")


def _require_fixed_k(spec: Mapping[str, Any]) -> None:
    """Refuse a server whose logged speculative config lets k change at run time (the profile's
    ``runtime_draft_len`` settings): a histogram mixing draft lengths is no curve point."""
    for setting in PROFILE.check.runtime_draft_len:
        for name in setting.names:
            if name in spec and setting.unsafe(spec[name]) is not False:
                raise plugin.MixedDraftLengthsError(
                    f"the vLLM server's log says {name}={spec[name]!r}: it {setting.what}, so one run mixes draft "
                    f"lengths ({setting.source.repo} {setting.source.path} at {setting.source.version})",
                    hint=f"restart it without {name}, at a fixed {K_KEY}")


# ------------------------------------------------------------------ AL sources
def _per_request(resp: Mapping[str, Any], k: int, label: str) -> AcceptanceCounts:
    metrics = resp.get("metrics")
    spec = metrics.get("speculative_decoding") if isinstance(metrics, Mapping) else None
    if not isinstance(spec, Mapping):
        raise plugin.MetricMissingError(
            f"{label}: the response has no metrics.speculative_decoding (top-level keys: {sorted(resp)})",
            hint="start vLLM >= 0.33 with --per-request-spec-decode-metrics summary, "
            "or use --al-source vllm-prometheus",
        )
    return responses.parse_vllm_spec_metrics(spec, k=k, source=label).counts


#: ``vllm-per-request``: ``metrics.speculative_decoding`` of each response (vLLM >= 0.33).
PER_REQUEST = plugin.ResponseCounts(_per_request)


class VllmPrometheusSource(plugin.PrometheusSource):
    """vLLM ``/metrics`` spec-decode counters (``vllm/v1/spec_decode/metrics.py``, 0.33.0), with its finished
    requests, busy gauges and start time (``vllm/v1/metrics/loggers.py``)."""

    name = "vllm-prometheus"
    engine = PROFILE.name

    def snapshot_of(self, snap: plugin.MetricsSnapshot, counters: Any) -> plugin.Snapshot:
        def opt(name: str) -> float | None:
            return snap.total(name) if snap.has(name) else None

        running = opt("vllm:num_requests_running")
        busy = None if running is None else running + (opt("vllm:num_requests_waiting") or 0.0)
        return plugin.Snapshot(counters, opt("vllm:request_success_total"), busy, opt("process_start_time_seconds"),
                               len(counters.accepted_per_position) or None)

    def assert_not_backwards(self, before: plugin.Snapshot, after: plugin.Snapshot, label: str) -> None:
        super().assert_not_backwards(before, after, label)
        if before.finished is not None and after.finished is not None and after.finished < before.finished:
            raise plugin.CounterResetError(f"{label}: vllm:request_success_total went backwards "
                                           f"({before.finished:g} -> {after.finished:g}): the server restarted",
                                           hint="rerun with --resume; finished requests are kept")
