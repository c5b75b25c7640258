"""Issue 35, items 3 and 4 against the stand-ins: ``measure`` refuses a vLLM server that verifies with FLy (lossy),
records the curve selectors a server reports it runs with, and ``fit`` writes them into the curve, so ``env``
serves that curve only to a recipe with the same settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from _servers import cli, record, serve_reference, write_prompts

K = 3


@pytest.fixture
def prompts(tmp_path: Path) -> Path:
    return write_prompts(tmp_path / "prompts.jsonl", 4)


def _measure(engine: str, url: str, prompts: Path, out: Path, *extra: str) -> list[str]:
    return ["measure", "--engine", engine, "--server", url, "--draft-len", str(K), "--prompts",
            f"chat-jsonl:{prompts}", "--num-prompts", "4", "--max-tokens", "32", "--retries", "0",
            "--target", "fake-target", "--out", str(out), *extra]


def test_a_vllm_server_verifying_with_fly_is_refused(tmp_path: Path, prompts: Path, capsys) -> None:
    log = tmp_path / "s.log"
    with serve_reference(["--flavor", "vllm", "--fake", "--draft-len", str(K), "--server-setting",
                          "rejection_sample_method=fly"], log) as url:
        code, _, err = cli(_measure("vllm", url, prompts, tmp_path / "cell", "--server-log", str(log)), capsys)
    assert code == 2, err
    assert "verifies with FLy (rejection_sample_method: fly)" in err
    assert not (tmp_path / "cell" / "measurement.json").exists()


def test_vllm_selectors_go_from_the_servers_log_into_the_record_the_curve_and_env(tmp_path: Path, prompts: Path,
                                                                                 capsys) -> None:
    log = tmp_path / "s.log"
    with serve_reference(["--flavor", "vllm", "--fake", "--draft-len", str(K), "--server-setting",
                          "draft_lm_head_quantization=fp8"], log) as url:
        code, _, err = cli(_measure("vllm", url, prompts, tmp_path / "cell", "--server-log", str(log)), capsys)
    assert code == 0, err
    assert record(tmp_path / "cell")["server"]["curve_selectors"] == {"draft_lm_head_quantization": "fp8"}

    curve, store = tmp_path / "curve.yaml", tmp_path / "store"
    store.mkdir()
    code, _, err = cli(["fit", str(tmp_path / "cell"), "--out", str(curve), "--selector",
                        "draft_lm_head_quantization=nvfp4"], capsys)
    assert code == 2, err  # the records say what the server ran with
    assert "--selector draft_lm_head_quantization=nvfp4 but the records' server reported" in err
    code, _, err = cli(["fit", str(tmp_path / "cell"), "--out", str(curve)], capsys)
    assert code == 0, err
    assert yaml.safe_load(curve.read_text())["draft"]["selectors"] == {"draft_lm_head_quantization": "fp8"}
    assert cli(["commit", str(curve), "--golden-dir", str(store)], capsys)[0] == 0

    env = ["env", "--golden-dir", str(store), "--model", "fake-target", "--thinking", "off", "--draft-len", str(K),
           "--engine", "vllm", "--format", "json"]
    code, _, err = cli(env, capsys)
    assert code == 2  # a recipe on the defaults is not served the quantized head's curve
    assert "was measured with the engine's defaults (no selector)" in err
    code, out, err = cli([*env, "--selector", "draft_lm_head_quantization=fp8"], capsys)
    assert code == 0, err
    assert json.loads(out)["synthetic_acceptance_length"] == pytest.approx(record(tmp_path / "cell")["al"], abs=0.006)


def test_sglang_block_verification_is_read_from_server_info(tmp_path: Path, prompts: Path, capsys) -> None:
    with serve_reference(["--flavor", "sglang", "--fake", "--draft-len", str(K), "--server-setting",
                          "speculative_use_block_verification=true"], tmp_path / "s.log") as url:
        code, _, err = cli(_measure("sglang", url, prompts, tmp_path / "a"), capsys)
        assert code == 0, err
    assert record(tmp_path / "a")["server"]["curve_selectors"] == {"verification": "block"}
    with serve_reference(["--flavor", "sglang", "--fake", "--draft-len", str(K)], tmp_path / "t.log") as url:
        assert cli(_measure("sglang", url, prompts, tmp_path / "b"), capsys)[0] == 0
    assert record(tmp_path / "b")["server"]["curve_selectors"] == {}
    code, _, err = cli(["fit", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "c.yaml")], capsys)
    assert code == 2  # block and token verification are two curves, never averaged
    assert "records disagree on server.curve_selectors" in err


def test_a_vllm_server_whose_k_changes_at_run_time_is_refused(tmp_path: Path, prompts: Path, capsys) -> None:
    log = tmp_path / "s.log"
    with serve_reference(["--flavor", "vllm", "--fake", "--draft-len", str(K), "--server-setting",
                          'num_speculative_tokens_per_batch_size={"1": 3, "8": 1}'], log) as url:
        code, _, err = cli(_measure("vllm", url, prompts, tmp_path / "cell", "--server-log", str(log)), capsys)
    assert code == 2, err
    assert "num_speculative_tokens_per_batch_size" in err
    assert "mixes draft lengths" in err
