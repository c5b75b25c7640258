"""Where a server measurement's counts come from: bias-free AL sources, the kinds and their checks.

An engine's profile lists its sources (``al_sources``, the ``auto`` default first) and names each
one's implementation (``source_impls``); the built-in engines' live in
:mod:`golden_al.servers.adapters` (``sglang-meta-info``, ``sglang-spec-tokens-details``,
``sglang-generate``, ``vllm-per-request``, ``vllm-prometheus``, ``atom-mtp-stats``,
``llamacpp-prometheus``), a plugin's in its own package. Two kinds:

* **Per request** (:class:`ResponseCounts` read by :class:`PerRequestSource`): the counts arrive
  in each response; any concurrency; a resumed run re-sends only requests without a result.
* **Counter deltas** (:class:`CounterSource` subclasses): the difference of two snapshots of the
  server's cumulative counters taken around a *unit*, one request at concurrency 1 or a window of
  ``concurrency`` requests sent together. Deltas are attributable only when the server is idle
  before a unit's first snapshot (busy gauges, else two equal snapshots), exactly the unit's
  requests finished in between (a finished-requests counter where the engine has one), and no
  counter went backwards or process restarted (``process_start_time_seconds``) between any two
  snapshots; this module holds those checks.

An engine's own AL field that counts the prefill token (SGLang's ``spec_accept_length``) is never a
source. Parsing is :mod:`golden_al.formats` and :mod:`distributions.counts`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from distributions.counts import AcceptanceCounts
from distributions.errors import CounterWentBackwardsError, DistributionError, Error
from golden_al.errors import (
    CounterResetError,
    InputFileError,
    MetricMissingError,
    MixedDraftLengthsError,
    ServerError,
    UsageError,
)
from golden_al.httpclient import ServerClient
from golden_al.plugin import registry

__all__ = ["CounterSource", "MixedDraftLengths", "PerRequestSource", "PrometheusSource", "ResponseCounts",
           "Snapshot", "Source", "default_source", "make_source", "per_request_alternative",
           "require_distribution", "server_errors", "source_names"]


def source_names() -> tuple[str, ...]:
    """Every AL source a registered engine offers (``--al-source``'s choices besides ``auto``)."""
    return tuple(dict.fromkeys(n for e in registry.engine_names() for n in registry.get_profile(e).server.al_sources))


def _engine_of(source: str) -> str | None:
    """The registered engine whose profile offers ``source``."""
    return next((name for name in registry.engine_names() if source in registry.get_profile(name).server.al_sources), None)


def _implementation(name: str, engine: str) -> Any:
    """What the engine's profile names for source ``name`` (``source_impls``: a :class:`CounterSource`
    subclass or a :class:`ResponseCounts`), imported."""
    profile = registry.get_profile(engine)
    ref = profile.server.source_impls.get(name)
    if ref is None:
        raise UsageError(f"{profile.display_name} offers the AL source {name} but its profile names no "
                         "implementation (source_impls)")
    return registry.load_hook(ref)


def default_source(engine: str, *, per_request_metrics: bool = False) -> str:
    """The source used when ``--al-source auto``: the engine profile's first, or its per-request one when
    the server reports per-request counts."""
    profile = registry.get_profile(engine)
    if per_request_metrics and profile.server.per_request_source:
        return profile.server.per_request_source
    if not profile.server.al_sources:
        offer = [n for n in registry.engine_names() if registry.get_profile(n).server.al_sources]
        raise UsageError(f"no AL source for engine {engine!r}", hint=", ".join(offer) + " have one")
    return profile.server.al_sources[0]


def make_source(name: str, engine: str) -> Source:
    """The source object called ``name`` (checked against ``engine``)."""
    known = source_names()
    if name not in known:
        raise UsageError(f"unknown --al-source {name!r}", hint="auto or one of " + ", ".join(known))
    owner = _engine_of(name)
    if owner != engine:
        raise UsageError(f"--al-source {name} is for {owner or 'no registered engine'}, not {engine}")
    impl = _implementation(name, engine)
    if isinstance(impl, type) and issubclass(impl, CounterSource):
        return impl()
    return PerRequestSource(name)


async def per_request_alternative(client: ServerClient, engine: str, served_model: str,
                                  prompt: Any) -> PerRequestSource | None:
    """A per-request source the server offers besides its aggregate counters, or None (the engine
    profile's ``per_request_probe`` asks with one short request; SGLang's default is already
    per-request, ATOM and llama.cpp have none)."""
    profile = registry.get_profile(engine)
    if profile.server.per_request_probe is None or profile.server.per_request_source is None:
        return None
    if await profile.server.per_request_probe(client, served_model, prompt.messages):
        return PerRequestSource(profile.server.per_request_source)
    return None


def require_distribution(counts: AcceptanceCounts, label: str, what: str) -> AcceptanceCounts:
    if counts.histogram is None or counts.per_position_accepted is None:
        raise MetricMissingError(
            f"{label}: {what} gives only totals (verify steps {counts.num_verify_steps}, accepted "
            f"{counts.num_accepted_drafts}), no per-step histogram",
            hint="the record needs the histogram; use a newer engine version or another --al-source",
        )
    return counts


@contextlib.contextmanager
def server_errors(label: str) -> Iterator[None]:
    """Turn the errors parsing a server's counts raises (the package's own, :class:`distributions.errors.Error`)
    into :class:`ServerError` (or keep their own class); anything else is a bug and propagates unchanged, as httpx's
    ``map_exceptions`` maps only the transport errors it knows."""
    try:
        yield
    except Error as exc:
        raise _as_server_error(exc, label) from None


def _as_server_error(exc: Error, label: str) -> Error:
    if isinstance(exc, CounterWentBackwardsError):
        return CounterResetError(f"{label}: {exc.message}", hint=exc.hint)
    if isinstance(exc, (MetricMissingError, CounterResetError)):
        return exc
    if isinstance(exc, (DistributionError, InputFileError)):
        return ServerError(f"{label}: the server's counts are inconsistent: {exc.message}", hint=exc.hint)
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

    @property
    def needs_text(self) -> bool:
        """Whether requests carry the rendered prompt text instead of chat messages (:meth:`text_body`)."""
        return False

    def text_body(self, text: str, sampling: Any, seed: int | None) -> dict[str, Any]:
        """The request body for a rendered prompt (only where :attr:`needs_text`)."""
        raise NotImplementedError(f"{self.name} sends chat messages, not rendered text")


@dataclass(frozen=True)
class ResponseCounts:
    """One per-request AL source as an engine's adapter declares it (``golden_al/servers/adapters/``):
    where requests go, what each carries, and the reader of one response's counts, ``(response, k,
    label) -> AcceptanceCounts``, which raises ``MetricMissingError`` (named with the keys seen) when
    the fields are absent."""

    read: Callable[[Mapping[str, Any], int, str], AcceptanceCounts]
    endpoint: str = "/v1/chat/completions"
    payload: Mapping[str, Any] = field(default_factory=dict)
    #: ``(text, sampling, seed) -> body`` for an endpoint that takes rendered prompt text (a native
    #: ``/generate``); None: OpenAI chat messages
    text_body: Callable[[str, Any, int | None], dict[str, Any]] | None = None


class PerRequestSource(Source):
    """Counts from each response (see the module docstring)."""

    per_request = True

    def __init__(self, name: str) -> None:
        owner = _engine_of(name)
        if owner is None:
            raise UsageError(f"no registered engine offers the AL source {name}")
        impl = _implementation(name, owner)
        if not isinstance(impl, ResponseCounts):
            raise UsageError(f"{name} is not a per-request source")
        self.name, self.engine, self._impl = name, owner, impl

    @property
    def endpoint(self) -> str:
        return self._impl.endpoint

    def payload_extra(self) -> dict[str, Any]:
        return dict(self._impl.payload)

    @property
    def needs_text(self) -> bool:
        return self._impl.text_body is not None

    def text_body(self, text: str, sampling: Any, seed: int | None) -> dict[str, Any]:
        if self._impl.text_body is None:
            return super().text_body(text, sampling, seed)
        return self._impl.text_body(text, sampling, seed)

    def counts(self, resp: Mapping[str, Any], k: int, label: str) -> AcceptanceCounts:
        """The request's counts from its response (the adapter's reader).

        Raises:
            MetricMissingError: the spec fields are absent (named with the keys seen).
            ServerError: the fields contradict each other.
        """
        with server_errors(label):
            counts = self._impl.read(resp, k, label)
        return require_distribution(counts, label, self.name)

    def steps_by_draft_len(self, resp: Mapping[str, Any], k: int, label: str, *, max_tokens: int | None,
                           output_tokens: int | None) -> dict[int, AcceptanceCounts] | None:
        """The response's steps, one histogram per draft length they were proposed at; None when the
        server does not report per-step draft lengths.

        Of the engines golden-al knows, only vLLM (>= 0.33, ``--per-request-spec-decode-metrics
        detailed``: ``per_step_drafted``) reports them. SGLang's ``meta_info`` and log, ATOM's
        ``/debug/mtp_stats``, llama.cpp's ``timings`` and TensorRT-LLM report per-request or
        per-position totals only, so a cell that mixes lengths there is refused, not split.
        """
        read = registry.get_profile(self.engine).server.response_steps_by_draft_len
        if read is None:
            return None
        with server_errors(label):
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
    """Counts from snapshots around a unit of requests (see the module docstring).

    Every wait has a deadline on :attr:`clock` (seconds; tests inject it with :attr:`sleep`): a server with a
    busy gauge must go idle within :attr:`idle_timeout_s`; without one, two equal snapshots must come within
    :attr:`settle_timeout_s` (a minute), else the counters never settle (another client, most likely).
    """

    per_request = False
    idle_timeout_s: float = 600.0
    settle_timeout_s: float = 60.0
    settle_s: float = 1.0
    clock: Callable[[], float] = staticmethod(time.monotonic)
    sleep: Callable[[float], Awaitable[None]] = staticmethod(asyncio.sleep)

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

    def decode_ms(self, before: Snapshot, after: Snapshot) -> float | None:
        """The unit's requests' own decode time, first output token to last, summed, where the server reports it
        beside its counts (TensorRT-LLM's ``/perf_metrics``); None (the default): it does not."""
        return None

    async def wait_idle(self, client: ServerClient, label: str) -> Snapshot:
        """A snapshot taken while the server runs nothing (nothing in flight can leak into a unit).

        Raises:
            ServerError: still busy after :attr:`idle_timeout_s`, or, without a busy gauge, counters that
                never settle within :attr:`settle_timeout_s`.
        """
        start = self.clock()
        snap = await self.snapshot(client)
        while snap.busy is None or snap.busy > 0:
            if snap.busy is None and self.clock() - start > self.settle_timeout_s:
                raise ServerError(
                    f"{label}: the server's counters kept moving for {self.settle_timeout_s:.0f} s before the unit "
                    "and it reports no busy gauge: another client is likely sending it requests",
                    hint="counter deltas need a server that serves only this measurement")
            if snap.busy is not None and self.clock() - start > self.idle_timeout_s:
                raise ServerError(
                    f"{label}: the server stayed busy for {self.idle_timeout_s:.0f} s before the unit "
                    f"({snap.busy:g} requests running or waiting)",
                    hint="counter deltas need a server that serves only this measurement")
            await self.sleep(self.settle_s)
            again = await self.snapshot(client)
            if snap.busy is None and again.busy is None and (again.counts, again.finished) == (snap.counts,
                                                                                              snap.finished):
                return again
            snap = again
        return snap

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
        deadline = self.clock() + 10.0
        while done < n_requests and self.clock() < deadline:
            await self.sleep(0.2)  # counters not current yet
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


class PrometheusSource(CounterSource):
    """Counter deltas of ``GET /metrics`` spec-decode counters of the shape vLLM exposes
    (:class:`~golden_al.formats.counters.DraftCounters`, read by the engine's ``counter_reader``): the
    per-position counters give each unit's histogram. An engine's subclass names the source and the engine, and
    adds what its server says beside the counters (:meth:`snapshot_of`)."""

    async def snapshot(self, client: ServerClient) -> Snapshot:
        from golden_al.formats.counters import spec_counters
        from golden_al.formats.prometheus import parse_metrics_text

        text = await client.get_text("/metrics", label="GET /metrics")
        snap = parse_metrics_text(text or "", source=f"{client.base_url}/metrics")
        return self.snapshot_of(snap, spec_counters(snap, self.engine))

    def snapshot_of(self, snap: Any, counters: Any) -> Snapshot:
        """The :class:`Snapshot` of one ``/metrics`` read (``snap``, a ``MetricsSnapshot``) and its counters."""
        return Snapshot(counters, positions=len(counters.accepted_per_position) or None)

    def delta_counts(self, before: Snapshot, after: Snapshot, k: int, label: str) -> AcceptanceCounts:
        with server_errors(label):
            counts = after.counts.minus(before.counts).counts(k)
        return require_distribution(counts, label, self.name)

    def assert_not_backwards(self, before: Snapshot, after: Snapshot, label: str) -> None:
        with server_errors(label):
            after.counts.minus(before.counts)


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
