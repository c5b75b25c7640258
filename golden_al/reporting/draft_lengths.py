"""``draft-lengths --measured``: measurement runs of several k -> the fitted step-cost model and the table.

:func:`measured_table` reads the records (``measurement.json`` files or directories of them), pools the
AL of each k (:func:`golden_al.curvefit.pool.pool_cell`, the interval recomputed over the pooled
clusters), turns every record's timing block into :class:`distributions.stepcost.StepCell` (one per
record and batch size: the median step), fits :func:`distributions.stepcost.fit_step_costs`, and gives
per k the measured and predicted tokens/s, the speedup over no speculation (the no-speculation step is
the fit's ``k = 0``), the prediction error, and the error of the fit made without that k (held out).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from distributions.errors import DistributionError
from distributions.stepcost import FORMULA, StepCell, StepCostFit, fit_step_costs, held_out_fits
from golden_al.errors import InputFileError, UsageError
from golden_al.measure.records import LoadedRecord, load_records
from golden_al.measure.schema import TimingGroup

__all__ = ["ASSUMED_NOTE", "measured_table"]

ASSUMED_NOTE = ("the step costs are assumed (illustrative defaults or the cost options given), not measured; "
                "pass --measured RUN... to fit them to timed runs")


def _step(g: TimingGroup, clock: str) -> tuple[float, float, float]:
    return g.step_ms if clock == "wall" else g.cpu_ms  # type: ignore[return-value]


def _tokens_per_s(k_groups: Sequence[tuple[str, TimingGroup]], batch: int, clock: str) -> float | None:
    """Tokens over the robust time (steps x median step) of the groups at ``batch``; a request's tokens are
    its own, so its rate is multiplied by the requests decoding together."""
    tokens = ms = 0.0
    for unit, g in k_groups:
        if g.batch == batch:
            tokens += g.tokens * (g.batch if unit == "request" else 1)
            ms += g.steps * _step(g, clock)[1]
    return 1000.0 * tokens / ms if ms > 0 else None


def _cells(records: Sequence[LoadedRecord], clock: str) -> tuple[list[StepCell],
                                                                  dict[int, list[tuple[str, TimingGroup]]]]:
    cells: list[StepCell] = []
    groups: dict[int, list[tuple[str, TimingGroup]]] = {}
    for lr in records:
        t = lr.record.timing
        if t is None:
            raise InputFileError("the record holds no timing block (measured in replay mode, imported without "
                                 "timings, or by a golden-al before timings were recorded)", path=lr.path,
                                 hint="measure live: golden-al measure --mode live --draft-lens 1-4")
        for g in t.groups:
            if (q := _step(g, clock)) is None:
                raise InputFileError(f"the record's {t.source} timing holds no CPU time", path=lr.path,
                                     hint="--clock cpu needs the reference engine's step timings; use --clock wall")
            groups.setdefault(lr.k, []).append((t.unit, g))
            cells.append(StepCell(k=lr.k, batch=g.batch, units=g.units, step_ms=q[1], iqr_ms=q[2] - q[0],
                                  draft_ms=None if g.draft_ms is None or clock == "cpu" else g.draft_ms[1]))
    return cells, groups


def _error(predicted: float | None, measured: float | None) -> float | None:
    return None if predicted is None or not measured else round(predicted / measured - 1.0, 4)


def _cost_model(fit: StepCostFit, records: Sequence[LoadedRecord], cells: Sequence[StepCell],
                clock: str) -> dict[str, Any]:
    timings = [lr.record.timing for lr in records if lr.record.timing is not None]
    loads = [x for t in timings for g in t.groups for x in g.load1 or ()]
    return {"formula": FORMULA, "clock": clock, "terms": fit.terms(), "timing_source": sorted({t.source for t in timings}),
            "unit": sorted({t.unit for t in timings}), "batch_sizes": list(fit.batches),
            "draft_lengths": list(fit.draft_lens), "cells": len(cells), "steps": sum(c.units for c in cells),
            "dof": fit.dof, "draft_phase_timed": fit.phases, "load1": [min(loads), max(loads)] if loads else None,
            "cpus": sorted({t.cpus for t in timings if t.cpus is not None}), "notes": list(fit.notes)}


def measured_table(paths: Iterable[str | Path], *, batch: int | None = None, output_tokens: int | None = None,
                   clock: str = "wall") -> dict[str, Any]:
    """The ``draft-lengths --measured`` document (see the module docstring); ``batch``: the batch size to
    predict at (default: the one with the most timed steps); ``clock``: ``wall`` time, or ``cpu`` (the
    process's CPU time per step: the cost of a step while other jobs share the machine; tokens per CPU-second).

    Raises:
        InputFileError: a record without a timing block; UsageError: runs of several setups, a batch
            size the runs cannot predict, or too few timed (k, batch) points to fit.
    """
    from golden_al.curvefit.pool import pool_cell
    from simulators.throughput import evaluate_draft_lengths

    records = load_records(paths)  # one cost model fits one engine, model pair and thinking mode
    keys = {(lr.record.engine, lr.record.target.name, lr.record.draft.name, lr.record.thinking): lr for lr in records}
    if len(keys) > 1:
        seen = "; ".join(f"{lr.path}: {' / '.join(key)}" for key, lr in list(keys.items())[:3])
        raise UsageError(f"the runs hold {len(keys)} setups (engine / target / draft / thinking): {seen}",
                         hint="pass the runs of one engine, model pair and thinking mode")
    cells, groups = _cells(records, clock)
    pooled = {k: pool_cell([lr for lr in records if lr.k == k]) for k in sorted({lr.k for lr in records})}
    try:
        fit = fit_step_costs(cells)
    except DistributionError as exc:
        raise UsageError(f"--measured: {exc.message}", hint=exc.hint) from None
    if batch is None:  # the batch size with the most timed units (the smaller one on a tie)
        batch = max(sorted({c.batch for c in cells}), key=lambda b: sum(c.units for c in cells if c.batch == b))
    curve = {k: p.al for k, p in pooled.items()}
    measured = {k: v for k in curve if (v := _tokens_per_s(groups.get(k, []), batch, clock)) is not None}
    try:
        table = evaluate_draft_lengths(curve, fit, batch=batch, al_ci95={k: p.ci95 for k, p in pooled.items()},
                                       measured=measured, source="measured", output_tokens=output_tokens,
                                       cost_model=_cost_model(fit, records, cells, clock)).to_dict()
    except DistributionError as exc:
        raise UsageError(f"--measured --batch {batch}: {exc.message}", hint=exc.hint) from None
    fits = held_out_fits(cells)
    for row in table["draft_lengths"]:
        held, without = None, fits.get(row["k"])
        with contextlib.suppress(DistributionError):  # a fit without this k that cannot predict it: no number
            held = None if without is None else 1000.0 * row["al"] * batch / without.step_ms(row["k"], batch)
        row.update(prediction_error=_error(row["tokens_per_s_predicted"], row["tokens_per_s_measured"]),
                   tokens_per_s_held_out=held, held_out_error=_error(held, row["tokens_per_s_measured"]))
    table["baseline"]["note"] = "no-speculation step: the fit at k = 0 (extrapolated unless a k = 0 run was timed)"
    table["runs"] = [str(lr.path) for lr in records]
    return table
