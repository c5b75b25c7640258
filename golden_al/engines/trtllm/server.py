"""TensorRT-LLM's server as golden-al measures it: the probe and the ``trtllm-iteration-stats`` AL source.

Upstream (NVIDIA/TensorRT-LLM, ``tensorrt_llm/serve/openai_server.py`` at index commit 00b6d5a25c30):
``GET /version`` answers ``{"version": VERSION}``; ``GET /metrics`` answers a JSON list of the iteration
statistics queued since the last call (``get_iteration_stats`` drains ``get_stats_async``), so each
iteration is seen once, by whoever asks first. The queue keeps ``iter_stats_max_iterations`` rows (older
ones are dropped) and is filled only with ``enable_iter_perf_stats`` on.

The source keeps, per server, the sum of every row it drained: a snapshot is that running sum, and a
unit's counts are the difference of two, as for the engines whose counters are cumulative. What the
rows must prove (``golden_al.engines.trtllm.iteration_stats`` reads each one):

* **no row lost**: iteration numbers are consecutive from one drain to the next, and the first row ever
  seen is iteration 0 or a request's context iteration (no drafts); a gap (rows dropped by a full queue,
  or drained by another client) refuses the unit;
* **steps**: at concurrency 1 a row is one verify step of the one request (``numRequestsWithDraftTokens``
  1) and its ``numAcceptedTokens`` is that step's accepted count, so the histogram is exact; a row of
  several requests cannot be split and refuses the unit (measure at ``--concurrency 1``);
* **k**: the most drafts a row proposes per request is the unit's observed k (more than ``k`` refuses the unit,
  and the run's must equal ``k``: :func:`golden_al.servers.crosscheck.check_unit`, the record's builder);
* **finished requests**: ``numCompletedRequests`` summed over the rows (the unit's requests, and no other).

This module is the engine's server implementation: it imports the server layer and is named by the
profile as hooks (``"golden_al.engines.trtllm.server:..."``), never imported by the profile itself.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from distributions.counts import AcceptanceCounts
from golden_al import plugin

from . import iteration_stats as its

__all__ = ["COMPLETED", "METRICS_PATH", "PERF_METRICS_PATH", "VERSION_PATH", "PerfRecord", "TrtllmIterationSource",
           "TrtllmPerfMetricsSource", "perf_record", "probe"]

METRICS_PATH = "/metrics"
VERSION_PATH = "/version"
#: ``IterationStats.numCompletedRequests``: requests that finished in the iteration
COMPLETED = "numCompletedRequests"
_ENABLE_HINT = ("start trtllm-serve with enable_iter_perf_stats: true in its --extra_llm_api_options "
                "(and iter_stats_max_iterations above one request's iterations)")


async def probe(client: plugin.ServerClient, facts: plugin.ServerFacts, *, log_text: str | None) -> None:
    """Fill ``facts`` from ``/version``. ``/metrics`` is not read here: reading it drains the rows a unit
    needs; the source's first snapshot refuses a server whose ``/metrics`` is not a list of iteration rows."""
    version = await client.get_json(VERSION_PATH, label=f"GET {VERSION_PATH}", optional=True)
    if isinstance(version, Mapping) and version.get("version") is not None:
        facts.version = str(version["version"])
    facts.warnings.append(
        "attached TensorRT-LLM server: forced acceptance (TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS) is an "
        "environment variable its endpoints do not report, and so is a run-time draft_len_schedule; golden-al cannot "
        "rule either out from the server (the per-step drafts of the iteration rows bound k)")


@dataclass(frozen=True)
class _Sums:
    """Running sums of one endpoint's rows or entries (items, drafted, accepted, steps, finished requests)."""

    items: int = 0
    drafted: int = 0
    accepted: int = 0
    steps: int = 0
    done: int = 0

    def __add__(self, o: _Sums) -> _Sums:
        return _Sums(*(a + b for a, b in zip(dataclasses.astuple(self), dataclasses.astuple(o), strict=True)))

    def __sub__(self, o: _Sums) -> _Sums:
        return _Sums(*(a - b for a, b in zip(dataclasses.astuple(self), dataclasses.astuple(o), strict=True)))


