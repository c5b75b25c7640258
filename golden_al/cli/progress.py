"""Progress on stderr (issue 37; issue 54 item 7): rich bars on a terminal, plain lines in a CI log, or none.

Library code reports through a callback, :class:`ProgressCallback`: ``progress(advance, *, total, description,
status, eta_s, unit)``. Every line shows one estimate of the time left, the task's:

* the library's own (``eta_s``: the reference engine's, from its measured step times and the requests still
  queued), else the rate of the units done so far;
* none until :data:`MIN_TIMED` advances are timed, counted from the first one: the wait before it (a model load,
  a first forward call that builds kernels) is not the time of a unit, so early estimates are not absurd;
* the count says what it counts (``unit``); a library that names a ``unit`` starts a new phase of the task
  (count, total and timing restart), e.g. ``first run: downloading ...`` in MB, then ``dequantizing`` in tensors.

The clock is :data:`clock` (tests set a simulated one); nothing here depends on wall-clock timing in tests.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["MIN_TIMED", "PLAIN_INTERVAL_S", "PROGRESS_MODES", "ProgressCallback", "TaskProgress", "progress",
           "set_progress_mode"]

#: How progress is shown (``--progress`` / ``GOLDEN_AL_PROGRESS``): ``auto`` (rich bars on a terminal, plain lines
#: otherwise), ``rich``, ``plain`` (a line per task at start, every :data:`PLAIN_INTERVAL_S` and at the end: what a
#: CI log keeps), ``none``.
PROGRESS_MODES: tuple[str, ...] = ("auto", "rich", "plain", "none")
_mode = "auto"
#: seconds between two plain lines of one task (a log shows a task is alive at least this often)
PLAIN_INTERVAL_S = 15.0
#: advances timed (after the first) before any estimate of the time left is shown
MIN_TIMED = 3
#: the clock of every estimate and plain line (tests replace it with a simulated one)
clock: Callable[[], float] = time.monotonic


class ProgressCallback(Protocol):
    """What library code calls to report progress (see the module docstring)."""

    def __call__(self, advance: int = 1, *, total: int | None = None, description: str | None = None,
                 status: str | None = None, eta_s: float | None = None, unit: str | None = None) -> None: ...


def set_progress_mode(mode: str) -> None:
    """Choose how :func:`progress` shows (one of :data:`PROGRESS_MODES`)."""
    global _mode
    if mode not in PROGRESS_MODES:
        raise ValueError(f"progress mode {mode!r} is not one of {', '.join(PROGRESS_MODES)}")
    _mode = mode


def hms(seconds: float | None) -> str:
    """``H:MM:SS``, or ``?`` when unknown."""
    if seconds is None or not seconds == seconds or seconds == float("inf"):
        return "?"
    s = max(0, round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


@dataclass
class TaskProgress:
    """One task's state on :data:`clock`: its phase (description, unit, count, total), its status, and the one
    estimate of the time left (:meth:`eta`)."""

    description: str
    total: int | None = None
    unit: str = ""
    done: int = 0
    status: str = ""
    start: float = 0.0
    first: tuple[float, int] | None = None
    """When the phase's first advance came, and the count then."""
    advances: int = 0
    deadline: float | None = None
    """The library's own estimate, as a moment on :data:`clock`."""

    def update(self, advance: int = 1, *, total: int | None = None, description: str | None = None,
               status: str | None = None, eta_s: float | None = None, unit: str | None = None,
               now: float | None = None) -> None:
        """Apply one callback (see :class:`ProgressCallback`) at ``now`` (default: :data:`clock`)."""
        now = clock() if now is None else now
        if unit is not None:  # a new phase: its own count, total and timing
            self.unit, self.done, self.total, self.start, self.first, self.advances = unit, 0, None, now, None, 0
            self.deadline = None
        if total is not None:
            self.total = total
        if description is not None:
            self.description = description
        if status is not None:
            self.status = status
        if eta_s is not None:
            self.deadline = now + max(0.0, float(eta_s))
        if advance:
            self.done += advance
            self.advances += 1
            if self.first is None:
                self.first = (now, self.done)

    def eta(self, now: float | None = None) -> float | None:
        """Seconds left: the library's estimate or the rate since the first advance, once :data:`MIN_TIMED`
        advances after it are timed; None before (or with no total)."""
        if self.first is None or self.advances <= MIN_TIMED:
            return None
        now = clock() if now is None else now
        if self.deadline is not None:
            return max(0.0, self.deadline - now)
        t0, d0 = self.first
        if not self.total or now <= t0 or self.done <= d0:
            return None
        return max(0.0, (self.total - self.done) * (now - t0) / (self.done - d0))

    def line(self, event: str = "", now: float | None = None) -> str:
        """The plain line: ``golden-al: TASK: done/total UNIT (pct), rate, elapsed, ETA, status [event]``."""
        now = clock() if now is None else now
        elapsed = now - self.start
        unit = f" {self.unit}" if self.unit else ""
        count = f"{self.done}/{self.total}{unit} ({100.0 * self.done / self.total:.0f}%)" if self.total else \
            f"{self.done}{unit}"
        rate = f"{self.done / elapsed:.1f}{unit or ' units'}/s" if elapsed > 0 and self.done else "starting"
        eta = "0:00:00" if event == "done" else hms(self.eta(now))
        text = f"golden-al: {self.description}: {count}, {rate}, elapsed {hms(elapsed)}, ETA {eta}"
        return text + (f", {self.status}" if self.status else "") + (f" [{event}]" if event else "")


