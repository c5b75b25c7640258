"""``sweep --scheduler slurm`` against a real Slurm cluster (opt-in: ``--run-slurm``).

CI runs it inside ``.ci/slurm_setup.sh`` (Debian's slurm-wlm 22.05 and munge, one node):

    bash .ci/slurm_setup.sh .venv/bin/python -m pytest --run-slurm -m slurm tests/integration/test_slurm_sweep.py

Every cell is a real array task running ``golden-al measure --launch --serve-reference``:
the reference engine on tiny models built from a config, served over HTTP like SGLang.
One cell is made to fail (a corrupt ``requests.jsonl`` its ``--resume`` refuses), is
reported with its Slurm log, and a ``--resume`` resubmits that cell alone.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _servers import write_prompts

pytestmark = [pytest.mark.slurm, pytest.mark.torch]

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def slurm_up():
    if shutil.which("sbatch") is None:
        pytest.fail("--run-slurm needs a Slurm cluster: sbatch is not on PATH (run it inside .ci/slurm_setup.sh)")
    proc = subprocess.run(["sinfo", "--noheader", "--format=%T"], capture_output=True, text=True, check=False)
    if proc.returncode != 0 or ("idle" not in proc.stdout and "mix" not in proc.stdout):
        pytest.fail(f"no idle Slurm node: sinfo said {proc.stdout.strip() or proc.stderr.strip()!r}")


def _golden_al(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "golden_al", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, check=False)


def _sweep_args(tmp_path: Path, target: Path, draft: Path, out: Path) -> list[str]:
    prompts = write_prompts(tmp_path / "prompts.jsonl", 2)
    kwargs = json.dumps({"on": {"enable_thinking": True}, "off": {"enable_thinking": False}})
    return ["sweep", "--scheduler", "slurm", "--engine", "sglang", "--launch", "--serve-reference",
            "--target", str(target), "--draft", str(draft), "--algorithm", "standalone",
            "--draft-lens", "1,2", "--thinking", "off,on", "--chat-template-kwargs", kwargs,
            "--prompts", f"chat-jsonl:{prompts}", "--max-tokens", "8", "--ready-timeout", "300",
            "--slurm-arg=--time=10", "--poll", "1", "--out", str(out)]


def test_sweep_on_slurm_with_a_failing_cell_and_a_resume(tmp_path):
    from golden_al.reference.tiny import save_tiny_pair

    target, draft = save_tiny_pair(tmp_path / "tiny", seed=3, noise=0.3)
    out = tmp_path / "out"
    args = _sweep_args(tmp_path, target, draft, out)
    broken = out / "thinking_on" / "k2"
    broken.mkdir(parents=True)
    (broken / "requests.jsonl").write_text("this is not a request result\n")

    first = _golden_al(*args, cwd=tmp_path)
    assert first.returncode == 1, first.stderr[-3000:]
    plan = json.loads((out / "slurm" / "plan.json").read_text())
    (sub,) = plan["submissions"]
    assert sub["indices"] == [0, 1, 2, 3]
    job = sub["job_id"]
    log = out / "slurm" / "logs" / f"{job}_3.out"
    assert f"cell thinking_on/k2 (array task {job}_3) failed: exited 2; Slurm log {log}" in first.stderr
    assert "requests.jsonl" in log.read_text()  # the job's own error, in its Slurm log
    done = {}
    for mode, k in (("off", 1), ("off", 2), ("on", 1)):
        rec = json.loads((out / f"thinking_{mode}" / f"k{k}" / "measurement.json").read_text())
        assert (rec["draft_len"], rec["thinking"], rec["num_requests"]) == (k, mode, 2)
        assert rec["num_verify_steps"] > 0
        assert rec["al"] >= 1.0
        assert rec["server"]["launched"]
        assert "serve-reference" in rec["server"]["command"]
        done[(mode, k)] = (out / f"thinking_{mode}" / f"k{k}" / "measurement.json").stat().st_mtime_ns
    assert json.loads((out / "slurm" / "exit" / f"{job}_0.json").read_text())["exit_code"] == 0

    status = _golden_al("sweep", "--status", str(out), cwd=tmp_path)
    assert status.returncode == 1
    assert "failed" in status.stdout
    assert "3/4 cells done" in status.stdout

    # the fix, then a resume: one new array holding only the failed cell
    (broken / "requests.jsonl").unlink()
    second = _golden_al(*args, "--resume", cwd=tmp_path)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "3 cell(s) done, 0 still queued, 1 to resubmit" in second.stderr
    plan = json.loads((out / "slurm" / "plan.json").read_text())
    assert [s["indices"] for s in plan["submissions"]] == [[0, 1, 2, 3], [3]]
    rec = json.loads((broken / "measurement.json").read_text())
    assert (rec["draft_len"], rec["thinking"], rec["num_requests"]) == (2, "on", 2)
    for (mode, k), mtime in done.items():
        assert (out / f"thinking_{mode}" / f"k{k}" / "measurement.json").stat().st_mtime_ns == mtime

    status = _golden_al("sweep", "--status", str(out), cwd=tmp_path)
    assert status.returncode == 0, status.stdout
    assert "4/4 cells done" in status.stdout


def test_ctrl_c_cancels_the_array(tmp_path):
    """SIGINT to a following sweep scancels its array; the cells read as cancelled, resubmittable."""
    out = tmp_path / "out"
    (tmp_path / "t").mkdir()
    args = [*_sweep_args(tmp_path, tmp_path / "t", tmp_path / "t", out), "--slurm-arg=--begin=now+3600"]
    proc = subprocess.Popen([sys.executable, "-m", "golden_al", *args], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        plan_file = out / "slurm" / "plan.json"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if plan_file.exists() and json.loads(plan_file.read_text())["submissions"]:
                break
            time.sleep(0.5)
        job = json.loads(plan_file.read_text())["submissions"][0]["job_id"]
        time.sleep(2)  # let it print the first table rows
        os.kill(proc.pid, signal.SIGINT)
        # generous: right after the previous test's jobs the one-node controller can take tens of
        # seconds to answer squeue/scancel (seen once: over 60 s on a fresh clone; 6 s alone)
        _, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err[-2000:]
    assert f"cancelled array job(s) {job}" in err
    queue = subprocess.run(["squeue", "--noheader", f"--jobs={job}"], capture_output=True, text=True, check=False)
    assert queue.stdout.strip() == ""
    status = _golden_al("sweep", "--status", str(out), cwd=tmp_path)
    assert status.returncode == 1
    assert status.stdout.count("cancelled") >= 4
