"""llama-server's self-description: ``GET /props`` (``build_info``, ``model_path``, ``total_slots``,
``endpoint_metrics``; ggml-org/llama.cpp ``tools/server/server-context.cpp``, commit 0c1e570); the
draft length from the number of ``position`` series of the accepted-per-position counter."""

from __future__ import annotations

from collections.abc import Mapping

from golden_al.errors import MetricMissingError
from golden_al.servers import synthetic
from golden_al.servers.client import ServerClient
from golden_al.servers.probe import ServerFacts, filter_args

__all__ = ["probe"]


async def probe(client: ServerClient, facts: ServerFacts, *, log_text: str | None) -> None:
    """Fill ``facts`` from what the server reports."""
    from golden_al.engines import llamacpp
    from golden_al.formats import prometheus as prom
    from golden_al.formats.llamacpp import read_counters

    props = await client.get_json("/props", label="GET /props", optional=True)
    if not isinstance(props, Mapping):
        raise MetricMissingError("the server has no /props: is this llama-server? (--engine)")
    synthetic.check_server_info("llamacpp", props, where="/props")
    facts.version = str(props.get("build_info")) if props.get("build_info") is not None else None
    facts.server_args = filter_args({k: props.get(k) for k in ("model_path", "model_alias", "total_slots",
                                                                "endpoint_metrics", "build_info")})
    if props.get("endpoint_metrics") is False:
        raise MetricMissingError("llama-server runs without --metrics: its spec-decode counters are off",
                                 hint=f"start it with {llamacpp.FLAG_METRICS}")
    text = await client.get_text("/metrics", label="GET /metrics", optional=True)
    if text is None:
        raise MetricMissingError("llama-server answered no /metrics", hint=f"start it with {llamacpp.FLAG_METRICS}")
    counters = read_counters(prom.parse_metrics_text(text, source=f"{client.base_url}/metrics"))
    if counters.accepted_per_position:
        facts.draft_len = len(counters.accepted_per_position)
        facts.draft_len_rule = f"number of position series of {llamacpp.ACCEPTED_PER_POS_METRIC}"
    facts.draft_method = "draft-model"
    facts.chain = True
    total = props.get("total_slots")
    if isinstance(total, int) and total > 1:
        facts.warnings.append(f"llama-server has {total} slots: counter deltas assume nothing else runs on it")
    if not log_text is not None:
        facts.warnings.append("attached llama-server: synthetic acceptance is only detected from its log "
                              "(pass --server-log FILE, or --launch)")
