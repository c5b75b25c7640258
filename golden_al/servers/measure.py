"""Measure one cell (draft length, thinking mode) against a server, resumably.

A cell directory holds:

* ``cell.json``: the cell's fingerprint (engine, k, thinking, sampling, template
  kwargs, prompts hash, model, AL source, unit size). A resumed run must match it.
* ``requests.jsonl``: one :class:`~golden_al.measurement.RequestResult` per finished
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
import hashlib
import itertools
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distributions.counts import AcceptanceCounts, from_histogram, tidy_count
from golden_al.errors import (
    MixedDraftLengthsError,
    SchemaError,
    ServerError,
    UsageError,
)
from golden_al.measurement import (
    BY_DRAFT_LEN_DIR,
    MEASUREMENT_FILE,
    REQUESTS_FILE,
    DatasetInfo,
    MeasurementRecord,
    ModelInfo,
    RequestResult,
    SamplingInfo,
    ServerInfo,
    Uncertainty,
    append_request_result,
    cell_totals,
    line_indices,
    read_request_results,
    request_indices,
    write_record,
)
from golden_al.provenance import atomic_write_text, collect, now_iso
from golden_al.servers.client import RequestFailedError, ServerClient
from golden_al.servers.pipeline import PipelineStats, Schedule, run_pipeline, run_waves
from golden_al.servers.sources import CounterSource, PerRequestSource, Source

__all__ = [
    "CELL_FILE",
    "CellPlan",
    "ChatPrompt",
    "cell_lock",
    "measure_cell",
    "read_cell_results",
    "record_from_results",
    "repair_jsonl_tail",
    "request_body",
    "split_draft_len_rows",
    "validate_cell_dir",
]

CELL_FILE = "cell.json"
_CELL_SCHEMA = "golden-al/server-cell/1"

ProgressFn = Callable[..., None]


@dataclass(frozen=True)
class ChatPrompt:
    """One prompt: its position, the chat messages sent, and the hash recorded."""

    index: int
    messages: tuple[Mapping[str, Any], ...]
    prompt_hash: str
    text: str | None = None
    """The rendered prompt, for SGLang ``/generate`` (None when not rendered)."""


@dataclass
class CellPlan:
    """Everything that defines one cell's measurement."""

    engine: str
    draft_len: int
    thinking: str
    sampling: SamplingInfo
    chat_template_kwargs: dict[str, Any]
    prompts: list[ChatPrompt]
    dataset: DatasetInfo
    target: ModelInfo
    draft: ModelInfo
    draft_method: str
    served_model: str
    concurrency: int = 1
    save_text: bool = False
    extra_body: dict[str, Any] = field(default_factory=dict)
    bootstrap_seed: int = 0
    request_rate: float | None = None
    """Poisson arrivals per second (None: as fast as ``concurrency`` allows)."""
    warmup: int = 0
    """Requests sent first and left out of the record."""
    arrival_seed: int = 0
    scrape_interval_s: float = 1.0
    """Counter sources at concurrency > 1: seconds between two scrapes (one window)."""
    num_servers: int = 1
    """Data-parallel replicas the prompts are sharded over (set by :func:`measure_cell`)."""
    waves: bool = False
    """The old schedule (waves of ``concurrency`` that wait for their slowest member); for comparisons."""
    servers: list[dict[str, Any]] = field(default_factory=list)
    """What each server reports of itself (:func:`golden_al.servers.replicas.identity`): part of the
    fingerprint, so a resumed run against another configuration is refused."""

    @property
    def schedule(self) -> Schedule:
        """How requests are sent (validated)."""
        return Schedule(concurrency=self.concurrency, request_rate=self.request_rate, seed=self.arrival_seed,
                        warmup=self.warmup)

    def windowed(self, source: Source) -> bool:
        """Whether counts come from timed counter windows (a counter source at concurrency > 1)."""
        return not source.per_request and self.concurrency > 1 and not self.waves

    def fingerprint(self, source: Source) -> dict[str, Any]:
        """What must not change between a run and its resumption."""
        return {
            "engine": self.engine,
            "draft_len": self.draft_len,
            "thinking": self.thinking,
            "sampling": self.sampling.model_dump(mode="json"),
            "chat_template_kwargs": self.chat_template_kwargs,
            "dataset_hash": self.dataset.hash,
            "num_prompts": len(self.prompts),
            "served_model": self.served_model,
            "al_source": source.name,
            "unit_size": self.unit_size(source),
            "extra_body": self.extra_body,
            **({"servers": self.num_servers} if self.num_servers > 1 else {}),
            **({"server_identity": self.servers} if self.servers else {}),
        }

    def unit_size(self, source: Source) -> int:
        """Requests per unit: 1, the concurrency for counter waves, 0 for timed counter windows."""
        if source.per_request:
            return 1
        return 0 if self.windowed(source) else max(1, self.concurrency)


