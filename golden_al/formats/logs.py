"""Server log lines that report acceptance, read through the engines' profiles: each engine's ``log_reader``
(:class:`~golden_al.engines.profile.LogReader`) names its line parser and the byte markers that let a line be
skipped undecoded (SGLang ``Decode batch``, vLLM ``SpecDecoding metrics``, ATOM ``[MTP Stats``; the parsers live
in ``golden_al/engines/<name>/logs.py``). A record has ``engine``, ``line_no`` and ``kind``, and may refuse
impossible counts (``validate``).

Parsers never raise on odd input: a line that does not match is not a record.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from golden_al.engines.profile import EngineProfile

__all__ = [
    "LogRecord",
    "LogScan",
    "iter_log_records",
    "number",
    "parse_log_line",
    "pattern",
    "read_log_file",
    "scan_log_text",
]

#: One record of a log line (an engine's record class: ``engine``, ``line_no``, ``kind``, maybe ``validate``).
LogRecord = Any


def pattern(profile: EngineProfile, name: str) -> re.Pattern[str]:
    """The compiled log pattern ``name`` of an engine profile (``golden_al/engines/``)."""
    return re.compile(profile.log_pattern(name).regex)


def number(text: str | None) -> float | None:
    """A float from a matched group, None when absent or not a number."""
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return None


@functools.lru_cache(maxsize=1)
def _readers() -> tuple[tuple[Callable[[str, int], Any], ...], tuple[bytes, ...]]:
    """Every registered engine's line parser and markers (:attr:`RunLogSupport.log_reader`)."""
    from golden_al.engines import engine_names, get_profile, load_hook

    parsers, markers = [], []
    for name in engine_names():
        reader = get_profile(name).run_logs.log_reader
        if reader is not None:
            parsers.append(load_hook(reader.parse))
            markers += [m.encode() for m in reader.markers]
    return tuple(parsers), tuple(markers)


def parse_log_line(line: str, line_no: int = 0) -> LogRecord | None:
    """The record one log line holds (any engine), or None."""
    for parse in _readers()[0]:
        rec = parse(line, line_no)
        if rec is not None:
            return rec
    return None


def iter_log_records(lines: Iterable[str], *, start: int = 1) -> Iterator[LogRecord]:
    """Records of every recognised line; ``line_no`` counts from ``start``."""
    for i, line in enumerate(lines, start):
        rec = parse_log_line(line, i)
        if rec is not None:
            yield rec


@dataclass(frozen=True)
class LogScan:
    """What one log file holds: its records and how many lines were read."""

    source: str | None
    num_lines: int
    records: tuple[LogRecord, ...] = field(default_factory=tuple)

    def engines(self) -> tuple[str, ...]:
        """Engines with at least one record, in order of first appearance."""
        seen: dict[str, None] = {}
        for r in self.records:
            seen.setdefault(r.engine, None)
        return tuple(seen)

    def of(self, engine: str) -> tuple[LogRecord, ...]:
        """Records of one engine."""
        return tuple(r for r in self.records if r.engine == engine)


def scan_log_text(text: str, *, source: str | Path | None = None) -> LogScan:
    """Parse every line of ``text`` (counts validated like :func:`read_log_file`)."""
    lines = text.splitlines()
    records = tuple(iter_log_records(lines))
    for rec in records:
        _validate(rec, source)
    return LogScan(str(source) if source is not None else None, len(lines), records)


def _maybe_record(raw: bytes) -> bool:
    return any(m in raw for m in _readers()[1])


def read_log_file(path: str | Path, *, max_bytes: int | None = None) -> LogScan:
    """Read a server log, streamed (bounded bytes, lines cut at 1 MiB, undecodable bytes
    replaced, lines without a record marker never decoded), and parse its records.

    Raises:
        UnreadableInputError: not a regular file (a FIFO or device is refused unopened),
            unreadable, or over the byte cap.
        CounterSemanticsError: a line whose counts no engine can produce.
    """
    from golden_al import safeio

    p = Path(path)
    stats = safeio.LineStats()
    cap = safeio.DEFAULT_MAX_LOG_BYTES if max_bytes is None else max_bytes
    records = []
    for number, line in safeio.iter_lines(p, max_bytes=cap, stats=stats, keep=_maybe_record):
        rec = parse_log_line(line, number)
        if rec is not None:
            _validate(rec, p)
            records.append(rec)
    return LogScan(str(p), stats.lines, tuple(records))


def _validate(rec: LogRecord, source: Path | str | None) -> None:
    check = getattr(rec, "validate", None)
    if check is not None:
        check(source)
