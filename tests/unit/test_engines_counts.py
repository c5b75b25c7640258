"""Counts as vLLM, SGLang and ATOM report them: the engine readers, validation, deltas."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from distributions import units
from distributions.counts import AcceptanceCounts, delta, from_histogram
from distributions.errors import CounterWentBackwardsError, DistributionError
from golden_al.engines.sglang import biased_al as sglang_biased_al
from golden_al.engines.sglang import counts_from_meta_info as from_sglang_meta_info
from golden_al.engines.vllm import counts_from_request_metrics as from_vllm_request_metrics
from golden_al.engines.vllm.counters import VllmSpecCounters
from golden_al.engines.vllm.counters import read as read_vllm_counters
from golden_al.errors import MetricMissingError
from golden_al.formats.prometheus import parse_metrics_text


def from_vllm_counters(drafts, draft_tokens, accepted, per_position=None, *, k=None):
    """vLLM's counters (the shape every engine of ``DraftCounters`` shares) as counts."""
    return VllmSpecCounters(drafts, draft_tokens, accepted, per_position or ()).counts(k)


# ---------------------------------------------------------------------------- vLLM counters
class TestVllmCounters:
    def test_closed_form(self):
        c = from_vllm_counters(100, 300, 150, [80, 50, 20])
        assert c.k == 3
        assert c.al == pytest.approx(2.5)
        assert c.acceptance_rate == pytest.approx(0.5)
        # histogram from per-position counts of a chain draft: steps - pos1, pos1 - pos2, ...
        assert c.histogram == (20, 30, 30, 20)
        np.testing.assert_allclose(c.unconditional_rates(), [0.8, 0.5, 0.2])
        np.testing.assert_allclose(c.distribution().probs, [0.2, 0.3, 0.3, 0.2])
        assert c.distribution().mean() == pytest.approx(c.al)

    def test_position_labels_as_dict_and_padding_to_k(self):
        c = from_vllm_counters(10.0, 40.0, 9.0, {"0": 6.0, "1": 3.0}, k=4)
        assert c.per_position_accepted == (6, 3, 0, 0)
        assert c.histogram == (4, 3, 3, 0, 0)
        assert isinstance(c.num_verify_steps, int)

    def test_prometheus_names(self):
        text = "".join(f"vllm:spec_decode_num_{name}_total {v}\n" for name, v in (
            ("drafts", 100), ("draft_tokens", 300), ("accepted_tokens", 150)))
        text += "".join(f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{position="{j}"}} {v}\n'
                        for j, v in enumerate((80, 50, 20)))
        assert read_vllm_counters(parse_metrics_text(text)).counts(None).al == pytest.approx(2.5)
        with pytest.raises(MetricMissingError, match="vllm:spec_decode_num_drafts_total"):
            read_vllm_counters(parse_metrics_text("vllm:num_requests_running 0\n"))

    def test_totals_only_give_al_but_no_distribution(self):
        c = from_vllm_counters(100, 300, 150, k=3)
        assert c.al == pytest.approx(2.5)
        assert not c.has_distribution
        with pytest.raises(DistributionError, match="not determined"):
            c.distribution()

    @pytest.mark.parametrize(
        ("args", "kwargs", "match"),
        [
            ((100, 100, 150, [80, 50, 20]), {}, r"num_accepted_tokens=150 exceeds num_draft_tokens=100"),
            ((100, 301, 150, [80, 50, 20]), {}, r"num_draft_tokens=301 exceeds k\*num_drafts=3\*100"),
            ((100, 300, 160, [80, 50, 20]), {}, r"sum to 150 but num_accepted_tokens=160"),
            ((100, 300, 150, [50, 80, 20]), {}, r"non-increasing.*position 2 \(0-based label \"1\"\).*80"),
            ((10, 30, 15, [12, 3, 0]), {}, r"position 1 was accepted 12 times but there were only 10"),
            ((100, 300, 150, [80, 50, 20]), {"k": 2}, r"beyond 2"),
            ((100, 300, 150), {}, r"k is unknown"),
            ((-1, 300, 150, [80, 50, 20]), {}, r"finite count >= 0"),
            (("100", 300, 150, [80, 50, 20]), {}, r"must be a number"),
        ],
    )
    def test_bad_counters_explain_the_violation(self, args, kwargs, match):
        with pytest.raises(DistributionError, match=match):
            from_vllm_counters(*args, **kwargs)

    def test_delta_of_snapshots(self):
        before = from_vllm_counters(100, 300, 150, [80, 50, 20])
        after = from_vllm_counters(300, 900, 450, [240, 150, 60])
        d = after - before
        assert d.num_verify_steps == 200
        assert d.histogram == (40, 60, 60, 40)
        with pytest.raises(CounterWentBackwardsError, match="went backwards"):
            _ = before - after


