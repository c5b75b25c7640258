"""A sweep as one Slurm job array: one task per (thinking mode, draft length) cell.

Each task runs the cell's own ``golden-al measure --launch ... --out CELL --resume``
command on its allocation and writes into the shared ``OUT`` (a file system every
node sees). The state lives in files, so ``sweep --status`` and ``--resume`` work from
any later shell::

    OUT/slurm/plan.json                the cells (index, mode, k, directory, command) and every submission
    OUT/slurm/sweep.sbatch             the batch script (task i runs cell i's command)
    OUT/slurm/logs/<job>_<task>.out    each task's Slurm log (stdout and stderr)
    OUT/slurm/exit/<job>_<task>.json   each task's exit status, written by the task itself
    OUT/thinking_<mode>/k<K>/          the cell: cell.json, requests.jsonl, measurement.json, server.log

A cell is *done* when its ``measurement.json`` exists; *pending*/*running* while the
queue holds its latest task; *failed* when that task exited non-zero (or exited 0
without a record, or Slurm ended it: time limit, memory, node failure, or left the
queue without an exit record); *cancelled* when it was cancelled; *missing* when it
was never submitted. ``--resume`` resubmits exactly the missing, failed and cancelled
cells as a new array over their original indices; a resumed cell continues its own
``requests.jsonl`` (``measure --resume``), so no finished request is redone.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from golden_al import safeio
from golden_al.errors import InputFileError, SchemaError, UsageError
from golden_al.provenance import atomic_write_text, collect, now_iso
from golden_al.schedulers import slurm

__all__ = [
    "PLAN_SCHEMA",
    "ArrayPlan",
    "Cell",
    "CellStatus",
    "Submission",
    "cancel_active",
    "cell_file_status",
    "cell_statuses",
    "load_plan",
    "new_plan",
    "plan_dir",
    "submit_cells",
    "to_resubmit",
]

PLAN_SCHEMA = "golden-al/array-sweep/1"
_PLAN_FILE = "plan.json"
_SCRIPT_FILE = "sweep.sbatch"
_MAX_RECORD_BYTES = 16 * 1024 * 1024
_MAX_JSONL_BYTES = 512 * 1024 * 1024
#: States a resume resubmits.
RESUBMIT_STATES = ("missing", "failed", "cancelled")


def plan_dir(out: str | Path) -> Path:
    """``OUT/slurm``: the array's plan, batch script, logs and exit records."""
    return Path(out) / "slurm"


@dataclass(frozen=True)
class Cell:
    """One (thinking mode, draft length) cell and the command its array task runs."""

    index: int
    thinking: str
    draft_len: int
    directory: str
    command: list[str]

    @property
    def name(self) -> str:
        """``thinking_on/k3``."""
        from golden_al.prompts.thinking import mode_key

        return f"{mode_key(self.thinking)}/k{self.draft_len}"


@dataclass
class Submission:
    """One ``sbatch`` of (some of) the cells."""

    job_id: int
    indices: list[int]
    sbatch: list[str]
    submitted: str


@dataclass
class ArrayPlan:
    """The cells of an array sweep and every submission of them."""

    out: Path
    workdir: str
    cells: list[Cell]
    submissions: list[Submission] = field(default_factory=list)

    def script_path(self) -> Path:
        return plan_dir(self.out) / _SCRIPT_FILE

    def log_path(self, job_id: int, index: int) -> Path:
        """The Slurm log of task ``index`` of array ``job_id`` (sbatch ``--output`` ``%A_%a``)."""
        return plan_dir(self.out) / "logs" / f"{job_id}_{index}.out"

    def exit_path(self, job_id: int, index: int) -> Path:
        return plan_dir(self.out) / "exit" / f"{job_id}_{index}.json"

    def latest(self, index: int) -> Submission | None:
        """The last submission that holds cell ``index``."""
        for sub in reversed(self.submissions):
            if index in sub.indices:
                return sub
        return None

    def save(self) -> None:
        data = {"schema": PLAN_SCHEMA, "scheduler": "slurm", "workdir": self.workdir,
                "cells": [asdict(c) for c in self.cells], "submissions": [asdict(s) for s in self.submissions],
                "updated": now_iso(), "provenance": collect()}
        atomic_write_text(plan_dir(self.out) / _PLAN_FILE, json.dumps(data, indent=2) + "\n")


