"""SGLang's self-description: ``GET /server_info`` (``/get_server_info`` on older versions): the server
args flattened at the top level, ``internal_states`` and ``version`` (sgl-project/sglang
``python/sglang/srt/entrypoints/http_server.py``); the draft length by
:func:`golden_al.engines.sglang.draft_len_from_server_info`."""

from __future__ import annotations

from collections.abc import Mapping

from golden_al.engines import sglang
from golden_al.errors import GoldenALError, MetricMissingError, MixedDraftLengthsError, ServerError
from golden_al.servers import synthetic
from golden_al.servers.client import ServerClient
from golden_al.servers.probe import ServerFacts, filter_args, is_chain

__all__ = ["probe"]


async def probe(client: ServerClient, facts: ServerFacts, *, log_text: str | None) -> None:
    """Fill ``facts`` from what the server reports."""
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
