"""Every engine sampler: exact pmf, guaranteed means, sampled means within 5 SE, the mechanism vs the pmf."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _simulator_stats import assert_mean_within, assert_pmf_matches
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from distributions.acceptance import AcceptanceDistribution
from distributions.errors import DistributionError
from golden_al.engines.sglang.sampler import multinomial_pmf, sglang_max_len, sglang_max_len_for_draft_len
from golden_al.engines.trtllm.sampler import (
    force_pool,
    force_pool_fraction,
    parse_two_model,
    trtllm_env_value,
)
from golden_al.plugin.registry import get_sampler, samplers
from simulators.base import ForcingDisabledError, UnknownSamplerError, fast_inverse_cdf
from simulators.rates import validate_rates

N = 1_000_000

# (engine, method, options) of every sampler whose mean the engine guarantees
GUARANTEED = [
    pytest.param("sglang", "match-expected", {}, id="sglang-match-expected"),
    pytest.param("sglang", "match-expected", {"algorithm": "dflash"}, id="sglang-match-expected-dflash"),
    pytest.param("vllm", "synthetic", {}, id="vllm-synthetic"),
    pytest.param("atom", "synthetic", {}, id="atom-synthetic"),
    pytest.param("trtllm", "force", {"path": "one-model"}, id="trtllm-one-model"),
]
CASES = [(4.05, 7), (2.6, 3), (1.0, 1), (1.5, 1), (8.0, 7), (3.0, 4), (5.99, 8)]


def test_registry_lists_every_engine_method():
    assert samplers() == {
        "sglang": ("match-expected", "multinomial"),
        "vllm": ("synthetic",),
        "trtllm": ("force",),
        "atom": ("synthetic",),
        "llamacpp": ("synthetic",),
    }


def test_registry_did_you_mean():
    with pytest.raises(UnknownSamplerError, match=r"unknown engine 'sglng'; did you mean 'sglang'\?.*allowed: atom, llamacpp, sglang, trtllm, vllm"):
        get_sampler("sglng", "multinomial")
    with pytest.raises(UnknownSamplerError, match=r"did you mean 'multinomial'.*match-expected, multinomial"):
        get_sampler("sglang", "multinomal")
    with pytest.raises(UnknownSamplerError, match="allowed for vllm: synthetic"):
        get_sampler("vllm", "force")
    # a DistributionError, so the CLI exits 2
    assert issubclass(UnknownSamplerError, DistributionError)


# AL 1.0 cannot be forced on TensorRT-LLM (F = 0 means off): tested separately below
MEAN_CASES = [
    pytest.param(*g.values, al, k, id=f"{g.id}-{al}-{k}")
    for g in GUARANTEED
    for al, k in CASES
    if not (g.values[0] == "trtllm" and al == 1.0)
]


@pytest.mark.parametrize(("engine", "method", "options", "al", "k"), MEAN_CASES)
def test_guaranteed_mean_is_exact_and_sampled_mean_within_5se(engine, method, options, al, k):
    sampler = get_sampler(engine, method, **options)
    assert sampler.guarantees_mean
    dist = sampler.pmf(al, k)
    assert dist.k == k
    assert dist.mean() == pytest.approx(al, abs=1e-12)
    rng = np.random.default_rng(1234)
    assert_mean_within(sampler.sample(al, k, N, rng), dist, target=al)
    assert_mean_within(sampler.simulate(al, k, N, rng), dist, target=al)


@pytest.mark.parametrize(("engine", "method", "options"), GUARANTEED)
def test_two_point_engines_emit_floor_and_ceil_only(engine, method, options):
    dist = get_sampler(engine, method, **options).pmf(4.05, 7)
    np.testing.assert_allclose(dist.probs, [0, 0, 0, 0.95, 0.05, 0, 0, 0], atol=1e-12)


@pytest.mark.parametrize(
    ("engine", "method", "options", "al", "k"),
    [
        ("sglang", "multinomial", {}, 7.5, 7),
        ("sglang", "multinomial", {}, 1.3, 3),
        ("sglang", "multinomial", {"algorithm": "ngram"}, 4.2, 7),
        ("sglang", "match-expected", {}, 3.7, 5),
        ("vllm", "synthetic", {}, 3.3, 4),
        ("vllm", "synthetic", {"rates": [0.9, 0.6, 0.35, 0.1]}, None, 4),
        ("atom", "synthetic", {"rate": 0.45}, None, 7),
        ("trtllm", "force", {}, 2.75, 3),
        ("llamacpp", "synthetic", {}, 4.05, 7),
        ("llamacpp", "synthetic", {"rates": [0.9, 0.6, 0.35, 0.1]}, None, 4),
    ],
)
def test_engine_mechanism_matches_exact_pmf(engine, method, options, al, k):
    """simulate() draws the engine's way (normal-clamp-round, per-position uniforms, ...)."""
    sampler = get_sampler(engine, method, **options)
    dist = sampler.pmf(al, k)
    rng = np.random.default_rng(99)
    assert_pmf_matches(sampler.simulate(al, k, N, rng), dist)
    assert_pmf_matches(sampler.sample(al, k, N, rng), dist)


