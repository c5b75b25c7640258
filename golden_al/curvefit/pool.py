"""Pool the records of one (thinking mode, k) cell into one AL with a 95% CI.

Records of one cell that share every setting (:mod:`golden_al.curvefit.settings`)
are pooled by **summing their counts** (verify steps, accepted drafts, histogram,
accepted per position, requests): the pooled AL is ``1 + sum(accepted) / sum(steps)``
(:func:`distributions.units.al_from_counts`), the same ratio estimator one longer
run would give. Typical cases: several seeds of a sampled setting, a measurement
resumed into a second directory, or the same prompts measured twice.

The CI of one record is its own ``al_ci95`` (a cluster bootstrap over its requests).
The CI of several records is a cluster bootstrap over the union of their requests
when every record's ``requests.jsonl`` is present; otherwise the records' CIs are
combined by the delta method (each standard error from its CI width / 3.92, weighted
by its share of verify steps), which assumes the records are independent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from distributions import units
from distributions.counts import tidy_count
from distributions.uncertainty import cluster_bootstrap_al, se_from_ci, z_for_confidence
from golden_al.curvefit.records import LoadedRecord

__all__ = ["PooledCell", "pool_cell"]



@dataclass(frozen=True)
class PooledCell:
    """One (thinking mode, k) cell: the pooled counts, AL and CI, and where they come from.

    Attributes:
        ci_method: ``record`` (one record's own CI), ``cluster-bootstrap`` (over the
            union of the pooled records' requests) or ``delta`` (records' CIs combined).
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

    @property
    def integral(self) -> bool:
        vals = (self.num_verify_steps, self.num_accepted_drafts, *self.histogram, *self.per_position_accepted)
        return all(isinstance(v, int) for v in vals)

    @property
    def ci_width(self) -> float:
        return self.ci95[1] - self.ci95[0]


def pool_cell(records: Sequence[LoadedRecord], *, rng: np.random.Generator, num_resamples: int = 2000) -> PooledCell:
    """Pool ``records`` (one mode, one k, one derived-ness, settings already checked)."""
    if not records:
        raise ValueError("pool_cell needs at least one record")
    first = records[0]
    k = first.k
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
    if len(records) == 1:
        lo, hi = first.record.al_ci95
        ci, method = (float(lo), float(hi)), "record"
    else:
        per_record = [lr.requests() for lr in records]
        if all(reqs for reqs in per_record):
            rows = [q for reqs in per_record for q in reqs if float(q.num_verify_steps) > 0]  # type: ignore[union-attr]
            boot = cluster_bootstrap_al([float(q.num_accepted_drafts) for q in rows],
                                        [float(q.num_verify_steps) for q in rows],
                                        rng=rng, num_resamples=num_resamples)
            ci, method = boot.ci, "cluster-bootstrap"
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
    )
