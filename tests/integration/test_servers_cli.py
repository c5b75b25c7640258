"""measure / sweep / check-run over real HTTP against serve-reference (fake engine; no torch).

``--launch`` is tested with stand-ins of ``python -m sglang.launch_server`` and
``python -m vllm.entrypoints.openai.api_server`` (tests/integration/fake_engines) that
parse the exact flags golden-al writes and serve serve-reference in that flavor.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from _servers import (
    REPO,
    cell_counts,
    cli,
    record,
    serve_reference,
    server_pids,
    shim_env,
    wait_dead,
    write_prompts,
)


@pytest.fixture
def prompts(tmp_path):
    return write_prompts(tmp_path / "prompts.jsonl", 6)


def _common(prompts: Path, n: int = 6, max_tokens: int = 48) -> list[str]:
    return ["--prompts", f"chat-jsonl:{prompts}", "--num-prompts", str(n), "--max-tokens", str(max_tokens),
            "--retries", "2", "--backoff", "0.05"]


@pytest.mark.slow
@pytest.mark.parametrize("flavor", ["sglang", "vllm", "atom"])
def test_measure_attached(tmp_path, prompts, capsys, flavor):
    out = tmp_path / "out"
    with serve_reference(["--flavor", flavor, "--fake", "--draft-len", "3"], tmp_path / "server.log") as url:
        code, stdout, err = cli(["measure", "--engine", flavor, "--server", url, "--draft-len", "3",
                                 *_common(prompts), "--out", str(out)], capsys)
    assert code == 0, err
    rec = record(out)
    assert rec["engine"] == flavor
    assert rec["mode"] == "server"
    assert rec["draft_len"] == 3
    assert rec["al_source"] == {"sglang": "sglang-meta-info", "vllm": "vllm-prometheus",
                                "atom": "atom-mtp-stats"}[flavor]
    assert rec["engine_version"] == (None if flavor == "atom" else "golden-al-reference")
    assert rec["server"]["url"] == url
    assert rec["server"]["launched"] is False
    assert rec["dataset"]["count"] == 6
    assert rec["sampling"]["max_tokens"] == 48
    assert rec["sampling"]["temperature"] == 0.0  # generic preset: greedy
    assert rec["al"] == pytest.approx(1 + rec["num_accepted_drafts"] / rec["num_verify_steps"])
    assert f"AL {rec['al']:.3f}" in stdout
    assert len((out / "requests.jsonl").read_text().splitlines()) == 6


def test_measure_launch_records_command_and_log_and_stops_server(tmp_path, prompts, capsys):
    out = tmp_path / "out"
    code, _stdout, err = cli(["measure", "--engine", "vllm", "--launch", "--target", "fake-target",
                             "--algorithm", "ngram", "--speculative-extra", '{"prompt_lookup_max": 4}',
                             "--python", sys.executable, *shim_env(tmp_path), "--served-model-name", "smol",
                             "--draft-len", "2", *_common(prompts, 4), "--out", str(out)], capsys)
    assert code == 0, err
    rec = record(out)
    cmd = rec["server"]["command"]
    assert cmd[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    assert json.loads(cmd[cmd.index("--speculative-config") + 1]) == {
        "method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 4}
    assert rec["server"]["launched"]
    assert rec["server"]["log_file"] == "server.log"
    assert rec["server"]["server_args"]["speculative_config"]["num_speculative_tokens"] == 2
    assert "PYTHONPATH" not in rec["server"]["env"]  # only engine-relevant variables are recorded
    log = (out / "server.log").read_text()
    assert "non-default args" in log
    assert "server stopped" in log
    assert "starting vllm" in err
    assert wait_dead(server_pids(tmp_path))


@pytest.mark.slow
def test_measure_launch_atom(tmp_path, prompts, capsys):
    out = tmp_path / "out"
    code, _, err = cli(["measure", "--engine", "atom", "--launch", "--target", "fake-target", "--algorithm", "mtp",
                        "--tp", "8", "--python", sys.executable, *shim_env(tmp_path), "--draft-len", "3",
                        *_common(prompts, 4), "--out", str(out)], capsys)
    assert code == 0, err
    rec = record(out)
    cmd = rec["server"]["command"]
    assert cmd[1:3] == ["-m", "atom.entrypoints.openai_server"]
    assert cmd[cmd.index("--method"):cmd.index("--method") + 4] == ["--method", "mtp", "--num-speculative-tokens", "3"]
    assert rec["al_source"] == "atom-mtp-stats"
    assert rec["draft_method"] == "mtp"
    assert wait_dead(server_pids(tmp_path))


def test_print_command_is_exact(capsys):
    code, out, _ = cli(["measure", "--engine", "sglang", "--launch", "--target", "/models/Target",
                        "--draft", "/models/Target-DFlash", "--algorithm", "dflash", "--tp", "8",
                        "--draft-len", "7", "--print-command"], capsys)
    assert code == 0
    assert out.strip() == ("python3 -m sglang.launch_server --model-path /models/Target --host 127.0.0.1 --port 30000 "
                           "--tp-size 8 --speculative-draft-model-path /models/Target-DFlash "
                           "--speculative-algorithm DFLASH --speculative-num-draft-tokens 8")


def _sweep(tmp_path, prompts, out, *extra):
    return ["sweep", "--engine", "sglang", "--launch", "--target", "fake-target", "--algorithm", "eagle",
            "--python", sys.executable, "--draft-lens", "2,3", "--thinking", "on,off", "--model-family", "qwen3",
            *_common(prompts, 5, 40), "--out", str(out), *extra]


@pytest.mark.slow
def test_sweep_server_killed_then_resume_loses_and_doubles_nothing(tmp_path, prompts, capsys):
    clean = tmp_path / "clean"
    code, _, err = cli([*_sweep(tmp_path / "a", prompts, clean), *shim_env(tmp_path / "a")], capsys)
    assert code == 0, err
    broken = tmp_path / "broken"
    # the first server (k=2) dies on its 7th request: thinking_on done (5), thinking_off has 1
    code, _, err = cli([*_sweep(tmp_path / "b", prompts, broken), *shim_env(tmp_path / "b", faults=["die@7"])],
                       capsys)
    assert code == 1
    assert "request 1 (k=2, thinking off" in err
    assert "failed after 3 attempts" in err
    assert wait_dead(server_pids(tmp_path / "b"))
    assert (broken / "thinking_on" / "k2" / "measurement.json").exists()
    assert len((broken / "thinking_off" / "k2" / "requests.jsonl").read_text().splitlines()) == 1
    code, stdout, err = cli([*_sweep(tmp_path / "b", prompts, broken, "--resume"), *shim_env(tmp_path / "b")], capsys)
    assert code == 0, err
    for mode in ("on", "off"):
        for k in (2, 3):
            cell = f"thinking_{mode}/k{k}"
            assert cell_counts(record(broken / cell)) == cell_counts(record(clean / cell)), cell
    assert stdout.count("AL ") == 4
    assert json.loads((broken / "sweep.json").read_text())["fingerprint"]["draft_lens"] == [2, 3]


@pytest.mark.slow
def test_sweep_interrupted_stops_its_server_then_resumes(tmp_path, prompts):
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-m", "golden_al", *_sweep(tmp_path, prompts, out), *shim_env(tmp_path, step_delay=0.05)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    req = out / "thinking_on" / "k2" / "requests.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (req.exists() and req.read_text().count("\n") >= 1):
        time.sleep(0.1)
    assert req.exists(), proc.communicate(timeout=30)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert server_pids(tmp_path)
    assert wait_dead(server_pids(tmp_path)), "the launched server outlived golden-al"
    done = len(req.read_text().splitlines())
    resumed = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, env=env, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    lines = req.read_text().splitlines()
    assert len(lines) == 5
    assert len({json.loads(x)["index"] for x in lines}) == 5
    assert done <= 5


@pytest.mark.slow
def test_one_run_with_validation(tmp_path, prompts, capsys):
    out = tmp_path / "out"
    code, stdout, err = cli(["sweep", "--engine", "vllm", "--launch", "--target", "fake-target",
                             "--draft", "fake-draft", "--python", sys.executable, *shim_env(tmp_path),
                             "--draft-lens", "1-4", "--one-run", "--validate-k", "2",
                             *_common(prompts, 6, 64), "--out", str(out)], capsys)
    assert code == 0, err
    derived = record(out / "thinking_off" / "k2")
    assert derived["derived"]
    assert derived["derived_from_draft_len"] == 4
    assert derived["derivation_exact"] is False
    assert record(out / "thinking_off" / "k2" / "validate")["derived"] is False
    rows = json.loads((out / "validation.json").read_text())["rows"]
    assert [r["draft_len"] for r in rows] == [2]
    assert "validate thinking off k=2: derived" in stdout
    assert not (out / "thinking_off" / "k1" / "validate").exists()
    assert sorted(p.name for p in (out / "logs").iterdir()) == ["k2.server.log", "k4.server.log"]


def test_check_run_agrees_with_measure(tmp_path, prompts, capsys):
    out = tmp_path / "out"
    with serve_reference(["--flavor", "vllm", "--fake", "--draft-len", "3"], tmp_path / "server.log") as url:
        (tmp_path / "before.txt").write_text(httpx.get(f"{url}/metrics").text)
        # an explicit source: --al-source auto first sends one 2-token request to see whether the server
        # returns per-request metrics, which these outside snapshots would count
        code, _, err = cli(["measure", "--engine", "vllm", "--server", url, "--draft-len", "3",
                            "--al-source", "vllm-prometheus", *_common(prompts), "--out", str(out)], capsys)
        assert code == 0, err
        (tmp_path / "after.txt").write_text(httpx.get(f"{url}/metrics").text)
    al = record(out)["al"]
    code, stdout, err = cli(["check-run", str(tmp_path / "before.txt"), str(tmp_path / "after.txt"),
                             "--engine", "vllm", "--expect-al", f"{al:.12f}", "--draft-len", "3", "--format", "json"],
                            capsys)
    assert code == 0, err
    report = json.loads(stdout)
    assert report["realized_al"] == pytest.approx(al, abs=1e-12)  # the same counters, read by check-run
    code, _, _ = cli(["check-run", str(tmp_path / "before.txt"), str(tmp_path / "after.txt"),
                      "--engine", "vllm", "--expect-al", f"{min(al + 1.0, 4.0):.3f}", "--draft-len", "3"], capsys)
    assert code == 1


def test_synthetic_acceptance_is_refused(tmp_path, prompts, capsys):
    code, _, err = cli(["measure", "--engine", "sglang", "--launch", "--target", "t", "--algorithm", "eagle",
                        "--env", "SGLANG_SIMULATE_ACC_LEN=2.5", "--draft-len", "3", *_common(prompts),
                        "--out", str(tmp_path / "a")], capsys)
    assert code == 2
    assert "SGLANG_SIMULATE_ACC_LEN=2.5" in err
    assert "refusing to measure" in err
    with serve_reference(["--flavor", "sglang", "--fake", "--draft-len", "3", "--claim-synthetic"],
                         tmp_path / "server.log") as url:
        code, _, err = cli(["measure", "--engine", "sglang", "--server", url, "--draft-len", "3",
                            *_common(prompts), "--out", str(tmp_path / "b")], capsys)
    assert code == 2
    assert "synthetic acceptance is active" in err
    assert "/server_info" in err


def test_5xx_and_timeouts_are_retried_and_named(tmp_path, prompts, capsys):
    with serve_reference(["--flavor", "sglang", "--fake", "--draft-len", "3", "--fault", "503@2",
                          "--fault", "sleep@4", "--fault-sleep", "3"], tmp_path / "server.log") as url:
        code, _, err = cli(["measure", "--engine", "sglang", "--server", url, "--draft-len", "3",
                            *_common(prompts), "--request-timeout", "1", "--out", str(tmp_path / "a")], capsys)
    assert code == 0, err
    assert "HTTP 503" in err
    assert "timed out" in err
    assert "retrying" in err
    assert record(tmp_path / "a")["num_requests"] == 6


def test_missing_spec_fields_is_a_named_failure(tmp_path, prompts, capsys):
    with serve_reference(["--flavor", "sglang", "--fake", "--draft-len", "3", "--fault", "nospec@3"],
                         tmp_path / "server.log") as url:
        code, _, err = cli(["measure", "--engine", "sglang", "--server", url, "--draft-len", "3",
                            *_common(prompts), "--out", str(tmp_path / "a")], capsys)
    assert code == 1
    assert "request 2 (k=3" in err
    assert "no spec_verify_ct" in err


def test_wrong_draft_len_for_an_attached_server(tmp_path, prompts, capsys):
    with serve_reference(["--flavor", "sglang", "--fake", "--draft-len", "3"], tmp_path / "server.log") as url:
        code, _, err = cli(["measure", "--engine", "sglang", "--server", url, "--draft-len", "5",
                            *_common(prompts), "--out", str(tmp_path / "a")], capsys)
    assert code == 1
    assert "drafts k=3" in err


def test_measure_to_a_precision_against_a_server(tmp_path, prompts, capsys):
    out = tmp_path / "out"
    with serve_reference(["--flavor", "sglang", "--fake", "--draft-len", "3"], tmp_path / "server.log") as url:
        code, stdout, err = cli(["measure", "--engine", "sglang", "--server", url, "--draft-len", "3",
                                 *_common(prompts), "--out", str(out), "--ci-half-width", "0.00001",
                                 "--prompt-batch", "2"], capsys)
    assert code == 0, err
    assert "prompt set exhausted" in stdout
    assert "2 prompts: 95% half-width" in err
    rec = record(out)
    assert rec["dataset"]["count"] == 6
    assert rec["uncertainty"]["clusters"] == 6
    lines = [json.loads(x) for x in (out / "requests.jsonl").read_text().splitlines()]
    assert sorted(r["index"] for r in lines) == list(range(6))  # appended batch by batch, nothing twice
    assert json.loads((out / "precision.json").read_text())["batches"] == 3
