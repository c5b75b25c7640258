"""What every import shares: its options, its result, bounded reading of the files, and the rows and
record of a run (:func:`imported_record`, through :func:`golden_al.measure.records.build_record`)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distributions.counts import AcceptanceCounts, tidy_count
from golden_al.errors import InputFileError, NoVerifyStepsError, UsageError
from golden_al.measure.records import build_record
from golden_al.measure.schema import (
    DatasetInfo,
    MeasurementRecord,
    ModelInfo,
    RequestResult,
    SamplingInfo,
    Timing,
    Uncertainty,
)
from golden_al.measure.totals import cell_totals
from golden_al.provenance import collect, sha256_file

__all__ = [
    "MAX_BYTES",
    "ImportOptions",
    "Imported",
    "dataset_info",
    "imported_record",
    "json_lines",
    "looks_json",
    "read_capped",
    "read_json_doc",
    "window_rows",
]

MAX_BYTES = 1 << 30


@dataclass
class ImportOptions:
    """What the files do not say (each may be required by a format)."""

    model: str | None = None
    draft_method: str | None = None
    draft_len: int | None = None
    thinking: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    max_tokens: int | None = None
    dataset: str | None = None
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    decode_log_interval: int | None = None  #: SGLang ``--decode-log-interval`` (sglang-log), when the log lacks it


@dataclass
class Imported:
    """One imported cell: its record and its clusters (lines of ``requests.jsonl``)."""

    record: MeasurementRecord
    rows: list[RequestResult]


def read_capped(path: Path) -> bytes:
    """The bytes of one imported file, bounded (:data:`MAX_BYTES`)."""
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise InputFileError(f"file is {size} bytes, more than the {MAX_BYTES} read", path=path,
                                 hint="split it, or import the part that holds the run")
        return path.read_bytes()
    except OSError as exc:
        raise InputFileError(f"cannot read: {exc.strerror or exc}", path=path) from None


def read_json_doc(path: Path) -> Mapping[str, Any]:
    """One imported JSON document, which must be an object."""
    try:
        value = json.loads(read_capped(path).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputFileError(f"not a JSON document: {exc}", path=path,
                             hint="a vllm bench serve --save-result file is one JSON object") from None
    if not isinstance(value, Mapping):
        raise InputFileError(f"expected a JSON object, got {type(value).__name__}", path=path)
    return value




def window_rows(windows: Sequence[AcceptanceCounts], k: int, what: str, output_tokens: Sequence[int], *,
          unit: str = "window") -> list[RequestResult]:
    """One row per window of counts (a cluster each), with what the source says of its histogram."""
    rows = []
    for i, c in enumerate(windows):
        known = c.histogram is not None and c.per_position_accepted is not None
        rows.append(RequestResult(
            index=i, request_id=f"{what}-{i}", draft_len=k, prompt_hash="",
            num_output_tokens=int(output_tokens[i]) if i < len(output_tokens) else 0,
            num_verify_steps=c.num_verify_steps, num_accepted_drafts=c.num_accepted_drafts,
            histogram=[tidy_count(float(v)) for v in c.histogram or ()] if known else [0] * (k + 1),
            per_position_accepted=[tidy_count(float(v)) for v in c.per_position_accepted or ()] if known else [0] * k,
            histogram_known=known, draft_len_observed=c.most_drafts,
            extra={"imported": what, unit: i, "unit": []}))
    return rows


def imported_record(rows: list[RequestResult], *, k: int, opts: ImportOptions, engine: str, source: str,
                    files: Sequence[Path], model: str | None, num_requests: int, dataset: DatasetInfo,
                    warnings: list[str], max_concurrency: Any = None, unit: str = "imported counter window",
                    engine_version: str | None = None, extra_provenance: Mapping[str, Any] | None = None,
                    timing: Timing | None = None) -> Imported:
    """The record of an imported run from its rows (:func:`golden_al.measure.records.build_record`), after
    checking that the options say what the source does not (thinking, temperature, max tokens)."""
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


def dataset_info(name: str, count: int, key: str, source: str) -> DatasetInfo:
    """The dataset of an imported run, identified by ``key`` (hashed)."""
    h = hashlib.sha256(key.encode()).hexdigest()
    return DatasetInfo(name=name, count=count, hash=h, source_hash=h, source=source)


def looks_json(p: Path) -> bool:
    """Whether a file starts like a JSON document."""
    head = read_capped(p)[:64].lstrip()
    return head.startswith(b"{")


# ------------------------------------------------------------------------------ SGLang
def json_lines(path: Path) -> list[tuple[int, Mapping[str, Any]]]:
    """The JSON objects of a JSON-lines file (a file that is one JSON object counts as one line)."""
    text = read_capped(path).decode("utf-8", errors="replace")
    stripped = text.strip()
    if stripped.startswith("{") and "\n" in stripped:
        try:  # one pretty-printed object
            whole = json.loads(stripped)
        except json.JSONDecodeError:
            whole = None
        if isinstance(whole, Mapping):
            return [(1, whole)]
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputFileError(f"not a JSON line: {exc.msg} (column {exc.colno})", path=path, line=n,
                                 hint="bench_serving --output-file writes one JSON object per line") from None
        if not isinstance(obj, Mapping):
            raise InputFileError(f"expected a JSON object, got {type(obj).__name__}", path=path, line=n)
        out.append((n, obj))
    if not out:
        raise InputFileError("empty: no JSON object", path=path)
    return out
