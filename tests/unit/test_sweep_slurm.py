"""``sweep --scheduler slurm``, ``sweep --status`` and the Slurm module, against fake Slurm commands on PATH.

The fakes (tests/unit/fake_slurm/fake_slurm.py) print what Slurm 22.05 prints; the
real thing is exercised by tests/integration/test_slurm_sweep.py (``--run-slurm``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import pytest

from golden_al.cli.main import main
from golden_al.errors import SchedulerError, UsageError
from golden_al.schedulers import array_sweep, slurm

FAKE = Path(__file__).resolve().parent / "fake_slurm" / "fake_slurm.py"


class FakeSlurm:
    """The fake's state file, and helpers to move tasks along."""

    def __init__(self, root: Path) -> None:
        self.path = root / "slurm-state.json"

    def state(self) -> dict:
        return json.loads(self.path.read_text()) if self.path.exists() else {"jobs": {}, "calls": []}

    def calls(self, name: str) -> list[list[str]]:
        return [c[1:] for c in self.state()["calls"] if c[0] == name]

    def set(self, job: int, task: int, state: str, exit_code: int = 0) -> None:
        data = self.state()
        data["jobs"][str(job)]["tasks"][str(task)] = {"state": state, "exit_code": exit_code}
        self.path.write_text(json.dumps(data))


@pytest.fixture
def fake_slurm(tmp_path, monkeypatch) -> FakeSlurm:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("sbatch", "squeue", "scontrol", "scancel"):
        tool = bin_dir / name
        tool.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE} {name} "$@"\n')
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    fake = FakeSlurm(tmp_path)
    monkeypatch.setenv("FAKE_SLURM_STATE", str(fake.path))
    return fake


@pytest.fixture
def sweep_args(tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "messages": [{"role": "user", "content": f"task {i}"}]})
                               + "\n" for i in range(3)))
    out = tmp_path / "out"

    def args(*extra: str) -> list[str]:
        return ["sweep", "--scheduler", "slurm", "--engine", "sglang", "--launch", "--serve-reference",
                "--target", str(tmp_path / "target"), "--draft", str(tmp_path / "draft"), "--algorithm", "standalone",
                "--draft-lens", "1-2", "--thinking", "off", "--prompts", f"chat-jsonl:{prompts}",
                "--num-prompts", "2", "--max-tokens", "16", "--engine-arg=--decode-log-interval=5",
                "--slurm-arg=--partition=gpu", "--slurm-arg=--time=10", "--out", str(out), "--poll", "0.01", *extra]

    args.out = out  # type: ignore[attr-defined]
    return args


def _finish(cell_dir: Path, al: float = 2.5) -> None:
    cell_dir.mkdir(parents=True, exist_ok=True)
    (cell_dir / "cell.json").write_text(json.dumps({"fingerprint": {"num_prompts": 2}}))
    (cell_dir / "requests.jsonl").write_text("{}\n{}\n")
    (cell_dir / "measurement.json").write_text(json.dumps({"al": al, "al_ci95": [al - 0.1, al + 0.1]}))


def _exit(out: Path, job: int, task: int, rc: int) -> None:
    d = out / "slurm" / "exit"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{job}_{task}.json").write_text(json.dumps({"array_job_id": job, "task": task, "exit_code": rc}))


# ---------------------------------------------------------------------------- parsing
def test_array_spec_and_indices():
    assert slurm.array_spec([5, 0, 1, 2, 7, 8]) == "0-2,5,7-8"
    assert slurm.array_spec([3], max_running=2) == "3%2"
    assert slurm.parse_array_indices("[0-3,7%2]") == [0, 1, 2, 3, 7]
    assert slurm.parse_array_indices("4") == [4]
    assert slurm.parse_array_indices("0-6:3") == [0, 3, 6]
    with pytest.raises(UsageError):
        slurm.array_spec([])
    with pytest.raises(SchedulerError):
        slurm.parse_array_indices("x-y")


