"""vLLM's per-request spec fields in a response (``metrics.speculative_decoding``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from golden_al import plugin

from . import (
    FLAG_PER_REQUEST_METRICS,
    REQ_HISTOGRAM,
    REQ_MEAN_AL,
    REQUEST_METRICS,
    REQUEST_SPEC,
    VERSION,
    counts_from_request_metrics,
)

__all__ = ["parse_vllm_spec_metrics"]


def parse_vllm_spec_metrics(obj: Mapping[str, Any], *, k: int | None = None,
                            source: str | None = None) -> plugin.RequestSpecCounts:
    """Counts of one vLLM request from ``metrics.speculative_decoding`` (or that object).

    Raises:
        MetricMissingError: the object or its ``acceptance_histogram`` is absent
            (server started without ``--per-request-spec-decode-metrics``).
        InputFileError: fields of the wrong type or that contradict each other.
    """
    if not isinstance(obj, Mapping):
        raise plugin.InputFileError(f"vLLM speculative_decoding must be an object, got {type(obj).__name__}", path=source)
    spec: Mapping[str, Any] = obj
    metrics = obj.get("metrics")
    if isinstance(metrics, Mapping) and isinstance(metrics.get(REQUEST_SPEC), Mapping):
        spec = metrics[REQUEST_SPEC]
    elif isinstance(obj.get(REQUEST_SPEC), Mapping):
        spec = obj[REQUEST_SPEC]
    if REQ_HISTOGRAM not in spec:
        raise plugin.MetricMissingError(
            f"{plugin.where(source)}vLLM {REQUEST_METRICS}.{REQUEST_SPEC} has no {REQ_HISTOGRAM}",
            hint=f"start vLLM (>= {VERSION}) with {FLAG_PER_REQUEST_METRICS} summary",
        )
    counts = plugin.build_counts(lambda: counts_from_request_metrics(spec, k=k), "vLLM speculative_decoding", source)
    reported = plugin.optional_number(spec, REQ_MEAN_AL, source)
    plugin.check_acceptance_counts(counts, what="vLLM speculative_decoding", path=source, reported_al=reported)
    return plugin.RequestSpecCounts("vllm", counts, reported, None, source)
