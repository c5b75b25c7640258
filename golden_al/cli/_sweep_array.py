"""``sweep --scheduler slurm`` and ``sweep --status``: submit the cells as one job array, show the cell table.

Each cell's command is ``golden-al measure`` with the sweep's own options, the cell's
``--draft-len`` and ``--thinking``, ``--out OUT/thinking_<mode>/k<K>`` and ``--resume``
(so a resubmitted cell continues its requests). The options are translated from the
parsed sweep arguments, not from the raw command line, and each must exist in
``measure``'s parser.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from golden_al.errors import SchemaError, UsageError

__all__ = ["cell_commands", "print_status", "run_slurm_sweep"]

#: Sweep options that say how to sweep, not how to measure a cell.
_SWEEP_ONLY = frozenset({"help", "debug", "draft_lens", "thinking", "out", "one_run", "validate_k", "allow_derived",
                         "scheduler",
                         "slurm_arg", "slurm_max_running", "status", "poll", "detach", "resume", "print_command"})
_STATE_STYLE = {"done": "green", "running": "cyan", "pending": "yellow", "failed": "bold red",
                "cancelled": "magenta", "missing": "dim"}


def _measure_options() -> set[str]:
    from golden_al.cli import measure

    parser = argparse.ArgumentParser(add_help=False)
    measure.add_arguments(parser)
    return set(parser._option_string_actions)


def _measure_words(args: argparse.Namespace, sweep_arguments: Callable[[argparse.ArgumentParser], None]) -> list[str]:
    """The sweep's measurement options (``sweep_arguments``: the sweep command's parser builder) as ``measure``
    options (``--opt=value``), defaults left out."""
    parser = argparse.ArgumentParser(add_help=False)
    sweep_arguments(parser)
    known = _measure_options()
    words: list[str] = []
    for action in parser._actions:
        if action.dest in _SWEEP_ONLY or not action.option_strings:
            continue
        value = getattr(args, action.dest, None)
        if value is None or value == action.default or value == []:
            continue
        opt = next((o for o in action.option_strings if o.startswith("--")), action.option_strings[0])
        if opt not in known:
            raise UsageError(f"{opt} has no 'golden-al measure' counterpart, so a Slurm cell cannot take it",
                             hint="use --scheduler local for this sweep")
        if action.nargs == 0:
            words.append(opt)
        elif isinstance(value, list):
            words.extend(f"{opt}={v}" for v in value)
        else:
            words.append(f"{opt}={value}")
    return words


def cell_commands(args: argparse.Namespace, draft_lens: Sequence[int], thinking: Sequence[str],
                  out: Path, sweep_arguments: Callable[[argparse.ArgumentParser], None]) -> list[Any]:
    """One :class:`~golden_al.schedulers.array_sweep.Cell` per (mode, k), modes outer, k inner."""
    from golden_al.measure.sweep import cell_dir
    from golden_al.schedulers.array_sweep import Cell

    words = _measure_words(args, sweep_arguments)
    cells: list[Any] = []
    for mode in thinking:
        for k in sorted(set(draft_lens)):
            d = cell_dir(out, mode, k)
            cmd = [sys.executable, "-m", "golden_al", "measure", *words, f"--draft-len={k}", f"--thinking={mode}",
                   f"--out={d}", "--resume"]
            cells.append(Cell(len(cells), mode, k, str(d), cmd))
    return cells


def _check_options(args: argparse.Namespace, draft_lens: Sequence[int], thinking: Sequence[str]) -> None:
    """Fail before submitting what every cell would fail on."""
    import dataclasses

    from golden_al.cli._servers import build_modes, server_options_from_args
    from golden_al.servers import launch as launch_mod

    if args.one_run or args.validate_k:
        raise UsageError("--one-run/--validate-k derive cells from one measurement; with --scheduler slurm every "
                         "cell is measured by its own job", hint="drop --one-run, or use --scheduler local")
    if not args.launch:
        raise UsageError("--scheduler slurm needs --launch: each cell's job starts its own server on its allocation")
    options = server_options_from_args(args, args.engine)
    for k in draft_lens:
        launch_mod.build_command(dataclasses.replace(options.launch, draft_len=k, port=options.launch.port or 30000))
    build_modes(args, thinking, target_name=args.target or options.served_model_name)  # prompts and presets load
    if args.slurm_max_running is not None and args.slurm_max_running < 1:
        raise UsageError(f"--slurm-max-running must be >= 1, got {args.slurm_max_running}")
    if args.poll <= 0:
        raise UsageError(f"--poll must be > 0, got {args.poll}")


# ---------------------------------------------------------------------------- the cell table
def _console(*, stderr: bool = False) -> Any:
    """A rich console; a file or pipe gets wide lines (paths are not cut)."""
    from rich.console import Console

    console = Console(stderr=stderr, soft_wrap=True)
    if not console.is_terminal:
        console = Console(stderr=stderr, soft_wrap=True, width=max(200, console.width))
    return console


def _table(statuses: Sequence[Any], title: str) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for name, justify in (("cell", "left"), ("state", "left"), ("job", "right"), ("results", "right"),
                          ("AL [95% CI]", "right")):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    table.add_column("detail / log", overflow="fold")
    for s in statuses:
        results = f"{s.results}/{s.total}" if s.total is not None else str(s.results or "")
        al = f"{s.al:.3f} [{s.al_ci95[0]:.3f}, {s.al_ci95[1]:.3f}]" if s.al is not None and s.al_ci95 else ""
        detail = s.detail
        if s.state in ("failed", "cancelled") and s.log is not None:
            detail = f"{detail}: {s.log}"
        table.add_row(s.cell.name, f"[{_STATE_STYLE.get(s.state, '')}]{s.state}[/]", s.job or "", results, al,
                      detail)
    done = sum(s.state == "done" for s in statuses)
    table.caption = f"{done}/{len(statuses)} cells done"
    return table


def _summary_code(statuses: Sequence[Any]) -> int:
    if any(s.state in ("failed", "cancelled", "missing") for s in statuses):
        return 1
    if any(not s.terminal for s in statuses):
        return 3
    return 0


def _report_failures(statuses: Sequence[Any]) -> None:
    from golden_al.servers.launch import log_tail

    for s in statuses:
        if s.state not in ("failed", "cancelled"):
            continue
        where = f"; Slurm log {s.log}" if s.log is not None else ""
        sys.stderr.write(f"golden-al: cell {s.cell.name} (array task {s.job}) {s.state}: {s.detail}{where}\n")
        if s.state == "failed" and s.log is not None and s.log.is_file():
            for line in log_tail(s.log, 6).splitlines():
                sys.stderr.write(f"golden-al:   | {line}\n")


def _local_statuses(out: Path) -> list[Any]:
    """The cells of a local sweep (``OUT/sweep.json``), from their files only."""
    import json

    from golden_al.measure.sweep import SWEEP_FILE, cell_dir
    from golden_al.schedulers.array_sweep import Cell, CellStatus, cell_file_status

    path = out / SWEEP_FILE
    try:
        fp = json.loads(path.read_text(encoding="utf-8"))["fingerprint"]
        modes, ks = [str(m) for m in fp["thinking"]], [int(k) for k in fp["draft_lens"]]
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise SchemaError(f"cannot read the sweep plan: {exc}", path=path) from None
    statuses: list[Any] = []
    for mode in modes:
        for k in ks:
            d = cell_dir(out, mode, k)
            status = CellStatus(Cell(len(statuses), mode, k, str(d), []), "missing")
            cell_file_status(status)
            if status.state != "done" and status.results:
                status.state, status.detail = "failed", "partial: not finished (resume the sweep)"
            statuses.append(status)
    return statuses


def print_status(out: Path) -> int:
    """``sweep --status OUT``: the cell table; exit 0 all done, 1 some failed or missing, 3 some still queued."""
    from golden_al.measure.sweep import SWEEP_FILE
    from golden_al.schedulers import array_sweep

    if (array_sweep.plan_dir(out) / "plan.json").exists():
        plan = array_sweep.load_plan(out)
        statuses = array_sweep.cell_statuses(plan)
        jobs = ", ".join(str(s.job_id) for s in plan.submissions) or "none"
        title = f"Slurm sweep {plan.out} (arrays {jobs})"
    elif (out / SWEEP_FILE).exists():
        statuses = _local_statuses(out)
        title = f"local sweep {out}"
    else:
        raise UsageError(f"{out} holds no sweep (no slurm/plan.json, no {SWEEP_FILE})",
                         hint="pass the --out directory of a sweep")
    _console().print(_table(statuses, title))
    _report_failures(statuses)
    return _summary_code(statuses)


# ---------------------------------------------------------------------------- submit and follow
def run_slurm_sweep(args: argparse.Namespace, *, draft_lens: list[int], thinking: list[str],
                    sweep_arguments: Callable[[argparse.ArgumentParser], None]) -> int:
    """Submit the missing cells as one array, then follow them in a live table until every cell ends
    (``sweep_arguments``: the sweep command's parser builder, whose options the cells repeat)."""
    from golden_al.schedulers import array_sweep, slurm

    slurm.check_sbatch_args(args.slurm_arg)
    _check_options(args, draft_lens, thinking)
    out = Path(args.out).resolve()
    cells = cell_commands(args, draft_lens, thinking, out, sweep_arguments)
    if args.print_command:
        for c in cells:
            sys.stdout.write(f"# array task {c.index}: {c.name}\n{shlex.join(c.command)}\n")
        return 0
    plan = array_sweep.new_plan(out, cells, workdir=os.getcwd(), resume=args.resume)
    statuses = array_sweep.cell_statuses(plan)
    todo = array_sweep.to_resubmit(statuses)
    note = sys.stderr.write
    if args.resume:
        busy = [s.cell.name for s in statuses if not s.terminal]
        done = [s.cell.name for s in statuses if s.state == "done"]
        note(f"golden-al: resume: {len(done)} cell(s) done, {len(busy)} still queued, {len(todo)} to resubmit\n")
    if todo:
        sub = array_sweep.submit_cells(plan, todo, sbatch_args=args.slurm_arg, max_running=args.slurm_max_running)
        note(f"golden-al: submitted array job {sub.job_id} ({len(todo)} cell(s)): {shlex.join(sub.sbatch)}\n")
    if args.detach:
        note(f"golden-al: follow it with: golden-al sweep --status {out}\n")
        return 0
    return _follow(plan, args.poll)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _follow(plan: Any, poll_s: float) -> int:
    """The live cell table until every cell is terminal; Ctrl-C (or SIGTERM) cancels the arrays."""
    from rich.live import Live

    from golden_al.schedulers import array_sweep

    console = _console(stderr=True)
    title = f"Slurm sweep {plan.out}"
    previous_term = signal.signal(signal.SIGTERM, _interrupt)
    # SIGINT too: a process started in the background of a non-interactive shell inherits SIGINT
    # ignored, and Python then never raises KeyboardInterrupt; 'kill -INT' must still cancel.
    previous_int = signal.signal(signal.SIGINT, _interrupt)
    statuses = array_sweep.cell_statuses(plan)
    try:
        if console.is_terminal:
            with Live(_table(statuses, title), console=console, refresh_per_second=2) as live:
                while any(not s.terminal for s in statuses):
                    time.sleep(poll_s)
                    statuses = array_sweep.cell_statuses(plan)
                    live.update(_table(statuses, title))
        else:  # a log file: one line per state change, then the table
            seen: dict[int, str] = {}
            while True:
                for s in statuses:
                    if seen.get(s.cell.index) != s.state:
                        seen[s.cell.index] = s.state
                        detail = "" if s.detail == "None" else s.detail
                        console.print(f"golden-al: {s.cell.name}: {s.state} {s.job or ''} {detail}".rstrip(),
                                      highlight=False)
                if all(s.terminal for s in statuses):
                    break
                time.sleep(poll_s)
                statuses = array_sweep.cell_statuses(plan)
    except KeyboardInterrupt:
        cancelled = array_sweep.cancel_active(plan)
        sys.stderr.write(f"golden-al: interrupted: cancelled array job(s) {', '.join(map(str, cancelled)) or 'none'}"
                         f" (scancel); resume with --resume\n")
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        signal.signal(signal.SIGINT, previous_int)
    _console().print(_table(statuses, title))
    _report_failures(statuses)
    return _summary_code(statuses)
