"""TensorRT-LLM end to end against its stand-in (issue 35): ``measure --engine trtllm`` reads the drained JSON
``/metrics`` iteration rows of ``serve-reference --flavor trtllm``, then ``fit``, ``commit``, ``env``; a run of
the stand-in with the ``env`` value in ``TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS`` (drawn by the one-model
sampler, as the engine does) is checked by ``check-run`` (pass, and fail against another AL) and imported.
A server whose rows cannot prove a unit's counts is refused, naming why."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from _servers import cli, record, serve_reference, write_prompts

K = 3
MODEL = "fake-target"


def _measure(url: str, prompts: Path, out: Path, *extra: str) -> list[str]:
    return ["measure", "--engine", "trtllm", "--server", url, "--draft-len", str(K), "--prompts",
            f"chat-jsonl:{prompts}", "--num-prompts", "6", "--max-tokens", "48", "--retries", "0",
            "--target", MODEL, "--algorithm", "Eagle3", "--out", str(out), *extra]


@pytest.fixture
def prompts(tmp_path: Path) -> Path:
    return write_prompts(tmp_path / "prompts.jsonl", 6)


@pytest.mark.slow
def test_measure_fit_commit_env_synthetic_run_check_run_and_import(tmp_path, prompts, capsys, monkeypatch):
    with serve_reference(["--flavor", "trtllm", "--fake", "--draft-len", str(K)], tmp_path / "s.log") as url:
        code, out, err = cli(_measure(url, prompts, tmp_path / "cell"), capsys)
    assert code == 0, err
    rec = record(tmp_path / "cell")
    assert rec["al_source"] == "trtllm-iteration-stats"
    assert rec["num_requests"] == 6
    assert sum(rec["histogram"]) == rec["num_verify_steps"] > 0
    assert 1.0 < rec["al"] < K + 1
    for check in ("k-bound", "proposed-at-most-k", "tokens-upper-bound", "completion-tokens"):
        assert rec["checks"][check] == 6, check
    assert "forced acceptance" in " ".join(rec["warnings"])  # what the server cannot say is said

    curve, store = tmp_path / "curve.yaml", tmp_path / "store"
    store.mkdir()
    code, _, err = cli(["fit", str(tmp_path / "cell"), "--out", str(curve)], capsys)
    assert code == 0, err
    code, _, err = cli(["commit", str(curve), "--golden-dir", str(store)], capsys)
    assert code == 0, err
    code, out, err = cli(["env", "--golden-dir", str(store), "--model", MODEL, "--thinking", "off", "--draft-len",
                          str(K), "--engine", "trtllm", "--format", "json"], capsys)
    assert code == 0, err
    ((name, value),) = json.loads(out).items()
    assert name == "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"
    assert float(value) + 1 == pytest.approx(rec["al"], abs=0.006)  # the knob counts drafts only

    monkeypatch.setenv(name, value)  # the stand-in reads it as trtllm-serve does
    rows = tmp_path / "metrics.json"
    with serve_reference(["--flavor", "trtllm", "--fake", "--draft-len", str(K), "--fake-max-len", "200"],
                         tmp_path / "synthetic.log") as url:
        for i in range(12):
            r = httpx.post(f"{url}/v1/chat/completions", timeout=60, json={
                "model": MODEL, "max_tokens": 200, "messages": [{"role": "user", "content": f"question {i}"}]})
            assert r.status_code == 200, r.text
        rows.write_text(httpx.get(f"{url}/metrics", timeout=60).text)
    monkeypatch.delenv(name)
    golden = float(value) + 1
    base = ["check-run", str(rows), "--engine", "trtllm", "--draft-len", str(K), "--format", "json"]
    code, out, err = cli([*base, "--expect-al", f"{golden:.2f}"], capsys)
    assert code == 0, out + err
    result = json.loads(out)
    assert result["verdict"] == "pass"
    margin = max(4 * result["tolerance"], 0.1)
    wrong = golden - margin if golden - margin >= 1.05 else golden + margin
    code, out, err = cli([*base, "--expect-al", f"{wrong:.2f}"], capsys)
    assert code == 1, out + err
    assert json.loads(out)["verdict"] == "fail"

    code, _, err = cli(["import", "trtllm-iteration-log", str(rows), "--out", str(tmp_path / "imported"),
                        "--model", MODEL, "--draft-len", str(K), "--thinking", "off", "--temperature", "0",
                        "--max-tokens", "200"], capsys)
    assert code == 0, err
    imported = record(tmp_path / "imported")
    assert imported["al"] == pytest.approx(result["realized_al"], abs=1e-9)


def _refused(args: list[str], tmp_path: Path, prompts: Path, capsys) -> str:
    """Measure against ``serve-reference ARGS``: refused (non-zero), nothing recorded; returns stderr."""
    with serve_reference(args, tmp_path / "s.log") as url:
        code, _, err = cli(_measure(url, prompts, tmp_path / "cell"), capsys)
    assert code != 0
    assert not (tmp_path / "cell" / "measurement.json").exists()
    return err


def test_rows_dropped_by_a_full_stats_queue_refuse_the_unit(tmp_path, prompts, capsys):
    err = _refused(["--flavor", "trtllm", "--fake", "--draft-len", str(K), "--iter-stats-max-iterations", "4"],
                   tmp_path, prompts, capsys)
    assert "skip iterations" in err
    assert "iter_stats_max_iterations" in err


def test_a_server_drafting_more_than_k_is_refused(tmp_path, prompts, capsys):
    err = _refused(["--flavor", "trtllm", "--fake", "--draft-len", str(K + 2)], tmp_path, prompts, capsys)
    assert f"more than k = {K}" in err


@pytest.mark.slow
def test_a_restart_mid_cell_is_refused(tmp_path, prompts, capsys):
    err = _refused(["--flavor", "trtllm", "--fake", "--draft-len", str(K), "--fault", "reset@4"], tmp_path, prompts,
                   capsys)
    assert "restarted" in err


def test_a_server_without_iteration_rows_is_refused(tmp_path, prompts, capsys):
    """An SGLang server answers Prometheus text at /metrics: not TensorRT-LLM's JSON rows."""
    err = _refused(["--flavor", "sglang", "--fake", "--draft-len", str(K)], tmp_path, prompts, capsys)
    assert "/metrics" in err


