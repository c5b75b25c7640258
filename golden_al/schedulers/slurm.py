"""Everything golden-al knows about Slurm: the commands it runs and how it reads their output.

Written against Slurm 22.05 (Debian bookworm's ``slurm-wlm`` 22.05.8) and the stable
parts of the command-line interface since then (SchedMD/slurm, ``doc/man/man1/``
``sbatch.1``, ``squeue.1``, ``scontrol.1``, ``scancel.1`` at slurm-22-05-8-1):

* submit: ``sbatch --parsable --array=LIST --job-name=NAME --output=PATTERN [ARGS] SCRIPT``;
  ``--parsable`` prints ``jobid`` or ``jobid;cluster``. ``%A`` and ``%a`` in
  ``--output`` are the array's job id and the task index.
* queued and running tasks: ``squeue --noheader --array --jobs=ID --format=%F|%K|%T|%N|%r``
  (``%F`` array job id, ``%K`` task index, or a range like ``[3-5%2]`` while the rest of a
  pending array is still one record, ``%T`` long state, ``%N`` nodes, ``%r`` reason).
  A job that has left the queue is simply absent; an unknown id exits 1 with
  ``slurm_load_jobs error: Invalid job id specified``.
* finished tasks, while the controller still holds them (``MinJobAge``, 300 s by
  default): ``scontrol --oneliner show job ID`` prints ``Key=Value`` pairs per task
  (``ArrayJobId``, ``ArrayTaskId``, ``JobState``, ``Reason``, ``ExitCode=rc:signal``,
  ``StdOut``). ``sacct`` is not used: accounting storage is often off.
* cancel: ``scancel ID`` (the whole array, tasks pending and running).

Library code: every function returns values or raises
:class:`~golden_al.errors.SchedulerError` (with the command and its stderr); none prints.
The commands run through ``runner`` (default :func:`subprocess.run`), bounded in time.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from golden_al.errors import SchedulerError, UsageError

__all__ = [
    "ACTIVE_STATES",
    "RESERVED_SBATCH_OPTIONS",
    "TaskState",
    "array_spec",
    "cancel",
    "check_sbatch_args",
    "finished_tasks",
    "job_script",
    "parse_array_indices",
    "parse_sbatch_output",
    "parse_scontrol_jobs",
    "parse_squeue",
    "queued_tasks",
    "sbatch_command",
    "submit",
    "task_states",
]

#: Long job states (squeue ``%T``) of a task that has not finished yet.
ACTIVE_STATES = frozenset({
    "PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
    "RESIZING", "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD", "STOPPED",
})
#: sbatch options golden-al sets itself (the array, the log path, machine-readable output).
RESERVED_SBATCH_OPTIONS = ("--array", "-a", "--output", "-o", "--error", "-e", "--parsable", "--wrap",
                           "--job-name", "-J")
_TIMEOUT_S = 60.0
_SQUEUE_FORMAT = "%F|%K|%T|%N|%r"
Runner = Callable[..., "subprocess.CompletedProcess[str]"]


@dataclass(frozen=True)
class TaskState:
    """One array task as Slurm reports it."""

    array_job_id: int
    task: int
    state: str
    nodes: str = ""
    reason: str = ""
    exit_code: int | None = None
    signal: int | None = None
    stdout: str | None = None

    @property
    def active(self) -> bool:
        """Pending, running or finishing (not yet a final state)."""
        return self.state in ACTIVE_STATES


# ---------------------------------------------------------------------------- running the commands
def _run(argv: Sequence[str], runner: Runner | None, *, timeout_s: float = _TIMEOUT_S,
         ok_codes: Iterable[int] = (0,)) -> subprocess.CompletedProcess[str]:
    if runner is None:
        if shutil.which(argv[0]) is None:
            raise SchedulerError(f"{argv[0]} is not on PATH",
                                 hint="run this on a Slurm login node, or use --scheduler local")
        runner = subprocess.run
    try:
        proc = runner(list(argv), capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise SchedulerError(f"{argv[0]} did not answer within {timeout_s:.0f} s: {' '.join(argv)}",
                             hint="is slurmctld up? try 'sinfo'") from None
    except OSError as exc:
        raise SchedulerError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    if proc.returncode not in tuple(ok_codes):
        err = (proc.stderr or proc.stdout or "").strip().splitlines()
        raise SchedulerError(f"{' '.join(argv)} exited {proc.returncode}: {err[-1] if err else 'no output'}")
    return proc


# ---------------------------------------------------------------------------- arrays
def array_spec(indices: Iterable[int], max_running: int | None = None) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``"0-2,5,7-8"`` (sbatch ``--array``), with ``%N`` to throttle."""
    values = sorted(set(int(i) for i in indices))
    if not values:
        raise UsageError("an array needs at least one task")
    if values[0] < 0:
        raise UsageError(f"array task indices must be >= 0, got {values[0]}")
    parts: list[str] = []
    start = prev = values[0]
    for v in values[1:]:
        if v == prev + 1:
            prev = v
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = v
    parts.append(str(start) if start == prev else f"{start}-{prev}")
    spec = ",".join(parts)
    if max_running is not None:
        if max_running < 1:
            raise UsageError(f"the number of tasks running at once must be >= 1, got {max_running}")
        spec += f"%{max_running}"
    return spec