def _agree(label: str, rows: _Sums, perf: _Sums) -> None:
    """One unit's counts from both endpoints, where the server offers both: equal drafted and accepted tokens, and
    the entries' iterations at least the rows' drafting request-steps (a request's plain decode iterations count
    in the first only).

    Raises:
        CountsDisagreeError: naming both.
    """
    if not (rows.items and perf.items):
        return
    if (rows.drafted, rows.accepted) != (perf.drafted, perf.accepted) or perf.steps < rows.steps:
        raise plugin.CountsDisagreeError(
            f"{label}: the server's two sources of the same counts disagree: {METRICS_PATH} iteration rows say "
            f"{rows.accepted} accepted of {rows.drafted} drafted in {rows.steps} steps ({rows.items} iterations), "
            f"{PERF_METRICS_PATH} says {perf.accepted} of {perf.drafted} in {perf.steps} iterations",
            hint="one of them is not the server's own count: measure a server nobody else reads, or report it")
    plugin.ran("two-sources-agree")


def _rows_sums(scan: its.IterationScan, doc: Sequence[Any]) -> _Sums:
    """One ``/metrics`` drain as sums (rank-0 rows)."""
    return _Sums(len(scan.rows) + scan.without_stats, scan.drafted, scan.accepted, scan.steps, _completed(doc) or 0)


def _perf_sums(records: Sequence[PerfRecord]) -> _Sums:
    """``/perf_metrics`` entries as sums (a request's steps are its iterations after the context one)."""
    return _Sums(len(records), sum(r.drafted for r in records), sum(r.accepted for r in records),
                 sum(r.iterations for r in records if r.drafted), len(records))


def _finished(own: float, witness: _Sums) -> float:
    """Requests finished, as both endpoints say once the other one reports (a unit waits for the slower)."""
    return min(own, float(witness.done)) if witness.items else own


@dataclass(frozen=True)
class _Totals:
    """The sum of every row drained from one server so far (a snapshot's ``counts``)."""

    drafted: int = 0
    accepted: int = 0
    steps: int = 0
    histogram: tuple[int, ...] = ()  #: steps by accepted drafts, from rows of one request
    merged_rows: int = 0  #: rows of several requests (their steps cannot be told apart)
    most: tuple[int, ...] = ()  #: per drain with drafting rows, the most drafts a row proposed per request
    completed: int | None = None
    rows: int = 0
    rows_without_stats: int = 0
    last_iter: int | None = None
    gaps: tuple[str, ...] = ()  #: iteration numbers never seen
    restarts: int = 0  #: times the iteration number fell back
    witness: _Sums = _Sums()  #: ``/perf_metrics`` drained alongside (the same counts from the other endpoint)


def _rank0(objects: Sequence[Any]) -> list[Mapping[str, Any]]:
    """The rows of attention-DP rank 0, or without a rank (the others copy rank 0's counters)."""
    return [obj for obj in objects if isinstance(obj, Mapping) and its.rank_of(obj) in (None, 0)]


def _iterations(objects: Sequence[Any]) -> list[tuple[int, bool]]:
    """``(iteration, whether it verified drafts)`` of the rank-0 (or rank-less) rows, with or without stats."""
    out = []
    for obj in _rank0(objects):
        it = obj.get(its.ITER)
        stats = obj.get(its.SPEC_STATS)
        drafting = isinstance(stats, Mapping) and bool(stats.get(its.REQUESTS))
        if isinstance(it, int) and not isinstance(it, bool):
            out.append((it, drafting))
    return out


def _completed(objects: Sequence[Any]) -> int | None:
    """Requests finished in these rows (rank 0 or rank-less rows), None when no row says."""
    total, seen = 0, False
    for obj in _rank0(objects):
        if COMPLETED not in obj:
            continue
        v = obj[COMPLETED]
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise plugin.ServerError(f"{COMPLETED} is {v!r}, not a whole non-negative count")
        total, seen = total + v, True
    return total if seen else None


