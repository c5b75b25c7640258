"""SGLang's self-description: ``GET /server_info`` (``/get_server_info`` on older versions): the server
args flattened at the top level, ``internal_states`` and ``version`` (sgl-project/sglang
``python/sglang/srt/entrypoints/http_server.py``); the draft length by
:func:`golden_al.engines.sglang.draft_len_from_server_info`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from distributions.counts import AcceptanceCounts
from golden_al import plugin

from . import (
    FLAG_ADAPTIVE,
    FLAG_ALGORITHM,
    FLAG_NUM_STEPS,
    INFO_INTERNAL_STATES,
    INFO_VERSION,
    PROFILE,
    SERVER_INFO_FIELDS,
    SERVER_INFO_PATHS,
    draft_len_from_server_info,
    require_lossless,
    responses,
)

__all__ = ["GENERATE", "META_INFO", "SPEC_TOKENS_DETAILS", "probe"]


async def probe(client: plugin.ServerClient, facts: plugin.ServerFacts, *, log_text: str | None) -> None:
    """Fill ``facts`` from what the server reports."""
    info = None
    for path in SERVER_INFO_PATHS:
        info = await client.get_json(path, label=f"GET {path}", optional=True)
        if info is not None:
            break
    if not isinstance(info, Mapping):
        raise plugin.MetricMissingError(f"SGLang answered neither {' nor '.join(SERVER_INFO_PATHS)}",
                                        hint="is this an SGLang server? (--engine)")
    facts.described(info)
    facts.version = str(info[INFO_VERSION]) if info.get(INFO_VERSION) is not None else None
    facts.server_args = plugin.filter_args({k: v for k, v in info.items() if k != INFO_INTERNAL_STATES})
    fields = SERVER_INFO_FIELDS
    algo = info.get(fields["algorithm"])
    if info.get(fields["adaptive"]):
        raise plugin.MixedDraftLengthsError(
            f"the SGLang server runs adaptive speculation ({fields['adaptive']}: true in /server_info): it changes "
            "the draft length step by step, and a histogram that mixes draft lengths is not a curve point",
            hint=f"restart it without {FLAG_ADAPTIVE}, at a fixed {FLAG_NUM_STEPS}")
    require_lossless(info, "/server_info")
    plugin.ran("lossless-thresholds")
    if not algo:
        raise plugin.ServerError(f"the SGLang server runs without speculative decoding ({fields['algorithm']} is null)",
                                 hint=f"launch it with {FLAG_ALGORITHM}")
    try:
        dl = draft_len_from_server_info(info)
    except plugin.GoldenALError as exc:
        facts.warnings.append(f"cannot tell the draft length from /server_info: {exc}")
        return
    facts.draft_len, facts.draft_len_rule = dl.k, f"/server_info {dl.rule}"
    facts.selectors = PROFILE.selectors({name: info[key] for name, key in fields.items() if key in info}, dl.k)
    facts.draft_method = str(algo).lower()
    facts.chain = dl.chain and plugin.is_chain("sglang", facts.draft_method, info.get(fields["eagle_topk"]))


# ------------------------------------------------------------------ AL sources (per request)
def _meta_info(resp: Mapping[str, Any], k: int, label: str) -> AcceptanceCounts:
    choices = resp.get("choices") or [{}]
    meta = choices[0].get("meta_info") if isinstance(choices[0], Mapping) else None
    if not isinstance(meta, Mapping):
        raise plugin.MetricMissingError(
            f"{label}: the response has no choices[0].meta_info (keys: "
            f"{sorted(choices[0]) if isinstance(choices[0], Mapping) else '-'})",
            hint="SGLang returns it for non-streaming chat with return_meta_info; older SGLang: "
            "--al-source sglang-generate",
        )
    return responses.parse_sglang_meta_info(meta, k=k, source=label).counts


def _spec_tokens_details(resp: Mapping[str, Any], k: int, label: str) -> AcceptanceCounts:
    ext = resp.get("sglext")
    details = ext.get("spec_tokens_details") if isinstance(ext, Mapping) else None
    if isinstance(details, list):
        details = details[0] if details else None
    if not isinstance(details, Mapping):
        raise plugin.MetricMissingError(
            f"{label}: the response has no sglext.spec_tokens_details (top-level keys: {sorted(resp)})",
            hint="needs SGLang >= 0.5.16; otherwise use --al-source sglang-meta-info",
        )
    return responses.parse_sglang_meta_info(details, k=k, source=label).counts


def _generate(resp: Mapping[str, Any], k: int, label: str) -> AcceptanceCounts:
    meta = resp.get("meta_info")
    if not isinstance(meta, Mapping):
        raise plugin.MetricMissingError(f"{label}: /generate answered without meta_info (keys: {sorted(resp)})")
    return responses.parse_sglang_meta_info(meta, k=k, source=label).counts


#: ``sglang-meta-info``: chat with ``return_meta_info``, the ``choices[0].meta_info`` histogram.
META_INFO = plugin.ResponseCounts(_meta_info, payload={"return_meta_info": True})
#: ``sglang-spec-tokens-details``: chat with ``return_spec_tokens_details`` (SGLang >= 0.5.16).
SPEC_TOKENS_DETAILS = plugin.ResponseCounts(_spec_tokens_details, payload={"return_spec_tokens_details": True})
def _generate_body(text: str, sampling: Any, seed: int | None) -> dict[str, Any]:
    """SGLang's native ``/generate`` body (``sampling_params``; ``io_struct.py`` GenerateReqInput)."""
    sp: dict[str, Any] = {"max_new_tokens": sampling.max_tokens, "temperature": sampling.temperature,
                          "top_p": sampling.top_p}
    if sampling.top_k is not None:
        sp["top_k"] = sampling.top_k
    if seed is not None:
        sp["sampling_seed"] = seed
    return {"text": text, "sampling_params": sp}


#: ``sglang-generate``: native ``/generate`` ``meta_info`` (rendered prompts).
GENERATE = plugin.ResponseCounts(_generate, endpoint="/generate", text_body=_generate_body)