# ---------------------------------------------------------------------------- vLLM per request
class TestVllmRequestMetrics:
    metrics: ClassVar[dict] = {
        "mean_acceptance_length": 2.2,
        "draft_acceptance_rate": 0.4,
        "acceptance_histogram": [1, 2, 2, 0],
        "num_spec_steps": 5,
        "num_accepted_draft_tokens": 6,
        "num_draft_tokens": 15,
        "num_spec_tokens": 3,
    }

    def test_reads_summary_level(self):
        c = from_vllm_request_metrics(self.metrics)
        assert (c.k, c.num_verify_steps, c.num_accepted_drafts) == (3, 5, 6)
        assert c.al == pytest.approx(self.metrics["mean_acceptance_length"])
        assert c.acceptance_rate == pytest.approx(self.metrics["draft_acceptance_rate"])
        assert c.per_position_accepted == (4, 2, 0)

    def test_outer_metrics_object_and_detailed_level(self):
        detailed = {**self.metrics, "per_step_accepted": [0, 1, 1, 2, 2], "per_step_drafted": [3] * 5}
        c = from_vllm_request_metrics({"speculative_decoding": detailed})
        assert c.al == pytest.approx(2.2)

    @pytest.mark.parametrize(
        ("change", "match"),
        [
            ({"num_spec_steps": 6}, r"num_spec_steps=6 but acceptance_histogram"),
            ({"num_accepted_draft_tokens": 7}, r"num_accepted_draft_tokens=7"),
            ({"per_step_accepted": [0, 1, 1, 2]}, r"per_step_accepted"),
            ({"acceptance_histogram": [1, 2, 2, 0, 1]}, r"beyond 4"),
        ],
    )
    def test_inconsistent_request_metrics(self, change, match):
        with pytest.raises(DistributionError, match=match):
            from_vllm_request_metrics({**self.metrics, **change})

    def test_k_conflict(self):
        with pytest.raises(DistributionError, match="num_spec_tokens=3 but k=4"):
            from_vllm_request_metrics(self.metrics, k=4)

    def test_missing_histogram(self):
        with pytest.raises(DistributionError, match="per-request-spec-decode-metrics"):
            from_vllm_request_metrics({"num_spec_steps": 3})


