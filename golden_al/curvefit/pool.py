"""Pool the records of one (thinking mode, k) cell into one AL with a 95% CI.

Records of one cell that share every setting (:mod:`golden_al.curvefit.settings`)
are pooled by **summing their counts** (verify steps, accepted drafts, histogram,
accepted per position, requests): the pooled AL is ``1 + sum(accepted) / sum(steps)``
(:func:`distributions.units.al_from_counts`), the same ratio estimator one longer
run would give. Typical cases: several seeds of a sampled setting, a measurement
resumed into a second directory, or the same prompts measured twice.

The CI of one record is its own ``al_ci95`` (:func:`distributions.uncertainty.al_interval`
over its clusters). The CI of several records is that interval over the union of their
clusters when every record's ``requests.jsonl`` is present (the same prompt measured in
two records is one cluster); otherwise the records' CIs are combined by the delta method
(each standard error from its CI width / 3.92, weighted by its share of verify steps),
which assumes the records are independent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from distributions import units
from distributions.counts import tidy_count
from distributions.uncertainty import se_from_ci, z_for_confidence
from golden_al.curvefit.records import LoadedRecord
from golden_al.measurement import Uncertainty, interval_from_requests

__all__ = ["PooledCell", "pool_cell"]



@dataclass(frozen=True)
class PooledCell:
    """One (thinking mode, k) cell: the pooled counts, AL and CI, and where they come from.

    Attributes:
        ci_method: ``record`` (one record's own CI), ``clusters`` (the AL interval over the
            union of the pooled records' clusters) or ``delta`` (records' CIs combined).
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

    @property
    def integral(self) -> bool:
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
    if len(records) == 1:
        lo, hi = first.record.al_ci95
        ci, method = (float(lo), float(hi)), "record"
        uncertainty = first.record.uncertainty
    else:
        per_record = [lr.requests() for lr in records]
        if all(reqs for reqs in per_record):
            rows = [q for reqs in per_record for q in reqs]  # type: ignore[union-attr]
            interval, unit = interval_from_requests(rows, k, seed=seed, merge_same_prompt=True)
            ci, method = interval.ci, "clusters"
            uncertainty = Uncertainty.of(interval, unit)
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
    )
