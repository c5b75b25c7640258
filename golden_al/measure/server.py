"""Measure one cell (draft length, thinking mode) against a server, resumably.

A cell directory holds:

* ``cell.json``: the cell's fingerprint (engine, k, thinking, sampling, template
  kwargs, prompts hash, model, AL source, unit size). A resumed run must match it.
* ``requests.jsonl``: one :class:`~golden_al.measure.schema.RequestResult` per finished
  *unit*, appended (flushed, fsynced) as soon as its counts are known.
* ``measurement.json``: the record, written when every prompt has a result.

What resume means (``resume=True``):

* per-request sources: a line is written only after the response with its own
  counts arrived, so a request is either counted once or re-sent; a request in
  flight when the run died is simply sent again (the server may be a new one).
* counter-delta sources: a unit is one request at concurrency 1 (else a window of
  ``concurrency`` requests sent together). Its counts are the delta of two
  snapshots taken with the server idle before it, and exactly the unit's requests
  finished between them; a unit interrupted at any point has no line and is
  redone from a fresh snapshot. A restart *during* a session (a counter or the
  process start time went backwards) stops the run with CounterResetError; a
  resumed session starts a fresh chain of snapshots, so a restart between sessions
  is fine.

A torn last line (a crash mid-write) is cut off before appending; two
processes can never write one cell (an exclusive lock on ``.lock``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from distributions.counts import AcceptanceCounts, from_histogram
from golden_al.errors import (
    ServerError,
    UsageError,
)
from golden_al.httpclient import RequestFailedError, ServerClient
from golden_al.measure.cell import (
    SESSION_FILE,
    CellPlan,
    ChatPrompt,
    ProgressFn,
    cell_lock,
    check_resume,
    request_body,
    set_aside_session,
    validate_cell_dir,
)
from golden_al.measure.cell_rows import (
    OTHER_DRAFT_LENS,
    cross_check,
    record_from_results,
    reported_al,
    result_row,
    usage_tokens,
    write_draft_len_records,
)
from golden_al.measure.records import append_request_result, commit_rows, read_request_results, write_record
from golden_al.measure.schema import REQUESTS_FILE, MeasurementRecord, RequestResult, ServerInfo
from golden_al.measure.totals import request_indices
from golden_al.plugin import checks_ran
from golden_al.plugin.sources import CounterSource, MixedDraftLengths, PerRequestSource, Source
from golden_al.provenance import now_iso
from golden_al.servers.pipeline import PipelineStats, run_pipeline, run_waves

__all__ = [
    "SESSION_FILE",
    "CellPlan",
    "ChatPrompt",
    "batch_count",
    "batch_windows",
    "cell_lock",
    "measure_cell",
    "request_body",
    "validate_cell_dir",
]

# ---------------------------------------------------------------------------- running
def _label(plan: CellPlan, what: str) -> str:
    return f"{what} (k={plan.draft_len}, thinking {plan.thinking})"


async def _warmup(client: ServerClient, plan: CellPlan, source: Source, progress: ProgressFn) -> None:
    """Send ``plan.warmup`` requests (prompts cycled from the set) and discard their answers."""
    n = plan.schedule.warmup
    if n <= 0 or not plan.prompts:
        return
    items = [plan.prompts[i % len(plan.prompts)] for i in range(n)]
    progress(0, status=f"warmup: {n} requests (not recorded)")

    async def send(prompt: ChatPrompt) -> None:
        await client.post_json(source.endpoint, request_body(plan, prompt, source),
                               label=_label(plan, f"warmup request {prompt.index}"))

    await run_pipeline(items, send, schedule=plan.schedule)


async def _run_per_request(client: ServerClient, plan: CellPlan, source: PerRequestSource,
                           todo: list[ChatPrompt], req_file: Path, progress: ProgressFn, stats: PipelineStats,
                           tag: Mapping[str, Any]) -> None:
    from golden_al.plugin import registry

    # an engine whose proposals are exactly steps x k shows a change of k in every response
    mixed = MixedDraftLengths() if registry.get_profile(source.engine).server.exact_proposals else None

    async def send(prompt: ChatPrompt) -> None:
        label = _label(plan, f"request {prompt.index}")
        t0 = time.monotonic()
        resp = await client.post_json(source.endpoint, request_body(plan, prompt, source), label=label)
        counts = source.counts(resp, plan.draft_len, label)
        if mixed is not None:
            mixed.check(counts, label)
        cross_check(plan, counts, [resp], label)
        extra: dict[str, Any] = dict(tag)
        by_len = source.steps_by_draft_len(resp, plan.draft_len, label, max_tokens=plan.sampling.max_tokens,
                                           output_tokens=usage_tokens(resp)[1])
        if by_len is not None and set(by_len) - {plan.draft_len}:
            k = plan.draft_len  # keep only the steps drafted at k here; the others go to their own records
            counts = by_len.get(k) or from_histogram([0] * (k + 1), k=k, source=label)
            extra[OTHER_DRAFT_LENS] = {str(d): list(c.histogram or ()) for d, c in by_len.items() if d != k}
        rep = reported_al(resp, plan.engine)
        if rep is not None:
            extra["server_reported_al"] = rep
        row = result_row(plan, [prompt], [resp], counts, time.monotonic() - t0, extra)
        append_request_result(req_file, row)
        stats.add(requests=1, output_tokens=row.num_output_tokens, accepted=float(row.num_accepted_drafts),
                  steps=float(row.num_verify_steps))
        progress(1, status=stats.line())

    if plan.waves:
        await run_waves(todo, send, concurrency=plan.concurrency)
    else:
        await run_pipeline(todo, send, schedule=plan.schedule)


async def _run_counter(client: ServerClient, plan: CellPlan, source: CounterSource, todo: list[ChatPrompt],
                       req_file: Path, progress: ProgressFn, stats: PipelineStats, tag: Mapping[str, Any]) -> None:
    """One request per unit (concurrency 1, or ``plan.waves``): exact per-unit deltas around an idle server."""
    size = plan.unit_size(source)
    units = [todo[i:i + size] for i in range(0, len(todo), size)]
    previous = None
    policy = client.policy
    for unit in units:
        label = _label(plan, f"request {unit[0].index}" if len(unit) == 1 else
                       f"requests {unit[0].index}..{unit[-1].index}")
        errors: list[str] = []
        for attempt in range(1, policy.max_attempts + 1):
            before = await source.wait_idle(client, label)
            source.check_continuity(previous, before, label)
            t0 = time.monotonic()
            try:
                resps = await asyncio.gather(*(
                    client.post_json(source.endpoint, request_body(plan, p, source), label=label, retry=False)
                    for p in unit))
            except RequestFailedError as exc:
                errors.extend(f"attempt {attempt}: {e.split(': ', 1)[-1]}" for e in exc.errors)
                previous = before
                if not exc.retryable:
                    raise RequestFailedError(label, errors, retryable=False,
                                             hint="the server rejected the request itself; not retried") from None
                if attempt < policy.max_attempts:
                    if client.on_retry is not None:
                        client.on_retry(f"{label}: {errors[-1]}; retrying in {policy.delay(attempt):g} s")
                    await asyncio.sleep(policy.delay(attempt))
                continue
            wall = time.monotonic() - t0
            after = await source.after_unit(client, before, len(unit), label)
            counts = source.delta_counts(before, after, plan.draft_len, label)
            source.cross_check(resps, counts, plan.draft_len, label)
            cross_check(plan, counts, resps, label)
            row = result_row(plan, unit, resps, counts, wall, {"attempts": attempt, **tag})
            if (decode := source.decode_ms(before, after)) is not None:
                row = row.model_copy(update={"decode_ms": round(decode, 3)})
            append_request_result(req_file, row)
            stats.add(requests=len(unit), output_tokens=row.num_output_tokens,
                      accepted=float(row.num_accepted_drafts), steps=float(row.num_verify_steps))
            progress(len(unit), status=stats.line())
            previous = after
            break
        else:
            raise RequestFailedError(label, errors)


@dataclass
class _Window:
    """Counts between two scrapes, and the requests that finished in between."""

    t0: float
    t1: float
    counts: AcceptanceCounts
    prompts: list[ChatPrompt]
    responses: list[Mapping[str, Any]]


async def _run_counter_windows(client: ServerClient, plan: CellPlan, source: CounterSource, todo: list[ChatPrompt],
                               req_file: Path, progress: ProgressFn, stats: PipelineStats,
                               tag: Mapping[str, Any]) -> None:
    """Counter deltas at concurrency > 1: the pipeline keeps the server busy while the counters are
    scraped every ``plan.scrape_interval_s``; the windows are grouped into contiguous batches (batch
    means), which become the cell's clusters.

    The session is committed to ``requests.jsonl`` only when it ends cleanly (the server drained,
    exactly this session's requests finished on it). A session that dies leaves its windows in
    ``windows.session.jsonl``; they are set aside on resume (a request in flight at the crash had
    part of its steps counted, so no window of that session can be attributed) and the session's
    prompts are sent again.

    Kept whole: the session's sender, scraper and committer share one pipeline's state (windows, requests
    in flight, the last snapshot); split, they would pass all of it around.
    """
    k = plan.draft_len
    label = _label(plan, f"counter session of {len(todo)} requests")
    staging = req_file.with_name(SESSION_FILE if not tag else f"windows.session.{tag['server']}.jsonl")
    staging.unlink(missing_ok=True)
    start = await source.wait_idle(client, label)
    t_start = time.monotonic()
    finished: list[tuple[ChatPrompt, Mapping[str, Any]]] = []
    taken = 0  # finished requests already assigned to a window
    windows: list[_Window] = []
    state = {"snap": start, "t": t_start}
    lock = asyncio.Lock()
    failed_attempts = [0]

    def on_retry(line: str) -> None:
        failed_attempts[0] += 1
        if outer_retry is not None:
            outer_retry(line)

    outer_retry = client.on_retry
    client.on_retry = on_retry

    async def close_window(*, final: bool) -> None:
        nonlocal taken
        async with lock:
            snap = await source.snapshot(client)
            now = time.monotonic()
            source.check_continuity(state["snap"], snap, label)  # type: ignore[arg-type]
            counts = source.delta_counts(state["snap"], snap, k, label)  # type: ignore[arg-type]
            done = finished[taken:]
            if float(counts.num_verify_steps) <= 0 and not done and not final:
                return  # nothing happened: the window grows into the next scrape
            taken += len(done)
            w = _Window(float(state["t"]) - t_start, now - t_start, counts,  # type: ignore[arg-type]
                        [p for p, _ in done], [r for _, r in done])
            windows.append(w)
            state["snap"], state["t"] = snap, now
            stats.add(accepted=float(counts.num_accepted_drafts), steps=float(counts.num_verify_steps))
            with staging.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps({"window": len(windows) - 1, "t": [round(w.t0, 4), round(w.t1, 4)],
                                     "verify_steps": counts.num_verify_steps,
                                     "accepted": counts.num_accepted_drafts,
                                     "finished": [p.index for p in w.prompts]}) + "\n")

    spans: list[float] = []  # each request's time in flight, as the client saw it

    async def send(prompt: ChatPrompt) -> None:
        sent = time.monotonic()
        resp = await client.post_json(source.endpoint, request_body(plan, prompt, source),
                                      label=_label(plan, f"request {prompt.index}"))
        spans.append(time.monotonic() - sent)
        finished.append((prompt, resp))
        _p, c = usage_tokens(resp)
        stats.add(requests=1, output_tokens=c or 0)
        progress(1, status=stats.line())

    all_sent = asyncio.Event()

    async def scraper() -> None:
        while not all_sent.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(all_sent.wait(), timeout=plan.scrape_interval_s)
            if not all_sent.is_set():
                await close_window(final=False)

    scrape_task = asyncio.create_task(scraper())
    try:
        try:
            await run_pipeline(todo, send, schedule=plan.schedule)
        finally:
            all_sent.set()
            await scrape_task
        end = await source.wait_idle(client, label)
        source.check_continuity(start, end, label)
        await close_window(final=True)
    finally:
        client.on_retry = outer_retry
    if start.finished is not None and end.finished is not None:
        n = end.finished - start.finished
        if not len(todo) <= n <= len(todo) + failed_attempts[0]:
            raise ServerError(
                f"{label}: {n:g} requests finished on the server during the session, expected {len(todo)}"
                + (f" (up to {len(todo) + failed_attempts[0]} with the retried attempts)" if failed_attempts[0] else "")
                + ": other traffic reached the server, so the counter windows cannot be attributed",
                hint="measure on a server nobody else uses, or use a per-request --al-source")
    if windows:  # the session's counters against the tokens of every request of the session
        total = windows[0].counts
        for w in windows[1:]:
            total = total + w.counts
        cross_check(plan, total, [r for w in windows for r in w.responses], label)
    count = batch_count(windows[-1].t1 - windows[0].t0 if windows else 0.0, max(spans, default=0.0))
    rows = [_batch_result(plan, batch, i, failed_attempts[0], tag)
            for i, batch in enumerate(batch_windows(windows, count))]
    commit_rows(req_file, rows)
    staging.unlink(missing_ok=True)


#: batches the counter windows of a session are grouped into (batch means over >= MIN_WINDOWS).
BATCHES = 24


def batch_count(session_s: float, longest_request_s: float, most: int = BATCHES) -> int:
    """How many contiguous batches the windows of a counter session are grouped into: as many as
    the session holds spans of its longest request (2 to ``most``), so that a request in flight
    at a boundary is shared by two neighbouring batches only.

    Batches shorter than the requests share them and are far from independent: in simulation
    (``experiments/interval-calibration/counter_windows.md``) 24 contiguous batches covered
    55-94 % where this rule covered 91-100 %, at the price of a wide interval with few batches
    (2-3 in sessions of 80-320 requests: often most of [1, k+1]); a per-request source is the cure.
    """
    if longest_request_s <= 0 or session_s <= 0:
        return most
    return int(min(most, max(2, session_s // longest_request_s)))


def batch_windows(windows: Sequence[_Window], batches: int) -> list[list[_Window]]:
    """Contiguous groups of windows, as equal in count as possible (one per window when fewer)."""
    n = len(windows)
    if n <= batches:
        return [[w] for w in windows]
    edges = [round(i * n / batches) for i in range(batches + 1)]
    return [list(windows[a:b]) for a, b in itertools.pairwise(edges) if b > a]


def _batch_result(plan: CellPlan, batch: Sequence[_Window], number: int, retried: int,
                  tag: Mapping[str, Any]) -> RequestResult:
    """One cluster line: a batch's counts and the requests that finished in it (possibly none)."""
    total = batch[0].counts
    for w in batch[1:]:
        total = total + w.counts
    extra: dict[str, Any] = {"batch": number, "windows": len(batch),
                             "t": [round(batch[0].t0, 4), round(batch[-1].t1, 4)], **tag}
    if retried:
        extra["retried_attempts_in_session"] = retried
    return result_row(plan, [p for w in batch for p in w.prompts], [r for w in batch for r in w.responses], total,
                      batch[-1].t1 - batch[0].t0, extra, window=True)


async def measure_cell(client: ServerClient | Sequence[ServerClient], plan: CellPlan, source: Source,
                       directory: str | Path, *, resume: bool = False, progress: ProgressFn | None = None,
                       server: ServerInfo | None = None, engine_version: str | None = None,
                       warnings: Sequence[str] = (),
                       closing_probe: Callable[[], Awaitable[None]] | None = None) -> MeasurementRecord:
    """Measure every prompt of ``plan`` not measured yet, then write ``measurement.json``.

    ``client`` may be several clients, one per data-parallel replica: prompt ``i`` goes
    to replica ``i mod n``, each keeps ``plan.concurrency`` in flight and has its own
    counter windows, and the record holds the totals plus ``per_server`` sub-counts
    (check that the replicas agree first: :func:`golden_al.servers.replicas.check_replicas_agree`).

    ``closing_probe`` runs after the last unit and before the record is written: it asks the server who it is
    again and raises when that changed (the record is then not written; the rows stay). The record's
    ``checks`` are the guards that passed in the caller's :func:`golden_al.plugin.checks_ran.recording`.

    Returns the record (also written to ``directory/measurement.json``).

    Raises:
        UsageError: the directory holds another measurement (without ``resume``), or
            the settings changed since it was started.
        RequestFailedError / MetricMissingError / CounterResetError / ServerError: a
            request or the server failed; finished requests stay in ``requests.jsonl``.
    """
    from golden_al.servers.replicas import per_server_shares, shard

    clients = [client] if isinstance(client, ServerClient) else list(client)
    if not clients:
        raise UsageError("no server to measure against")
    plan = dataclasses.replace(plan, num_servers=len(clients))
    d = Path(directory)
    progress = progress or (lambda *a, **k: None)
    started = now_iso()
    with cell_lock(d):
        plan.schedule  # noqa: B018 - validates the schedule before anything is sent
        results = check_resume(d, plan, source, resume)
        warnings = list(warnings)
        set_aside = set_aside_session(d)
        if set_aside:
            warnings.append(set_aside)
        done = request_indices(results)
        if done:
            warnings.append(f"{len(done)} of {len(plan.prompts)} prompts were measured by an earlier session (checked "
                            "as they were written); 'checks' counts this session's guards")
        todo = [p for p in plan.prompts if p.index not in done]
        progress(len(plan.prompts) - len(todo))
        req_file = d / REQUESTS_FILE
        if todo:
            stats = PipelineStats(total=len(todo))
            shards = shard(todo, len(clients)) if len(clients) > 1 else [todo]
            outcomes = await asyncio.gather(*(
                _measure_shard(c, plan, source, part, req_file, progress, stats,
                               {"server": i} if len(clients) > 1 else {})
                for i, (c, part) in enumerate(zip(clients, shards, strict=True)) if part), return_exceptions=True)
            errors = [e for e in outcomes if isinstance(e, BaseException)]
            if errors:
                raise errors[0]
        results = read_request_results(d / REQUESTS_FILE)
        missing = sorted({p.index for p in plan.prompts} - request_indices(results))
        if missing:
            raise ServerError(f"{len(missing)} prompts have no result after the run: {missing[:10]}",
                              hint="rerun with --resume")
        if closing_probe is not None:
            await closing_probe()
        warnings += write_draft_len_records(plan, results, d, source_name=source.name, server=server,
                                             engine_version=engine_version, started=started)
        record = record_from_results(plan, results, source_name=source.name, server=server,
                                     engine_version=engine_version, warnings=list(warnings), started=started)
        if len(clients) > 1:
            record.per_server = per_server_shares([c.base_url for c in clients], results, plan.draft_len)
        record.checks = checks_ran.current()
        write_record(record, d)
        return record


async def _measure_shard(client: ServerClient, plan: CellPlan, source: Source, todo: list[ChatPrompt],
                         req_file: Path, progress: ProgressFn, stats: PipelineStats, tag: Mapping[str, Any]) -> None:
    await _warmup(client, plan, source, progress)
    if isinstance(source, PerRequestSource):
        await _run_per_request(client, plan, source, todo, req_file, progress, stats, tag)
    elif isinstance(source, CounterSource) and plan.windowed(source):
        await _run_counter_windows(client, plan, source, todo, req_file, progress, stats, tag)
    elif isinstance(source, CounterSource):
        await _run_counter(client, plan, source, todo, req_file, progress, stats, tag)
    else:  # pragma: no cover - every source is one of the two
        raise ServerError(f"unknown source type {type(source).__name__}")