class _Plain:
    """Plain lines for logs: one when the task starts, then at most every :data:`PLAIN_INTERVAL_S` while it
    advances, a heartbeat when it has said nothing for that long (a long load or download), and one at the end."""

    def __init__(self, task: TaskProgress) -> None:
        self.task = task
        self.last = clock()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.emit("started")
        self.thread = threading.Thread(target=self._heartbeat, daemon=True)
        self.thread.start()

    def _heartbeat(self) -> None:
        while not self.stop.wait(1.0):
            with self.lock:
                now = clock()
                if now - self.last >= PLAIN_INTERVAL_S:
                    self.emit(now=now)

    def emit(self, event: str = "", now: float | None = None) -> None:
        from golden_al.cli._common import escape_control

        self.last = clock() if now is None else now
        sys.stderr.write(escape_control(self.task.line(event, self.last)) + "\n")
        sys.stderr.flush()

    def __call__(self, advance: int = 1, **kw: Any) -> None:
        with self.lock:
            now = clock()
            self.task.update(advance, now=now, **kw)
            if now - self.last >= PLAIN_INTERVAL_S:
                self.emit(now=now)

    def close(self) -> None:
        self.stop.set()
        with self.lock:
            self.emit("done")


def _quiet(advance: int = 1, **_kw: Any) -> None:
    """``--progress none``: a callback that shows nothing."""


@contextmanager
def progress(description: str, total: int | None = None, *, unit: str = "") -> Iterator[ProgressCallback]:
    """Progress on stderr, as :data:`PROGRESS_MODES` says; yields a :class:`ProgressCallback` for library code."""
    mode = _mode if _mode != "auto" else ("rich" if sys.stderr.isatty() else "plain")
    task = TaskProgress(description, total, unit, start=clock())
    if mode == "none":
        yield _quiet
    elif mode == "plain":
        plain = _Plain(task)
        try:
            yield plain
        finally:
            plain.close()
    else:
        with _rich(task) as callback:
            yield callback


@contextmanager
def _rich(task: TaskProgress) -> Iterator[ProgressCallback]:
    """A rich bar whose count, unit and time left are the task's (one estimate, as on plain lines)."""
    from rich.progress import (
        BarColumn,
        Progress,
        ProgressColumn,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.text import Text

    from golden_al.cli._common import stderr_console

    class _Count(ProgressColumn):  # type: ignore[misc]
        def render(self, _t: Any) -> Any:
            unit = f" {task.unit}" if task.unit else ""
            return Text(f"{task.done}/{task.total}{unit}" if task.total else f"{task.done}{unit}")

    class _Eta(ProgressColumn):  # type: ignore[misc]
        def render(self, _t: Any) -> Any:
            return Text(hms(task.eta()), style="progress.remaining")

    columns = [SpinnerColumn(), TextColumn("[progress.description]{task.description}"), BarColumn(), _Count(),
               TimeElapsedColumn(), _Eta(), TextColumn("{task.fields[status]}")]
    with Progress(*columns, console=stderr_console(), transient=False) as bar:
        handle = bar.add_task(task.description, total=task.total, status="")

        def callback(advance: int = 1, **kw: Any) -> None:
            task.update(advance, **kw)
            bar.update(handle, total=task.total, completed=task.done, description=task.description,
                       status=task.status)

        yield callback