@pytest.mark.slow
def test_per_request_perf_metrics_give_the_same_counts_as_the_iteration_rows(tmp_path, prompts, capsys):
    """The second TensorRT-LLM source: ``/perf_metrics`` entries (return_perf_metrics), whose steps are proven by
    drafts and iteration span together, give exactly the AL the iteration rows give on the same server."""
    args = ["--flavor", "trtllm", "--fake", "--draft-len", str(K), "--perf-metrics-max-requests", "64"]
    with serve_reference(args, tmp_path / "a.log") as url:
        code, _, err = cli(_measure(url, prompts, tmp_path / "rows"), capsys)
        assert code == 0, err
    with serve_reference(args, tmp_path / "b.log") as url:
        code, _, err = cli(_measure(url, prompts, tmp_path / "perf", "--al-source", "trtllm-perf-metrics"), capsys)
        assert code == 0, err
    rows, perf = record(tmp_path / "rows"), record(tmp_path / "perf")
    assert perf["al_source"] == "trtllm-perf-metrics"
    for key in ("num_verify_steps", "num_accepted_drafts", "al", "num_requests"):
        assert perf[key] == rows[key], key
    assert perf["histogram_known"] is False
    assert rows["histogram_known"] is True
    for rec in (rows, perf):  # issue 51: each source read the other endpoint as a witness, and the k its rows show
        assert rec["checks"]["two-sources-agree"] == 6
        assert rec["draft_len_observed"] == K


@pytest.mark.slow
def test_perf_metrics_off_is_refused(tmp_path, prompts, capsys):
    with serve_reference(["--flavor", "trtllm", "--fake", "--draft-len", str(K)], tmp_path / "s.log") as url:
        code, _, err = cli(_measure(url, prompts, tmp_path / "cell", "--al-source", "trtllm-perf-metrics"), capsys)
    assert code != 0
    assert not (tmp_path / "cell" / "measurement.json").exists()
    assert "finished" in err or "perf_metrics" in err, err
