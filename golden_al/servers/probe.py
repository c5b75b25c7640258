"""What a running server says about itself: version, arguments, draft length, synthetic state.

* SGLang: ``GET /server_info`` (``/get_server_info`` on older versions): the server
  args flattened at the top level, ``internal_states`` and ``version``
  (``python/sglang/srt/entrypoints/http_server.py``). The draft length follows from
  ``speculative_algorithm`` and the ``speculative_*`` args by
  :func:`golden_al.engines.sglang.draft_len_from_server_info`.
* vLLM: ``GET /version``; ``GET /server_info`` only in dev mode
  (``VLLM_SERVER_DEV_MODE=1``); the draft length is the number of ``position``
  series of ``vllm:spec_decode_num_accepted_tokens_per_pos_total`` (all present at
  0 from startup); the args from the log's ``non-default args: {...}`` line.
* ATOM: ``GET /server_info`` (model, tp, dp); the draft length from
  ``/debug/mtp_stats`` (drafted tokens / steps) once it has steps.
* llama.cpp: ``GET /props`` (``build_info``, ``model_path``, ``total_slots``,
  ``endpoint_metrics``; ``tools/server/server-context.cpp``, commit 0c1e570); the draft
  length from the number of ``position`` series of the accepted-per-position counter
  (present once a request drafted), or the command line of a launched server; synthetic
  acceptance from the launch arguments/environment or its startup log lines.

Every source of self-description is also checked for synthetic acceptance
(:mod:`golden_al.servers.synthetic`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from golden_al.engines import atom, sglang, vllm
from golden_al.errors import GoldenALError, MetricMissingError, MixedDraftLengthsError, ServerError
from golden_al.servers import synthetic
from golden_al.servers.client import ServerClient

__all__ = ["ServerFacts", "filter_args", "probe_server", "vllm_args_from_log"]

# api_key, hf_token, access_token, password, ... (but not num_speculative_tokens or max_num_batched_tokens)
_SECRET = re.compile(r"(^|_)(api_?key|key|token|secret|password|passwd|credentials?)$", re.IGNORECASE)
_NON_DEFAULT = re.compile(vllm.LOG_NON_DEFAULT_ARGS)
_BLOCK_DRAFTS = ("dflash", "dspark")


@dataclass
class ServerFacts:
    """A server's self-description."""

    engine: str
    version: str | None = None
    models: list[str] = field(default_factory=list)
    server_args: dict[str, Any] | None = None
    draft_len: int | None = None
    draft_len_rule: str | None = None
    draft_method: str | None = None
    chain: bool | None = None
    warnings: list[str] = field(default_factory=list)


def filter_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """JSON-scalar (and short list) arguments, without anything that looks secret."""
    out: dict[str, Any] = {}
    for key, value in args.items():
        if _SECRET.search(str(key)):
            continue
        if value is None or isinstance(value, (bool, int, float, str)):
            out[str(key)] = value
        elif isinstance(value, (list, tuple)) and len(value) <= 16 and all(
                isinstance(v, (bool, int, float, str)) or v is None for v in value):
            out[str(key)] = list(value)
        elif isinstance(value, Mapping) and len(value) <= 32:
            out[str(key)] = filter_args(value)
    return out


def vllm_args_from_log(text: str) -> dict[str, Any] | None:
    """The ``non-default args: {...}`` dict vLLM logs at startup (last one wins)."""
    found: dict[str, Any] | None = None
    for line in text.splitlines():
        m = _NON_DEFAULT.search(line)
        if m:
            try:
                value = ast.literal_eval(m.group(1))
            except (ValueError, SyntaxError):
                continue
            if isinstance(value, dict):
                found = value
    return found


def is_chain(engine: str, method: str | None, topk: int | None = None) -> bool:
    """Whether drafts form a chain (a smaller k proposes a prefix of the same tokens)."""
    m = (method or "").lower()
    if any(b in m for b in _BLOCK_DRAFTS):
        return False
    return topk in (None, 1)