# ---------------------------------------------------------------------- SGLang


def test_sglang_multinomial_pmf_closed_form():
    p = multinomial_pmf(7.5, 8)
    assert p[-1] == pytest.approx(0.5)  # 1 - Phi(8 - 0.5 - 7.5)
    assert p[6] == pytest.approx(norm.cdf(0) - norm.cdf(-1))
    assert p[0] == pytest.approx(norm.cdf(1.5 - 7.5))
    assert p.sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize(("al", "k"), [(7.5, 7), (1.2, 7), (4.5, 7), (2.0, 1), (6.0, 5)])
def test_sglang_multinomial_bias_is_exact(al, k):
    """Mean from the pmf vs the tail-sum identity E[L] = 1 + sum_j P(L > j)."""
    sampler = get_sampler("sglang", "multinomial")
    max_len = k + 1
    tail_sum = 1.0 + sum(norm.sf(j + 0.5 - al) for j in range(1, max_len))
    assert sampler.pmf(al, k).mean() == pytest.approx(tail_sum, abs=1e-12)
    assert sampler.bias(al, k) == pytest.approx(tail_sum - al, abs=1e-12)


def test_sglang_multinomial_bias_at_7_5_over_7_is_in_warnings():
    sampler = get_sampler("sglang", "multinomial")
    bias = sampler.bias(7.5, 7)
    assert bias == pytest.approx(-0.18276, abs=1e-4)
    warning = sampler.warnings(7.5, 7)[0]
    assert f"{bias:+.4f}" in warning
    assert "clamped, rounded Normal" in warning
    # symmetric clamp: the bias vanishes and the warning says so
    assert abs(sampler.bias(4.5, 7)) < 1e-12
    assert "unbiased" in sampler.warnings(4.5, 7)[0]
    assert not sampler.guarantees_mean


def test_sglang_draws_per_batch_step():
    for method in ("match-expected", "multinomial"):
        sampler = get_sampler("sglang", method)
        assert sampler.draw_unit == "batch-step"
        assert any("ONE length per verify step" in w for w in sampler.warnings(3.0, 3))
    for engine, method in (("vllm", "synthetic"), ("trtllm", "force"), ("atom", "synthetic")):
        assert get_sampler(engine, method).draw_unit == "request-step"


def test_sglang_match_expected_clamps_at_max_len():
    s = get_sampler("sglang", "match-expected")
    np.testing.assert_allclose(s.pmf(4.0, 3).probs, [0, 0, 0, 1])  # lower == max_len: no upper
    np.testing.assert_allclose(s.pmf(1.0, 3).probs, [1, 0, 0, 0])


def test_sglang_max_len_per_algorithm():
    assert sglang_max_len("EAGLE", num_steps=3) == 4
    assert sglang_max_len("eagle3", num_steps=7) == 8
    assert sglang_max_len("NEXTN", num_steps=1) == 2
    assert sglang_max_len("standalone", num_steps=5) == 6
    assert sglang_max_len("DFLASH", num_draft_tokens=8) == 8
    assert sglang_max_len("dflash", dflash_block_size=16) == 16
    assert sglang_max_len("dspark", dspark_block_size=6) == 7
    assert sglang_max_len("ngram", num_draft_tokens=8) == 8
    with pytest.raises(DistributionError, match="must equal"):
        sglang_max_len("dflash", num_draft_tokens=8, dflash_block_size=16)
    with pytest.raises(DistributionError, match="speculative-num-steps"):
        sglang_max_len("eagle")
    with pytest.raises(DistributionError, match="unknown SGLang algorithm"):
        sglang_max_len("medusa", num_steps=3)
    for algo in ("eagle", "nextn", "dflash", "dspark", "ngram"):
        assert sglang_max_len_for_draft_len(algo, 7) == 8  # every algorithm: k drafts -> clamp k+1