def test_sbatch_output():
    assert slurm.parse_sbatch_output("1234\n") == 1234
    assert slurm.parse_sbatch_output("sbatch: warning: x\n1234;cluster\n") == 1234
    with pytest.raises(SchedulerError, match="no job id"):
        slurm.parse_sbatch_output("Submitted batch job 12\n")  # not --parsable output


def test_squeue_lines_pending_range_and_running():
    tasks = slurm.parse_squeue("41|[2-4%2]|PENDING||JobArrayTaskLimit\n41|0|RUNNING|node7|None\n41|1|COMPLETING|node7|None\n")
    by = {t.task: t for t in tasks}
    assert sorted(by) == [0, 1, 2, 3, 4]
    assert by[3].state == "PENDING"
    assert by[3].reason == "JobArrayTaskLimit"
    assert by[3].active
    assert by[0].nodes == "node7"
    assert by[1].active
    with pytest.raises(SchedulerError, match="line 1"):
        slurm.parse_squeue("garbage\n")


def test_scontrol_records():
    text = ("JobId=43 ArrayJobId=41 ArrayTaskId=1 JobName=g JobState=FAILED Reason=NonZeroExitCode "
            "ExitCode=2:0 StdOut=/o/41_1.out\n"
            "JobId=41 ArrayJobId=41 ArrayTaskId=3-5 JobState=PENDING Reason=Priority ExitCode=0:0\n")
    tasks = {t.task: t for t in slurm.parse_scontrol_jobs(text)}
    assert tasks[1].state == "FAILED"
    assert tasks[1].exit_code == 2
    assert not tasks[1].active
    assert tasks[1].stdout == "/o/41_1.out"
    assert sorted(tasks) == [1, 3, 4, 5]


def test_reserved_sbatch_options():
    for bad in ("--array=0-3", "--output=x", "-o", "-ox.out", "--job-name=x", "--parsable"):
        with pytest.raises(UsageError, match="sets"):
            slurm.check_sbatch_args([bad])
    with pytest.raises(UsageError, match="not an sbatch option"):
        slurm.check_sbatch_args(["gpu"])
    slurm.check_sbatch_args(["--partition=gpu", "--gres=gpu:8", "-t10", "--time=10"])


def test_missing_sbatch_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SchedulerError, match="sbatch is not on PATH") as err:
        slurm.submit(["sbatch", "--parsable", "x.sh"])
    assert "--scheduler local" in str(err.value)


def test_sbatch_error_carries_its_message(fake_slurm, monkeypatch):
    monkeypatch.setenv("FAKE_SLURM_SBATCH_ERROR", "invalid partition specified: gpu")
    with pytest.raises(SchedulerError, match="invalid partition specified: gpu"):
        slurm.submit(slurm.sbatch_command("x.sh", [0, 1], job_name="j", output="o/%A_%a.out"))


