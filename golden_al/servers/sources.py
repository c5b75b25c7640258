"""Where a server measurement's counts come from: bias-free AL sources per engine.

Per-request sources (the counts arrive in each response; any concurrency; a
resumed run re-sends only requests without a result):

* ``sglang-meta-info``: chat with ``return_meta_info`` (non-streaming), the
  ``choices[0].meta_info`` histogram ``spec_correct_drafts_histogram`` (and its
  older aliases);
* ``sglang-spec-tokens-details``: chat with ``return_spec_tokens_details``, the
  top-level ``sglext.spec_tokens_details`` (SGLang >= 0.5.16);
* ``sglang-generate``: native ``/generate`` ``meta_info`` (needs rendered prompts);
* ``vllm-per-request``: ``metrics.speculative_decoding`` (vLLM >= 0.33 started with
  ``--per-request-spec-decode-metrics``).

Counter-delta sources (the counts are the difference of two snapshots of the
server's cumulative counters taken around a *unit*: one request at concurrency 1,
or a window of ``concurrency`` requests sent together):

* ``vllm-prometheus``: ``/metrics`` spec-decode counters including accepted per
  position (the histogram follows exactly for a chain draft);
* ``atom-mtp-stats``: ``/debug/mtp_stats`` (its ``distribution`` is the histogram).

SGLang's own ``spec_accept_length`` (and Prometheus ``generation_tokens /
verify_calls``) counts the prefill token and is never used for AL.

Parsing is :mod:`golden_al.formats` (``responses``, ``prometheus``) and
:mod:`distributions.counts`; this module adds the request fields, the unit
bookkeeping and the checks that make deltas attributable: the server is idle
before a unit's first snapshot (vLLM ``num_requests_running/waiting``, else two
equal snapshots), exactly the unit's requests finished in between
(``vllm:request_success_total``), and no counter went backwards or process
restarted (``process_start_time_seconds``) between any two snapshots.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from distributions.counts import AcceptanceCounts
from distributions.errors import CounterWentBackwardsError, DistributionError
from golden_al.engines import atom, llamacpp
from golden_al.errors import (
    CounterResetError,
    GoldenALError,
    InputFileError,
    MetricMissingError,
    ServerError,
    UsageError,
)
from golden_al.servers.client import ServerClient

__all__ = [
    "COUNTER_SOURCES",
    "PER_REQUEST_SOURCES",
    "SOURCES",
    "AtomMtpStatsSource",
    "CounterSource",
    "PerRequestSource",
    "Source",
    "VllmPrometheusSource",
    "default_source",
    "make_source",
    "per_request_alternative",
]

PER_REQUEST_SOURCES = ("sglang-meta-info", "sglang-spec-tokens-details", "sglang-generate", "vllm-per-request")
COUNTER_SOURCES = ("vllm-prometheus", "atom-mtp-stats", "llamacpp-prometheus")
SOURCES = PER_REQUEST_SOURCES + COUNTER_SOURCES


def _engine_of(source: str) -> str | None:
    """The registered engine whose profile offers ``source``."""
    from golden_al import engines

    return next((name for name in engines.engine_names() if source in engines.get_profile(name).al_sources), None)


def default_source(engine: str, *, per_request_metrics: bool = False) -> str:
    """The source used when ``--al-source auto``: the engine profile's first, or its per-request one when
    the server reports per-request counts."""
    from golden_al import engines

    profile = engines.get_profile(engine)
    if per_request_metrics and profile.per_request_source:
        return profile.per_request_source
    if not profile.al_sources:
        offer = [n for n in engines.engine_names() if engines.get_profile(n).al_sources]
        raise UsageError(f"no AL source for engine {engine!r}", hint=", ".join(offer) + " have one")
    return profile.al_sources[0]


def make_source(name: str, engine: str) -> Source:
    """The source object called ``name`` (checked against ``engine``)."""
    if name not in SOURCES:
        raise UsageError(f"unknown --al-source {name!r}", hint="auto or one of " + ", ".join(SOURCES))
    owner = _engine_of(name)
    if owner != engine:
        raise UsageError(f"--al-source {name} is for {owner or 'no registered engine'}, not {engine}")
    if name == "vllm-prometheus":
        return VllmPrometheusSource()
    if name == "atom-mtp-stats":
        return AtomMtpStatsSource()
    if name == "llamacpp-prometheus":
        return LlamaCppPrometheusSource()
    return PerRequestSource(name)


async def per_request_alternative(client: ServerClient, engine: str, served_model: str,
                                  prompt: Any) -> PerRequestSource | None:
    """A per-request source the server offers besides its aggregate counters, or None (the engine
    profile's ``per_request_probe`` asks with one short request; SGLang's default is already
    per-request, ATOM and llama.cpp have none)."""
    from golden_al import engines

    profile = engines.get_profile(engine)
    if profile.per_request_probe is None or profile.per_request_source is None:
        return None
    if await profile.per_request_probe(client, served_model, prompt.messages):
        return PerRequestSource(profile.per_request_source)
    return None


def _require_distribution(counts: AcceptanceCounts, label: str, what: str) -> AcceptanceCounts:
    if counts.histogram is None or counts.per_position_accepted is None:
        raise MetricMissingError(
            f"{label}: {what} gives only totals (verify steps {counts.num_verify_steps}, accepted "
            f"{counts.num_accepted_drafts}), no per-step histogram",
            hint="the record needs the histogram; use a newer engine version or another --al-source",
        )
    return counts


#: The exceptions a source expects from parsing a server's counts (as httpx's ``map_exceptions``
#: maps only the transport errors it knows): anything else is a bug and propagates unchanged.
_EXPECTED: tuple[type[Exception], ...] = (GoldenALError, DistributionError)


@contextlib.contextmanager
def _server_errors(label: str) -> Iterator[None]:
    """Turn the expected parsing errors into :class:`ServerError` (or keep their own class)."""
    try:
        yield
    except _EXPECTED as exc:
        raise _as_server_error(exc, label) from None


def _as_server_error(exc: Exception, label: str) -> GoldenALError:
    if isinstance(exc, CounterWentBackwardsError):
        return CounterResetError(f"{label}: {exc.message}", hint=exc.hint)
    if isinstance(exc, (MetricMissingError, CounterResetError)):
        return exc
    if isinstance(exc, (DistributionError, InputFileError)):
        msg = exc.message if hasattr(exc, "message") else str(exc)
        return ServerError(f"{label}: the server's counts are inconsistent: {msg}", hint=getattr(exc, "hint", None))
    assert isinstance(exc, GoldenALError)  # _EXPECTED holds nothing else
    return exc


class Source(ABC):
    """An AL source: what to add to each request, and how to turn answers into counts."""

    name: str
    engine: str
    per_request: bool

    @property
    def endpoint(self) -> str:
        """The path requests go to."""
        return "/v1/chat/completions"

    def payload_extra(self) -> dict[str, Any]:
        """Fields added to every request body."""
        return {}


class PerRequestSource(Source):
    """Counts from each response (see the module docstring)."""

    per_request = True

    def __init__(self, name: str) -> None:
        if name not in PER_REQUEST_SOURCES:
            raise UsageError(f"{name} is not a per-request source")
        owner = _engine_of(name)
        if owner is None:
            raise UsageError(f"no registered engine offers the AL source {name}")
        self.name, self.engine = name, owner

    @property
    def endpoint(self) -> str:
        return "/generate" if self.name == "sglang-generate" else "/v1/chat/completions"

    def payload_extra(self) -> dict[str, Any]:
        if self.name == "sglang-meta-info":
            return {"return_meta_info": True}
        if self.name == "sglang-spec-tokens-details":
            return {"return_spec_tokens_details": True}
        return {}

    def counts(self, resp: Mapping[str, Any], k: int, label: str) -> AcceptanceCounts:
        """The request's counts from its response.

        Raises:
            MetricMissingError: the spec fields are absent (named with the keys seen).
            ServerError: the fields contradict each other.
        """
        from golden_al.formats import responses

        with _server_errors(label):
            if self.name == "sglang-meta-info":
                choices = resp.get("choices") or [{}]
                meta = choices[0].get("meta_info") if isinstance(choices[0], Mapping) else None
                if not isinstance(meta, Mapping):
                    raise MetricMissingError(
                        f"{label}: the response has no choices[0].meta_info (keys: "
                        f"{sorted(choices[0]) if isinstance(choices[0], Mapping) else '-'})",
                        hint="SGLang returns it for non-streaming chat with return_meta_info; older SGLang: "
                        "--al-source sglang-generate",
                    )
                parsed = responses.parse_sglang_meta_info(meta, k=k, source=label)
            elif self.name == "sglang-spec-tokens-details":
                ext = resp.get("sglext")
                details = ext.get("spec_tokens_details") if isinstance(ext, Mapping) else None
                if isinstance(details, list):
                    details = details[0] if details else None
                if not isinstance(details, Mapping):
                    raise MetricMissingError(
                        f"{label}: the response has no sglext.spec_tokens_details (top-level keys: {sorted(resp)})",
                        hint="needs SGLang >= 0.5.16; otherwise use --al-source sglang-meta-info",
                    )
                parsed = responses.parse_sglang_meta_info(details, k=k, source=label)
            elif self.name == "sglang-generate":
                meta = resp.get("meta_info")
                if not isinstance(meta, Mapping):
                    raise MetricMissingError(f"{label}: /generate answered without meta_info (keys: {sorted(resp)})")
                parsed = responses.parse_sglang_meta_info(meta, k=k, source=label)
            else:
                metrics = resp.get("metrics")
                spec = metrics.get("speculative_decoding") if isinstance(metrics, Mapping) else None
                if not isinstance(spec, Mapping):
                    raise MetricMissingError(
                        f"{label}: the response has no metrics.speculative_decoding (top-level keys: {sorted(resp)})",
                        hint="start vLLM >= 0.33 with --per-request-spec-decode-metrics summary, "
                        "or use --al-source vllm-prometheus",
                    )
                parsed = responses.parse_vllm_spec_metrics(spec, k=k, source=label)
        return _require_distribution(parsed.counts, label, self.name)

    def steps_by_draft_len(self, resp: Mapping[str, Any], k: int, label: str, *, max_tokens: int | None,
                           output_tokens: int | None) -> dict[int, AcceptanceCounts] | None:
        """The response's steps, one histogram per draft length they were proposed at; None when the
        server does not report per-step draft lengths.

        Of the engines golden-al knows, only vLLM (>= 0.33, ``--per-request-spec-decode-metrics
        detailed``: ``per_step_drafted``) reports them. SGLang's ``meta_info`` and log, ATOM's
        ``/debug/mtp_stats``, llama.cpp's ``timings`` and TensorRT-LLM report per-request or
        per-position totals only, so a cell that mixes lengths there is refused, not split.
        """
        from golden_al import engines

        read = engines.get_profile(self.engine).response_steps_by_draft_len
        if read is None:
            return None
        with _server_errors(label):
            return read(resp, k, max_tokens=max_tokens, output_tokens=output_tokens)


# ---------------------------------------------------------------------------- counter sources
@dataclass(frozen=True)
class Snapshot:
    """One read of a server's cumulative counters, with what proves attribution."""

    counts: Any
    """Engine counters (``VllmSpecCounters``) or the raw ``/debug/mtp_stats`` JSON."""
    finished: float | None = None
    """Requests finished so far (vLLM ``request_success_total`` over every reason)."""
    busy: float | None = None
    """Requests running or waiting (vLLM gauges), None when not exposed."""
    start_time: float | None = None
    """``process_start_time_seconds`` (changes when the server restarts)."""
    positions: int | None = None
    """Draft positions the server exposes (vLLM ``position`` labels) = its ``k``."""


