"""A cell's totals from its rows: summed counts, the independent clusters, and the AL interval over them.

:func:`cell_totals` is what every record rests on, built one way for every producer (the reference engine,
servers, imports, pooling); :func:`golden_al.measure.records.build_record` turns it into the record.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from distributions import units
from distributions.errors import DistributionError
from distributions.uncertainty import ALInterval, al_interval_result, representation_warning
from golden_al.errors import NoVerifyStepsError
from golden_al.measure.schema import CellCounts, RequestResult, Timing, TimingGroup
from golden_al.plugin.imported import TimedUnit

__all__ = [
    "CellTotals",
    "cell_totals",
    "clusters_from_requests",
    "counter_width_note",
    "counts_from_requests",
    "interval_from_requests",
    "line_indices",
    "prompt_clusters",
    "request_indices",
    "request_timing",
    "timing_block",
]


def counts_from_requests(results: Sequence[RequestResult], draft_len: int) -> CellCounts:
    """Sum per-request counts for one draft length (requests of other k are ignored)."""
    k = units.check_draft_len(draft_len)
    hist = np.zeros(k + 1)
    pos = np.zeros(k)
    steps = 0.0
    acc = 0.0
    n = 0
    for r in results:
        if r.draft_len != k:
            continue
        n += 1
        hist += np.asarray(r.histogram, dtype=np.float64)
        pos += np.asarray(r.per_position_accepted, dtype=np.float64)
        steps += float(r.num_verify_steps)
        acc += float(r.num_accepted_drafts)
    return CellCounts(
        num_requests=n,
        num_verify_steps=steps, num_accepted_drafts=acc, histogram=list(hist), per_position_accepted=list(pos),
    )


def _cluster_unit(rows: Sequence[RequestResult]) -> str:
    if any(r.extra and "batch" in r.extra for r in rows):
        return "counter window batch"
    if any(r.extra and "unit" in r.extra for r in rows):
        return "counter unit"
    if any(r.turn is not None for r in rows):
        return "conversation"
    return "request"


def clusters_from_requests(results: Sequence[RequestResult], draft_len: int, *,
                           merge_same_prompt: bool = False) -> tuple[list[float], list[float], str]:
    """Per-cluster ``(accepted, steps)`` totals of one cell, and what one cluster is.

    Each line of ``requests.jsonl`` at ``draft_len`` is one cluster (a request, a counter
    unit or a batch of counter windows), except that the turns of one conversation (lines
    with ``turn`` set and the same ``index``) are summed into one, and, with
    ``merge_same_prompt`` (pooling several records), per-request lines of the same prompt
    are summed into one: a prompt measured twice is one independent unit, not two.
    """
    rows = sorted((r for r in results if r.draft_len == draft_len),
                  key=lambda q: (q.index, q.turn or 0, q.request_id))
    unit = _cluster_unit(rows)
    clusters: dict[tuple[Any, ...], list[float]] = {}
    for pos, r in enumerate(rows):
        if merge_same_prompt and unit in ("request", "conversation"):
            key: tuple[Any, ...] = (r.prompt_hash,)
        elif r.turn is not None:
            key = (r.index,)
        else:
            key = (r.index, pos)
        tot = clusters.setdefault(key, [0.0, 0.0])
        tot[0] += float(r.num_accepted_drafts)
        tot[1] += float(r.num_verify_steps)
    return [v[0] for v in clusters.values()], [v[1] for v in clusters.values()], unit


def prompt_clusters(results: Sequence[RequestResult], draft_len: int) -> dict[str, tuple[float, float]] | None:
    """Per-prompt ``(accepted, steps)`` totals at ``draft_len``, keyed by prompt (its hash, else its
    index), so that cells measured on the same prompts can be lined up cluster by cluster (the
    joint law of a curve); None when the lines are counter units or windows, which no prompt owns."""
    rows = [r for r in results if r.draft_len == draft_len]
    if not rows or _cluster_unit(rows) not in ("request", "conversation"):
        return None
    out: dict[str, tuple[float, float]] = {}
    for r in rows:
        key = f"sha256:{r.prompt_hash}" if r.prompt_hash else f"index:{r.index}"
        acc, steps = out.get(key, (0.0, 0.0))
        out[key] = (acc + float(r.num_accepted_drafts), steps + float(r.num_verify_steps))
    return out


def interval_from_requests(results: Sequence[RequestResult], draft_len: int, *, seed: int = 0,
                           merge_same_prompt: bool = False) -> tuple[ALInterval, str]:
    """The AL interval of one cell over its independent clusters (:func:`clusters_from_requests`).

    :func:`distributions.uncertainty.al_interval_result`: a function of the multiset of
    clusters and ``seed``, so the order lines finished in does not change it.

    Raises:
        DistributionError: no line has a verify step (callers check that first).
    """
    acc, steps, unit = clusters_from_requests(results, draft_len, merge_same_prompt=merge_same_prompt)
    return al_interval_result(acc, steps, seed=seed, draft_len=draft_len), unit


def line_indices(result: RequestResult) -> list[int]:
    """Prompt indices one line covers (a counter window or batch lists its prompts in ``extra.unit``)."""
    if result.extra and isinstance(result.extra.get("unit"), list):
        return [int(i) for i in result.extra["unit"]]
    return [result.index]


def request_indices(results: Sequence[RequestResult]) -> set[int]:
    """Every prompt index the lines cover (:func:`line_indices`)."""
    return {i for r in results for i in line_indices(r)}


@dataclass(frozen=True)
class CellTotals:
    """What every record of one cell rests on, built one way for every producer (the reference
    engine, servers, imports): the summed counts, the interval over independent clusters, the
    requests (prompts) behind them, and the notes every such record carries."""

    counts: CellCounts
    interval: ALInterval
    unit: str
    num_requests: int
    notes: tuple[str, ...]


def cell_totals(results: Sequence[RequestResult], draft_len: int, *, seed: int = 0,
                what: str = "") -> CellTotals:
    """:class:`CellTotals` of the lines at ``draft_len``.

    ``num_requests`` counts prompts (a counter window's line covers several); ``what`` names the
    cell in the error (e.g. ``" (thinking on)"``).

    Raises:
        NoVerifyStepsError: no line has a verify step, so AL is undefined.
    """
    rows = [r for r in results if r.draft_len == draft_len]
    counts = counts_from_requests(rows, draft_len)
    num_requests = len(request_indices(rows))
    if float(counts.num_verify_steps) <= 0:
        raise NoVerifyStepsError(
            f"the {num_requests} requests at k={draft_len}{what} produced zero verify steps: AL is undefined",
            hint="a request that ends on its first token makes no verify step (that token comes from the prefill), "
                 "and a draft that proposes nothing (n-gram without matches) makes none either: raise --max-tokens "
                 "or use other prompts")
    acc, steps, unit = clusters_from_requests(rows, draft_len)
    interval = al_interval_result(acc, steps, seed=seed, draft_len=draft_len)
    notes: list[str] = []
    zero = sum(1 for r in rows if float(r.num_verify_steps) == 0)
    by_request = unit in ("request", "conversation")
    if zero and by_request:
        notes.append(f"{zero} request(s) had no verify step (they ended on the prefill token) and carry no weight")
    notes += [w for w in (interval.warning, representation_warning(steps) if by_request else None) if w]
    if unit.startswith("counter"):
        note = counter_width_note(counts, interval, unit, draft_len)
        if note:
            notes.append(note)
    return CellTotals(counts, interval, unit, num_requests, tuple(notes))


def counter_width_note(counts: CellCounts, interval: ALInterval, unit: str, draft_len: int) -> str | None:
    """How much wider a counter-only interval is than one treating every verify step as independent (the narrowest
    any per-request source could give; the steps' own histogram, else the widest law with this mean): a server that
    reports only counters leaves a few windows as the independent units (issue 39)."""
    from distributions.uncertainty import iid_ci_from_counts

    known = sum(float(v) for v in counts.histogram) > 0  # zeros: the source gave totals only
    try:
        iid = iid_ci_from_counts(float(counts.num_accepted_drafts), float(counts.num_verify_steps),
                                 histogram=list(counts.histogram) if known else None,
                                 k=draft_len)
    except DistributionError:
        return None
    base = iid.ci_high - iid.ci_low
    if base <= 0:
        return None
    ratio = (interval.high - interval.low) / base
    return (f"the interval rests on {interval.clusters} {unit}s, not on requests: it is {ratio:.1f}x as wide as one "
            f"that treated each of the {float(counts.num_verify_steps):.0f} verify steps as independent (the "
            "narrowest a per-request AL source could give); measure with the engine's per-request source where it "
            "has one (golden-al engines show ENGINE), or more windows")


# ---------------------------------------------------------------------------- timings


def _per_step(units: Sequence[TimedUnit], name: str) -> Any:
    """Quartiles of ``name`` per step over ``units`` (None when a unit lacks it)."""
    values = [getattr(u, name) for u in units]
    if any(v is None for v in values):
        return None
    q = np.percentile([v / u.steps for v, u in zip(values, units, strict=True)], [25, 50, 75])
    return tuple(round(float(x), 3) for x in q)


def timing_block(units: Sequence[TimedUnit], *, source: str, unit: Literal["step", "request"]) -> Timing | None:
    """The record's :class:`Timing` from its timed units (None when none covers a step)."""
    by_batch: dict[int, list[TimedUnit]] = {}
    for u in units:
        if u.steps > 0:
            by_batch.setdefault(u.batch, []).append(u)
    groups = [TimingGroup(
        batch=b, units=len(us), steps=sum(u.steps for u in us), tokens=sum(u.tokens for u in us),
        wall_ms=round(sum(u.wall_ms for u in us), 3), step_ms=_per_step(us, "wall_ms"),
        draft_ms=_per_step(us, "draft_ms"), cpu_ms=_per_step(us, "cpu_ms"),
        load1=(min(loads), max(loads)) if (loads := [u.load1 for u in us if u.load1 is not None]) else None)
        for b, us in sorted(by_batch.items())]
    return Timing(source=source, unit=unit, cpus=os.cpu_count(), groups=groups) if groups else None


def request_timing(rows: Sequence[RequestResult], *, batch: int, source: str) -> Timing | None:
    """:func:`timing_block` of the rows that carry ``decode_ms`` (a row of a window: its requests' summed). Each
    request's first output token comes from the prefill, so its decode steps emit the rest: one step per token
    not accepted as a draft. None when no row carries ``decode_ms``."""
    units = []
    for r in rows:
        if r.decode_ms is not None:
            n = len(line_indices(r))
            units.append(TimedUnit(batch=batch, steps=int(r.num_output_tokens - n - float(r.num_accepted_drafts)),
                                   tokens=r.num_output_tokens - n, wall_ms=r.decode_ms, load1=r.load1))
    return timing_block(units, source=source, unit="request")