def test_job_script_runs_the_task_and_records_its_exit(tmp_path):
    import subprocess

    script = tmp_path / "job.sh"
    script.write_text(slurm.job_script({0: ["sh", "-c", "echo zero"], 1: ["sh", "-c", "echo one 'quoted arg'; exit 3"]},
                                       workdir=tmp_path, exit_dir=tmp_path / "exit"))
    env = {**os.environ, "SLURM_ARRAY_JOB_ID": "7", "SLURM_ARRAY_TASK_ID": "1", "SLURM_JOB_ID": "9"}
    proc = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 3
    assert "one quoted arg" in proc.stdout
    assert json.loads((tmp_path / "exit" / "7_1.json").read_text())["exit_code"] == 3
    proc = subprocess.run(["bash", str(script)], env={**env, "SLURM_ARRAY_TASK_ID": "5"}, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 2
    assert "no cell for array task 5" in proc.stderr


# ---------------------------------------------------------------------------- the sweep CLI
def test_submit_writes_plan_script_and_one_array(fake_slurm, sweep_args, capsys):
    code = main(sweep_args("--detach"))
    err = capsys.readouterr().err
    assert code == 0, err
    (sbatch,) = fake_slurm.calls("sbatch")
    assert "--array=0-1" in sbatch
    assert "--partition=gpu" in sbatch
    assert "--time=10" in sbatch
    out = sweep_args.out.resolve()
    assert f"--output={out}/slurm/logs/%A_%a.out" in sbatch
    plan = array_sweep.load_plan(out)
    assert [(c.thinking, c.draft_len) for c in plan.cells] == [("off", 1), ("off", 2)]
    assert plan.submissions[0].job_id == 100
    script = (out / "slurm" / "sweep.sbatch").read_text()
    assert "--draft-len=2" in script
    assert "--serve-reference" in script

    # every cell's command is a valid `golden-al measure` command line with the cell's settings
    from golden_al.cli import measure

    parser = argparse.ArgumentParser()
    measure.add_arguments(parser)
    for cell in plan.cells:
        assert cell.command[:4] == [sys.executable, "-m", "golden_al", "measure"]
        ns = parser.parse_args(cell.command[4:])
        assert (ns.engine, ns.draft_len, ns.thinking, ns.out, ns.resume) == (
            "sglang", cell.draft_len, "off", str(out / "thinking_off" / f"k{cell.draft_len}"), True)
        assert ns.serve_reference
        assert ns.launch
        assert ns.num_prompts == 2
        assert ns.max_tokens == 16
        assert ns.engine_arg == ["--decode-log-interval=5"]


def test_status_resume_and_failure_report(fake_slurm, sweep_args, capsys):
    assert main(sweep_args("--draft-lens", "1-4", "--detach")) == 0
    out = sweep_args.out.resolve()
    _finish(out / "thinking_off" / "k1")
    fake_slurm.set(100, 0, "COMPLETED")
    _exit(out, 100, 1, 2)
    fake_slurm.set(100, 1, "FAILED", 2)
    log = out / "slurm" / "logs" / "100_1.out"
    log.write_text("golden-al: error: the server died\n")
    fake_slurm.set(100, 2, "RUNNING")
    fake_slurm.set(100, 3, "CANCELLED")
    capsys.readouterr()

    code = main(["sweep", "--status", str(out)])
    cap = capsys.readouterr()
    assert code == 1
    for cell, state in (("k1", "done"), ("k2", "failed"), ("k3", "running"), ("k4", "cancelled")):
        assert any(cell in line and state in line for line in cap.out.splitlines()), cap.out
    assert "2.500" in cap.out
    assert f"thinking_off/k2 (array task 100_1) failed: exited 2; Slurm log {log}" in cap.err
    assert "the server died" in cap.err

    # resume resubmits exactly the failed and the cancelled cell, not the done or the running one
    assert main(sweep_args("--draft-lens", "1-4", "--resume", "--detach")) == 0
    sbatch = fake_slurm.calls("sbatch")
    assert len(sbatch) == 2
    assert "--array=1,3" in sbatch[1]
    plan = array_sweep.load_plan(out)
    assert [s.indices for s in plan.submissions] == [[0, 1, 2, 3], [1, 3]]
    statuses = {s.cell.draft_len: s for s in array_sweep.cell_statuses(plan)}
    assert statuses[2].job == "200_1"
    assert statuses[2].state == "pending"
    assert statuses[3].job == "100_2"
    assert statuses[3].state == "running"


def test_resume_refuses_changed_settings_and_fresh_sweep_refuses_existing(fake_slurm, sweep_args, capsys):
    assert main(sweep_args("--detach")) == 0
    assert main(sweep_args("--detach")) == 2
    assert "already holds a Slurm sweep" in capsys.readouterr().err
    assert main(sweep_args("--detach", "--resume", "--max-tokens", "32")) == 2
    assert "the sweep settings changed" in capsys.readouterr().err
    assert len(fake_slurm.calls("sbatch")) == 1


def test_follow_until_done_exit_codes(fake_slurm, sweep_args, capsys, monkeypatch):
    """The live table polls until every cell is terminal; a failed cell makes the sweep exit 1."""
    out = sweep_args.out.resolve()
    ticks = iter(range(100))

    def sleep(_s: float) -> None:
        if sys._getframe(1).f_globals["__name__"] != "golden_al.cli._sweep_array":
            return  # someone else's sleep
        n = next(ticks)
        if n == 0:
            fake_slurm.set(100, 0, "RUNNING")
        elif n == 1:
            _finish(out / "thinking_off" / "k1")
            fake_slurm.set(100, 0, "COMPLETED")
            _exit(out, 100, 1, 1)
            fake_slurm.set(100, 1, "FAILED", 1)

    monkeypatch.setattr("time.sleep", sleep)
    code = main(sweep_args())
    cap = capsys.readouterr()
    assert code == 1
    assert "thinking_off/k1: pending 100_0 Priority" in cap.err
    assert "thinking_off/k1: running 100_0 node1" in cap.err
    assert "thinking_off/k2: failed 100_1 exited 1" in cap.err
    assert "1/2 cells done" in cap.out


def test_ctrl_c_cancels_the_array(fake_slurm, sweep_args, capsys, monkeypatch):
    def sleep(_s: float) -> None:
        if sys._getframe(1).f_globals["__name__"] == "golden_al.cli._sweep_array":
            raise KeyboardInterrupt

    monkeypatch.setattr("time.sleep", sleep)
    code = main(sweep_args())
    err = capsys.readouterr().err
    assert code == 130
    assert fake_slurm.calls("scancel") == [["100"]]
    assert "cancelled array job(s) 100" in err
    plan = array_sweep.load_plan(sweep_args.out)
    assert {s.state for s in array_sweep.cell_statuses(plan)} == {"cancelled"}


@pytest.mark.slow
def test_sigint_cancels_even_when_the_shell_started_the_sweep_with_sigint_ignored(fake_slurm, sweep_args):
    """A non-interactive shell starts background jobs with SIGINT ignored (and Python then raises no
    KeyboardInterrupt): 'kill -INT' must still cancel the array, not leave the sweep running."""
    import signal
    import subprocess

    def ignore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    proc = subprocess.Popen([sys.executable, "-m", "golden_al", *sweep_args("--poll", "0.2")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=ignore_sigint)
    try:
        for line in proc.stderr:  # type: ignore[union-attr]
            if "pending" in line:  # following the array
                break
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "cancelled array job(s) 100" in err
    assert fake_slurm.calls("scancel") == [["100"]]


def test_slurm_needs_launch_and_refuses_one_run(fake_slurm, sweep_args, capsys):
    args = sweep_args("--detach")
    assert main([a for a in args if a not in ("--launch", "--serve-reference")] + ["--server", "http://x:1"]) == 2
    assert "needs --launch" in capsys.readouterr().err
    assert main(sweep_args("--detach", "--one-run")) == 2
    assert main(sweep_args("--detach", "--slurm-arg=--array=1")) == 2
    assert fake_slurm.calls("sbatch") == []


def test_print_command_submits_nothing(fake_slurm, sweep_args, capsys):
    assert main(sweep_args("--print-command")) == 0
    out = capsys.readouterr().out
    assert "# array task 1: thinking_off/k2" in out
    assert "--draft-len=2" in out
    assert fake_slurm.calls("sbatch") == []
    assert not sweep_args.out.exists()


def test_status_of_a_local_sweep(tmp_path, capsys):
    out = tmp_path / "local"
    out.mkdir()
    (out / "sweep.json").write_text(json.dumps({"fingerprint": {"thinking": ["on", "off"], "draft_lens": [3]}}))
    _finish(out / "thinking_on" / "k3", al=3.25)
    (out / "thinking_off" / "k3").mkdir(parents=True)
    (out / "thinking_off" / "k3" / "requests.jsonl").write_text("{}\n")
    code = main(["sweep", "--status", str(out)])
    cap = capsys.readouterr()
    assert code == 1
    assert "3.250" in cap.out
    assert "partial" in cap.out
    assert main(["sweep", "--status", str(tmp_path / "nothing")]) == 2