class CounterSource(Source):
    """Counts from snapshots around a unit of requests (see the module docstring)."""

    per_request = False
    idle_timeout_s: float = 600.0
    settle_s: float = 1.0

    @abstractmethod
    async def snapshot(self, client: ServerClient) -> Snapshot:
        """Read the counters now."""

    @abstractmethod
    def delta_counts(self, before: Snapshot, after: Snapshot, k: int, label: str) -> AcceptanceCounts:
        """Counts between two snapshots; CounterResetError when a counter went backwards."""

    def check_continuity(self, previous: Snapshot | None, current: Snapshot, label: str) -> None:
        """Raise CounterResetError when the server restarted since ``previous``."""
        if previous is None:
            return
        if (previous.start_time is not None and current.start_time is not None
                and current.start_time != previous.start_time):
            raise CounterResetError(
                f"{label}: the server restarted (process_start_time_seconds {previous.start_time:.0f} -> "
                f"{current.start_time:.0f}) between two snapshots",
                hint="finished requests are kept; rerun with --resume to continue against the new server",
            )
        self.assert_not_backwards(previous, current, label)

    @abstractmethod
    def assert_not_backwards(self, before: Snapshot, after: Snapshot, label: str) -> None:
        """Raise CounterResetError when any counter is smaller in ``after``."""

    def cross_check(self, responses: Sequence[Mapping[str, Any]], counts: AcceptanceCounts, k: int,
                    label: str) -> None:
        """Raise ServerError when the unit's responses contradict its counter delta (default: nothing to check)."""

    async def wait_idle(self, client: ServerClient, label: str) -> Snapshot:
        """A snapshot taken while the server runs nothing (nothing in flight can leak into a unit)."""
        deadline = time.monotonic() + self.idle_timeout_s
        snap = await self.snapshot(client)
        while True:
            if snap.busy is not None:
                if snap.busy <= 0:
                    return snap
            else:
                await asyncio.sleep(self.settle_s)
                again = await self.snapshot(client)
                if again.counts == snap.counts and again.finished == snap.finished:
                    return again
                snap = again
                continue
            if time.monotonic() > deadline:
                raise ServerError(
                    f"{label}: the server stayed busy for {self.idle_timeout_s:.0f} s before the unit "
                    f"({snap.busy:g} requests running or waiting)",
                    hint="counter deltas need a server that serves only this measurement",
                )
            await asyncio.sleep(self.settle_s)
            snap = await self.snapshot(client)

    async def after_unit(self, client: ServerClient, before: Snapshot, n_requests: int, label: str) -> Snapshot:
        """The snapshot closing a unit of ``n_requests``; checks that exactly those finished.

        Raises:
            CounterResetError: the server restarted during the unit.
            ServerError: other requests finished on the server meanwhile.
        """
        after = await self.snapshot(client)
        self.check_continuity(before, after, label)
        if before.finished is None or after.finished is None:
            return after
        start = before.finished
        done = after.finished - start
        deadline = time.monotonic() + 10.0
        while done < n_requests and time.monotonic() < deadline:
            await asyncio.sleep(0.2)  # counters not current yet
            after = await self.snapshot(client)
            self.check_continuity(before, after, label)
            done = (after.finished if after.finished is not None else start) - start
        if done != n_requests:
            raise ServerError(
                f"{label}: {done:g} requests finished on the server between the snapshots, expected {n_requests}: "
                "other traffic reached the server, so the counter delta cannot be attributed",
                hint="measure on a server nobody else uses, or use a per-request --al-source",
            )
        return after


