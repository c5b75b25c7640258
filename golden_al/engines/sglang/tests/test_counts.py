"""SGLang's counts: its per-request ``meta_info`` (moved from tests/unit/test_engines_counts.py)."""

from __future__ import annotations

import pytest

from distributions.errors import DistributionError

from .. import biased_al as sglang_biased_al
from .. import counts_from_meta_info as from_sglang_meta_info


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