def new_plan(out: str | Path, cells: Sequence[Cell], *, workdir: str | Path, resume: bool) -> ArrayPlan:
    """The plan for ``cells``; on ``resume`` the stored plan, which must hold exactly these cells.

    Raises:
        UsageError: ``OUT`` already holds an array sweep and ``resume`` is off; ``resume``
            without one; or the cells' commands changed since the sweep was submitted.
    """
    out = Path(out).resolve()
    exists = (plan_dir(out) / _PLAN_FILE).exists()
    if exists and not resume:
        raise UsageError(f"{out} already holds a Slurm sweep", hint="pass --resume to continue it, or another --out")
    if not exists:
        if resume:
            raise UsageError(f"--resume: {out} holds no Slurm sweep ({plan_dir(out) / _PLAN_FILE} is missing)",
                             hint="drop --resume to start it")
        return ArrayPlan(out, str(workdir), list(cells))
    stored = load_plan(out)
    fresh = ArrayPlan(out, str(workdir), list(cells))
    if stored.workdir != fresh.workdir:
        raise UsageError(f"cannot resume {out}: it was submitted from {stored.workdir}, not {fresh.workdir}",
                         hint=f"cd {stored.workdir} and resume there (relative paths in the commands depend on it)")
    old = {c.index: c for c in stored.cells}
    new = {c.index: c for c in fresh.cells}
    if old != new:
        diffs = [f"cell {i} ({(old.get(i) or new[i]).name}) "
                 + ("is new" if i not in old else "is gone" if i not in new else "changed its command")
                 for i in sorted(set(old) | set(new)) if old.get(i) != new.get(i)]
        raise UsageError(f"cannot resume {out}: the sweep settings changed: " + "; ".join(diffs[:4])
                         + (f" (and {len(diffs) - 4} more)" if len(diffs) > 4 else ""),
                         hint="resume with the same options, or sweep into another --out")
    return stored


def load_plan(out: str | Path) -> ArrayPlan:
    """Read ``OUT/slurm/plan.json``."""
    path = plan_dir(out) / _PLAN_FILE
    data = safeio.read_json(path, max_bytes=_MAX_RECORD_BYTES)
    if not isinstance(data, dict) or data.get("schema") != PLAN_SCHEMA:
        raise SchemaError(f"not an array-sweep plan (schema {data.get('schema') if isinstance(data, dict) else None!r})",
                          path=path, hint=f"expected schema {PLAN_SCHEMA!r}")
    try:
        cells = [Cell(int(c["index"]), str(c["thinking"]), int(c["draft_len"]), str(c["directory"]),
                      [str(w) for w in c["command"]]) for c in data["cells"]]
        subs = [Submission(int(s["job_id"]), [int(i) for i in s["indices"]], [str(w) for w in s["sbatch"]],
                           str(s["submitted"])) for s in data.get("submissions", [])]
        return ArrayPlan(Path(out).resolve(), str(data["workdir"]), cells, subs)
    except (KeyError, TypeError, ValueError) as exc:
        raise SchemaError(f"malformed array-sweep plan: {type(exc).__name__}: {exc}", path=path) from None


# ---------------------------------------------------------------------------- submitting
def submit_cells(plan: ArrayPlan, indices: Sequence[int], *, sbatch_args: Sequence[str] = (),
                 max_running: int | None = None, job_name: str | None = None,
                 runner: slurm.Runner | None = None) -> Submission:
    """Write the batch script and submit ``indices`` as one array; the plan records it."""
    if not indices:
        raise UsageError("no cells to submit")
    unknown = sorted(set(indices) - {c.index for c in plan.cells})
    if unknown:
        raise UsageError(f"no cells with indices {unknown}")
    d = plan_dir(plan.out)
    (d / "logs").mkdir(parents=True, exist_ok=True)
    (d / "exit").mkdir(parents=True, exist_ok=True)
    script = slurm.job_script({c.index: c.command for c in plan.cells}, workdir=plan.workdir, exit_dir=d / "exit",
                              header=[f"golden-al sweep {plan.out}: array task i measures cell i of {d / _PLAN_FILE}",
                                      f"written {now_iso()}"])
    atomic_write_text(plan.script_path(), script)
    os.chmod(plan.script_path(), 0o755)
    name = job_name or "golden-al-" + (re.sub(r"[^A-Za-z0-9._-]+", "-", plan.out.name).strip("-") or "sweep")
    argv = slurm.sbatch_command(plan.script_path(), indices, job_name=name, output=d / "logs" / "%A_%a.out",
                                extra_args=sbatch_args, max_running=max_running)
    if not plan.submissions:
        plan.save()  # the plan exists before the first job can start
    job_id = slurm.submit(argv, runner=runner)
    sub = Submission(job_id, sorted(set(int(i) for i in indices)), argv, now_iso())
    plan.submissions.append(sub)
    plan.save()
    return sub


