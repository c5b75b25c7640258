"""Measure to a precision: add prompts in batches until the AL interval is narrow enough.

Engine-agnostic: the caller gives a function that measures (resuming) over the first ``n``
prompts and returns the records, one per draft length. Each call appends only the new
prompts' requests to ``requests.jsonl`` (the engines' own resume), so nothing is measured
twice and a crash between batches loses nothing. The loop stops when every record's
interval half-width is at most the target (``reached``), or when the prompt set is used
up (``exhausted``); :func:`distributions.uncertainty.next_sample_size` picks the batches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from distributions.uncertainty import next_sample_size
from golden_al.errors import UsageError
from golden_al.measure.schema import MeasurementRecord

__all__ = ["DEFAULT_PROMPT_BATCH", "PrecisionOutcome", "measure_to_precision"]

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


def measure_to_precision(measure: Callable[[int, bool], Sequence[MeasurementRecord]], *, available: int,
                         target_half_width: float, batch: int = DEFAULT_PROMPT_BATCH, resume: bool = False,
                         on_batch: Callable[[int, float], None] | None = None) -> PrecisionOutcome:
    """Call ``measure(n, resume)`` for growing ``n`` until the half-width target or ``available``.

    Args:
        measure: measures the first ``n`` prompts, resuming when its second argument is
            True; returns the records (one per draft length).
        available: prompts in the set (the most ``n`` can be).
        target_half_width: e.g. 0.02 for +/-0.02.
        batch: prompts added per batch (the first batch too).
        resume: whether the first call continues an earlier run.
        on_batch: ``on_batch(n, half_width)`` after every batch (progress lines).
    """
    if batch < 1:
        raise UsageError(f"--prompt-batch must be >= 1, got {batch}")
    if available < 1:
        raise UsageError("the prompt set is empty")
    n = min(batch, available)
    batches = 0
    while True:
        records = list(measure(n, resume or batches > 0))
        batches += 1
        if not records:
            raise UsageError("the measurement returned no record")
        hw = max(half_width(r) for r in records)
        if on_batch is not None:
            on_batch(n, hw)
        nxt = next_sample_size(n, hw, target_half_width, batch=batch, available=available)
        if nxt is None:
            return PrecisionOutcome(records=records, target_half_width=float(target_half_width), half_width=hw,
                                    prompts=n, available=available, batches=batches,
                                    reached=hw <= target_half_width)
        n = nxt