def parse_array_indices(text: str) -> list[int]:
    """squeue ``%K``/scontrol ``ArrayTaskId`` -> indices: ``"3"``, ``"[0-3,7%2]"``, ``"0-3"``."""
    body = text.strip().strip("[]").split("%", 1)[0]
    out: list[int] = []
    for part in body.split(","):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:-(\d+))?(?::(\d+))?", part)
        if not m:
            raise SchedulerError(f"cannot read the array task list {text!r}")
        lo, hi, step = int(m.group(1)), int(m.group(2) or m.group(1)), int(m.group(3) or 1)
        out.extend(range(lo, hi + 1, step))
    return out


def check_sbatch_args(args: Sequence[str]) -> None:
    """Refuse ``--slurm-arg`` values that would contradict what golden-al sets itself."""
    for arg in args:
        if not arg.startswith("-"):
            raise UsageError(f"--slurm-arg {arg!r} is not an sbatch option",
                             hint="write it with its dashes and value, e.g. --slurm-arg=--partition=gpu")
        name = arg.split("=", 1)[0]
        if name in RESERVED_SBATCH_OPTIONS or (len(name) > 2 and name[:2] in ("-a", "-o", "-e", "-J")
                                              and not name.startswith("--")):
            raise UsageError(f"--slurm-arg {arg!r} sets {name}, which the sweep sets itself",
                             hint="the array, job name and log path are golden-al's; "
                             "use --slurm-max-running to throttle the array")


