"""Per-engine spelling of draft length and synthetic acceptance (the env JSON contract), from the profiles."""

from __future__ import annotations

import pytest

from golden_al.engines import sglang, trtllm, vllm
from golden_al.errors import UsageError
from golden_al.plugin import registry
from golden_al.plugin.values import format_value


@pytest.mark.parametrize(
    ("engine", "expected"),
    [
        ("sglang", {"SGLANG_SIMULATE_ACC_LEN": "4.05", "SGLANG_SIMULATE_ACC_METHOD": "match-expected",
                    "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token"}),
        ("trtllm", {"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": "3.05"}),
        ("vllm", {"rejection_sample_method": "synthetic", "synthetic_acceptance_length": 4.05}),
        ("atom", {"--spec-decode-acceptance-length": "4.05"}),
    ],
)
def test_synthetic_settings_contract(engine, expected):
    assert registry.synthetic_settings(engine, 4.05, 7) == expected


def test_format_value_has_no_float_noise():
    assert format_value(4.05 - 1) == "3.05"
    assert format_value(4.0) == "4"
    assert format_value(2.6 - 1) == "1.6"


def test_dflash_block_of_8_is_draft_len_7():
    assert sglang.draft_len("dflash", num_draft_tokens=8).k == 7
    assert sglang.draft_len("DFLASH", dflash_block_size=8).k == 7
    with pytest.raises(UsageError, match="SGLang rejects"):
        sglang.draft_len("dflash", num_draft_tokens=8, dflash_block_size=6)


def test_eagle_family_and_dspark_rules():
    assert sglang.draft_len("nextn", num_steps=3, eagle_topk=1, num_draft_tokens=4).k == 3
    assert not sglang.draft_len("eagle", num_steps=5, eagle_topk=4).chain
    assert sglang.draft_len("dspark", dspark_block_size=6, num_draft_tokens=7).k == 6
    with pytest.raises(UsageError, match="auto-chooses"):
        sglang.draft_len("eagle3")


def test_launch_flags_round_trip():
    flags = sglang.spec_flags("dflash", 7)
    assert flags == ["--speculative-algorithm", "DFLASH", "--speculative-num-draft-tokens", "8"]
    assert vllm.draft_len('{"method": "mtp", "num_speculative_tokens": 3}').k == 3
    assert trtllm.draft_len({"decoding_type": "MTP", "max_draft_len": 3}).k == 3


def test_trtllm_cannot_force_al_one():
    with pytest.raises(UsageError, match="disables forcing"):
        registry.synthetic_settings("trtllm", 1.0, 3)
