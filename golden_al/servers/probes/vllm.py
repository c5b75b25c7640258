"""vLLM's self-description: ``GET /version``; ``GET /server_info`` only in dev mode
(``VLLM_SERVER_DEV_MODE=1``); the draft length from the number of ``position`` series of the
accepted-per-position counter (all present at 0 from startup); the arguments from the log's
``non-default args: {...}`` line."""

from __future__ import annotations

from collections.abc import Mapping

from golden_al.engines import vllm
from golden_al.errors import ServerError
from golden_al.servers import synthetic
from golden_al.servers.client import ServerClient
from golden_al.servers.probe import ServerFacts, filter_args, is_chain, vllm_args_from_log

__all__ = ["probe"]


async def probe(client: ServerClient, facts: ServerFacts, *, log_text: str | None) -> None:
    """Fill ``facts`` from what the server reports."""
    from golden_al.formats import prometheus as prom

    version = await client.get_json("/version", label="GET /version", optional=True)
    if isinstance(version, Mapping) and version.get("version") is not None:
        facts.version = str(version["version"])
    dev_info = await client.get_json("/server_info", label="GET /server_info", optional=True)
    if isinstance(dev_info, Mapping):
        synthetic.check_server_info("vllm", dev_info)
    args = vllm_args_from_log(log_text) if log_text else None
    if args is not None:
        facts.server_args = filter_args(args)
        spec = args.get(vllm.SPEC_CONFIG_KEY)
        if isinstance(spec, Mapping):
            method = spec.get("method") or ("draft_model" if spec.get("model") else None)
            facts.draft_method = str(method) if method else None
    text = await client.get_text("/metrics", label="GET /metrics", optional=True)
    if text is not None:
        snap = prom.parse_metrics_text(text, source=f"{client.base_url}/metrics")
        if not snap.has(vllm.METRIC_DRAFTS):
            raise ServerError(f"the vLLM server exposes no {vllm.METRIC_PREFIX}* counters: speculative decoding is "
                              "off (or --disable-log-stats is set)", hint=f"launch it with {vllm.FLAG_SPEC_CONFIG}")
        if snap.select(vllm.METRIC_ACCEPTED_PER_POS):
            positions = snap.by_label(vllm.METRIC_ACCEPTED_PER_POS, vllm.POSITION_LABEL)
            facts.draft_len = len(positions)
            facts.draft_len_rule = f"number of {vllm.POSITION_LABEL} series of {vllm.METRIC_ACCEPTED_PER_POS}"
    spec = (args or {}).get(vllm.SPEC_CONFIG_KEY)
    logged_k = spec.get(vllm.K_KEY) if isinstance(spec, Mapping) else None
    if isinstance(logged_k, int) and not isinstance(logged_k, bool):
        if facts.draft_len is not None and facts.draft_len != logged_k:
            raise ServerError(f"the vLLM server's counters have {facts.draft_len} positions but its log's startup "
                              f"arguments say {vllm.K_KEY}={logged_k}: the log is not this server's",
                              hint="give the --server-log of the server at --server")
        if facts.draft_len is None:
            facts.draft_len, facts.draft_len_rule = logged_k, f"the log's non-default args {vllm.K_KEY}"
    facts.chain = is_chain("vllm", facts.draft_method)
    if dev_info is None and log_text is None:
        facts.warnings.append("attached vLLM server: synthetic acceptance could not be ruled out from the server "
                              "itself (no /server_info outside dev mode); pass --server-log FILE to check its log")