# ---------------------------------------------------------------------------- the batch script
def job_script(commands: Mapping[int, Sequence[str]], *, workdir: str | Path, exit_dir: str | Path,
               header: Sequence[str] = ()) -> str:
    """A bash batch script whose array task ``i`` runs ``commands[i]`` in ``workdir``.

    Each task writes ``exit_dir/<array job id>_<task>.json`` with its exit status when
    the command ends (written to a temporary name, then renamed): the record of a task
    that ``sacct`` may not have. A task killed outright (``scancel``, time limit, node
    failure) writes none; its state then comes from ``scontrol``.
    """
    lines = ["#!/bin/bash", *(f"# {h}" for h in header), "set -u",
             f"cd {shlex.quote(str(workdir))} || exit 2",
             'case "${SLURM_ARRAY_TASK_ID:?this script runs as a Slurm array task (sbatch --array)}" in']
    for index in sorted(commands):
        lines.append(f"  {int(index)}) cmd=({shlex.join(list(commands[index]))}) ;;")
    lines += [
        '  *) echo "golden-al: no cell for array task $SLURM_ARRAY_TASK_ID" >&2; exit 2 ;;',
        "esac",
        'tag="${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"',
        'echo "golden-al: array task $tag (job ${SLURM_JOB_ID}) on $(hostname) at $(date -u +%Y-%m-%dT%H:%M:%SZ)"',
        'printf "golden-al: running:"; printf " %q" "${cmd[@]}"; echo',
        '"${cmd[@]}"',
        "rc=$?",
        f"exit_dir={shlex.quote(str(exit_dir))}",
        'mkdir -p "$exit_dir"',
        'printf \'{"array_job_id": %s, "task": %s, "job_id": %s, "exit_code": %d, "host": "%s", "ended": "%s"}\\n\' \\',
        '  "$SLURM_ARRAY_JOB_ID" "$SLURM_ARRAY_TASK_ID" "$SLURM_JOB_ID" "$rc" "$(hostname)" \\',
        '  "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$exit_dir/.$tag.json.tmp" && mv -f "$exit_dir/.$tag.json.tmp" "$exit_dir/$tag.json"',
        'echo "golden-al: array task $tag exited $rc"',
        'exit "$rc"',
    ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- sbatch
def sbatch_command(script: str | Path, indices: Iterable[int], *, job_name: str, output: str | Path,
                   extra_args: Sequence[str] = (), max_running: int | None = None) -> list[str]:
    """The ``sbatch`` command line that submits ``script`` as an array over ``indices``."""
    check_sbatch_args(extra_args)
    return ["sbatch", "--parsable", f"--array={array_spec(indices, max_running)}", f"--job-name={job_name}",
            f"--output={output}", *extra_args, str(script)]


def parse_sbatch_output(text: str) -> int:
    """``sbatch --parsable`` output (``"123"`` or ``"123;cluster"``) -> the job id."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    m = re.fullmatch(r"(\d+)(?:;\S+)?", last)
    if not m:
        raise SchedulerError(f"sbatch printed no job id: {text.strip()[-300:]!r}",
                             hint="expected '--parsable' output such as '1234' or '1234;cluster'")
    return int(m.group(1))


def submit(argv: Sequence[str], *, runner: Runner | None = None) -> int:
    """Run an :func:`sbatch_command` line; returns the array's job id."""
    return parse_sbatch_output(_run(argv, runner).stdout)


# ---------------------------------------------------------------------------- squeue
def parse_squeue(text: str) -> list[TaskState]:
    """Lines of ``squeue --format=%F|%K|%T|%N|%r`` -> one :class:`TaskState` per task."""
    out: list[TaskState] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("|")
        if len(fields) != 5 or not fields[0].strip().isdigit():
            raise SchedulerError(f"squeue line {n} is not {_SQUEUE_FORMAT!r}: {line!r}")
        job, tasks, state, nodes, reason = (f.strip() for f in fields)
        if tasks in ("", "N/A"):
            continue  # not an array job
        for t in parse_array_indices(tasks):
            out.append(TaskState(int(job), t, state.split()[0].upper(), nodes, reason))
    return out


def queued_tasks(job_id: int, *, runner: Runner | None = None) -> dict[int, TaskState]:
    """The array's tasks still in the queue (pending, running, finishing), by task index."""
    proc = _run(["squeue", "--noheader", "--array", f"--jobs={job_id}", f"--format={_SQUEUE_FORMAT}"], runner,
                ok_codes=(0, 1))
    if proc.returncode == 1:
        if "invalid job id" in (proc.stderr or "").lower():
            return {}  # the whole array has left the queue
        raise SchedulerError(f"squeue --jobs={job_id} exited 1: {(proc.stderr or '').strip()[-300:]}")
    return {t.task: t for t in parse_squeue(proc.stdout) if t.array_job_id == job_id}


# ---------------------------------------------------------------------------- scontrol
def parse_scontrol_jobs(text: str) -> list[TaskState]:
    """``scontrol --oneliner show job`` output -> one :class:`TaskState` per array task record."""
    out: list[TaskState] = []
    for line in text.splitlines():
        if "JobId=" not in line:
            continue
        fields: dict[str, str] = {}
        for m in re.finditer(r"(\w+)=(\S*)", line):
            fields.setdefault(m.group(1), m.group(2))
        if "ArrayJobId" not in fields or "ArrayTaskId" not in fields:
            continue
        code = sig = None
        ec = re.fullmatch(r"(\d+):(\d+)", fields.get("ExitCode", ""))
        if ec:
            code, sig = int(ec.group(1)), int(ec.group(2))
        for t in parse_array_indices(fields["ArrayTaskId"]):
            out.append(TaskState(int(fields["ArrayJobId"]), t, fields.get("JobState", "UNKNOWN").upper(),
                                 fields.get("NodeList", ""), fields.get("Reason", ""), code, sig,
                                 fields.get("StdOut")))
    return out


def finished_tasks(job_id: int, *, runner: Runner | None = None) -> dict[int, TaskState]:
    """Every task of the array the controller still remembers (finished ones included), by index.

    Empty when the controller has forgotten the array (older than ``MinJobAge``).
    """
    proc = _run(["scontrol", "--oneliner", "show", "job", str(job_id)], runner, ok_codes=(0, 1))
    if proc.returncode == 1:
        if "invalid job id" in (proc.stderr or "").lower():
            return {}
        raise SchedulerError(f"scontrol show job {job_id} exited 1: {(proc.stderr or '').strip()[-300:]}")
    return {t.task: t for t in parse_scontrol_jobs(proc.stdout) if t.array_job_id == job_id}


# ---------------------------------------------------------------------------- scancel
def cancel(job_ids: Iterable[int], *, runner: Runner | None = None) -> list[int]:
    """``scancel`` every array in ``job_ids`` (pending and running tasks); returns the ids cancelled."""
    ids = sorted(set(int(j) for j in job_ids))
    if ids:
        _run(["scancel", *map(str, ids)], runner)
    return ids


def task_states(job_id: int, *, runner: Runner | None = None) -> Mapping[int, TaskState]:
    """The array's tasks: what the queue holds, else what the controller remembers."""
    done = finished_tasks(job_id, runner=runner)
    queued = queued_tasks(job_id, runner=runner)
    return {**done, **queued}
