"""SGLang's per-request spec counts: ``meta_info`` (new and alias keys), ``sglext.spec_tokens_details`` (moved
from tests/unit/test_formats_responses.py)."""

from __future__ import annotations

import pytest

from golden_al.errors import InputFileError, MetricMissingError, NoVerifyStepsError

from .. import response_spec_metas
from ..responses import parse_sglang_meta_info

# A finished SGLang 0.5.23 request: 10 verify steps, histogram over accepted drafts 0..3,
# completion_tokens = 1 (prefill) + sum of step lengths.
HIST = [1, 2, 4, 3]
STEPS = sum(HIST)
ACC = sum(j * n for j, n in enumerate(HIST))
COMPLETION = 1 + STEPS + ACC
META_0_5_23 = {
    "completion_tokens": COMPLETION,
    "spec_verify_ct": STEPS,
    "spec_accept_length": COMPLETION / STEPS,
    "spec_accept_rate": ACC / (STEPS * 3),
    "spec_num_correct_drafts": ACC,
    "spec_num_proposed_drafts": STEPS * 3,
    "spec_correct_drafts_histogram": HIST,
}
META_0_5_15 = {  # 0.5.15.post1 emits both names
    **META_0_5_23,
    "spec_accepted_drafts": ACC,
    "spec_proposed_drafts": STEPS * 3,
    "spec_accept_histogram": HIST,
}
META_OLD = {  # older trees: spec_accept_token_num / spec_draft_token_num / spec_accept_histogram
    "completion_tokens": COMPLETION,
    "spec_verify_ct": STEPS,
    "spec_accept_length": COMPLETION / STEPS,
    "spec_accept_token_num": ACC,
    "spec_draft_token_num": STEPS * 3,
    "spec_accept_histogram": HIST,
}


@pytest.mark.parametrize("meta", [META_0_5_23, META_0_5_15, META_OLD], ids=["0.5.23", "0.5.15.post1", "older"])
def test_sglang_meta_info_versions(meta: dict) -> None:
    r = parse_sglang_meta_info(meta)  # k inferred from proposed / verify steps
    assert (r.verify_steps, r.accepted_drafts, r.counts.num_draft_tokens) == (STEPS, ACC, STEPS * 3)
    assert r.counts.k == 3
    assert r.counts.histogram == tuple(HIST)
    assert r.al == pytest.approx(1 + ACC / STEPS)
    # SGLang's own per-request value includes the prefill token: 1/verify_ct too high
    assert r.reported_al == pytest.approx(r.al + 1 / STEPS)


def test_sglang_histogram_only_needs_k() -> None:
    meta = {"spec_verify_ct": sum(HIST[:3]), "spec_correct_drafts_histogram": HIST[:3]}
    with pytest.raises(InputFileError, match="k"):
        parse_sglang_meta_info(meta, source="resp.json")
    r = parse_sglang_meta_info(meta, k=5)
    assert r.counts.histogram == (*HIST[:3], 0, 0, 0)  # grown histogram padded to k+1
    assert r.accepted_drafts == sum(j * n for j, n in enumerate(HIST[:3]))
    assert r.counts.num_draft_tokens is None


def test_sglang_oldest_histogram_name() -> None:
    r = parse_sglang_meta_info({"spec_verify_ct": STEPS, "spec_acceptance_histogram": HIST}, k=3)
    assert r.accepted_drafts == ACC


def test_sglang_inconsistent_fields_name_the_source() -> None:
    bad = {**META_0_5_23, "spec_num_correct_drafts": ACC + 1}
    with pytest.raises(InputFileError, match=r"resp\.json: SGLang meta_info"):
        parse_sglang_meta_info(bad, source="resp.json")


def test_sglang_missing_fields() -> None:
    with pytest.raises(MetricMissingError, match="spec_verify_ct"):
        parse_sglang_meta_info({"completion_tokens": 5})
    with pytest.raises(MetricMissingError, match="spec_num_correct_drafts"):
        parse_sglang_meta_info({"spec_verify_ct": 3})
    with pytest.raises(InputFileError, match="must be a number"):
        parse_sglang_meta_info({"spec_verify_ct": "3", "spec_num_correct_drafts": 1}, k=3)
    with pytest.raises(InputFileError, match="must be an object"):
        parse_sglang_meta_info([1, 2])  # type: ignore[arg-type]


def test_zero_verify_steps() -> None:
    r = parse_sglang_meta_info({"spec_verify_ct": 0, "spec_num_correct_drafts": 0}, k=3)
    with pytest.raises(NoVerifyStepsError):
        _ = r.al


def test_find_records_in_sglang_and_openai_shapes() -> None:
    generate = {"text": "x", "meta_info": META_0_5_23}
    chat = {"choices": [{"message": {}, "meta_info": META_0_5_23}, {"message": {}, "meta_info": {"id": "a"}}]}
    ext_list = {"choices": [], "sglext": {"spec_tokens_details": [META_0_5_23, META_0_5_23]}}
    ext_one = {"sglext": {"spec_tokens_details": META_0_5_15}}
    metas = [m for resp in (generate, chat, ext_list, ext_one) for m in response_spec_metas(resp) or ()]
    recs = [parse_sglang_meta_info(m) for m in metas if "spec_verify_ct" in m]
    assert len(recs) == 5
    total = sum((r.counts for r in recs[1:]), recs[0].counts)
    assert (total.num_verify_steps, total.num_accepted_drafts) == (5 * STEPS, 5 * ACC)
    assert total.histogram == tuple(5 * h for h in HIST)
    assert response_spec_metas({"text": "x"}) is None