async def probe_server(client: ServerClient, engine: str, *, log_path: str | Path | None = None) -> ServerFacts:
    """Ask the server who it is; raises SyntheticAcceptanceActiveError when it injects acceptance."""
    facts = ServerFacts(engine)
    models = await client.get_json("/v1/models", label="GET /v1/models")
    if isinstance(models, Mapping):
        synthetic.check_server_info(engine, models, where="/v1/models")
        facts.models = [str(m.get("id")) for m in models.get("data") or [] if isinstance(m, Mapping)]
    log_text = None
    if log_path is not None:
        from golden_al import safeio

        try:  # a regular file, under the byte cap
            log_text = safeio.read_bytes(Path(log_path), max_bytes=safeio.DEFAULT_MAX_LOG_BYTES).decode(
                "utf-8", errors="replace")
        except OSError as exc:
            facts.warnings.append(f"cannot read server log {log_path}: {exc.strerror or exc}")
    if log_text is not None:
        synthetic.check_server_log(engine, log_text, where=f"server log {log_path}")
    if engine == "sglang":
        await _probe_sglang(client, facts)
    elif engine == "vllm":
        await _probe_vllm(client, facts, log_text)
    elif engine == "llamacpp":
        await _probe_llamacpp(client, facts, has_log=log_text is not None)
    else:
        await _probe_atom(client, facts, has_log=log_text is not None)
    return facts


async def _probe_sglang(client: ServerClient, facts: ServerFacts) -> None:
    info = None
    for path in sglang.SERVER_INFO_PATHS:
        info = await client.get_json(path, label=f"GET {path}", optional=True)
        if info is not None:
            break
    if not isinstance(info, Mapping):
        raise MetricMissingError(f"SGLang answered neither {' nor '.join(sglang.SERVER_INFO_PATHS)}",
                                 hint="is this an SGLang server? (--engine)")
    synthetic.check_server_info("sglang", info)
    facts.version = str(info["version"]) if info.get("version") is not None else None
    facts.server_args = filter_args({k: v for k, v in info.items() if k != "internal_states"})
    fields = sglang.SERVER_INFO_FIELDS
    algo = info.get(fields["algorithm"])
    if info.get(fields["adaptive"]):
        raise MixedDraftLengthsError(
            f"the SGLang server runs adaptive speculation ({fields['adaptive']}: true in /server_info): it changes "
            "the draft length step by step, and a histogram that mixes draft lengths is not a curve point",
            hint=f"restart it without {sglang.FLAG_ADAPTIVE}, at a fixed {sglang.FLAG_NUM_STEPS}")
    if not algo:
        raise ServerError(f"the SGLang server runs without speculative decoding ({fields['algorithm']} is null)",
                          hint=f"launch it with {sglang.FLAG_ALGORITHM}")
    try:
        dl = sglang.draft_len_from_server_info(info)
    except GoldenALError as exc:
        facts.warnings.append(f"cannot tell the draft length from /server_info: {exc}")
        return
    facts.draft_len, facts.draft_len_rule = dl.k, f"/server_info {dl.rule}"
    facts.draft_method = str(algo).lower()
    facts.chain = dl.chain and is_chain("sglang", facts.draft_method, info.get(fields["eagle_topk"]))


async def _probe_vllm(client: ServerClient, facts: ServerFacts, log_text: str | None) -> None:
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


async def _probe_atom(client: ServerClient, facts: ServerFacts, *, has_log: bool) -> None:
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
    if not has_log:
        facts.warnings.append("attached ATOM server: forced acceptance is only detected from its log "
                              "(pass --server-log FILE, or --launch)")


async def _probe_llamacpp(client: ServerClient, facts: ServerFacts, *, has_log: bool) -> None:
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
    if not has_log:
        facts.warnings.append("attached llama-server: synthetic acceptance is only detected from its log "
                              "(pass --server-log FILE, or --launch)")
