"""``golden-al env``: the per-engine contract, engine spellings of k, no-golden exits."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import yaml

from golden_al.cli.main import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "inferencex" / "golden_al_distribution"
MUSE = ["--model", "muse-spark-open-816b-a42b-nvfp4", "--thinking", "on"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["env", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


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
def test_json_contract_for_each_engine(capsys: pytest.CaptureFixture[str], engine: str, expected: dict) -> None:
    rc, out, err = run(capsys, *MUSE, "--engine", engine, "--draft-len", "7", "--format", "json")
    assert rc == 0, err
    assert json.loads(out) == expected
    assert out.count("\n") == 1
    assert err == ""


def test_use_case_command(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, *MUSE, "--engine", "sglang", "--algorithm", "dflash", "--num-draft-tokens", "8",
                     "--format", "json")
    assert rc == 0
    assert out == ('{"SGLANG_SIMULATE_ACC_LEN": "4.05", "SGLANG_SIMULATE_ACC_METHOD": "match-expected", '
                   '"SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token"}\n')


@pytest.mark.parametrize(
    ("spelling", "model", "thinking", "al"),
    [
        (["--algorithm", "DFLASH", "--num-draft-tokens", "8"], "musespark", "on", "4.05"),   # k = 8 - 1
        (["--algorithm", "dflash", "--block-size", "8"], "musespark", "on", "4.05"),          # dflash block = k + 1
        (["--algorithm", "eagle", "--num-steps", "3"], "deepseek-ai/DeepSeek-V4-Pro", "on", "2.49"),
        (["--algorithm", "nextn", "--num-steps", "5"], "qwen3.5", "off", "4.2"),
        (["--algorithm", "eagle", "--num-steps", "4"], "nvidia/Kimi-K2.5-NVFP4", "off", "3.06"),  # eagle -> eagle3 curve
        (["--algorithm", "eagle3", "--num-steps", "2", "--variant", "gqa"], "minimax-m3", "off", "2.46"),
        (["--algorithm", "dspark", "--block-size", "6"], "deepseek-ai/DeepSeek-V4-Pro-DSpark", "on", "3.77"),
        (["--algorithm", "dspark", "--block-size", "7", "--draft-sample-method", "greedy"], "kimik3", "on", "3.78"),
        (["--num-speculative-tokens", "8"], "glm5.2", "on", "4.06"),
        (["--max-draft-len", "3", "--method", "mtp"], "dsv4", "off", "2.97"),
    ],
)
def test_engine_spellings_of_draft_length(capsys: pytest.CaptureFixture[str], spelling: list[str], model: str,
                                          thinking: str, al: str) -> None:
    rc, out, err = run(capsys, "--model", model, "--thinking", thinking, "--engine", "sglang", *spelling,
                       "--format", "json")
    assert rc == 0, err
    assert json.loads(out)["SGLANG_SIMULATE_ACC_LEN"] == al


def test_formats_parse_back(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--model", "dsv4", "--thinking", "on", "--draft-len", "3"]
    rc, out, _ = run(capsys, *base, "--engine", "sglang", "--format", "shell")
    assert rc == 0
    assert out.splitlines() == ["export SGLANG_SIMULATE_ACC_LEN=2.49", "export SGLANG_SIMULATE_ACC_METHOD=match-expected",
                                "export SGLANG_SIMULATE_ACC_TOKEN_MODE=real-draft-token"]
    rc, out, _ = run(capsys, *base, "--engine", "trtllm", "--format", "dotenv")
    assert out == "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=1.49\n"
    rc, out, _ = run(capsys, *base, "--engine", "sglang", "--format", "yaml")
    assert yaml.safe_load(out) == {"SGLANG_SIMULATE_ACC_LEN": "2.49", "SGLANG_SIMULATE_ACC_METHOD": "match-expected",
                                   "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token"}
    rc, out, _ = run(capsys, *base, "--engine", "vllm", "--format", "yaml")
    assert yaml.safe_load(out) == {"rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.49}


def test_vllm_and_atom_shell_forms(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "--model", "kimik3", "--thinking", "on", "--engine", "vllm", "--algorithm", "dspark",
                     "--num-speculative-tokens", "7", "--draft-sample-method", "probabilistic", "--format", "shell")
    assert rc == 0
    (line,) = out.splitlines()
    name, value = shlex.split(line.removeprefix("export "))[0].split("=", 1)
    assert name == "GOLDEN_AL_VLLM_SPECULATIVE_CONFIG"
    assert json.loads(value) == {"method": "dspark", "num_speculative_tokens": 7,
                                 "rejection_sample_method": "synthetic", "synthetic_acceptance_length": 3.84}
    rc, out, _ = run(capsys, "--model", "kimik3", "--thinking", "on", "--engine", "atom", "--draft-len", "7",
                     "--variant", "probabilistic-block", "--format", "shell")
    assert shlex.split(out.removeprefix("export "))[0] == "GOLDEN_AL_ATOM_ARGS=--spec-decode-acceptance-length 3.84"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--model", "llama-5", "--thinking", "on", "--draft-len", "3"],
         "no golden curve for model 'llama-5'.*models: deepseek-v4-pro"),
        (["--model", "glm5.2", "--thinking", "off", "--draft-len", "3"],
         r"has no thinking_off values \(it has thinking_on k=1-8\)"),
        (["--model", "dsv4", "--thinking", "on", "--draft-len", "9"], r"no value at k=9 \(k = 1-8\)"),
        (["--model", "minimax-m3", "--thinking", "on", "--draft-len", "3"],
         r"has 2 curves.*minimaxm3_eagle3 \(.*minimaxm3_eagle3_gqa \("),
        (["--model", "dsv4", "--thinking", "on", "--algorithm", "dspark", "--block-size", "3"],
         r"no curve with method 'dspark' \(curves: dsv4_mtp"),
    ],
)
def test_no_golden_value_exits_2_listing_what_exists(capsys: pytest.CaptureFixture[str], argv: list[str],
                                                     message: str) -> None:
    import re

    rc, out, err = run(capsys, *argv, "--engine", "sglang", "--format", "json")
    assert rc == 2
    assert out == ""
    assert err.startswith("golden-al: error: ")
    assert re.search(message, err), err


@pytest.mark.parametrize(
    "argv",
    [
        ["--draft-len", "3", "--algorithm", "dflash", "--num-draft-tokens", "8"],   # 3 vs 7
        ["--num-steps", "3"],                                                         # no --algorithm
        [],                                                                           # no k at all
        ["--algorithm", "eagle", "--block-size", "3"],                               # block size is not EAGLE's
        ["--algorithm", "dflash", "--num-draft-tokens", "8", "--block-size", "6"],  # SGLang rejects this
    ],
)
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    rc, out, err = run(capsys, *MUSE, "--engine", "sglang", *argv)
    assert rc == 2
    assert out == ""
    assert "golden-al: error:" in err


def test_value_beyond_draft_length_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "odd_mtp.yaml").write_text(
        "schema_version: 1\nmodel: odd\ndraft: {method: mtp}\nthinking_on: {points: {1: {al: 1.0}}}\n"
        "provenance: {notes: test}\n")
    rc, _out, err = run(capsys, "--model", "odd", "--thinking", "on", "--draft-len", "1", "--engine", "trtllm",
                       "--golden-dir", str(tmp_path))
    assert rc == 2
    assert "cannot force AL 1.0" in err


def test_golden_dir_with_their_files(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "--model", "dsv4", "--thinking", "off", "--engine", "trtllm", "--draft-len", "6",
                     "--golden-dir", str(FIXTURES), "--format", "json")
    assert rc == 0
    assert json.loads(out) == {"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": "2.16"}


def test_golden_dir_from_environment(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOLDEN_AL_GOLDEN_DIR", str(FIXTURES))
    rc, _, err = run(capsys, *MUSE, "--engine", "sglang", "--draft-len", "7")
    assert rc == 2
    assert "muse-spark" in err
    assert str(FIXTURES) in err