# ---------------------------------------------------------------------------- states
@dataclass
class CellStatus:
    """Where one cell stands."""

    cell: Cell
    state: str
    job: str | None = None
    log: Path | None = None
    detail: str = ""
    results: int = 0
    total: int | None = None
    al: float | None = None
    al_ci95: tuple[float, float] | None = None

    @property
    def terminal(self) -> bool:
        """Nothing more will happen to it without a resubmission."""
        return self.state not in ("pending", "running")


def _count_lines(path: Path) -> int:
    try:
        with path.open("rb") as fh:
            return fh.read(_MAX_JSONL_BYTES).count(b"\n")
    except OSError:
        return 0


def cell_file_status(status: CellStatus) -> None:
    """Fill in what the cell's files say: results so far, prompts planned, and done with its AL."""
    d = Path(status.cell.directory)
    status.results = _count_lines(d / "requests.jsonl")
    cell_file = d / "cell.json"
    if cell_file.is_file():
        try:
            status.total = int(safeio.read_json(cell_file, max_bytes=_MAX_RECORD_BYTES)["fingerprint"]["num_prompts"])
        except (InputFileError, KeyError, TypeError, ValueError):
            status.total = None
    record = d / "measurement.json"
    if record.is_file():
        data = safeio.read_json(record, max_bytes=_MAX_RECORD_BYTES)
        status.state = "done"
        status.al = float(data["al"]) if isinstance(data, dict) and "al" in data else None
        ci = data.get("al_ci95") if isinstance(data, dict) else None
        status.al_ci95 = (float(ci[0]), float(ci[1])) if isinstance(ci, list) and len(ci) == 2 else None


def cell_statuses(plan: ArrayPlan, *, runner: slurm.Runner | None = None,
                  tasks: Mapping[int, Mapping[int, slurm.TaskState]] | None = None) -> list[CellStatus]:
    """Every cell's state, from its files, its task's exit record and Slurm (``tasks`` by job id, else asked)."""
    asked: dict[int, Mapping[int, slurm.TaskState]] = dict(tasks or {})
    out: list[CellStatus] = []
    for cell in sorted(plan.cells, key=lambda c: c.index):
        status = CellStatus(cell, "missing")
        cell_file_status(status)
        sub = plan.latest(cell.index)
        if sub is not None:
            status.job = f"{sub.job_id}_{cell.index}"
            status.log = plan.log_path(sub.job_id, cell.index)
        if status.state == "done" or sub is None:
            if sub is None:
                status.detail = "never submitted"
            out.append(status)
            continue
        exit_file = plan.exit_path(sub.job_id, cell.index)
        if exit_file.is_file():
            rc = safeio.read_json(exit_file, max_bytes=_MAX_RECORD_BYTES).get("exit_code")
            status.state = "failed"
            status.detail = (f"exited {rc}" if rc != 0 else "exited 0 but wrote no measurement.json")
            out.append(status)
            continue
        if sub.job_id not in asked:
            asked[sub.job_id] = slurm.task_states(sub.job_id, runner=runner)
        task = asked[sub.job_id].get(cell.index)
        if task is None:
            status.state = "failed"
            status.detail = "left the queue without an exit record"
        elif task.active:
            status.state = "running" if task.state in ("RUNNING", "COMPLETING", "CONFIGURING") else "pending"
            status.detail = task.nodes if status.state == "running" else task.reason.replace("None", "")
        elif task.state.startswith("CANCELLED"):
            status.state = "cancelled"
            status.detail = "cancelled"
        else:
            status.state = "failed"
            code = "" if task.exit_code is None else f", exit code {task.exit_code}"
            status.detail = f"Slurm state {task.state}{code}" + (f" ({task.reason})" if task.reason not in ("", "None")
                                                                 else "")
        out.append(status)
    return out


def to_resubmit(statuses: Sequence[CellStatus]) -> list[int]:
    """Indices of the missing, failed and cancelled cells."""
    return [s.cell.index for s in statuses if s.state in RESUBMIT_STATES]


def cancel_active(plan: ArrayPlan, *, runner: slurm.Runner | None = None) -> list[int]:
    """``scancel`` every submission of ``plan`` that still has tasks in the queue; returns their job ids."""
    live = [sub.job_id for sub in plan.submissions if slurm.queued_tasks(sub.job_id, runner=runner)]
    return slurm.cancel(live, runner=runner)
