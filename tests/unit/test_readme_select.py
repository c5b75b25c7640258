"""The documentation's ``select``, ``verify``, ``check-run`` and TensorRT-LLM ``measure`` examples run (the README
and the guides, found by their ``readme-test`` marks): the launcher one-liner (with a stand-in srtctl that prints its
arguments), the other commands, and the Python call."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _docs import REPO
from _docs import code as _block


def _commands(block: str) -> list[str]:
    joined = block.replace("\\\n", " ")
    return [line.split("   #")[0].strip() for line in joined.splitlines() if line.strip() and not
            line.lstrip().startswith("#")]


@pytest.mark.slow
def test_the_readme_select_commands_run(tmp_path: Path) -> None:
    fake = tmp_path / "srtctl"
    fake.write_text("#!/usr/bin/env bash\nprintf '%s\\n' \"$@\"\n")
    fake.chmod(0o755)
    bindir = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if k not in ("MODEL_PREFIX", "THINKING_MODE", "EVAL_ONLY")}
    env["PATH"] = f"{tmp_path}:{bindir}:{env['PATH']}"
    commands = _commands(_block("select"))
    assert len(commands) == 4
    outputs = []
    for cmd in commands:
        done = subprocess.run(["bash", "-c", cmd], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (cmd, done.stderr)
        outputs.append(done.stdout)
    words = outputs[0].splitlines()
    assert words[:3] == ["apply", "--file", "tests/fixtures/select/sglang_roles_dflash.yaml"]
    assert words[3:5] == ["--set", 'roles.agg.env.SGLANG_SIMULATE_ACC_LEN="4.05"']
    # what the README shows as the result is what ran
    shown = " ".join(line.lstrip("# ").rstrip(" \\") for line in _block("select").splitlines()
                     if line.startswith("#"))
    assert " ".join(words[3:]) in shown.replace("srtctl apply --file ... ", "")
    assert '"al": 2.27' in outputs[1]
    assert "synthetic_acceptance_length" in outputs[2]
    assert outputs[3].startswith("--unset backend.decode_environment.SGLANG_SIMULATE_ACC_LEN")


def test_the_readme_python_call_prints_what_it_says(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(REPO)
    code = _block("select-python")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "docs/maintainers.md", "exec"), {})
    first = out.getvalue().splitlines()[0]
    expected = re.search(r"# (sglang 7 4\.05 musespark_dflash)", code)
    assert expected is not None
    assert first == expected.group(1)


@pytest.mark.slow
def test_the_readme_verify_commands_run_with_the_exits_they_promise(tmp_path: Path) -> None:
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}
    commands = _commands(_block("verify"))
    assert len(commands) == 3
    codes = []
    for cmd in commands:
        cmd = cmd.replace("--plot drift.png", f"--plot {tmp_path / 'drift.png'}")
        done = subprocess.run(["bash", "-c", cmd], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
        assert "Traceback" not in done.stderr, done.stderr
        codes.append(done.returncode)
    assert codes == [0, 3, 0]  # consistent; a sweep of another prompt set is not the golden's population; consistent
    assert (tmp_path / "drift.png").is_file()


def test_the_readme_trtllm_check_run_example_passes() -> None:
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}
    (cmd,) = _commands(_block("check-run-trtllm"))
    done = subprocess.run(["bash", "-c", cmd], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "verdict: PASS" in done.stdout


@pytest.mark.slow
def test_the_readme_trtllm_measure_example_runs_against_the_stand_in(tmp_path: Path) -> None:
    """The README's TensorRT-LLM measurement, run as written against ``serve-reference --flavor trtllm --fake``
    (only the port and the output folder differ)."""
    import json
    import signal

    (cmd,) = _commands(_block("measure-trtllm"))
    server = subprocess.Popen([sys.executable, "-m", "golden_al", "serve-reference", "--flavor", "trtllm", "--fake",
                               "--draft-len", "3", "--port", "0", "--log-file", str(tmp_path / "s.log")],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        line = server.stdout.readline() if server.stdout else ""
        url = re.search(r"on (http://\S+)", line)
        assert url is not None, line
        cmd = cmd.replace("http://127.0.0.1:8000", url.group(1)).replace("runs/trt-k3", str(tmp_path / "trt-k3"))
        bindir = Path(sys.executable).parent
        env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}
        done = subprocess.run(["bash", "-c", cmd], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    assert done.returncode == 0, done.stderr
    assert "trtllm thinking off k=3: AL" in done.stdout
    rec = json.loads((tmp_path / "trt-k3" / "measurement.json").read_text())
    assert rec["al_source"] == "trtllm-iteration-stats"
    assert rec["num_requests"] == 3
