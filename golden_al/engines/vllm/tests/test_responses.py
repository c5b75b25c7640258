"""vLLM's per-request spec counts (``metrics.speculative_decoding``) (moved from tests/unit/test_formats_responses.py)."""

from __future__ import annotations

import pytest

from golden_al.errors import MetricMissingError

from ..responses import parse_vllm_spec_metrics

VLLM_SPEC = {
    "mean_acceptance_length": 1 + 7 / 4,
    "draft_acceptance_rate": 7 / 12,
    "acceptance_histogram": [0, 2, 1, 1],
    "num_spec_steps": 4,
    "num_accepted_draft_tokens": 7,
    "num_draft_tokens": 12,
    "num_spec_tokens": 3,
}


def test_vllm_per_request_metrics() -> None:
    for obj in (VLLM_SPEC, {"metrics": {"speculative_decoding": VLLM_SPEC}}):
        r = parse_vllm_spec_metrics(obj)
        assert (r.verify_steps, r.accepted_drafts, r.counts.num_draft_tokens) == (4, 7, 12)
        assert r.al == pytest.approx(VLLM_SPEC["mean_acceptance_length"])
    assert parse_vllm_spec_metrics(VLLM_SPEC).engine == "vllm"
    with pytest.raises(MetricMissingError, match="per-request-spec-decode-metrics"):
        parse_vllm_spec_metrics({"metrics": {}})
