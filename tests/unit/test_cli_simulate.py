"""``golden-al simulate``: the JSON contract, text output and one-line exit-2 errors."""

from __future__ import annotations

import json
import math

import pytest

from golden_al.cli.main import main

CONTRACT = {"engine", "method", "draft_len", "al", "pmf", "mean", "sampled_mean", "warnings"}


def _json(capsys, *argv: str) -> dict:
    rc = main(["simulate", *argv, "--format", "json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


@pytest.mark.parametrize(
    ("engine", "method", "al", "k"),
    [
        ("sglang", "match-expected", 4.05, 7),
        ("sglang", "multinomial", 7.5, 7),
        ("vllm", "synthetic", 2.6, 3),
        ("trtllm", "force", 4.05, 7),
        ("atom", "synthetic", 3.3, 5),
    ],
)
def test_json_contract(capsys, engine, method, al, k):
    r = _json(capsys, "--engine", engine, "--method", method, "--al", str(al), "--draft-len", str(k))
    assert CONTRACT <= set(r)
    assert (r["engine"], r["method"], r["draft_len"], r["al"]) == (engine, method, k, al)
    assert len(r["pmf"]) == k + 1
    assert math.isclose(sum(r["pmf"]), 1.0, abs_tol=1e-9)
    assert r["mean"] == pytest.approx(sum((i + 1) * p for i, p in enumerate(r["pmf"])))
    assert isinstance(r["warnings"], list)
    assert all(isinstance(w, str) for w in r["warnings"])
    assert r["steps"] == 100_000  # default N
    # sampled mean within 5 standard errors of the exact mean
    se = r["std"] / math.sqrt(r["steps"])
    assert abs(r["sampled_mean"] - r["mean"]) <= 5 * se + 1e-12
    assert r["draw_unit"] == ("batch-step" if engine == "sglang" else "request-step")
    if r["guarantees_mean"]:
        assert r["mean"] == pytest.approx(al, abs=1e-12)


def test_multinomial_bias_7_5_over_7(capsys):
    r = _json(capsys, "--engine", "sglang", "--method", "multinomial", "--al", "7.5", "--draft-len", "7")
    assert r["bias"] == pytest.approx(-0.18276, abs=1e-4)
    assert r["max_len"] == 8
    assert any("bias of -0.1828" in w for w in r["warnings"])


def test_trtllm_fields(capsys):
    r = _json(capsys, "--engine", "trtllm", "--method", "force", "--al", "4.05", "--draft-len", "7")
    assert r["TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"] == "3.05"
    assert r["trtllm_path"] == "one-model"
    assert any("two-model" in w for w in r["warnings"])


def test_steps_and_seed(capsys):
    a = _json(capsys, "--engine", "vllm", "--method", "synthetic", "--al", "2.6", "--draft-len", "3",
              "--steps", "5000", "--seed", "3")
    b = _json(capsys, "--engine", "vllm", "--method", "synthetic", "--al", "2.6", "--draft-len", "3",
              "--steps", "5000", "--seed", "3")
    assert a["steps"] == 5000
    assert a["sampled_mean"] == b["sampled_mean"]


def test_vllm_rates_and_atom_rate(capsys):
    r = _json(capsys, "--engine", "vllm", "--method", "synthetic", "--rates", "0.9,0.5,0.2", "--draft-len", "3")
    assert r["al"] == pytest.approx(2.6)
    assert r["engine_settings"]["--speculative-config"]["synthetic_acceptance_rates"] == [0.9, 0.5, 0.2]
    r = _json(capsys, "--engine", "atom", "--method", "synthetic", "--acceptance-rate", "0.45", "--draft-len", "7")
    assert r["al"] == pytest.approx(4.15)


def test_batch_shared_vs_per_request(capsys):
    r = _json(capsys, "--engine", "sglang", "--method", "multinomial", "--al", "4.2", "--draft-len", "7",
              "--batch", "16", "--steps", "20000")
    b = r["batch"]
    assert b["engine_draws"] == "shared"
    assert b["shared"]["mean_pairwise_correlation"] == pytest.approx(1.0)
    assert abs(b["per_request"]["mean_pairwise_correlation"]) < 0.02
    assert b["variance_ratio"] == pytest.approx(16, rel=0.1)
    assert b["shared"]["per_step_tokens_std"] == pytest.approx(b["expected_per_step_tokens_std"]["shared"], rel=0.05)


def test_algorithm_sets_flags(capsys):
    r = _json(capsys, "--engine", "sglang", "--method", "match-expected", "--al", "4.05", "--draft-len", "7",
              "--algorithm", "DFLASH")
    assert r["algorithm"] == "dflash"
    assert r["engine_settings"]["--speculative-num-draft-tokens"] == "8"


def test_text_output(capsys):
    rc = main(["simulate", "--engine", "sglang", "--method", "multinomial", "--al", "7.5", "--draft-len", "7",
               "--batch", "4", "--steps", "2000"])
    out, _ = capsys.readouterr()
    assert rc == 0
    assert "P(L) exact" in out
    assert "█" in out
    assert "bias -0.1828" in out
    assert "shared draw" in out
    assert "warnings:" in out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--engine", "sglang", "--method", "multinomial", "--al", "9", "--draft-len", "7"], "outside [1, 8]"),
        (["--engine", "sglng", "--method", "multinomial", "--al", "2", "--draft-len", "7"], "did you mean 'sglang'"),
        (["--engine", "vllm", "--method", "force", "--al", "2", "--draft-len", "7"], "allowed for vllm: synthetic"),
        (["--engine", "vllm", "--method", "synthetic", "--draft-len", "7"], "--al is required"),
        (["--engine", "vllm", "--method", "synthetic", "--al", "2", "--draft-len", "7", "--algorithm", "eagle"],
         "applies only to --engine sglang"),
        (["--engine", "vllm", "--method", "synthetic", "--rates", "0.5,0.7", "--draft-len", "2"], "non-increasing"),
        (["--engine", "vllm", "--method", "synthetic", "--rates", "0.5,abc", "--draft-len", "2"], "cannot parse"),
        (["--engine", "trtllm", "--method", "force", "--al", "1", "--draft-len", "3"], "means off"),
        (["--engine", "trtllm", "--method", "force", "--al", "2.5", "--draft-len", "3", "--trtllm-path", "two-model"],
         "fails int()"),
        (["--engine", "sglang", "--method", "multinomial", "--al", "abc", "--draft-len", "7"], "invalid float"),
        (["--engine", "sglang", "--method", "multinomial", "--al", "3", "--draft-len", "0"], "draft length"),
        (["--engine", "sglang", "--method", "multinomial", "--al", "3", "--draft-len", "3", "--steps", "0"], "--steps"),
        (["--engine", "sglang", "--method", "multinomial", "--al", "3", "--draft-len", "3", "--algorithm", "medusa"],
         "invalid choice"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, argv, needle):
    rc = main(["simulate", *argv])
    out, err = capsys.readouterr()
    assert rc == 2
    assert out == ""
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert needle in err


def test_help_shows_examples(capsys):
    assert main(["simulate", "--help"]) == 0
    out, _ = capsys.readouterr()
    assert "examples:" in out
    assert "golden-al simulate --engine sglang --method multinomial --al 7.5" in out


@pytest.mark.parametrize(("al", "k"), [(4.05, 7), (3.0, 3), (2.123456789, 4), (8.0, 7)])
def test_injected_values_agree_with_engine_profiles(al, k):
    """simulate shows the same injected strings as `golden-al env` (both from the engine profiles)."""
    from golden_al.cli.simulate import _engine_settings
    from golden_al.engines import sglang
    from golden_al.plugin import registry
    from golden_al.plugin.registry import get_sampler

    sg = _engine_settings(get_sampler("sglang", "match-expected"), al, k)
    assert sg["SGLANG_SIMULATE_ACC_LEN"] == registry.synthetic_settings("sglang", al, k)["SGLANG_SIMULATE_ACC_LEN"]
    trt = _engine_settings(get_sampler("trtllm", "force"), al, k)
    key = "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"
    assert trt[key] == registry.synthetic_settings("trtllm", al, k)[key]
    atom = _engine_settings(get_sampler("atom", "synthetic"), al, k)
    key = "--spec-decode-acceptance-length"
    assert atom[key] == registry.synthetic_settings("atom", al, k)[key]
    for algo in ("eagle", "dflash", "dspark", "ngram"):
        assert get_sampler("sglang", "multinomial", algorithm=algo).max_len(k) == sglang.max_len(algo, k)


def test_cli_algorithm_choices_match_the_simulator():
    from golden_al.cli.simulate import _engine_options
    from golden_al.engines.sglang import SIMULATE_ALGORITHMS
    from golden_al.engines.sglang.sampler import SGLANG_ALGORITHMS

    assert set(SIMULATE_ALGORITHMS) == set(SGLANG_ALGORITHMS)
    option, owners = _engine_options()["--algorithm"]
    assert set(option.choices) == set(SGLANG_ALGORITHMS)
    assert list(owners) == ["sglang"]


def test_every_engine_option_is_built_from_the_profiles():
    """simulate's engine flags come from the profiles: --rates serves vLLM and llama.cpp alike."""
    from golden_al.cli.simulate import _engine_options

    opts = _engine_options()
    assert sorted(opts["--rates"][1]) == ["llamacpp", "vllm"]
    assert list(opts["--acceptance-rate"][1]) == ["atom"]
    assert list(opts["--trtllm-path"][1]) == ["trtllm"]


def test_method_defaults_to_the_engines_default_sampler(capsys) -> None:
    """``simulate --method`` is optional where the engine's profile names its default sampler (issue 37)."""
    import json

    from golden_al.cli.main import main
    from golden_al.plugin.registry import engine_names, get_profile

    for engine in engine_names():
        default = get_profile(engine).simulate.default_sampler
        if default is None:
            continue
        assert main(["simulate", "--engine", engine, "--al", "2.5", "--draft-len", "3", "--format", "json",
                     "--steps", "2000"]) == 0
        assert json.loads(capsys.readouterr().out)["method"] == default