def request_body(plan: CellPlan, prompt: ChatPrompt, source: Source) -> dict[str, Any]:
    """The JSON body sent for ``prompt``."""
    s = plan.sampling
    seed = None if s.seed is None else int(s.seed) + prompt.index
    if source.needs_text:
        if prompt.text is None:
            raise UsageError(f"--al-source {source.name} needs rendered prompts (text), but prompt "
                             f"{prompt.index} has only chat messages", hint="pass --tokenizer DIR, or use another "
                             "--al-source")
        body = source.text_body(prompt.text, s, seed)
    else:
        body = {"model": plan.served_model, "messages": [dict(m) for m in prompt.messages],
                "max_tokens": s.max_tokens, "temperature": s.temperature, "top_p": s.top_p, "stream": False}
        if s.top_k is not None:
            body["top_k"] = s.top_k
        if seed is not None:
            body["seed"] = seed
        if plan.chat_template_kwargs:
            body["chat_template_kwargs"] = dict(plan.chat_template_kwargs)
    body.update(source.payload_extra())
    body.update(plan.extra_body)
    return body


# ---------------------------------------------------------------------------- files
def repair_jsonl_tail(path: Path) -> bool:
    """Cut a torn last line (no trailing newline) off ``path``; True if something was cut."""
    if not path.exists():
        return False
    with path.open("rb+") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        if size == 0:
            return False
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return False
        fh.seek(0)
        data = fh.read()
        keep = data.rfind(b"\n") + 1
        fh.truncate(keep)
        fh.flush()
        os.fsync(fh.fileno())
    return True


@contextlib.contextmanager
def cell_lock(directory: Path) -> Iterator[None]:
    """The cell's lock (:func:`golden_al.locks.directory_lock`): a second process measuring into
    the same folder waits for the first, up to the lock timeout, and is told who holds it."""
    from golden_al.locks import directory_lock

    with directory_lock(directory, purpose="measure"):
        yield


def read_cell_results(directory: Path) -> list[RequestResult]:
    """Results of a cell (torn tail tolerated); SchemaError on a prompt counted twice."""
    results = read_request_results(directory / REQUESTS_FILE)
    seen: dict[int, int] = {}
    for line, r in enumerate(results, start=1):
        for i in line_indices(r):
            if i in seen:
                raise SchemaError(f"prompt {i} has two results (lines {seen[i]} and {line})",
                                  path=directory / REQUESTS_FILE, hint="the file was edited or two runs shared it")
            seen[i] = line
    return results


