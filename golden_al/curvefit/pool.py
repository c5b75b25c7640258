"""Pool the records of one (thinking mode, k) cell into one AL with a 95% CI.

Records of one cell that share every setting (:mod:`golden_al.curvefit.settings`)
are pooled by **summing their counts** (verify steps, accepted drafts, histogram,
accepted per position, requests): the pooled AL is ``1 + sum(accepted) / sum(steps)``
(:func:`distributions.units.al_from_counts`), the same ratio estimator one longer
run would give. Typical cases: several seeds of a sampled setting, a measurement
resumed into a second directory, or the same prompts measured twice.

The CI of one record is recomputed from its ``requests.jsonl`` by the current method
(:func:`distributions.uncertainty.al_interval` over its clusters), never copied: records
measured before the method changed hold an older interval (``uncertainty.recomputed_from``
then names it); only without the JSONL is the record's own ``al_ci95`` used. The CI of several records is that interval over the union of their
clusters when every record's ``requests.jsonl`` is present (the same prompt measured in
two records is one cluster); otherwise the records' CIs are combined by the delta method
(each standard error from its CI width / 3.92, weighted by its share of verify steps),
which assumes the records are independent.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from distributions import units
from distributions.counts import tidy_count
from distributions.uncertainty import JointAL, joint_al_bootstrap, se_from_ci, z_for_confidence
from golden_al.measure.records import LoadedRecord
from golden_al.measure.schema import MeasurementRecord, Uncertainty
from golden_al.measure.totals import interval_from_requests

__all__ = ["PooledCell", "check_shards", "joint_of", "pool_cell", "pool_records", "selection_of"]


def selection_of(records: Sequence[LoadedRecord]) -> frozenset[int] | None:
    """The prompt indices ``records`` hold together (None when a record does not say)."""
    out: set[int] = set()
    for lr in records:
        sel = lr.record.dataset.selection
        if sel is None:
            return None
        out.update(sel)
    return frozenset(out)


def check_shards(records: Sequence[LoadedRecord]) -> None:
    """Refuse records of one cell that hold the same prompt twice (overlapping shards).

    Records that name their prompts (``dataset.selection``) pool only when their
    selections are disjoint: a prompt measured twice would be two clusters of one
    unit and narrow the interval falsely. Records that do not name them (older
    records) are pooled as before. The settings (one prompt set: ``source_hash``) are
    checked by :func:`golden_al.curvefit.settings.check_agreement`.
    """
    from golden_al.curvefit.errors import SettingsMismatchError

    named = [lr for lr in records if lr.record.dataset.selection is not None]
    if len(named) < 2:
        return
    owner: dict[int, LoadedRecord] = {}
    for lr in named:
        for i in lr.record.dataset.selection or ():
            if i in owner:
                other = owner[i]
                both = sorted(set(other.record.dataset.selection or ()) & set(lr.record.dataset.selection or ()))
                raise SettingsMismatchError(
                    f"{lr.label()} and {other.label()} overlap: both hold prompts {both[:10]}"
                    + (f" and {len(both) - 10} more" if len(both) > 10 else "")
                    + " of the same set; pooling them would count those prompts twice",
                    field="dataset.selection", groups={"overlap": [lr.label(), other.label()]},
                    hint="pool disjoint shards only (measure --shard I/N); drop one of the two records")
            owner[i] = lr



@dataclass(frozen=True)
class PooledCell:
    """One (thinking mode, k) cell: the pooled counts, AL and CI, and where they come from.

    Attributes:
        ci_method: ``recomputed`` (one record's interval recomputed from its ``requests.jsonl``
            by the current method; ``uncertainty.recomputed_from`` says when the record held
            another), ``record`` (one record's own CI: no ``requests.jsonl``), ``clusters`` (the AL
            interval over the union of the pooled records' clusters) or ``delta`` (records' CIs
            combined).
        uncertainty: what the CI rests on (None for records that predate it, and for ``delta``).
        derived: the records are one-run derivations (truncation of a larger k).
        derived_from: the draft lengths they were derived from.
        integral: every count is an integer (observed, not expected, counts).
    """

    mode: str
    k: int
    records: tuple[LoadedRecord, ...]
    num_requests: int
    num_verify_steps: int | float
    num_accepted_drafts: int | float
    histogram: tuple[int | float, ...]
    per_position_accepted: tuple[int | float, ...]
    al: float
    ci95: tuple[float, float]
    ci_method: str
    derived: bool
    derived_from: tuple[int, ...]
    derivation_exact: bool | None
    estimate: bool
    uncertainty: Uncertainty | None = None
    histogram_known: bool = True  #: False when a record holds totals only (an imported aggregate)

    @property
    def integral(self) -> bool:
        if not self.histogram_known:
            return False
        vals = (self.num_verify_steps, self.num_accepted_drafts, *self.histogram, *self.per_position_accepted)
        return all(isinstance(v, int) for v in vals)

    @property
    def ci_width(self) -> float:
        return self.ci95[1] - self.ci95[0]


def pool_cell(records: Sequence[LoadedRecord], *, seed: int = 0) -> PooledCell:
    """Pool ``records`` (one mode, one k, one derived-ness, settings already checked)."""
    if not records:
        raise ValueError("pool_cell needs at least one record")
    first = records[0]
    k = first.k
    check_shards(records)
    hist = np.zeros(k + 1)
    pos = np.zeros(k)
    steps = acc = 0.0
    n_req = 0
    for lr in records:
        r = lr.record
        hist += np.asarray(r.histogram, dtype=np.float64)
        pos += np.asarray(r.per_position_accepted, dtype=np.float64)
        steps += float(r.num_verify_steps)
        acc += float(r.num_accepted_drafts)
        n_req += r.num_requests
    al = units.al_from_counts(acc, steps)
    uncertainty = None
    per_record = [lr.requests() for lr in records]
    if all(reqs for reqs in per_record):
        # recomputed from the clusters, never copied: a record's al_ci95 may come from an older method
        rows = [q for reqs in per_record for q in reqs]  # type: ignore[union-attr]
        own = first.record.uncertainty
        one_seed = own.seed if len(records) == 1 and own is not None and own.seed is not None else seed
        interval, unit = interval_from_requests(rows, k, seed=one_seed, merge_same_prompt=len(records) > 1)
        ci, method = interval.ci, ("recomputed" if len(records) == 1 else "clusters")
        uncertainty = Uncertainty.of(interval, unit)
        if len(records) == 1:
            same = own is not None and own.method == interval.method and all(
                abs(float(x) - y) <= 1e-9 for x, y in zip(first.record.al_ci95, interval.ci, strict=True))
            if not same:
                uncertainty = uncertainty.model_copy(update={"recomputed_from": own.method if own else "unrecorded"})
    elif len(records) == 1:
        lo, hi = first.record.al_ci95
        ci, method = (float(lo), float(hi)), "record"
        uncertainty = first.record.uncertainty
    else:
        var = 0.0
        for lr in records:
            lo, hi = lr.record.al_ci95
            se = float(se_from_ci(lo, hi))
            var += (float(lr.record.num_verify_steps) / steps * se) ** 2
        half = z_for_confidence(0.95) * math.sqrt(var)
        ci, method = (max(1.0, al - half), min(k + 1.0, al + half)), "delta"
    froms = tuple(sorted({lr.record.derived_from_draft_len for lr in records
                          if lr.record.derived_from_draft_len is not None}))
    exact = [lr.record.derivation_exact for lr in records if lr.record.derivation_exact is not None]
    return PooledCell(
        mode=first.mode_key,
        k=k,
        records=tuple(records),
        num_requests=n_req,
        num_verify_steps=tidy_count(steps),
        num_accepted_drafts=tidy_count(acc),
        histogram=tuple(tidy_count(v) for v in hist),
        per_position_accepted=tuple(tidy_count(v) for v in pos),
        al=al,
        ci95=ci,
        ci_method=method,
        derived=first.record.derived,
        derived_from=froms,
        derivation_exact=all(exact) if exact else None,
        estimate=first.record.estimate,
        uncertainty=uncertainty,
        histogram_known=all(lr.record.histogram_known for lr in records),
    )


def joint_of(cells: dict[int, PooledCell], *, seed: int = 0) -> JointAL | None:
    """The joint law of one mode's ALs over k, when the cells were measured on the same prompts.

    Every cell's records must have their ``requests.jsonl`` with per-request (or conversation)
    lines; the clusters are the prompts (by hash), lined up across k, zeros where a prompt was not
    measured at a k (:func:`distributions.uncertainty.joint_al_bootstrap`). None when a cell lacks
    its lines, holds counter windows, or the cells share no prompt (then they are independent).
    """
    from golden_al.measure.totals import prompt_clusters

    ks = sorted(cells)
    if len(ks) < 2:
        return None
    per_k: dict[int, dict[str, tuple[float, float]]] = {}
    for k in ks:
        merged: dict[str, tuple[float, float]] = {}
        for lr in cells[k].records:
            rows = lr.requests()
            got = prompt_clusters(rows, k) if rows else None
            if got is None:
                return None
            for key, (a, s) in got.items():
                a0, s0 = merged.get(key, (0.0, 0.0))
                merged[key] = (a0 + a, s0 + s)
        per_k[k] = merged
    keys = sorted(set().union(*(set(m) for m in per_k.values())))
    if not set.intersection(*(set(m) for m in per_k.values())):
        return None
    acc = np.array([[per_k[k].get(c, (0.0, 0.0))[0] for k in ks] for c in keys])
    st = np.array([[per_k[k].get(c, (0.0, 0.0))[1] for k in ks] for c in keys])
    return joint_al_bootstrap(acc, st, ks, seed=seed)


def pool_records(records: Sequence[LoadedRecord], out_dir: str | Path, *, seed: int = 0) -> MeasurementRecord:
    """Pool the records of one cell (disjoint shards of one prompt set) into one record in ``out_dir``.

    Writes ``measurement.json`` (the summed counts, the interval over every cluster of
    every record, the union of the selections, and provenance naming each source
    record and its sha256) and ``requests.jsonl`` (every record's lines, in order).

    Raises:
        UsageError: no records, records of several cells, or a record without its
            ``requests.jsonl`` (the interval needs the clusters).
        SettingsMismatchError: the records disagree on a setting or overlap.
    """
    from golden_al.curvefit.settings import check_agreement
    from golden_al.errors import UsageError
    from golden_al.measure.records import write_cell
    from golden_al.measure.schema import REQUESTS_FILE
    from golden_al.provenance import collect

    if not records:
        raise UsageError("no measurement records to pool")
    cells = sorted({(lr.mode_key, lr.k, lr.record.derived) for lr in records})
    if len(cells) > 1:
        raise UsageError("the records are of several cells: " + ", ".join(
            f"{m} k={k}{' (derived)' if d else ''}" for m, k, d in cells),
            hint="pool one (thinking mode, k) cell at a time; fit pools every cell itself")
    check_agreement(records, "curve", context="pooled records")
    check_agreement(records, "mode", context="pooled records")
    rows_by_record = [lr.requests() for lr in records]
    missing = [lr for lr, rows in zip(records, rows_by_record, strict=True) if rows is None]
    if missing:
        raise UsageError(f"{missing[0].label()} has no requests.jsonl beside it: the pooled interval needs its "
                         "clusters", hint="copy the record's requests.jsonl along with it")
    cell = pool_cell(records, seed=seed)
    first = records[0].record
    sel = selection_of(records)
    ds = first.dataset.model_copy(update={
        "count": len(sel) if sel is not None else sum(lr.record.dataset.count for lr in records),
        "selection": sorted(sel) if sel is not None else None,
        "hash": hashlib.sha256("".join(sorted(lr.record.dataset.hash for lr in records)).encode()).hexdigest(),
    })
    sources = sorted({lr.record.al_source for lr in records})
    warnings = sorted({w for lr in records for w in lr.record.warnings})
    record = first.model_copy(update={
        "dataset": ds,
        "al": cell.al,
        "al_ci95": cell.ci95,
        "uncertainty": cell.uncertainty,
        "al_source": sources[0] if len(sources) == 1 else "+".join(sources),
        "num_requests": cell.num_requests,
        "num_verify_steps": cell.num_verify_steps,
        "num_accepted_drafts": cell.num_accepted_drafts,
        "histogram": list(cell.histogram) if cell.histogram_known else [0] * (cell.k + 1),
        "per_position_accepted": list(cell.per_position_accepted) if cell.histogram_known else [0] * cell.k,
        "histogram_known": cell.histogram_known,
        "per_request_file": REQUESTS_FILE,
        "per_server": None,
        "warnings": [*warnings, f"pooled from {len(records)} records ({cell.ci_method} interval over their "
                     f"{sum(len(rows or ()) for rows in rows_by_record)} clusters)"],
        "provenance": {**collect(), "pooled_from": [{"path": str(lr.path), "sha256": lr.sha256}
                                                   for lr in records]},
    })
    record = MeasurementRecord.model_validate(record.model_dump())
    write_cell(out_dir, record, [r for rows in rows_by_record for r in rows or ()])
    return record