class VllmPrometheusSource(CounterSource):
    """vLLM ``/metrics`` spec-decode counters (``vllm/v1/spec_decode/metrics.py``, 0.33.0)."""

    name = "vllm-prometheus"
    engine = "vllm"

    async def snapshot(self, client: ServerClient) -> Snapshot:
        from golden_al.formats import prometheus as prom

        text = await client.get_text("/metrics", label="GET /metrics")
        snap = prom.parse_metrics_text(text or "", source=f"{client.base_url}/metrics")
        counters = prom.spec_counters(snap, "vllm")
        assert isinstance(counters, prom.VllmSpecCounters)

        def opt(name: str) -> float | None:
            return snap.total(name) if snap.has(name) else None

        finished = opt("vllm:request_success_total")
        running = opt("vllm:num_requests_running")
        waiting = opt("vllm:num_requests_waiting")
        busy = None if running is None else running + (waiting or 0.0)
        return Snapshot(counters, finished, busy, opt("process_start_time_seconds"),
                        len(counters.accepted_per_position) or None)

    def delta_counts(self, before: Snapshot, after: Snapshot, k: int, label: str) -> AcceptanceCounts:
        from golden_al.engines import vllm as vllm_engine
        from golden_al.formats import prometheus as prom

        with _server_errors(label):
            d = prom.counters_delta(before.counts, after.counts)
            assert isinstance(d, prom.VllmSpecCounters)
            counts = vllm_engine.counts_from_counters(d.num_drafts, d.num_draft_tokens, d.num_accepted_tokens,
                                                list(d.accepted_per_position) or None, k=k)
        if not d.accepted_per_position:
            raise MetricMissingError(f"{label}: {vllm_engine.METRIC_ACCEPTED_PER_POS} is absent",
                                     hint="needs vLLM >= 0.8 (V1 engine) for per-position counters")
        return _require_distribution(counts, label, self.name)

    def assert_not_backwards(self, before: Snapshot, after: Snapshot, label: str) -> None:
        from golden_al.formats import prometheus as prom

        with _server_errors(label):
            prom.counters_delta(before.counts, after.counts)
        if before.finished is not None and after.finished is not None and after.finished < before.finished:
            raise CounterResetError(f"{label}: vllm:request_success_total went backwards "
                                    f"({before.finished:g} -> {after.finished:g}): the server restarted",
                                    hint="rerun with --resume; finished requests are kept")