class TrtllmIterationSource(plugin.CounterSource):
    """``trtllm-serve`` ``GET /metrics`` iteration rows, summed per server (module docstring)."""

    name = "trtllm-iteration-stats"
    engine = "trtllm"

    def __init__(self) -> None:
        self._servers: dict[str, _Totals] = {}

    async def snapshot(self, client: plugin.ServerClient) -> plugin.Snapshot:
        doc = await client.get_json(METRICS_PATH, label=f"GET {METRICS_PATH}")
        where = f"{client.base_url}{METRICS_PATH}"
        if not isinstance(doc, list):
            raise plugin.MetricMissingError(f"{where} answered a {type(doc).__name__}, not a list of iteration rows: "
                                            "not a TensorRT-LLM server, or iteration statistics are off", hint=_ENABLE_HINT)
        with plugin.server_errors(f"GET {METRICS_PATH}"):
            scan = its.rows_from_json(doc, where)
        totals = _added(self._servers.get(client.base_url, _Totals()), scan, doc)
        totals = dataclasses.replace(totals, witness=totals.witness + _perf_sums(await _perf_drain(client)))
        self._servers[client.base_url] = totals
        return plugin.Snapshot(totals, finished=None if totals.completed is None else
                               _finished(float(totals.completed), totals.witness))

    def delta_counts(self, before: plugin.Snapshot, after: plugin.Snapshot, k: int, label: str) -> AcceptanceCounts:
        b, a = _totals(before.counts), _totals(after.counts)
        if a.gaps[len(b.gaps):]:
            raise plugin.ServerError(f"{label}: the server's iteration rows skip {', '.join(a.gaps[len(b.gaps):])}: rows were "
                                     "dropped (a full stats queue) or drained by another client, so the unit's steps are "
                                     "incomplete", hint="raise iter_stats_max_iterations, lower --max-tokens, and let nothing "
                                                 "else read /metrics while measuring")
        if a.merged_rows > b.merged_rows:
            raise plugin.MetricMissingError(f"{label}: {a.merged_rows - b.merged_rows} iteration row(s) carried several "
                                            "requests: their steps cannot be split into a per-step histogram",
                                            hint="measure TensorRT-LLM at --concurrency 1 on a server nobody else uses")
        steps = a.steps - b.steps
        if steps == 0 and a.rows > b.rows and a.rows_without_stats - b.rows_without_stats == a.rows - b.rows:
            raise plugin.MetricMissingError(f"{label}: {a.rows - b.rows} iteration row(s) and none has {its.SPEC_STATS}: "
                                            "speculative decoding is off", hint="launch trtllm-serve with a speculative_config")
        _agree(label, _Sums(a.rows - b.rows, a.drafted - b.drafted, a.accepted - b.accepted, steps),
               a.witness - b.witness)
        hist = [(a.histogram[j] if j < len(a.histogram) else 0) - (b.histogram[j] if j < len(b.histogram) else 0)
                for j in range(max(len(a.histogram), k + 1))]
        if any(hist[k + 1:]):
            raise plugin.ServerError(f"{label}: a step accepted more than k = {k} drafts",
                                     hint="the server drafts another length than the one asked for (--draft-len)")
        field_names = {"num_verify_steps": f"{its.SPEC_STATS}.{its.REQUESTS}",
                       "num_accepted_drafts": f"{its.SPEC_STATS}.{its.ACCEPTED}",
                       "num_draft_tokens": f"{its.SPEC_STATS}.{its.DRAFTED}"}
        with plugin.server_errors(label):
            return AcceptanceCounts(k=k, num_verify_steps=steps, num_accepted_drafts=a.accepted - b.accepted,
                                    num_draft_tokens=a.drafted - b.drafted, histogram=tuple(hist[:k + 1]),
                                    source=f"{self.name} ({label})", field_names=field_names,
                                    most_drafts=max(a.most[len(b.most):], default=0) or None)

    def assert_not_backwards(self, before: plugin.Snapshot, after: plugin.Snapshot, label: str) -> None:
        b, a = _totals(before.counts), _totals(after.counts)
        if a.restarts > b.restarts:
            raise plugin.CounterResetError(f"{label}: the iteration number fell back (to {a.last_iter}): the server "
                                           "restarted", hint="rerun with --resume; finished requests are kept")


