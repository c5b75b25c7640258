"""Server log lines that report acceptance, read through the engines' profiles: each engine's ``log_reader``
(:class:`~golden_al.plugin.profile.LogReader`) names its line parser and the byte markers that let a line be
skipped undecoded (SGLang ``Decode batch``, vLLM ``SpecDecoding metrics``, ATOM ``[MTP Stats``; the parsers live
in ``golden_al/engines/<name>/logs.py``). A record has ``engine``, ``line_no`` and ``kind``, and may refuse
impossible counts (``validate``).

Parsers never raise on odd input: a line that does not match is not a record. The readers then apply one policy
(:class:`LineTally`): a line that names an engine's fields but is not a record is counted and refused, unless it
is a file's cut last line; a row seen twice is refused.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from golden_al.errors import InputFileError
from golden_al.plugin.profile import EngineProfile

__all__ = [
    "LineTally",
    "LogRecord",
    "LogScan",
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


class LineTally:
    """The one policy of every engine's log and iteration-row reader (issue 51), kept over the files of one read.

    A line that names an engine's fields (its marker) but does not parse, or parses cut short, is counted: only a
    file's last line (a write cut by a crash) may be left out, which :attr:`notes` says; any other is a refusal
    naming the count and the first. A row whose text was seen before, in this file or another of the read (a log
    held twice, a row written twice), is refused: it would be summed twice.
    """

    def __init__(self) -> None:
        self.notes: list[str] = []
        self._seen: dict[bytes, tuple[str | Path, int]] = {}  #: a row's digest -> where it was first read
        self._unread = 0  #: the current file's lines that did not parse
        self._first: tuple[int, str, str] = (0, "", "")  #: the first of them: (line, engine, text)

    def row(self, source: str | Path, line: int, text: str) -> None:
        """Count a row that parsed; InputFileError when its text was read before."""
        key = hashlib.blake2b(text.strip().encode("utf-8", "replace"), digest_size=16).digest()
        first = self._seen.setdefault(key, (source, line))
        if first != (source, line):
            raise InputFileError(f"this row appears twice, word for word (first at {first[0]}:{first[1]}): summing "
                                 "both would count its steps twice", path=source, line=line,
                                 hint="pass each log once, as the server wrote it (not a copy, nor a concatenation)")

    def unread(self, line: int, text: str, what: str) -> None:
        """Count a line that names ``what``'s fields but does not parse."""
        if not self._unread:
            self._first = (line, what, text)
        self._unread += 1

    def close(self, source: str | Path, last_line: int) -> None:
        """End a file of ``last_line`` lines: note its cut last line, or refuse its lines that do not parse."""
        n, self._unread = self._unread, 0
        line, what, text = self._first
        if n == 1 and line == last_line:
            self.notes.append(f"{source}: its last line ({what}, line {line}) is cut short and was left out")
        elif n:
            raise InputFileError(f"{n} {what} line(s) name its fields but do not parse (first: "
                                 f"{text.strip()[:160]!r})", path=source, line=line,
                                 hint="pass the log as the server wrote it: only a last line cut short by a crash is "
                                      "left out")


@functools.lru_cache(maxsize=1)
def _readers() -> tuple[tuple[str, Callable[[str, int], Any], tuple[str, ...]], ...]:
    """Every registered engine's name, line parser and markers (:attr:`RunLogSupport.log_reader`)."""
    from golden_al.plugin.registry import engine_names, get_profile, load_hook

    out = []
    for name in engine_names():
        profile = get_profile(name)
        reader = profile.run_logs.log_reader
        if reader is not None:
            out.append((profile.display_name, load_hook(reader.parse), reader.markers))
    return tuple(out)


def parse_log_line(line: str, line_no: int = 0) -> LogRecord | None:
    """The record one log line holds (any engine), or None."""
    for _, parse, _ in _readers():
        rec = parse(line, line_no)
        if rec is not None:
            return rec
    return None


@dataclass(frozen=True)
class LogScan:
    """What one log file holds: its records, how many lines were read, and what the reader left out."""

    source: str | None
    num_lines: int
    records: tuple[LogRecord, ...] = field(default_factory=tuple)
    notes: tuple[str, ...] = ()

    def engines(self) -> tuple[str, ...]:
        """Engines with at least one record, in order of first appearance."""
        seen: dict[str, None] = {}
        for r in self.records:
            seen.setdefault(r.engine, None)
        return tuple(seen)

    def of(self, engine: str) -> tuple[LogRecord, ...]:
        """Records of one engine."""
        return tuple(r for r in self.records if r.engine == engine)


def _scan(lines: Iterable[tuple[int, str]], source: str | Path | None, tally: LineTally) -> list[LogRecord]:
    """The records of the marked lines, under the :class:`LineTally` policy (the caller closes the file)."""
    records = []
    for number, line in lines:
        names = [name for name, _, marks in _readers() if any(m in line for m in marks)]
        if not names:
            continue
        rec = parse_log_line(line, number)
        if rec is None or getattr(rec, "complete", True) is False:
            tally.unread(number, line, names[0])
            continue
        _validate(rec, source)
        tally.row(source or "log", number, line)
        records.append(rec)
    return records


def scan_log_text(text: str, *, source: str | Path | None = None) -> LogScan:
    """Parse every line of ``text`` (as :func:`read_log_file`)."""
    lines = text.splitlines()
    tally = LineTally()
    records = _scan(enumerate(lines, 1), source, tally)
    tally.close(source or "log", len(lines))
    return LogScan(str(source) if source is not None else None, len(lines), tuple(records), tuple(tally.notes))


def _maybe_record(raw: bytes) -> bool:
    return any(m.encode() in raw for _, _, marks in _readers() for m in marks)


def read_log_file(path: str | Path, *, max_bytes: int | None = None, tally: LineTally | None = None) -> LogScan:
    """Read a server log, streamed (bounded bytes, lines cut at 1 MiB, undecodable bytes replaced, lines without a
    record marker never decoded), and parse its records under the one reader policy (:class:`LineTally`, shared
    by the files of one read when given).

    Raises:
        UnreadableInputError: not a regular file (a FIFO or device is refused unopened),
            unreadable, or over the byte cap.
        InputFileError: a marked line that does not parse (other than a cut last line), a row seen twice.
        CounterSemanticsError: a line whose counts no engine can produce.
    """
    from golden_al import safeio

    p = Path(path)
    stats = safeio.LineStats()
    cap = safeio.DEFAULT_MAX_LOG_BYTES if max_bytes is None else max_bytes
    tally = tally or LineTally()
    before = len(tally.notes)
    records = _scan(safeio.iter_lines(p, max_bytes=cap, stats=stats, keep=_maybe_record), p, tally)
    tally.close(p, stats.lines)
    return LogScan(str(p), stats.lines, tuple(records), tuple(tally.notes[before:]))


def _validate(rec: LogRecord, source: Path | str | None) -> None:
    check = getattr(rec, "validate", None)
    if check is not None:
        check(source)