class AtomMtpStatsSource(CounterSource):
    """ATOM ``GET /debug/mtp_stats`` (``atom/model_engine/llm_engine.py``, HEAD ffdf3bb5d)."""

    name = "atom-mtp-stats"
    engine = "atom"

    async def snapshot(self, client: ServerClient) -> Snapshot:
        path = atom.MTP_STATS_PATH
        stats = await client.get_json(path, label=f"GET {path}")
        if not isinstance(stats, Mapping):
            raise ServerError(f"{path} answered {str(stats)[:200]}")
        if stats.get(atom.STATS_ENABLED) is False:
            raise MetricMissingError(f"ATOM {path} reports {atom.STATS_ENABLED}: false (speculative decoding is off)",
                                     hint=f"start ATOM with {atom.FLAG_METHOD} and {atom.FLAG_K}")
        return Snapshot(dict(stats))

    def delta_counts(self, before: Snapshot, after: Snapshot, k: int, label: str) -> AcceptanceCounts:
        from golden_al.engines import atom as atom_engine

        with _server_errors(label):
            counts = atom_engine.mtp_stats_delta(before.counts, after.counts, k=k)
        return _require_distribution(counts, label, self.name)

    def assert_not_backwards(self, before: Snapshot, after: Snapshot, label: str) -> None:
        from distributions import counts as dcounts

        def pick(s: Snapshot) -> dict[str, Any]:
            return {key: s.counts.get(key) for key in (atom.STATS_DISTRIBUTION, atom.STATS_ACCEPTED,
                                                       atom.STATS_DRAFT_TOKENS)}

        with _server_errors(label):
            dcounts.delta(pick(before), pick(after), name="atom-mtp-stats")