def validate_cell_dir(directory: Path, *, root: Path | None = None) -> None:
    """Read and check a cell's files before anything is sent: ``cell.json`` parses, every line of
    ``requests.jsonl`` is a result (only a torn last line, written without its newline, is
    tolerated), no prompt is counted twice, and no file is a link that leads out of ``root``.

    Raises:
        SchemaError: a file does not parse (file and line).
        UsageError: a file is a symbolic link out of the output directory.
    """
    base = (root or directory).resolve()
    for name in (CELL_FILE, REQUESTS_FILE, MEASUREMENT_FILE):
        f = directory / name
        if f.is_symlink():
            target = f.resolve()
            if not target.is_relative_to(base):
                raise UsageError(f"{f} is a link to {target}, outside {base}: golden-al does not append to "
                                 "files elsewhere", hint="replace the link with the file itself, or use another --out")
    cell_file = directory / CELL_FILE
    if cell_file.exists():
        try:
            json.loads(cell_file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SchemaError(f"cannot read the cell plan: {exc}", path=cell_file,
                              hint="the cell was edited or damaged; measure into another --out") from None
    read_cell_results(directory)  # strict except for a torn last line; a prompt counted twice is refused


def _check_resume(directory: Path, plan: CellPlan, source: Source, resume: bool) -> list[RequestResult]:
    cell_file = directory / CELL_FILE
    req_file = directory / REQUESTS_FILE
    fingerprint = plan.fingerprint(source)
    if cell_file.exists() or req_file.exists():
        if not resume:
            raise UsageError(f"{directory} already holds a measurement",
                             hint="pass --resume to continue it, or choose another --out")
        validate_cell_dir(directory)
        if cell_file.exists():
            stored = json.loads(cell_file.read_text(encoding="utf-8")).get("fingerprint", {})
            if "server_identity" not in stored:  # a cell started before servers were fingerprinted
                fingerprint = {k: v for k, v in fingerprint.items() if k != "server_identity"}
            diff = sorted(k for k in set(stored) | set(fingerprint) if stored.get(k) != fingerprint.get(k))
            grown = (set(diff) <= {"dataset_hash", "num_prompts"}
                     and int(fingerprint.get("num_prompts") or 0) > int(stored.get("num_prompts") or 0))
            if "server_identity" in diff:
                raise UsageError(f"cannot resume {directory}: the server is not the one measured before ("
                                 + _identity_diff(stored.get("server_identity"), fingerprint.get("server_identity"))
                                 + ")", hint="resume against the same server configuration, or measure the new "
                                             "one into another --out")
            if diff and not grown:  # a grown prompt set continues (the measured prompts are checked below)
                details = "; ".join(f"{k}: was {stored.get(k)!r}, now {fingerprint.get(k)!r}" for k in diff)
                raise UsageError(f"cannot resume {directory}: the settings changed ({details})",
                                 hint="resume with the same options, or measure into another --out")
    if repair_jsonl_tail(req_file):
        pass  # the torn line was never acknowledged; its unit is redone
    results = read_cell_results(directory)
    by_index = {p.index: p for p in plan.prompts}
    for r in results:
        hashes = r.extra.get("prompt_hashes") if r.extra and "unit" in r.extra else [r.prompt_hash]
        for i, h in zip(line_indices(r), hashes or [], strict=False):
            if i not in by_index or by_index[i].prompt_hash != h:
                raise UsageError(f"cannot resume {directory}: prompt {i} differs from the one measured before",
                                 hint="the prompt set changed; measure into another --out")
        if r.draft_len != plan.draft_len:
            raise UsageError(f"cannot resume {directory}: it holds results for k={r.draft_len}, not {plan.draft_len}")
    atomic_write_text(cell_file, json.dumps({"schema": _CELL_SCHEMA, "fingerprint": fingerprint}, indent=2) + "\n")
    return results


def _identity_diff(before: Any, now: Any) -> str:
    """Which server fields differ, each with both values."""
    before = before or [{}]
    now = now or [{}]
    parts = []
    for i in range(max(len(before), len(now))):
        a = before[i] if i < len(before) else {}
        b = now[i] if i < len(now) else {}
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                parts.append(f"{'server ' + str(i) + ' ' if len(now) > 1 else ''}{key}: was {a.get(key)!r}, now "
                             f"{b.get(key)!r}")
    return "; ".join(parts[:6]) or "the number of servers changed"


# ---------------------------------------------------------------------------- results
def _usage(resp: Mapping[str, Any]) -> tuple[int | None, int | None]:
    usage = resp.get("usage")
    if isinstance(usage, Mapping):
        p, c = usage.get("prompt_tokens"), usage.get("completion_tokens")
        return (int(p) if isinstance(p, (int, float)) else None, int(c) if isinstance(c, (int, float)) else None)
    meta = resp.get("meta_info")
    if isinstance(meta, Mapping):
        p, c = meta.get("prompt_tokens"), meta.get("completion_tokens")
        return (int(p) if isinstance(p, (int, float)) else None, int(c) if isinstance(c, (int, float)) else None)
    return None, None


def _text_and_finish(resp: Mapping[str, Any]) -> tuple[str | None, str | None]:
    choices = resp.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        c = choices[0]
        msg: Mapping[str, Any] = c["message"] if isinstance(c.get("message"), Mapping) else {}
        content = msg.get("content")
        reasoning = msg.get("reasoning_content") or msg.get("reasoning")
        text = content if isinstance(content, str) else None
        if isinstance(reasoning, str) and reasoning:
            text = f"<think>{reasoning}</think>{text or ''}"
        return text, (str(c["finish_reason"]) if c.get("finish_reason") is not None else None)
    meta: Mapping[str, Any] = resp["meta_info"] if isinstance(resp.get("meta_info"), Mapping) else {}
    fr = meta.get("finish_reason")
    if isinstance(fr, Mapping):
        fr = fr.get("type")
    return (resp.get("text") if isinstance(resp.get("text"), str) else None), (str(fr) if fr else None)


def _cross_check(plan: CellPlan, counts: AcceptanceCounts, responses: Sequence[Mapping[str, Any]],
                 label: str) -> None:
    """The unit's counts against the tokens its answers report and the draft length
    (:mod:`golden_al.servers.crosscheck`); raises CountsDisagreeError before anything is recorded."""
    from golden_al.engines import get_profile
    from golden_al.servers.crosscheck import check_unit

    outs = [_usage(r)[1] for r in responses]
    tokens = sum(c for c in outs if c is not None) if outs and all(c is not None for c in outs) else None
    check_unit(counts, k=plan.draft_len, completion_tokens=tokens, requests=len(responses), label=label,
               draft_method=plan.draft_method, exact_proposals=get_profile(plan.engine).exact_proposals)


def _result(plan: CellPlan, prompts: Sequence[ChatPrompt], responses: Sequence[Mapping[str, Any]],
            counts: AcceptanceCounts, wall_s: float, extra: dict[str, Any]) -> RequestResult:
    k = plan.draft_len
    hist = [tidy_count(float(v)) for v in counts.histogram or ()]
    pos = [tidy_count(float(v)) for v in counts.per_position_accepted or ()]
    prompt_tokens = 0
    out_tokens = 0
    known_prompt = True
    texts: list[str] = []
    finishes: list[str] = []
    ids: list[str] = []
    for resp in responses:
        p, c = _usage(resp)
        if p is None:
            known_prompt = False
        prompt_tokens += p or 0
        out_tokens += c or 0
        text, finish = _text_and_finish(resp)
        texts.append(text or "")
        finishes.append(finish or "")
        ids.append(str(resp.get("id") or (resp.get("meta_info") or {}).get("id") or ""))
    window = len(prompts) > 1
    if window:
        extra = {**extra, "unit": [p.index for p in prompts], "prompt_hashes": [p.prompt_hash for p in prompts],
                 "request_ids": ids, "finish_reasons": finishes}
        prompt_hash = hashlib.sha256("".join(p.prompt_hash for p in prompts).encode()).hexdigest()
    else:
        prompt_hash = prompts[0].prompt_hash
    return RequestResult(
        index=prompts[0].index,
        request_id=ids[0] if not window else ",".join(ids),
        draft_len=k,
        prompt_hash=prompt_hash,
        num_prompt_tokens=prompt_tokens if known_prompt else None,
        num_output_tokens=out_tokens,
        num_verify_steps=counts.num_verify_steps,
        num_accepted_drafts=counts.num_accepted_drafts,
        histogram=hist,
        per_position_accepted=pos,
        finish_reason=None if window else (finishes[0] or None),
        wall_s=round(wall_s, 4),
        text=("\n\x1e".join(texts) if plan.save_text else None),
        extra=extra or None,
    )


def _reported_al(resp: Mapping[str, Any]) -> float | None:
    from golden_al.engines import sglang

    choices = resp.get("choices")
    meta = None
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        meta = choices[0].get(sglang.META_INFO)
    meta = meta or resp.get(sglang.META_INFO)
    if isinstance(meta, Mapping) and isinstance(meta.get(sglang.META_ACCEPT_LENGTH), (int, float)):
        return float(meta[sglang.META_ACCEPT_LENGTH])
    return None


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


class MixedDraftLengths:
    """Refuses a cell whose requests were drafted at more than one draft length (SGLang adaptive
    speculation changes ``speculative_num_steps`` step by step).

    SGLang reports ``spec_num_proposed_drafts = spec_verify_ct * (speculative_num_draft_tokens - 1)``
    for a fixed draft length (sgl-project/sglang ``python/sglang/srt/managers/tokenizer_manager.py``
    ``_calculate_spec_decoding_metrics``, 0.5.23), so proposed drafts per verify step is one integer,
    the same for every request; a fraction, or two values in one cell, means the steps were drafted at
    different lengths and the histogram is not one curve point.
    """

    def __init__(self) -> None:
        self.per_step: float | None = None
        self.first: str | None = None

    def check(self, counts: AcceptanceCounts, label: str) -> None:
        """Raise MixedDraftLengthsError when ``counts`` disagree with one fixed draft length."""
        proposed, steps = counts.num_draft_tokens, float(counts.num_verify_steps)
        if proposed is None or steps <= 0:
            return
        ratio = float(proposed) / steps
        if abs(ratio - round(ratio)) > 1e-6:
            raise MixedDraftLengthsError(
                f"{label}: {proposed:g} drafts proposed over {steps:g} verify steps ({ratio:.3f} per step): the "
                "server drafted at more than one length (adaptive speculation?); a histogram that mixes draft "
                "lengths is not a curve point",
                hint="start SGLang without --speculative-adaptive")
        if self.per_step is None:
            self.per_step, self.first = ratio, label
        elif abs(ratio - self.per_step) > 1e-6:
            raise MixedDraftLengthsError(
                f"{label}: {ratio:g} drafts proposed per verify step, but {self.first} had {self.per_step:g}: the "
                "server changed its draft length during the cell (adaptive speculation?)",
                hint="start SGLang without --speculative-adaptive")


async def _run_per_request(client: ServerClient, plan: CellPlan, source: PerRequestSource,
                           todo: list[ChatPrompt], req_file: Path, progress: ProgressFn, stats: PipelineStats,
                           tag: Mapping[str, Any]) -> None:
    from golden_al import engines

    # an engine whose proposals are exactly steps x k shows a change of k in every response
    mixed = MixedDraftLengths() if engines.get_profile(source.engine).exact_proposals else None

    async def send(prompt: ChatPrompt) -> None:
        label = _label(plan, f"request {prompt.index}")
        t0 = time.monotonic()
        resp = await client.post_json(source.endpoint, request_body(plan, prompt, source), label=label)
        counts = source.counts(resp, plan.draft_len, label)
        if mixed is not None:
            mixed.check(counts, label)
        _cross_check(plan, counts, [resp], label)
        extra: dict[str, Any] = dict(tag)
        by_len = source.steps_by_draft_len(resp, plan.draft_len, label, max_tokens=plan.sampling.max_tokens,
                                           output_tokens=_usage(resp)[1])
        if by_len is not None and set(by_len) - {plan.draft_len}:
            k = plan.draft_len  # keep only the steps drafted at k here; the others go to their own records
            counts = by_len.get(k) or from_histogram([0] * (k + 1), k=k, source=label)
            extra[OTHER_DRAFT_LENS] = {str(d): list(c.histogram or ()) for d, c in by_len.items() if d != k}
        rep = _reported_al(resp)
        if rep is not None:
            extra["server_reported_al"] = rep
        row = _result(plan, [prompt], [resp], counts, time.monotonic() - t0, extra)
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
            _cross_check(plan, counts, resps, label)
            row = _result(plan, unit, resps, counts, wall, {"attempts": attempt, **tag})
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
        _p, c = _usage(resp)
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
        _cross_check(plan, total, [r for w in windows for r in w.responses], label)
    count = batch_count(windows[-1].t1 - windows[0].t0 if windows else 0.0, max(spans, default=0.0))
    rows = [_batch_result(plan, batch, i, failed_attempts[0], tag)
            for i, batch in enumerate(batch_windows(windows, count))]
    _commit_rows(req_file, rows)
    staging.unlink(missing_ok=True)


#: batches the counter windows of a session are grouped into (batch means over >= MIN_WINDOWS).
BATCHES = 24
MIN_WINDOWS = 20
SESSION_FILE = "windows.session.jsonl"


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
    prompts = [p for w in batch for p in w.prompts]
    resps = [r for w in batch for r in w.responses]
    usage = [_usage(r) for r in resps]
    ids = [str(r.get("id") or (r.get("meta_info") or {}).get("id") or "") for r in resps]
    extra: dict[str, Any] = {"batch": number, "windows": len(batch),
                             "t": [round(batch[0].t0, 4), round(batch[-1].t1, 4)],
                             "unit": [p.index for p in prompts], "prompt_hashes": [p.prompt_hash for p in prompts],
                             "request_ids": ids, "finish_reasons": [_text_and_finish(r)[1] or "" for r in resps]}
    extra.update(tag)
    if retried:
        extra["retried_attempts_in_session"] = retried
    return RequestResult(
        index=prompts[0].index if prompts else 0,
        request_id=",".join(ids),
        draft_len=plan.draft_len,
        prompt_hash=hashlib.sha256("".join(p.prompt_hash for p in prompts).encode()).hexdigest(),
        num_prompt_tokens=None if any(p is None for p, _ in usage) else sum(p or 0 for p, _ in usage),
        num_output_tokens=sum(c or 0 for _, c in usage),
        num_verify_steps=total.num_verify_steps,
        num_accepted_drafts=total.num_accepted_drafts,
        histogram=[tidy_count(float(v)) for v in total.histogram or ()],
        per_position_accepted=[tidy_count(float(v)) for v in total.per_position_accepted or ()],
        wall_s=round(batch[-1].t1 - batch[0].t0, 4),
        text=("\n\x1e".join(_text_and_finish(r)[0] or "" for r in resps) if plan.save_text else None),
        extra=extra,
    )


def _commit_rows(req_file: Path, rows: Sequence[RequestResult]) -> None:
    """Append ``rows`` to ``req_file`` all at once (a crash leaves the old file or the new one)."""
    old = req_file.read_bytes() if req_file.exists() else b""
    new = "".join(json.dumps(r.model_dump(mode="json"), ensure_ascii=False) + "\n" for r in rows)
    atomic_write_text(req_file, old.decode("utf-8") + new)


def _set_aside_session(directory: Path, note: Callable[[str], None] | None = None) -> str | None:
    """Move a dead counter session's windows out of the way; returns a warning or None."""
    moved = []
    lines = 0
    for staging in sorted(directory.glob("windows.session*.jsonl")):
        lines += sum(1 for _ in staging.open("rb"))
        dest = directory / f"windows.discarded-{int(time.time())}-{staging.name.removeprefix('windows.')}"
        os.replace(staging, dest)
        moved.append(dest.name)
    if not moved:
        return None
    return (f"an interrupted counter session's {lines} windows were set aside ({', '.join(moved)}) and its prompts "
            "sent again: requests in flight at the interruption make its windows unattributable")


OTHER_DRAFT_LENS = "other_draft_lens"
"""``extra`` key of a request row: ``{d: histogram}`` of the steps the server drafted at ``d != k``."""


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


def _write_draft_len_records(plan: CellPlan, results: Sequence[RequestResult], directory: Path, *,
                             source_name: str, server: ServerInfo | None, engine_version: str | None,
                             started: str) -> list[str]:
    """One record per other draft length under ``directory/by_draft_len/k{d}``; the warnings for the main one."""
    split = split_draft_len_rows(results, plan.draft_len)
    notes = []
    for d, rows in split.items():
        sub = directory / BY_DRAFT_LEN_DIR / f"k{d}"
        sub.mkdir(parents=True, exist_ok=True)
        tmp = sub / (REQUESTS_FILE + ".tmp")
        tmp.unlink(missing_ok=True)
        for row in rows:
            append_request_result(tmp, row)
        tmp.replace(sub / REQUESTS_FILE)
        why = [f"steps the server drafted at length {d} in a cell configured for k={plan.draft_len} (it reports "
               "each step's draft length: adaptive or per-batch-size speculation); one histogram per draft length",
               "a server that picks the length by acceptance drafts short where acceptance is low: this histogram is "
               f"conditioned on that choice, not k={d} measured on its own; fit and pool leave it out of a searched "
               "directory (name this file to use it)"]
        rec = record_from_results(dataclasses.replace(plan, draft_len=d), rows, source_name=f"{source_name}-split",
                                  server=server, engine_version=engine_version, warnings=why, started=started)
        write_record(rec, sub)
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
    counts, interval, unit = totals.counts, totals.interval, totals.unit
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
    warn += totals.notes
    return MeasurementRecord(
        engine=plan.engine,
        engine_version=engine_version,
        mode="server",
        target=plan.target,
        draft=plan.draft,
        draft_method=plan.draft_method,
        draft_len=k,
        thinking=plan.thinking,  # type: ignore[arg-type]
        chat_template_kwargs=plan.chat_template_kwargs,
        sampling=plan.sampling,
        dataset=plan.dataset,
        al=interval.al,
        al_ci95=interval.ci,
        uncertainty=Uncertainty.of(interval, unit).model_copy(update={"windows": n_windows} if batches else {}),
        al_source=source_name,
        num_requests=totals.num_requests,
        num_verify_steps=counts.num_verify_steps,
        num_accepted_drafts=counts.num_accepted_drafts,
        per_position_accepted=counts.per_position_accepted,
        histogram=counts.histogram,
        per_request_file=REQUESTS_FILE,
        server=server,
        warnings=warn,
        provenance=collect(started=started, ended=now_iso()),
    )


async def measure_cell(client: ServerClient | Sequence[ServerClient], plan: CellPlan, source: Source,
                       directory: str | Path, *, resume: bool = False, progress: ProgressFn | None = None,
                       server: ServerInfo | None = None, engine_version: str | None = None,
                       warnings: Sequence[str] = ()) -> MeasurementRecord:
    """Measure every prompt of ``plan`` not measured yet, then write ``measurement.json``.

    ``client`` may be several clients, one per data-parallel replica: prompt ``i`` goes
    to replica ``i mod n``, each keeps ``plan.concurrency`` in flight and has its own
    counter windows, and the record holds the totals plus ``per_server`` sub-counts
    (check that the replicas agree first: :func:`golden_al.servers.replicas.check_replicas_agree`).

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
        results = _check_resume(d, plan, source, resume)
        warnings = list(warnings)
        set_aside = _set_aside_session(d)
        if set_aside:
            warnings.append(set_aside)
        done = request_indices(results)
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
        results = read_cell_results(d)
        missing = sorted({p.index for p in plan.prompts} - request_indices(results))
        if missing:
            raise ServerError(f"{len(missing)} prompts have no result after the run: {missing[:10]}",
                              hint="rerun with --resume")
        warnings += _write_draft_len_records(plan, results, d, source_name=source.name, server=server,
                                             engine_version=engine_version, started=started)
        record = record_from_results(plan, results, source_name=source.name, server=server,
                                     engine_version=engine_version, warnings=list(warnings), started=started)
        if len(clients) > 1:
            record.per_server = per_server_shares([c.base_url for c in clients], results, plan.draft_len)
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


