"""A stand-in for sbatch, squeue, scontrol and scancel (Slurm 22.05 output formats), for unit tests.

``fake_slurm.py NAME ARGS...``; the wrappers the ``fake_slurm`` fixture puts on PATH
call it. State lives in the JSON file ``$FAKE_SLURM_STATE``::

    {"next_id": 100, "jobs": {"100": {"argv": [...], "tasks": {"0": {"state": "PENDING", "exit_code": 0}}}},
     "calls": [[name, args...], ...]}

Tests move tasks along by editing that file (see ``FakeSlurm`` in test_sweep_slurm.py).
``$FAKE_SLURM_SBATCH_ERROR`` makes sbatch fail with that message.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ACTIVE = {"PENDING", "RUNNING", "COMPLETING", "CONFIGURING"}


def _indices(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split("%", 1)[0].split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def main(argv: list[str]) -> int:
    name, args = argv[0], argv[1:]
    path = Path(os.environ["FAKE_SLURM_STATE"])
    state = json.loads(path.read_text()) if path.exists() else {"next_id": 100, "jobs": {}, "calls": []}
    state["calls"].append([name, *args])
    rc = 0
    if name == "sbatch":
        error = os.environ.get("FAKE_SLURM_SBATCH_ERROR")
        if error:
            sys.stderr.write(f"sbatch: error: {error}\n")
            rc = 1
        else:
            array = next(a.split("=", 1)[1] for a in args if a.startswith("--array="))
            job = state["next_id"]
            state["next_id"] += 100
            state["jobs"][str(job)] = {"argv": args, "tasks": {str(i): {"state": "PENDING", "exit_code": 0}
                                                               for i in _indices(array)}}
            sys.stdout.write(f"{job};local\n")
    elif name in ("squeue", "scontrol"):
        job = (next(a.split("=", 1)[1] for a in args if a.startswith("--jobs=")) if name == "squeue" else args[-1])
        if job not in state["jobs"]:
            sys.stderr.write("slurm_load_jobs error: Invalid job id specified\n")
            rc = 1
        else:
            for i, t in state["jobs"][job]["tasks"].items():
                if name == "squeue" and t["state"] in ACTIVE:
                    node = "node1" if t["state"] == "RUNNING" else ""
                    reason = "None" if t["state"] == "RUNNING" else "Priority"
                    sys.stdout.write(f"{job}|{i}|{t['state']}|{node}|{reason}\n")
                elif name == "scontrol":
                    sys.stdout.write(f"JobId={int(job) + int(i) + 1} ArrayJobId={job} ArrayTaskId={i} "
                                     f"JobName=golden-al-x JobState={t['state']} Reason=None "
                                     f"ExitCode={t['exit_code']}:0 StdOut=/dev/null\n")
    elif name == "scancel":
        for job in args:
            for t in state["jobs"].get(job, {}).get("tasks", {}).values():
                if t["state"] in ACTIVE:
                    t["state"] = "CANCELLED"
    path.write_text(json.dumps(state))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
