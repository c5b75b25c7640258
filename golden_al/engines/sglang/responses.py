"""SGLang's per-request spec fields in a response: ``meta_info`` (``/generate``, ``choices[i].meta_info``) and
``sglext.spec_tokens_details`` (the OpenAI endpoints), read by :func:`golden_al.formats.responses.find_spec_records`
through the profile's ``response_records`` hook."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from golden_al.engines import sglang
from golden_al.errors import InputFileError, MetricMissingError
from golden_al.formats.responses import (
    RequestSpecCounts,
    build_counts,
    optional_count,
    optional_number,
    where,
)
from golden_al.formats.validate import check_acceptance_counts

__all__ = ["parse_sglang_meta_info", "records_in"]

_SGL_HIST_EXTRA = (sglang.META_HISTOGRAM_OLDEST,)


def parse_sglang_meta_info(meta: Mapping[str, Any], *, k: int | None = None,
                           source: str | None = None) -> RequestSpecCounts:
    """Counts of one SGLang request from ``meta_info`` or ``spec_tokens_details``.

    Args:
        k: draft length; inferred from proposed / verify steps when omitted.

    Raises:
        MetricMissingError: no ``spec_verify_ct`` and no histogram, or no accepted
            count (speculative decoding off, or the request has not finished).
        InputFileError: fields of the wrong type or that contradict each other, or
            ``k`` not given and not inferable.
    """
    if not isinstance(meta, Mapping):
        raise InputFileError(f"SGLang meta_info must be an object, got {type(meta).__name__}", path=source)
    hint = "SGLang fills these only for finished requests with speculative decoding on"
    if sglang.META_VERIFY not in meta and not any(key in meta for key in sglang.META_HISTOGRAM_KEYS):
        raise MetricMissingError(f"{where(source)}SGLang meta_info has no {sglang.META_VERIFY}", hint=hint)
    if not any(key in meta for key in (*sglang.META_ACCEPTED_KEYS, *sglang.META_HISTOGRAM_KEYS,
                                       *_SGL_HIST_EXTRA)):
        raise MetricMissingError(
            f"{where(source)}SGLang meta_info has no {' / '.join(sglang.META_ACCEPTED_KEYS)} "
            f"and no {sglang.META_HISTOGRAM_KEYS[0]}", hint=hint)
    view = dict(meta)
    for old in _SGL_HIST_EXTRA:  # map the oldest histogram name onto one counts knows
        if old in view and not any(key in view for key in sglang.META_HISTOGRAM_KEYS):
            view[sglang.META_HISTOGRAM_KEYS[0]] = view.pop(old)
    counts = build_counts(lambda: sglang.counts_from_meta_info(view, k=k), "SGLang meta_info", source)
    check_acceptance_counts(counts, what="SGLang meta_info", path=source)  # its own AL is biased: not checked
    return RequestSpecCounts("sglang", counts, optional_number(meta, sglang.META_ACCEPT_LENGTH, source),
                             optional_count(meta, "completion_tokens", source), source)


def records_in(node: Mapping[str, Any], *, k: int | None, source: str | None) -> list[RequestSpecCounts]:
    """The SGLang records one response object holds (its ``meta_info``, its ``spec_tokens_details``)."""
    out = []
    meta = node.get(sglang.META_INFO)
    if isinstance(meta, Mapping) and sglang.META_VERIFY in meta:
        out.append(parse_sglang_meta_info(meta, k=k, source=source))
    ext = node.get(sglang.META_EXTENSION)
    if isinstance(ext, Mapping) and ext.get(sglang.META_DETAILS) is not None:
        details = ext[sglang.META_DETAILS]
        for d in details if isinstance(details, list) else [details]:
            if isinstance(d, Mapping) and sglang.META_VERIFY in d:
                out.append(parse_sglang_meta_info(d, k=k, source=source))
    return out