# ---------------------------------------------------------------------------- SGLang
class TestSglangMetaInfo:
    def test_0_5_23_keys_and_padding(self):
        # the histogram only grows as far as the largest value seen: pad to k+1
        meta = {"spec_verify_ct": 10, "spec_correct_drafts_histogram": [2, 3, 5],
                "spec_num_correct_drafts": 13, "spec_num_proposed_drafts": 50, "completion_tokens": 24}
        c = from_sglang_meta_info(meta, k=5)
        assert c.histogram == (2, 3, 5, 0, 0, 0)
        assert c.al == pytest.approx(2.3)
        assert c.acceptance_rate == pytest.approx(13 / 50)

    def test_k_inferred_from_proposed_over_verify(self):
        meta = {"spec_verify_ct": 10, "spec_correct_drafts_histogram": [2, 3, 5],
                "spec_num_correct_drafts": 13, "spec_num_proposed_drafts": 40}
        assert from_sglang_meta_info(meta).k == 4

    def test_0_5_15_aliases_agree(self):
        meta = {"spec_verify_ct": 4, "spec_correct_drafts_histogram": [1, 1, 2],
                "spec_accept_histogram": [1, 1, 2], "spec_num_correct_drafts": 5,
                "spec_accepted_drafts": 5, "spec_num_proposed_drafts": 12, "spec_proposed_drafts": 12}
        assert from_sglang_meta_info(meta).al == pytest.approx(2.25)

    def test_oldest_names(self):
        meta = {"spec_verify_ct": 4, "spec_accept_histogram": [1, 1, 2],
                "spec_accept_token_num": 5, "spec_draft_token_num": 8}
        c = from_sglang_meta_info(meta)
        assert (c.k, c.al) == (2, 2.25)

    def test_spec_tokens_details_wrapper(self):
        details = {"spec_verify_ct": 2, "spec_correct_drafts_histogram": [0, 2]}
        assert from_sglang_meta_info({"spec_tokens_details": details}, k=3).al == 2.0

    def test_alias_conflict(self):
        meta = {"spec_verify_ct": 4, "spec_num_correct_drafts": 5, "spec_accepted_drafts": 6,
                "spec_correct_drafts_histogram": [1, 1, 2]}
        with pytest.raises(DistributionError, match="aliases disagree"):
            from_sglang_meta_info(meta, k=2)

    def test_verify_ct_must_match_histogram(self):
        meta = {"spec_verify_ct": 5, "spec_correct_drafts_histogram": [1, 1, 2]}
        with pytest.raises(DistributionError, match="spec_verify_ct=5 but the histogram"):
            from_sglang_meta_info(meta, k=2)

    def test_histogram_beyond_k(self):
        meta = {"spec_verify_ct": 4, "spec_correct_drafts_histogram": [1, 1, 0, 2]}
        with pytest.raises(DistributionError, match="k given is smaller"):
            from_sglang_meta_info(meta, k=2)

    def test_k_unknown(self):
        with pytest.raises(DistributionError, match="k is unknown"):
            from_sglang_meta_info({"spec_verify_ct": 4, "spec_correct_drafts_histogram": [1, 1, 2]})

    def test_no_steps_is_not_al_zero(self):
        c = from_sglang_meta_info({"spec_verify_ct": 0, "spec_num_correct_drafts": 0}, k=3)
        assert c.num_verify_steps == 0
        with pytest.raises(DistributionError, match="zero verify steps"):
            _ = c.al

    def test_totals_without_histogram(self):
        c = from_sglang_meta_info({"spec_verify_ct": 4, "spec_accept_token_num": 5, "spec_draft_token_num": 12})
        assert c.al == pytest.approx(2.25)
        assert not c.has_distribution

    def test_not_speculative(self):
        with pytest.raises(DistributionError, match="speculative decoding is off"):
            from_sglang_meta_info({"completion_tokens": 10})

    def test_biased_al_exceeds_histogram_al_by_one_over_steps(self):
        hist = [3, 5, 9, 4]
        c = from_sglang_meta_info({"spec_verify_ct": sum(hist), "spec_correct_drafts_histogram": hist}, k=3)
        # completion_tokens = prefill token + sum of L over the verify steps
        completion = 1 + c.num_verify_steps + c.num_accepted_drafts
        biased = sglang_biased_al(completion, c.num_verify_steps)
        assert biased == pytest.approx(c.al + 1 / c.num_verify_steps)
        with pytest.raises(DistributionError, match="spec_verify_ct = 0"):
            sglang_biased_al(1, 0)


# ---------------------------------------------------------------------------- ATOM


