"""One runner interface for the reference engine and for servers, and the one loop that measures to a precision.

A :class:`Runner` measures (resuming) over the first ``n`` prompts of its set and returns the records, one per cell:
:class:`golden_al.measure.reference.ReferenceRun` and :class:`golden_al.measure.sweep.ServerRun`. Each call appends
only the new prompts' requests to ``requests.jsonl`` (the runners' own resume), so nothing is measured twice and a
crash between batches loses nothing. :func:`measure_to_precision` stops when every record's interval half-width is
at most the target (``reached``), or when the prompt set is used up (``exhausted``), and writes ``precision.json``;
:func:`distributions.uncertainty.next_sample_size` picks the batches.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from distributions.uncertainty import next_sample_size
from golden_al.errors import UsageError
from golden_al.measure.schema import MeasurementRecord
from golden_al.provenance import atomic_write_text, collect

__all__ = ["DEFAULT_PROMPT_BATCH", "PrecisionOutcome", "Runner", "check_precision", "measure_to_precision"]

ProgressFn = Callable[..., None]


class Runner(Protocol):
    """A measurement over the first ``n`` prompts of its set (``None``: all of them); ``label`` and ``unit`` name its
    progress."""

    available: int
    label: str
    unit: str

    def measure(self, n: int | None, resume: bool, progress: ProgressFn) -> Sequence[MeasurementRecord]: ...


#: Prompts per batch when ``--prompt-batch`` is not given.
DEFAULT_PROMPT_BATCH = 16


def half_width(record: MeasurementRecord) -> float:
    """Half the width of a record's interval."""
    lo, hi = record.al_ci95
    return (float(hi) - float(lo)) / 2.0


@dataclass(frozen=True)
class PrecisionOutcome:
    """How a measurement to a precision ended."""

    records: list[MeasurementRecord]
    target_half_width: float
    half_width: float
    """The widest record's half-width."""
    prompts: int
    available: int
    batches: int
    reached: bool

    def sentence(self) -> str:
        """One line for the user: reached or exhausted, with the numbers."""
        if self.reached:
            return (f"target reached: 95% half-width +/-{self.half_width:.4f} <= +/-{self.target_half_width:g} "
                    f"with {self.prompts} of {self.available} prompts ({self.batches} batch(es))")
        return (f"prompt set exhausted: 95% half-width +/-{self.half_width:.4f} > +/-{self.target_half_width:g} "
                f"with all {self.prompts} prompts ({self.batches} batch(es)); more prompts are needed")

    def as_dict(self) -> dict[str, object]:
        """The ``precision`` note kept in the records' warnings and printed."""
        return {"target_half_width": self.target_half_width, "half_width": self.half_width,
                "prompts": self.prompts, "available": self.available, "batches": self.batches,
                "reached": self.reached}


def check_precision(target_half_width: float, batch: int | None) -> int:
    """The prompts per batch (``None``: :data:`DEFAULT_PROMPT_BATCH`), after checking both options (before any
    model loads or request is sent)."""
    hw = target_half_width
    if not (hw > 0 and hw == hw and hw != float("inf")):
        raise UsageError(f"--ci-half-width must be a number > 0, got {hw!r}", hint="e.g. 0.02 for AL +/- 0.02")
    batch = DEFAULT_PROMPT_BATCH if batch is None else int(batch)
    if batch < 1:
        raise UsageError(f"--prompt-batch must be >= 1, got {batch}")
    return batch


def measure_to_precision(runner: Runner, *, target_half_width: float, out: str | Path | None = None,
                         batch: int | None = None, resume: bool = False,
                         bars: Callable[[int], AbstractContextManager[ProgressFn]] | None = None,
                         on_batch: Callable[[int, float], None] | None = None,
                         argv: Sequence[str] | None = None) -> PrecisionOutcome:
    """Measure the first ``n`` prompts for growing ``n`` until the half-width target or the prompt set's end;
    write ``out/precision.json`` (with ``out``).

    Args:
        runner: what measures (:class:`Runner`).
        target_half_width: e.g. 0.02 for +/-0.02.
        batch: prompts added per batch (the first batch too).
        resume: whether the first batch continues an earlier run.
        bars: ``bars(n)``, the progress of the batch of ``n`` prompts (a context manager yielding the callback).
        on_batch: ``on_batch(n, half_width)`` after every batch.
        argv: the command line, for the provenance of ``precision.json``.
    """
    step = check_precision(target_half_width, batch)
    available = runner.available
    if available < 1:
        raise UsageError("the prompt set is empty")
    n, batches = min(step, available), 0
    while True:
        if bars is None:
            records = list(runner.measure(n, resume or batches > 0, lambda *a, **k: None))
        else:
            with bars(n) as bar:
                records = list(runner.measure(n, resume or batches > 0, bar))
        batches += 1
        if not records:
            raise UsageError("the measurement returned no record")
        hw = max(half_width(r) for r in records)
        if on_batch is not None:
            on_batch(n, hw)
        nxt = next_sample_size(n, hw, target_half_width, batch=step, available=available)
        if nxt is None:
            outcome = PrecisionOutcome(records=records, target_half_width=float(target_half_width), half_width=hw,
                                       prompts=n, available=available, batches=batches,
                                       reached=hw <= target_half_width)
            if out is not None:
                _write(Path(out), outcome, argv)
            return outcome
        n = nxt


def _write(out: Path, outcome: PrecisionOutcome, argv: Sequence[str] | None) -> None:
    """``OUT/precision.json``: how far the run went, and why it stopped."""
    doc: dict[str, Any] = {
        "kind": "golden-al-precision", **outcome.as_dict(), "sentence": outcome.sentence(),
        "records": [f"k{r.draft_len}" if len(outcome.records) > 1 else "." for r in outcome.records],
        "provenance": collect(argv=list(argv) if argv is not None else None)}
    atomic_write_text(out / "precision.json", json.dumps(doc, indent=2) + "\n")
