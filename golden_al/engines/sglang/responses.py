"""SGLang's per-request spec fields in a response: ``meta_info`` (``/generate``, ``choices[i].meta_info``) and
``sglext.spec_tokens_details`` (the OpenAI endpoints; :func:`response_spec_metas` finds them in a response)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from golden_al import plugin

from . import (
    META_ACCEPT_LENGTH,
    META_ACCEPTED_KEYS,
    META_HISTOGRAM_KEYS,
    META_HISTOGRAM_OLDEST,
    META_VERIFY,
    counts_from_meta_info,
)

__all__ = ["parse_sglang_meta_info"]

_SGL_HIST_EXTRA = (META_HISTOGRAM_OLDEST,)


def parse_sglang_meta_info(meta: Mapping[str, Any], *, k: int | None = None,
                           source: str | None = None) -> plugin.RequestSpecCounts:
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
        raise plugin.InputFileError(f"SGLang meta_info must be an object, got {type(meta).__name__}", path=source)
    hint = "SGLang fills these only for finished requests with speculative decoding on"
    if META_VERIFY not in meta and not any(key in meta for key in META_HISTOGRAM_KEYS):
        raise plugin.MetricMissingError(f"{plugin.where(source)}SGLang meta_info has no {META_VERIFY}", hint=hint)
    if not any(key in meta for key in (*META_ACCEPTED_KEYS, *META_HISTOGRAM_KEYS,
                                       *_SGL_HIST_EXTRA)):
        raise plugin.MetricMissingError(
            f"{plugin.where(source)}SGLang meta_info has no {' / '.join(META_ACCEPTED_KEYS)} "
            f"and no {META_HISTOGRAM_KEYS[0]}", hint=hint)
    view = dict(meta)
    for old in _SGL_HIST_EXTRA:  # map the oldest histogram name onto one counts knows
        if old in view and not any(key in view for key in META_HISTOGRAM_KEYS):
            view[META_HISTOGRAM_KEYS[0]] = view.pop(old)
    counts = plugin.build_counts(lambda: counts_from_meta_info(view, k=k), "SGLang meta_info", source)
    plugin.check_acceptance_counts(counts, what="SGLang meta_info", path=source)  # its own AL is biased: not checked
    return plugin.RequestSpecCounts("sglang", counts, plugin.optional_number(meta, META_ACCEPT_LENGTH, source),
                                    plugin.optional_count(meta, "completion_tokens", source), source)