# ---------------------------------------------------------------------------- generic delta
class TestDelta:
    def test_numbers_dicts_lists(self):
        assert delta(3, 5) == 2
        assert delta({"a": 1, "b": [1, 2]}, {"a": 4, "b": [1, 3, 7], "c": 2}) == {"a": 3, "b": [0, 1, 7], "c": 2}
        assert delta(None, None) is None

    def test_decrease_raises(self):
        with pytest.raises(CounterWentBackwardsError, match=r"x\['a'\] went backwards"):
            delta({"a": 5}, {"a": 4}, name="x")

    def test_vanished_series_raises(self):
        with pytest.raises(CounterWentBackwardsError, match="<missing>"):
            delta({"a": 5, "b": 1}, {"a": 6})
        with pytest.raises(CounterWentBackwardsError, match="length"):
            delta([1, 2, 3], [1, 2])
        assert delta({"a": 5, "b": 0}, {"a": 6}) == {"a": 1}

    def test_shape_mismatch(self):
        with pytest.raises(DistributionError, match="cannot subtract"):
            delta({"a": 1}, [1])
        with pytest.raises(DistributionError, match="one snapshot only"):
            delta(None, 3)

    def test_is_a_distribution_error(self):
        assert issubclass(CounterWentBackwardsError, DistributionError)


# ---------------------------------------------------------------------------- properties
histograms = st.integers(1, 8).flatmap(
    lambda k: st.lists(st.integers(0, 10_000), min_size=k + 1, max_size=k + 1).filter(lambda h: sum(h) > 0)
)


@given(histograms)
def test_histogram_per_position_round_trip(hist):
    k = len(hist) - 1
    c = from_histogram(hist)
    # the vLLM view of the same steps (every step drafts k tokens)
    v = from_vllm_counters(c.num_verify_steps, k * c.num_verify_steps, c.num_accepted_drafts,
                           list(c.per_position_accepted))
    assert v.histogram == tuple(hist)
    assert v.al == pytest.approx(c.distribution().mean(), rel=1e-12)
    assert 1.0 <= c.al <= k + 1
    p = v.unconditional_rates()
    assert np.all(np.diff(p) <= 1e-12)
    np.testing.assert_allclose(p, np.asarray(c.per_position_accepted) / c.num_verify_steps)
    assert c.al == pytest.approx(units.al_curve_from_unconditional(p, [k])[0])


@given(histograms, histograms)
def test_counts_add_then_subtract_round_trip(h1, h2):
    k = max(len(h1), len(h2)) - 1
    a = from_histogram(h1, k=k, source="x")
    b = from_histogram(h2, k=k, source="x")
    total = a + b
    assert total.num_verify_steps == a.num_verify_steps + b.num_verify_steps
    back = total - a
    assert back.histogram == b.histogram
    assert back.per_position_accepted == b.per_position_accepted


def test_counts_of_different_k_do_not_mix():
    with pytest.raises(DistributionError, match="k=2 and k=3"):
        _ = from_histogram([1, 1, 1]) + from_histogram([1, 1, 1, 1])


def test_expected_counts_may_be_fractional():
    c = AcceptanceCounts(k=2, num_verify_steps=10.5, num_accepted_drafts=6.75, histogram=(5.5, 3.25, 1.75))
    assert c.per_position_accepted == (5.0, 1.75)
    assert c.al == pytest.approx(1 + 6.75 / 10.5)


def test_tidy_count_makes_integral_sums_ints_and_keeps_expectations():
    from distributions.counts import tidy_count

    assert tidy_count(0.1 + 0.2 + 0.7) == 1
    assert isinstance(tidy_count(0.1 + 0.2 + 0.7), int)
    assert isinstance(tidy_count(3e9 + 1e-3), int)  # float noise relative to a large counter
    assert tidy_count(2.5) == 2.5
    assert isinstance(tidy_count(2.5), float)
    assert tidy_count(7.0001) == 7.0001