class LlamaCppPrometheusSource(CounterSource):
    """llama-server ``/metrics`` (``--metrics``) spec-decode counters (llama.cpp 0c1e570, ``server-task.cpp``).

    llama.cpp adds a request's counts when its slot is released, and ``/metrics`` is
    answered from the same task queue, so a scrape after the response sees them. There
    is no finished-requests counter: attribution rests on the server being idle
    (``requests_processing`` + ``requests_deferred`` = 0) around the unit, and each
    delta is checked against the responses' own ``timings.draft_n``/``draft_n_accepted``
    (:meth:`cross_check`).
    """

    name = "llamacpp-prometheus"
    engine = "llamacpp"

    async def snapshot(self, client: ServerClient) -> Snapshot:
        from golden_al.formats import prometheus as prom
        from golden_al.formats.llamacpp import read_counters

        text = await client.get_text("/metrics", label="GET /metrics")
        snap = prom.parse_metrics_text(text or "", source=f"{client.base_url}/metrics")
        counters = read_counters(snap)
        return Snapshot(counters, None, counters.busy, None, len(counters.accepted_per_position) or None)

    async def after_unit(self, client: ServerClient, before: Snapshot, n_requests: int, label: str) -> Snapshot:
        """The closing snapshot, once the server is idle again (the unit's slots released)."""
        deadline = time.monotonic() + 10.0
        after = await self.snapshot(client)
        while after.busy not in (None, 0.0) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            after = await self.snapshot(client)
        self.check_continuity(before, after, label)
        return after

    def delta_counts(self, before: Snapshot, after: Snapshot, k: int, label: str) -> AcceptanceCounts:
        with _server_errors(label):
            d = after.counts.minus(before.counts)
            counts = d.to_counts(k)
        return _require_distribution(counts, label, self.name)

    def assert_not_backwards(self, before: Snapshot, after: Snapshot, label: str) -> None:
        with _server_errors(label):
            after.counts.minus(before.counts)

    def cross_check(self, responses: Sequence[Mapping[str, Any]], counts: AcceptanceCounts, k: int,
                    label: str) -> None:
        """The delta must equal the sum of the responses' ``timings.draft_n``/``draft_n_accepted``."""
        from golden_al.formats.llamacpp import timings_counts

        drafted = accepted = 0
        for resp in responses:
            try:
                got = timings_counts(resp)
            except InputFileError as exc:
                raise ServerError(f"{label}: {exc.message}") from None
            if got is not None:
                drafted += got[0]
                accepted += got[1]
        steps = float(counts.num_verify_steps)
        if abs(steps * k - drafted) > 1e-9 or abs(float(counts.num_accepted_drafts) - accepted) > 1e-9:
            raise ServerError(
                f"{label}: the /metrics delta ({steps:g} verify steps x k={k} = {steps * k:g} draft tokens, "
                f"{float(counts.num_accepted_drafts):g} accepted) disagrees with the responses' timings (draft_n "
                f"{drafted}, draft_n_accepted {accepted}): other traffic reached the server, or its draft length "
                f"is not k={k}",
                hint=f"measure on a server nobody else uses, started so: {llamacpp.FIXED_K_HINT} (golden-al --launch "
                "does)",
            )
