"""From a server's answers to a cell's rows and records: the counts of one response checked against
independent evidence (tokens, k) before they are believed (:func:`cross_check`), the row of a request
(:func:`result_row`), rows split by the draft length they ran at, and the record of a cell
(:func:`record_from_results`)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from distributions.counts import AcceptanceCounts, Count, from_histogram
from golden_al.measure.cell import CellPlan, ChatPrompt
from golden_al.measure.records import build_record, write_cell
from golden_al.measure.schema import (
    BY_DRAFT_LEN_DIR,
    MeasurementRecord,
    RequestResult,
    ServerInfo,
)
from golden_al.measure.totals import cell_totals, request_timing
from golden_al.plugin.checks_ran import ran
from golden_al.provenance import collect, now_iso
from golden_al.servers.retokenize import text_and_finish

__all__ = [
    "MIN_WINDOWS",
    "OTHER_DRAFT_LENS",
    "cross_check",
    "record_from_results",
    "reported_al",
    "result_row",
    "split_draft_len_rows",
    "usage_tokens",
    "write_draft_len_records",
]

# ---------------------------------------------------------------------------- results
def _token_count(value: Any, field: str) -> int | None:
    """A token count as an answer gives it: absent (None), or a whole non-negative number; anything else (a string,
    NaN, a fraction, a negative) is evidence that contradicts itself: refused, naming the field."""
    import math

    from golden_al.errors import CountsDisagreeError

    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < 0 or value != int(value):
        raise CountsDisagreeError(f"the answer's {field} is {value!r}, not a token count",
                                  hint="a server reports whole, non-negative token counts; this one cannot be believed")
    return int(value)


def usage_tokens(resp: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """(prompt tokens, completion tokens) of one answer (``usage``, else SGLang's ``meta_info``; None: absent).

    Raises:
        CountsDisagreeError: a count that is present but not a whole non-negative number (named).
    """
    for block in ("usage", "meta_info"):
        node = resp.get(block)
        if isinstance(node, Mapping):
            return (_token_count(node.get("prompt_tokens"), f"{block}.prompt_tokens"),
                    _token_count(node.get("completion_tokens"), f"{block}.completion_tokens"))
    return None, None


def cross_check(plan: CellPlan, counts: AcceptanceCounts, responses: Sequence[Mapping[str, Any]],
                 label: str) -> None:
    """The unit's counts against the tokens its answers report and the draft length
    (:mod:`golden_al.servers.crosscheck`), and each OpenAI answer's ``model`` against the model the
    run measures (native answers, SGLang's ``/generate``, carry none); raises CountsDisagreeError
    before anything is recorded."""
    from golden_al.errors import CountsDisagreeError
    from golden_al.plugin.registry import get_profile
    from golden_al.servers.crosscheck import check_unit

    for resp in responses:  # an OpenAI answer names the model that wrote it: the one the run measures
        if "choices" in resp and resp.get("model") != plan.served_model:
            got = resp.get("model")
            raise CountsDisagreeError(
                f"{label}: the answer's model is {got!r}, the run measures {plan.served_model!r}: "
                + ("the field is missing, so who wrote it cannot be checked" if got is None else
                   "the server changed (or another one answered) during the run"),
                hint="measure one server that serves one model for the whole run")
        if "choices" in resp:
            ran("answer-model")
    outs = [usage_tokens(r)[1] for r in responses]
    missing = sum(c is None for c in outs)
    if missing:
        raise CountsDisagreeError(f"{label}: {missing} of {len(outs)} answer(s) carry no completion token count "
                                  "(usage.completion_tokens or meta_info.completion_tokens): the acceptance counts "
                                  "cannot be checked against the tokens generated, so they are not recorded",
                                  hint="a server that reports acceptance reports its token counts too; is the "
                                       "endpoint or a proxy stripping usage?")
    ran("completion-tokens", len(outs))
    if plan.tokenizer is not None:  # the text itself: a count the server inflated with its claim is found here
        from golden_al.servers.retokenize import check_text_tokens

        check_text_tokens(plan.tokenizer, responses, [c for c in outs if c is not None], label)
    check_unit(counts, k=plan.draft_len, completion_tokens=sum(c for c in outs if c is not None),
               requests=len(responses), label=label, draft_method=plan.draft_method,
               exact_proposals=get_profile(plan.engine).server.exact_proposals)


def result_row(plan: CellPlan, prompts: Sequence[ChatPrompt], responses: Sequence[Mapping[str, Any]],
               counts: AcceptanceCounts, wall_s: float, extra: dict[str, Any], *, window: bool = False) -> RequestResult:
    """The row of one unit (a request, or a window of requests: ``window``, or more than one prompt; a batch of
    counter windows may hold none) from its answers and its checked counts."""
    k = plan.draft_len
    known = counts.histogram is not None  # a source of totals only (TensorRT-LLM /perf_metrics): zeros, not measured
    hist: list[Count] = list(counts.histogram or ()) if known else [0] * (k + 1)
    pos: list[Count] = list(counts.per_position_accepted or ()) if known else [0] * k
    prompt_tokens = 0
    out_tokens = 0
    known_prompt = True
    texts: list[str] = []
    finishes: list[str] = []
    ids: list[str] = []
    for resp in responses:
        p, c = usage_tokens(resp)
        if p is None:
            known_prompt = False
        prompt_tokens += p or 0
        out_tokens += c or 0
        text, finish = text_and_finish(resp)
        texts.append(text or "")
        finishes.append(finish or "")
        ids.append(str(resp.get("id") or (resp.get("meta_info") or {}).get("id") or ""))
    decode = [reported_al(resp, plan.engine, "decode_ms") for resp in responses]  # the engine's own decode time
    window = window or len(prompts) > 1
    if window:
        extra = {**extra, "unit": [p.index for p in prompts], "prompt_hashes": [p.prompt_hash for p in prompts],
                 "request_ids": ids, "finish_reasons": finishes}
        prompt_hash = hashlib.sha256("".join(p.prompt_hash for p in prompts).encode()).hexdigest()
    else:
        prompt_hash = prompts[0].prompt_hash
    return RequestResult(
        index=prompts[0].index if prompts else 0,
        request_id=ids[0] if not window else ",".join(ids),
        draft_len=k,
        prompt_hash=prompt_hash,
        num_prompt_tokens=prompt_tokens if known_prompt else None,
        num_output_tokens=out_tokens,
        num_verify_steps=counts.num_verify_steps,
        num_accepted_drafts=counts.num_accepted_drafts,
        histogram=hist,
        per_position_accepted=pos,
        histogram_known=known,
        draft_len_observed=observed_k(plan, counts),
        finish_reason=None if window else (finishes[0] or None),
        wall_s=round(wall_s, 4),
        decode_ms=None if None in decode else round(sum(d for d in decode if d is not None), 3),
        load1=round(os.getloadavg()[0], 2),
        text=("\n\x1e".join(texts) if plan.save_text else None),
        extra=extra or None,
    )


def observed_k(plan: CellPlan, counts: AcceptanceCounts) -> int | None:
    """The k a unit's counts show: the most drafts a step proposed, where the source reports it, or proposals that
    the engine's profile says are exactly k per step (checked by :func:`cross_check`)."""
    from golden_al.plugin.registry import get_profile

    steps, proposed = float(counts.num_verify_steps), counts.num_draft_tokens
    if counts.most_drafts is None and proposed is not None and steps > 0 and \
            get_profile(plan.engine).server.exact_proposals:
        return round(float(proposed) / steps)
    return counts.most_drafts


def reported_al(resp: Mapping[str, Any], engine: str, key: str = "reported_al") -> float | None:
    """The AL the server itself reports for one answer, where the engine's profile names such a response field
    (``response_fields["reported_al"]``: SGLang's ``meta_info`` accept length, vLLM's per-request mean), or None;
    with ``key`` another numeric field the profile names (``decode_ms``: llama.cpp's ``timings.predicted_ms``)."""
    from golden_al.plugin.registry import get_profile

    field = get_profile(engine).server.response_fields.get(key)
    if field is None:
        return None
    choices = resp.get("choices")
    homes = [choices[0]] if isinstance(choices, list) and choices and isinstance(choices[0], Mapping) else []
    for home in (*homes, resp):
        node: Any = home
        for part in field.path.split(".") if field.path else ():
            node = node.get(part) if isinstance(node, Mapping) else None
        if isinstance(node, Mapping):
            for name in field.names:
                value = node.get(name)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    return float(value)
    return None


MIN_WINDOWS = 20


OTHER_DRAFT_LENS = "other_draft_lens"


def split_draft_len_rows(results: Sequence[RequestResult], k: int) -> dict[int, list[RequestResult]]:
    """Rows at each other draft length ``d``, from the ``other_draft_lens`` the requests at ``k`` carry.

    A server that reports per-step draft lengths (vLLM's ``per_step_drafted``) lets a cell that
    mixes lengths (adaptive speculation) keep one histogram per length instead of refusing it.
    """
    out: dict[int, list[RequestResult]] = {}
    for r in results:
        if r.draft_len != k or not r.extra or not isinstance(r.extra.get(OTHER_DRAFT_LENS), Mapping):
            continue
        for key, hist in r.extra[OTHER_DRAFT_LENS].items():
            d = int(key)
            c = from_histogram(hist, k=d, source=f"request {r.index}")
            out.setdefault(d, []).append(RequestResult(
                index=r.index, request_id=r.request_id, draft_len=d, prompt_hash=r.prompt_hash,
                num_prompt_tokens=r.num_prompt_tokens, num_output_tokens=r.num_output_tokens,
                num_verify_steps=c.num_verify_steps, num_accepted_drafts=c.num_accepted_drafts,
                histogram=list(c.histogram or ()), per_position_accepted=list(c.per_position_accepted or ()),
                finish_reason=r.finish_reason, turn=r.turn, extra={"split_from_draft_len": k}))
    return dict(sorted(out.items()))


def write_draft_len_records(plan: CellPlan, results: Sequence[RequestResult], directory: Path, *,
                             source_name: str, server: ServerInfo | None, engine_version: str | None,
                             started: str) -> list[str]:
    """One record per other draft length under ``directory/by_draft_len/k{d}``; the warnings for the main one."""
    split = split_draft_len_rows(results, plan.draft_len)
    notes = []
    for d, rows in split.items():
        sub = directory / BY_DRAFT_LEN_DIR / f"k{d}"
        why = [f"steps the server drafted at length {d} in a cell configured for k={plan.draft_len} (it reports "
               "each step's draft length: adaptive or per-batch-size speculation); one histogram per draft length",
               "a server that picks the length by acceptance drafts short where acceptance is low: this histogram is "
               f"conditioned on that choice, not k={d} measured on its own; fit and pool leave it out of a searched "
               "directory (name this file to use it)"]
        rec = record_from_results(dataclasses.replace(plan, draft_len=d), rows, source_name=f"{source_name}-split",
                                  server=server, engine_version=engine_version, warnings=why, started=started)
        write_cell(sub, rec, rows)
        notes.append(f"{rec.num_verify_steps} steps at k={d} ({len(rows)} requests) -> {BY_DRAFT_LEN_DIR}/k{d}")
    if not notes:
        return []
    return ["the server drafted some steps at other lengths (per-step draft lengths reported): this record holds "
            f"only the steps drafted at k={plan.draft_len}; " + "; ".join(notes)]


def record_from_results(plan: CellPlan, results: Sequence[RequestResult], *, source_name: str,
                        server: ServerInfo | None, engine_version: str | None, warnings: list[str],
                        started: str) -> MeasurementRecord:
    """The ``measurement.json`` record of a finished cell."""
    k = plan.draft_len
    rows = [r for r in results if r.draft_len == k]
    totals = cell_totals(rows, k, seed=plan.bootstrap_seed, what=f" (thinking {plan.thinking})")
    interval = totals.interval
    warn = list(warnings)
    batches = [r for r in rows if r.extra and "batch" in r.extra]
    n_windows = 0
    if batches:
        n_windows = sum(int(r.extra["windows"]) for r in batches if r.extra)
        warn.append(f"aggregate counters at concurrency {plan.concurrency}: scraped every {plan.scrape_interval_s:g} s "
                    f"into {n_windows} windows; the interval is by batch means over {len(batches)} batches of "
                    "contiguous windows, each about as long as the longest request (the clusters), not over "
                    "requests; shorter batches share the requests in flight and undercover (24 batches covered "
                    "55-94 % in simulation, experiments/interval-calibration/counter_windows.md), so with few "
                    "batches this interval is wide: a per-request --al-source gives a tighter honest one")
        if n_windows < MIN_WINDOWS:
            warn.append(f"only {n_windows} counter windows (fewer than {MIN_WINDOWS}): the interval is rough; "
                        "lower --scrape-interval or measure more prompts")
    elif any(r.extra and "unit" in r.extra for r in rows):
        warn.append(f"counts attributed per window of up to {plan.concurrency} requests (counter deltas at "
                    f"concurrency > 1); the interval is over {interval.clusters} windows, not requests")
    record = build_record(
        results=rows, draft_len=k, engine=plan.engine, engine_version=engine_version, mode="server", estimate=False,
        target=plan.target, draft=plan.draft, draft_method=plan.draft_method, thinking=plan.thinking,
        chat_template_kwargs=plan.chat_template_kwargs, sampling=plan.sampling, dataset=plan.dataset,
        al_source=source_name, provenance=collect(started=started, ended=now_iso()), seed=plan.bootstrap_seed,
        warnings=warn, server=server, totals=totals,
        timing=request_timing(rows, batch=plan.concurrency, source=f"{plan.engine}-response-decode-ms"))
    if batches and record.uncertainty is not None:
        record = record.model_copy(update={"uncertainty": record.uncertainty.model_copy(update={"windows": n_windows})})
    return record