def _totals(counts: Any) -> _Totals:
    """A snapshot's counts, which this source made."""
    if not isinstance(counts, _Totals):
        raise TypeError(f"not a {TrtllmIterationSource.name} snapshot: {type(counts).__name__}")
    return counts


def _added(totals: _Totals, scan: its.IterationScan, doc: Sequence[Any]) -> _Totals:
    """``totals`` with one drain's rows added, in iteration order."""
    done = _completed(doc)
    hist = list(totals.histogram)
    gaps = list(totals.gaps)
    last, restarts = totals.last_iter, totals.restarts
    drafted, accepted, steps, merged = totals.drafted, totals.accepted, totals.steps, totals.merged_rows
    for it, drafting in sorted(_iterations(doc)):
        if last is None and it != 0 and drafting:  # nothing anchors the stream: it must open on a step's start
            gaps.append(f"iterations before {it} (the first row seen is a step with drafts, not a request's "
                        "context iteration)")
        elif last is not None and it <= last:
            restarts += 1
        elif last is not None and it != last + 1:
            gaps.append(f"iterations {last + 1}..{it - 1}")
        last = it
    for row in scan.rows:
        if row.requests == 0:
            continue
        drafted, accepted, steps = drafted + row.drafted, accepted + row.accepted, steps + row.requests
        if row.requests > 1:
            merged += 1
            continue
        hist.extend([0] * (row.accepted + 1 - len(hist)))
        hist[row.accepted] += 1
    completed = totals.completed if done is None else (totals.completed or 0) + done
    most = its.most_drafts(scan.rows)  # a drain without drafting rows adds nothing: an idle server's sums stay equal
    return _Totals(drafted, accepted, steps, tuple(hist), merged, totals.most if most is None else (*totals.most, most),
                   completed, totals.rows + len(scan.rows) + scan.without_stats,
                   totals.rows_without_stats + scan.without_stats, last, tuple(gaps), restarts, totals.witness)


# ------------------------------------------------------------------ per-request perf metrics
#: ``GET /perf_metrics`` (``tensorrt_llm/serve/openai_server.py`` ``get_perf_metrics`` at fcd3f3168280): a JSON list
#: of the finished requests' ``{"request_id", "perf_metrics": {"first_iter", "last_iter", "timing_metrics",
#: "kv_cache_metrics", "speculative_decoding"}}`` since the last call (drained; at most ``perf_metrics_max_requests``
#: kept, filled only with ``return_perf_metrics`` on). ``speculative_decoding`` (``acceptance_rate``,
#: ``total_accepted_draft_tokens``, ``total_draft_tokens``) is left out when the request drafted nothing.
PERF_METRICS_PATH = "/perf_metrics"
PERF_SPEC = "speculative_decoding"
PERF_ACCEPTED = "total_accepted_draft_tokens"
PERF_DRAFTED = "total_draft_tokens"
PERF_RATE = "acceptance_rate"
_PERF_HINT = ("start trtllm-serve with return_perf_metrics: true and perf_metrics_max_requests above the requests "
              "of one unit in its --extra_llm_api_options")


@dataclass(frozen=True)
class PerfRecord:
    """One finished request's ``/perf_metrics`` entry, as far as AL needs it."""

    request_id: str
    drafted: int
    accepted: int
    iterations: int  #: ``last_iter - first_iter``: the iterations after the request's context iteration
    decode_ms: float | None = None  #: ``timing_metrics`` ``last_token_time - first_token_time`` (seconds), in ms


