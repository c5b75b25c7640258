"""The record of an imported run (:func:`imported_record`, through :func:`golden_al.measure.records.build_record`):
its rows and provenance, from what the engine's importer read (:class:`golden_al.plugin.imported.ImportedRun`)."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

from golden_al.errors import InputFileError, NoVerifyStepsError, UsageError
from golden_al.measure.records import build_record
from golden_al.measure.schema import (
    DatasetInfo,
    MeasurementRecord,
    ModelInfo,
    RequestResult,
    SamplingInfo,
    Uncertainty,
)
from golden_al.measure.totals import cell_totals, timing_block
from golden_al.plugin.imported import ImportedDataset, ImportedRun, ImportedWindows
from golden_al.provenance import collect, sha256_file

__all__ = ["Imported", "imported_record"]

@dataclass
class Imported:
    """One imported cell: its record and its clusters (lines of ``requests.jsonl``)."""

    record: MeasurementRecord
    rows: list[RequestResult]


def window_rows(w: ImportedWindows) -> list[RequestResult]:
    """One row per window of counts (a cluster each), with what the source says of its histogram."""
    windows, k, what, output_tokens, unit = w.windows, w.k, w.what, w.output_tokens, w.unit
    rows = []
    for i, c in enumerate(windows):
        known = c.histogram is not None and c.per_position_accepted is not None
        rows.append(RequestResult(
            index=i, request_id=f"{what}-{i}", draft_len=k, prompt_hash="",
            num_output_tokens=int(output_tokens[i]) if i < len(output_tokens) else 0,
            num_verify_steps=c.num_verify_steps, num_accepted_drafts=c.num_accepted_drafts,
            histogram=list(c.histogram or ()) if known else [0] * (k + 1),
            per_position_accepted=list(c.per_position_accepted or ()) if known else [0] * k,
            histogram_known=known, draft_len_observed=c.most_drafts,
            extra={"imported": what, unit: i, "unit": []}))
    return rows


def imported_record(run: ImportedRun) -> Imported:
    """The record of an imported run (:func:`golden_al.measure.records.build_record`), after checking that the
    options say what the source does not (thinking, temperature, max tokens)."""
    rows, k, opts, files, model, warnings, unit = (window_rows(run.rows), run.k, run.opts, run.files, run.model,
                                                   run.warnings, run.unit)
    engine, source, num_requests, max_concurrency = run.engine, run.source, run.num_requests, run.max_concurrency
    engine_version, extra_provenance, dataset = run.engine_version, run.extra_provenance, dataset_info(run.dataset)
    timing = timing_block(run.timed, source=run.timing_source, unit=run.timing_unit) if run.timed else None
    missing = [name for name, v in (("--thinking", opts.thinking), ("--temperature", opts.temperature),
                                    ("--max-tokens", opts.max_tokens)) if v is None]
    if missing:
        raise UsageError(f"{files[0]} does not say {', '.join(missing)}: pass them",
                         hint="the record keeps the settings the run used; fit refuses records without them")
    try:
        totals = cell_totals(rows, k, seed=0)
    except NoVerifyStepsError:
        raise InputFileError("no verify steps in the imported counts: AL is undefined", path=files[0]) from None
    warn = list(warnings)
    one_window = len(rows) < 2
    if one_window:  # no clusters to spread: the interval is the whole range, said so
        totals = dataclasses.replace(totals, notes=())
        warn.append("one aggregate window: the counts carry no interval, so al_ci95 is the whole range [1, k+1]; "
                    "import the server's counters during the run, its log, or per-request responses for clusters")
    if not all(r.histogram_known for r in rows):  # the builder writes the histogram as zeros
        warn.append("totals only: the source reports no per-step histogram, so histogram and per_position_accepted "
                    "are zeros (histogram_known: false); the AL and its interval rest on the totals")
    rec = build_record(
        results=rows, draft_len=k, engine=engine, engine_version=engine_version, mode="imported", estimate=False,
        target=ModelInfo(name=opts.model or model or "unknown", source="server"),
        draft=ModelInfo(name=f"{opts.draft_method or 'unknown'} draft", source="server"),
        draft_method=opts.draft_method or "unknown", thinking=str(opts.thinking),
        chat_template_kwargs=dict(opts.chat_template_kwargs),
        sampling=SamplingInfo(temperature=float(opts.temperature or 0.0), top_p=float(opts.top_p or 1.0),
                              top_k=opts.top_k, max_tokens=int(opts.max_tokens or 1)),
        dataset=dataset, al_source=source, seed=0, warnings=warn, totals=totals, unit=unit, num_requests=num_requests,
        provenance={**collect(), "imported_from": [{"path": str(p), "sha256": sha256_file(p)} for p in files],
                    **({"max_concurrency": max_concurrency} if max_concurrency is not None else {}),
                    **(extra_provenance or {})}, timing=timing,
    )
    if one_window:
        rec = rec.model_copy(update={"al_ci95": (1.0, float(k + 1)), "uncertainty": Uncertainty(
            method="none: one aggregate window", clusters=1, confidence=0.95, unit=unit)})
    return Imported(rec, rows)


def dataset_info(d: ImportedDataset) -> DatasetInfo:
    """The dataset of an imported run, identified by its ``key`` (hashed)."""
    h = hashlib.sha256(d.key.encode()).hexdigest()
    return DatasetInfo(name=d.name, count=d.count, hash=h, source_hash=h, source=d.source)