def test_sglang_algorithm_warnings():
    assert any("SGLANG_RAGGED_VERIFY_MODE=static" in w for w in get_sampler("sglang", "match-expected", algorithm="dspark").warnings(3.5, 6))
    assert any("0.5.15" in w for w in get_sampler("sglang", "match-expected", algorithm="dflash").warnings(3.5, 7))


# ---------------------------------------------------------------------- vLLM / ATOM


def test_vllm_rates_validated_like_vllm():
    assert validate_rates([0.9, 0.5, 0.5], 3) == [0.9, 0.5, 0.5]
    with pytest.raises(DistributionError, match="must have length 3"):
        validate_rates([0.9, 0.5], 3)
    with pytest.raises(DistributionError, match=r"entries must be in \[0, 1\]"):
        validate_rates([1.2, 0.5, 0.1], 3)
    with pytest.raises(DistributionError, match="non-increasing"):
        validate_rates([0.5, 0.6, 0.1], 3)


def test_vllm_explicit_rates_are_unconditional():
    s = get_sampler("vllm", "synthetic", rates=[0.9, 0.5, 0.2])
    dist = s.pmf(None, 3)
    np.testing.assert_allclose(dist.unconditional_rates(), [0.9, 0.5, 0.2])
    assert s.implied_al(3) == pytest.approx(2.6)
    assert s.pmf(2.6, 3).mean() == pytest.approx(2.6)
    with pytest.raises(DistributionError, match="disagrees"):
        s.pmf(3.0, 3)


def test_vllm_length_form_is_min_variance():
    dist = get_sampler("vllm", "synthetic").pmf(2.6, 3)
    np.testing.assert_allclose(dist.unconditional_rates(), [1.0, 0.6, 0.0])
    assert dist.var() == pytest.approx(0.6 * 0.4)


def test_out_of_range_al_is_rejected_everywhere():
    for engine, methods in samplers().items():
        for method in methods:
            with pytest.raises(DistributionError, match=r"outside \[1, 8\]"):
                get_sampler(engine, method).pmf(9.0, 7)


# ---------------------------------------------------------------------- TensorRT-LLM


def test_trtllm_injects_al_minus_one():
    s = get_sampler("trtllm", "force")
    from golden_al.engines import trtllm

    assert trtllm.simulator_settings(s, 4.05, 7)["TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"] == "3.05"
    assert trtllm_env_value(3.0) == "2"  # integer without '.0' so int() parses it
    assert parse_two_model("2") == 2
    assert parse_two_model("2.0") == 0
    assert parse_two_model("2.5") == 0


def test_trtllm_one_model_semantics():
    s = get_sampler("trtllm", "force")
    np.testing.assert_allclose(s.pmf(3.6, 3).probs, [0, 0, 0.4, 0.6], atol=1e-12)  # F=2.6: 2 drafts + 1 w.p. 0.6
    np.testing.assert_allclose(s.pmf(4.0, 3).probs, [0, 0, 0, 1])  # F=3=k: capped, no extra
    np.testing.assert_allclose(s.pmf(3.0, 7).probs, [0, 0, 1, 0, 0, 0, 0, 0])


def test_trtllm_al_one_cannot_be_forced():
    for path in ("one-model", "two-model"):
        s = get_sampler("trtllm", "force", path=path)
        with pytest.raises(ForcingDisabledError, match="means off"):
            s.pmf(1.0, 3)
        assert any("AL 1.0 cannot be forced" in w for w in s.warnings(1.0, 3))