def _whole(value: Any, name: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise plugin.ServerError(f"{where}: {name} is {value!r}, not a whole non-negative count")
    return value


def perf_record(item: Any, where: str) -> PerfRecord:
    """Read one ``/perf_metrics`` entry (``acceptance_rate`` must equal accepted / drafted).

    Raises:
        ServerError: a field missing or mistyped, or counts that contradict each other (naming the field).
    """
    if not isinstance(item, Mapping) or not isinstance(item.get("perf_metrics"), Mapping):
        raise plugin.ServerError(f"{where}: an entry without a perf_metrics object: {str(item)[:120]}", hint=_PERF_HINT)
    rid = str(item.get("request_id", ""))
    at = f"{where} request {rid!r}"
    pm = item["perf_metrics"]
    first, last = _whole(pm.get("first_iter"), "first_iter", at), _whole(pm.get("last_iter"), "last_iter", at)
    if last < first:
        raise plugin.ServerError(f"{at}: last_iter {last} is before first_iter {first}")
    tm: Mapping[str, Any] = pm["timing_metrics"] if isinstance(pm.get("timing_metrics"), Mapping) else {}
    t0, t1 = (float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan
              for v in (tm.get("first_token_time"), tm.get("last_token_time")))
    decode = 1000.0 * (t1 - t0) if math.isfinite(t1 - t0) and t1 >= t0 else None  # seconds: absent, odd or reversed
    spec = pm.get(PERF_SPEC)
    if spec is None:  # the server leaves it out when the request drafted nothing
        return PerfRecord(rid, 0, 0, last - first, decode)
    if not isinstance(spec, Mapping):
        raise plugin.ServerError(f"{at}: {PERF_SPEC} is {spec!r}, not an object")
    drafted, accepted = _whole(spec.get(PERF_DRAFTED), PERF_DRAFTED, at), _whole(spec.get(PERF_ACCEPTED), PERF_ACCEPTED, at)
    if accepted > drafted:
        raise plugin.ServerError(f"{at}: {PERF_ACCEPTED} {accepted} exceeds {PERF_DRAFTED} {drafted}")
    rate = spec.get(PERF_RATE)
    if not isinstance(rate, (int, float)) or isinstance(rate, bool) or (
            drafted and abs(float(rate) - accepted / drafted) > 1e-4):
        raise plugin.ServerError(f"{at}: {PERF_RATE} {rate!r} is not {PERF_ACCEPTED} / {PERF_DRAFTED} = "
                                 f"{accepted}/{drafted}: the entry contradicts itself")
    return PerfRecord(rid, drafted, accepted, last - first, decode)


@dataclass(frozen=True)
class _PerfSeen:
    """Every ``/perf_metrics`` entry drained from one server so far (a snapshot's ``counts``)."""

    records: tuple[PerfRecord, ...] = ()
    witness: _Sums = _Sums()  #: ``/metrics`` iteration rows drained alongside (the same counts from the other endpoint)


async def _perf_drain(client: plugin.ServerClient) -> tuple[PerfRecord, ...]:
    """The entries ``/perf_metrics`` holds now (drained; none where the server does not offer it)."""
    doc = await client.get_json(PERF_METRICS_PATH, label=f"GET {PERF_METRICS_PATH}", optional=True)
    return tuple(perf_record(item, f"{client.base_url}{PERF_METRICS_PATH}") for item in doc or ()) \
        if isinstance(doc, list) else ()


class TrtllmPerfMetricsSource(plugin.CounterSource):
    """``trtllm-serve`` ``GET /perf_metrics``: each finished request's drafted and accepted totals.

    A request's verify steps are not reported: they are the iterations it ran after its context iteration
    (``last_iter - first_iter``, one verify step each), which its drafts must allow (between
    ``ceil(total_draft_tokens / k)`` and ``total_draft_tokens`` steps of 1 to ``k`` drafts), else the unit is
    refused; a request that paused inside that range is caught by the completion-token checks every source
    runs (a step emits its accepted drafts and one token). The histogram is not reported (AL and its interval
    only); the finished-request check counts the entries.
    """

    name = "trtllm-perf-metrics"
    engine = "trtllm"

    def __init__(self) -> None:
        self._servers: dict[str, _PerfSeen] = {}

    async def snapshot(self, client: plugin.ServerClient) -> plugin.Snapshot:
        doc = await client.get_json(PERF_METRICS_PATH, label=f"GET {PERF_METRICS_PATH}")
        where = f"{client.base_url}{PERF_METRICS_PATH}"
        if not isinstance(doc, list):
            raise plugin.MetricMissingError(f"{where} answered a {type(doc).__name__}, not a list of request entries",
                                            hint=_PERF_HINT)
        seen = self._servers.get(client.base_url, _PerfSeen())
        new = tuple(perf_record(item, where) for item in doc)
        known = {r.request_id for r in seen.records}
        twice = [r.request_id for r in new if r.request_id in known] + [
            rid for i, rid in enumerate(r.request_id for r in new) if rid in {r.request_id for r in new[:i]}]
        if twice:
            raise plugin.ServerError(f"{where}: request {twice[0]!r} is reported twice", hint=_PERF_HINT)
        rows = await client.get_json(METRICS_PATH, label=f"GET {METRICS_PATH}", optional=True)
        if isinstance(rows, list):
            with plugin.server_errors(f"GET {METRICS_PATH}"):
                seen = _PerfSeen(seen.records, seen.witness + _rows_sums(its.rows_from_json(rows, where), rows))
        seen = _PerfSeen(seen.records + new, seen.witness)
        self._servers[client.base_url] = seen
        return plugin.Snapshot(seen, finished=_finished(float(len(seen.records)), seen.witness))

    def delta_counts(self, before: plugin.Snapshot, after: plugin.Snapshot, k: int, label: str) -> AcceptanceCounts:
        b, a = _perf(before.counts), _perf(after.counts)
        new = a.records[len(b.records):]
        if new and not any(r.drafted for r in new):
            raise plugin.MetricMissingError(f"{label}: none of the unit's {len(new)} request(s) reports {PERF_SPEC}: "
                                            "speculative decoding is off", hint="launch trtllm-serve with a speculative_config")
        for r in new:
            if r.drafted and not -(-r.drafted // k) <= r.iterations <= r.drafted:
                raise plugin.ServerError(
                    f"{label}: request {r.request_id!r} ran {r.iterations} iterations after its context iteration but "
                    f"drafted {r.drafted} tokens, which take {-(-r.drafted // k)} to {r.drafted} verify steps of at "
                    f"most k = {k} drafts: its steps cannot be proven (it paused, or drafted more than k a step)",
                    hint="measure at a concurrency the server schedules every iteration, at the server's k "
                         "(--draft-len), or use --al-source trtllm-iteration-stats")
        steps = sum(r.iterations for r in new if r.drafted)
        _agree(label, a.witness - b.witness, _perf_sums(new))
        field_names = {"num_verify_steps": "last_iter - first_iter", "num_accepted_drafts": PERF_ACCEPTED,
                       "num_draft_tokens": PERF_DRAFTED}
        with plugin.server_errors(label):
            return AcceptanceCounts(k=k, num_verify_steps=steps, num_accepted_drafts=sum(r.accepted for r in new),
                                    num_draft_tokens=sum(r.drafted for r in new), source=f"{self.name} ({label})",
                                    field_names=field_names, most_drafts=max(
                                        (-(-r.drafted // r.iterations) for r in new if r.drafted), default=None))

    def assert_not_backwards(self, before: plugin.Snapshot, after: plugin.Snapshot, label: str) -> None:
        """Entries are drained and only added: nothing here can go backwards (a restart shows in the probe)."""

    def decode_ms(self, before: plugin.Snapshot, after: plugin.Snapshot) -> float | None:
        """The unit's entries' ``timing_metrics`` decode times summed (``get_perf_metrics`` in
        ``tensorrt_llm/serve/openai_server.py``), None when one lacks them."""
        new = _perf(after.counts).records[len(_perf(before.counts).records):]
        times = [r.decode_ms for r in new]
        return None if not times or None in times else sum(t for t in times if t is not None)


def _perf(counts: Any) -> _PerfSeen:
    """A snapshot's counts, which this source made."""
    if not isinstance(counts, _PerfSeen):
        raise TypeError(f"not a {TrtllmPerfMetricsSource.name} snapshot: {type(counts).__name__}")
    return counts
