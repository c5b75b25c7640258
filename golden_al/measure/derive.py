"""A record at a smaller draft length derived from a measured one (``--one-run``, ``--allow-derived``).

Each request's per-step acceptance is truncated at the smaller ``k`` (:func:`truncate_result`):
a step that accepted ``n`` drafts counts ``min(n, k)``. Never exact for real drafts: steps would
have started elsewhere, and a block draft's drafts depend on the block size itself. Derived
records say so (``derived``, ``derivation_exact: false``, a warning) and are validated against
measured points (``sweep --validate-k``; experiments/one-run-vs-per-k, experiments/dflash-trained).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path

from distributions.counts import tidy_count
from golden_al.errors import UsageError
from golden_al.measure.records import build_record, write_cell
from golden_al.measure.schema import MeasurementRecord, RequestResult
from golden_al.measure.totals import cell_totals
from golden_al.provenance import collect, now_iso

__all__ = ["derive_record", "truncate_result"]


def truncate_result(r: RequestResult, k: int) -> RequestResult:
    """One request's counts at the smaller draft length ``k`` (chain truncation)."""
    if k > r.draft_len:
        raise UsageError(f"cannot derive k={k} from a result at k={r.draft_len}")
    hist = [float(v) for v in r.histogram]
    new_hist = [*hist[:k], math.fsum(hist[k:])]
    acc = math.fsum(j * v for j, v in enumerate(new_hist))

    extra = dict(r.extra or {})
    extra["derived_from_draft_len"] = r.draft_len
    return r.model_copy(update={
        "draft_len": k,
        "num_accepted_drafts": tidy_count(acc),
        "histogram": [tidy_count(v) for v in new_hist],
        "per_position_accepted": list(r.per_position_accepted[:k]),
        "accept_lengths": None if r.accept_lengths is None else [min(L, k + 1) for L in r.accept_lengths],
        "text": None,
        "draft_len_observed": None,  # the server ran the larger k: a truncation observes no k
        "extra": extra,
    })


def derive_record(source: MeasurementRecord, results: Sequence[RequestResult], k: int, out_dir: Path, *,
                  chain: bool, bootstrap_seed: int = 0) -> MeasurementRecord:
    """The record at ``k`` derived from a measured cell at a larger draft length."""
    started = now_iso()
    kmax = source.draft_len
    rows = [truncate_result(r, k) for r in results if r.draft_len == kmax]
    totals = cell_totals(rows, k, seed=bootstrap_seed, what=f" (derived from k={kmax})")
    warning = (f"derived from the measurement at k={kmax} by truncating each request's per-step acceptance; "
               "NOT exact: " + ("a chain draft's derivation is exact only if acceptance does not depend on where "
                                "steps start, and bursty acceptance biases it low (see "
                                "experiments/one-run-vs-per-k)" if chain else
                                "a block draft's drafts depend on the block size")
               + "; validate with --validate-k")
    record = build_record(
        results=rows, draft_len=k, engine=source.engine, engine_version=source.engine_version, mode=source.mode,
        estimate=source.estimate, target=source.target, draft=source.draft, draft_method=source.draft_method,
        thinking=source.thinking, chat_template_kwargs=source.chat_template_kwargs, sampling=source.sampling,
        dataset=source.dataset, al_source=f"{source.al_source}+truncated-from-k{kmax}",
        provenance=collect(started=started, ended=now_iso()), seed=bootstrap_seed,
        warnings=[*source.warnings, warning], block_draft=source.block_draft, server=source.server,
        # the measured record's warnings already say what its interval rests on
        totals=dataclasses.replace(totals, notes=()))
    record = record.model_copy(update={
        "derived": True,
        "derived_from_draft_len": kmax,
        "derivation_exact": False,
        "per_server": source.per_server,
    })
    record = MeasurementRecord.model_validate(record.model_dump())
    write_cell(out_dir, record, rows)
    return record