def test_trtllm_two_model_int_parsing_disables_fractional_values():
    s = get_sampler("trtllm", "force", path="two-model")
    assert not s.guarantees_mean
    with pytest.raises(ForcingDisabledError, match="fails int"):
        s.pmf(3.5, 7)
    assert any("silently DISABLED" in w for w in s.warnings(3.5, 7))
    np.testing.assert_allclose(s.pmf(3.0, 7).probs, [0, 0, 1, 0, 0, 0, 0, 0])  # integer F forces min(F, drafts)
    rng = np.random.default_rng(0)
    assert np.all(s.simulate(3.0, 7, 1000, rng) == 3)
    # the one-model path warns that the same fractional value would be off on two-model
    assert any("two-model path" in w and "DISABLES" in w for w in get_sampler("trtllm", "force").warnings(3.5, 7))


def test_trtllm_pool_fraction_is_close_to_frac():
    pool = force_pool()
    assert pool.size == 65536
    assert pool.dtype == np.float32
    assert 0.0 <= pool.min()
    assert pool.max() < 1.0
    for frac in (0.05, 0.3, 0.5, 0.9):
        # a binomial sample of 65536 uniforms: within 5 SE of frac
        se = math.sqrt(frac * (1 - frac) / pool.size)
        assert abs(force_pool_fraction(frac) - frac) < 5 * se
    s = get_sampler("trtllm", "force")
    assert s.long_run_mean(4.05, 7) == pytest.approx(4 + force_pool_fraction(3.05 - 3))


@pytest.mark.torch
def test_trtllm_pool_equals_torch_generator():
    torch = pytest.importorskip("torch")
    g = torch.Generator(device="cpu")
    g.manual_seed(0xACCE9D)
    expected = torch.rand(65536, dtype=torch.float32, generator=g).numpy()
    np.testing.assert_array_equal(force_pool(), expected)


# ---------------------------------------------------------------------- fast inverse cdf


@pytest.mark.parametrize(
    "probs",
    [[1.0, 0.0, 0.0], [0.0, 0.3, 0.7], [0.2, 0.0, 0.5, 0.3], [0.1, 0.2, 0.3, 0.25, 0.15], [0.0, 0.0, 1.0]],
)
def test_fast_inverse_cdf(probs):
    dist = AcceptanceDistribution(np.asarray(probs, dtype=float))
    draws = fast_inverse_cdf(dist.probs, N, np.random.default_rng(5))
    assert draws.dtype == np.int64
    assert_pmf_matches(draws, dist)
    assert fast_inverse_cdf(dist.probs, (3, 4), np.random.default_rng(5)).shape == (3, 4)


# ---------------------------------------------------------------------- properties


@st.composite
def _al_k(draw):
    k = draw(st.integers(min_value=1, max_value=16))
    al = draw(st.floats(min_value=1.0, max_value=float(k + 1), allow_nan=False))
    return al, k


@settings(max_examples=200, deadline=None)
@given(_al_k())
def test_property_guaranteed_means_and_valid_pmfs(al_k):
    al, k = al_k
    for engine, method in (("sglang", "match-expected"), ("vllm", "synthetic"), ("atom", "synthetic")):
        dist = get_sampler(engine, method).pmf(al, k)
        assert dist.k == k
        assert dist.mean() == pytest.approx(al, abs=1e-9)
        assert np.count_nonzero(dist.probs > 0) <= 2  # two-point schedules
    trt = get_sampler("trtllm", "force")
    from golden_al.engines import trtllm

    seen = 1.0 + float(trtllm.simulator_settings(trt, al, k)["TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"])
    assert seen == pytest.approx(al, rel=1e-9)
    if seen == 1.0:  # the env value is written as "0": forcing is off
        with pytest.raises(ForcingDisabledError):
            trt.pmf(al, k)
    else:
        assert trt.pmf(al, k).mean() == pytest.approx(seen, abs=1e-12)  # the value as written into the env
    multi = get_sampler("sglang", "multinomial").pmf(al, k)
    assert multi.probs.sum() == pytest.approx(1.0, abs=1e-12)
    assert 1.0 <= multi.mean() <= k + 1
    # the clamped normal is pulled towards the middle of [1, k+1]; far from both bounds only
    # rounding's own periodic bias remains, below 2e-9 for a unit-variance normal
    mid = (k + 2) / 2
    assert (multi.mean() - al) * np.sign(mid - al) >= -2e-9
