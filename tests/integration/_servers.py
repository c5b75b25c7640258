"""Helpers for the server integration tests: prompt files, serve-reference subprocesses, the CLI."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from golden_al.cli.main import main

FAKE_ENGINES = Path(__file__).resolve().parent / "fake_engines"
REPO = Path(__file__).resolve().parents[2]


def write_prompts(path: Path, n: int) -> Path:
    """A chat-jsonl prompt file with ``n`` distinct single-turn prompts."""
    lines = [json.dumps({"id": f"p{i}", "messages": [{"role": "user", "content": f"Write function number {i}."}]})
             for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return path


def cli(args: Sequence[str], capsys) -> tuple[int, str, str]:
    """Run ``golden-al ARGS`` in process; returns (exit code, stdout, stderr)."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def shim_env(tmp_path: Path, *, faults: Sequence[str] = (), step_delay: float = 0.0) -> list[str]:
    """``--env`` options that make ``--launch`` start the test stand-ins of sglang/vllm."""
    env = [f"--env=PYTHONPATH={FAKE_ENGINES}{os.pathsep}{REPO}",
           f"--env=GOLDEN_AL_FAKE_PID_DIR={tmp_path / 'pids'}",
           f"--env=GOLDEN_AL_FAKE_STEP_DELAY={step_delay}"]
    if faults:
        tmp_path.mkdir(parents=True, exist_ok=True)
        fault_file = tmp_path / "faults.txt"
        fault_file.write_text("\n".join(faults) + "\n")
        env.append(f"--env=GOLDEN_AL_FAKE_FAULT_FILE={fault_file}")
    return env


def server_pids(tmp_path: Path) -> list[int]:
    d = tmp_path / "pids"
    return [int(p.stem) for p in d.glob("*.pid")] if d.exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return False


def wait_dead(pids: Sequence[int], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return not any(alive(p) for p in pids)


@contextmanager
def serve_reference(args: Sequence[str], log: Path) -> Iterator[str]:
    """``golden-al serve-reference ARGS --port 0`` in a subprocess; yields its URL; always stopped."""
    cmd = [sys.executable, "-m", "golden_al", "serve-reference", *args, "--port", "0", "--log-file", str(log)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        m = re.search(r"on (http://\S+)", line)
        if not m:
            err = proc.stderr.read() if proc.stderr else ""
            raise RuntimeError(f"serve-reference did not start: {line!r} {err[-2000:]}")
        yield m.group(1)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def record(path: Path) -> dict:
    return json.loads((path / "measurement.json").read_text())


def cell_counts(rec: dict) -> tuple:
    return (rec["num_requests"], rec["num_verify_steps"], rec["num_accepted_drafts"], tuple(rec["histogram"]),
            tuple(rec["per_position_accepted"]))
