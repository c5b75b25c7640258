"""Build and resume measurement records from per-request results (engine-agnostic, torch-free).

Any engine that yields per-request counts can use these helpers to write
``requests.jsonl`` as requests finish and ``measurement.json`` at the end:

* :func:`request_result`: one :class:`~golden_al.measurement.RequestResult`;
* :class:`RequestLog`: the per-k ``requests.jsonl`` with resume (which indices
  are done, checked against the prompt hash and the run settings);
* :func:`build_record`: the :class:`~golden_al.measurement.MeasurementRecord`
  (AL from :func:`distributions.units.al_from_counts`, the interval over clusters).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distributions.counts import tidy_count
from golden_al.errors import InputFileError, UsageError
from golden_al.measurement import (
    MEASUREMENT_FILE,
    REQUESTS_FILE,
    BlockDraftInfo,
    CellTotals,
    DatasetInfo,
    MeasurementRecord,
    ModelInfo,
    RequestResult,
    SamplingInfo,
    ServerInfo,
    Timing,
    Uncertainty,
    append_request_result,
    cell_totals,
    read_request_results,
)

__all__ = ["RequestLog", "build_record", "request_result"]


def request_result(
    *,
    index: int,
    request_id: str,
    draft_len: int,
    prompt_hash: str,
    num_prompt_tokens: int | None,
    num_output_tokens: int,
    num_verify_steps: float,
    num_accepted_drafts: float,
    histogram: Sequence[float],
    per_position_accepted: Sequence[float],
    accept_lengths: Sequence[int] | None,
    finish_reason: str | None,
    wall_s: float | None,
    extra: Mapping[str, Any] | None = None,
) -> RequestResult:
    """One line of ``requests.jsonl`` (counts are floats only when they are expectations)."""
    return RequestResult(
        index=index,
        request_id=request_id,
        draft_len=draft_len,
        prompt_hash=prompt_hash,
        num_prompt_tokens=num_prompt_tokens,
        num_output_tokens=num_output_tokens,
        num_verify_steps=tidy_count(num_verify_steps),
        num_accepted_drafts=tidy_count(num_accepted_drafts),
        histogram=[tidy_count(v) for v in histogram],
        per_position_accepted=[tidy_count(v) for v in per_position_accepted],
        accept_lengths=list(accept_lengths) if accept_lengths is not None else None,
        finish_reason=finish_reason,
        wall_s=None if wall_s is None else round(float(wall_s), 3),
        extra=dict(extra) if extra else None,
    )


@dataclass
class RequestLog:
    """``requests.jsonl`` of one draft length, with what is already done (for ``--resume``).

    ``settings`` is stored in every line's ``extra["run"]``; resuming a file written
    with other settings, or whose prompt hash at an index differs, is an error.
    """

    path: Path
    draft_len: int
    settings: dict[str, Any]
    done: dict[int, RequestResult] = field(default_factory=dict)
    resumed: set[int] = field(default_factory=set)
    """Indices read back from an earlier run."""

    @classmethod
    def open(cls, out_dir: Path, draft_len: int, settings: dict[str, Any], *, resume: bool) -> RequestLog:
        """Open (or start) ``out_dir/requests.jsonl``; refuses to mix runs unless ``resume``."""
        path = Path(out_dir) / REQUESTS_FILE
        log = cls(path=path, draft_len=draft_len, settings=settings)
        if path.exists() and path.stat().st_size > 0:
            if not resume:
                raise UsageError(
                    f"{path} already holds results",
                    hint="pass --resume to continue that run, or choose another --out directory",
                )
            for r in read_request_results(path):
                run = (r.extra or {}).get("run")
                if r.draft_len != draft_len or run != settings:
                    diff = {k: (run or {}).get(k) for k in settings if (run or {}).get(k) != settings[k]}
                    raise InputFileError(
                        f"request {r.index} was measured with other settings {diff or r.draft_len} "
                        f"than this run ({ {k: settings[k] for k in diff} or draft_len})",
                        path=path,
                        hint="resume with the same options, or choose another --out directory",
                    )
                log.done[r.index] = r
                log.resumed.add(r.index)
        elif (Path(out_dir) / MEASUREMENT_FILE).exists() and not resume:
            raise UsageError(f"{Path(out_dir) / MEASUREMENT_FILE} already exists",
                             hint="choose another --out directory")
        return log

    def check_prompt(self, index: int, prompt_hash: str) -> None:
        """Raise when a done request at ``index`` was made from another prompt."""
        old = self.done.get(index)
        if old is not None and old.prompt_hash != prompt_hash:
            raise InputFileError(
                f"request {index} in this file was made from another prompt "
                f"(hash {old.prompt_hash[:12]}..., now {prompt_hash[:12]}...)",
                path=self.path, hint="resume with the same --prompts and --num-prompts, or another --out",
            )

    def append(self, result: RequestResult) -> None:
        """Append a finished request (flushed and fsynced), tagged with the run settings."""
        if result.index in self.done:
            raise ValueError(f"request {result.index} is already in {self.path}")
        result.extra = {**(result.extra or {}), "run": self.settings}
        append_request_result(self.path, result)
        self.done[result.index] = result

    def results(self) -> list[RequestResult]:
        """All results, in index order."""
        return [self.done[i] for i in sorted(self.done)]


def _observed_k(results: Sequence[RequestResult], draft_len: int, al_source: str) -> int | None:
    """The k the cell's rows show (the most drafts a verify step proposed), None where none shows it.

    Raises:
        CounterSemanticsError: another k than ``draft_len`` (:func:`golden_al.formats.validate.check_observed_k`).
    """
    from golden_al.formats.validate import check_observed_k

    observed = max((r.draft_len_observed for r in results if r.draft_len == draft_len
                    and r.draft_len_observed is not None), default=None)
    check_observed_k(observed, draft_len, what=f"the {al_source} rows of the cell")
    return observed


def build_record(
    *,
    results: Sequence[RequestResult],
    draft_len: int,
    engine: str,
    engine_version: str | None,
    mode: str,
    estimate: bool,
    target: ModelInfo,
    draft: ModelInfo,
    draft_method: str,
    thinking: str,
    chat_template_kwargs: Mapping[str, Any],
    sampling: SamplingInfo,
    dataset: DatasetInfo,
    al_source: str,
    provenance: dict[str, Any],
    seed: int | None,
    warnings: Sequence[str] = (),
    per_request_file: str = REQUESTS_FILE,
    block_draft: BlockDraftInfo | None = None,
    server: ServerInfo | None = None,
    totals: CellTotals | None = None,
    unit: str | None = None,
    num_requests: int | None = None,
    what: str = "",
    timing: Timing | None = None,
) -> MeasurementRecord:
    """The record of one cell from its per-request results (AL and its 95% interval over clusters): the
    one builder of the reference engine, servers, imports and derivations.

    ``totals``: the cell's totals when the caller needed them first (else computed here, ``what``
    naming the cell in the error); ``unit``: what one cluster is, when the lines' own form does not
    say it (an imported window); ``num_requests``: the run's requests, when the lines do not list them;
    ``timing``: what the run timed (:class:`~golden_al.measurement.Timing`).
    A line that holds totals only (``histogram_known`` false) makes the record's histogram unknown: it
    is written as zeros, never as a partial sum.

    Raises:
        NoVerifyStepsError: no request made a verify step (:func:`golden_al.measurement.cell_totals`).
        CounterSemanticsError: the rows show another k (``draft_len_observed``) than ``draft_len``.
    """
    if totals is None:
        totals = cell_totals(results, draft_len, seed=0 if seed is None else seed, what=what)
    counts, interval = totals.counts, totals.interval
    notes = [*warnings, *totals.notes]
    known = all(r.histogram_known for r in results if r.draft_len == draft_len)
    return MeasurementRecord(
        engine=engine,
        engine_version=engine_version,
        mode=mode,
        estimate=estimate,
        target=target,
        draft=draft,
        draft_method=draft_method,
        block_draft=block_draft,
        draft_len=draft_len,
        draft_len_observed=_observed_k(results, draft_len, al_source),
        thinking=thinking,  # type: ignore[arg-type]
        chat_template_kwargs=dict(chat_template_kwargs),
        sampling=sampling,
        dataset=dataset,
        al=interval.al,
        al_ci95=interval.ci,
        uncertainty=Uncertainty.of(interval, unit or totals.unit),
        al_source=al_source,
        num_requests=totals.num_requests if num_requests is None else num_requests,
        num_verify_steps=counts.num_verify_steps,
        num_accepted_drafts=counts.num_accepted_drafts,
        per_position_accepted=counts.per_position_accepted if known else [0] * draft_len,
        histogram=counts.histogram if known else [0] * (draft_len + 1),
        histogram_known=known,
        per_request_file=per_request_file,
        warnings=notes,
        provenance=provenance,
        server=server,
        timing=timing,
    )
