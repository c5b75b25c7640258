"""Measurement records as ``fit`` and ``report`` read them: the record, its file and its hash.

A RECORD argument is a ``measurement.json`` file or a directory; a directory that does
not hold a ``measurement.json`` itself is searched recursively (``DIR/k1/measurement.json``
... as ``golden-al measure --draft-lens 1-8`` writes them). The same file named twice is
read once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from golden_al.errors import InputFileError
from golden_al.measurement import (
    BY_DRAFT_LEN_DIR,
    MEASUREMENT_FILE,
    MeasurementRecord,
    RequestResult,
    load_record,
    read_request_results,
)
from golden_al.provenance import sha256_file

__all__ = ["LoadedRecord", "expand_record_paths", "load_records"]


@dataclass(frozen=True)
class LoadedRecord:
    """One measurement record with the file it came from."""

    path: Path
    record: MeasurementRecord
    sha256: str

    @property
    def mode_key(self) -> str:
        """``thinking_on``, ``thinking_off`` or a named level (``reasoning_effort_high``)."""
        from golden_al.prompts.thinking import mode_key

        return mode_key(self.record.thinking)

    @property
    def k(self) -> int:
        return self.record.draft_len

    def label(self) -> str:
        """``path (thinking off, k=3)`` for messages."""
        return f"{self.path} (thinking {self.record.thinking}, k={self.k})"

    def requests(self) -> list[RequestResult] | None:
        """The per-request results at this record's k, or None when the JSONL is absent."""
        name = self.record.per_request_file
        if not name:
            return None
        p = Path(name)
        if not p.is_absolute():
            p = self.path.parent / p
        if not p.exists():
            return None
        return [r for r in read_request_results(p) if r.draft_len == self.k]


def expand_record_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Every ``measurement.json`` named by ``paths`` (files, or directories searched recursively).

    Raises:
        InputFileError: a path that does not exist or a directory without any record.
    """
    out: list[Path] = []
    seen: set[Path] = set()
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise InputFileError("no such file or directory", path=p,
                                 hint="give measurement.json files or directories holding them")
        if p.is_dir():
            found = [p / MEASUREMENT_FILE] if (p / MEASUREMENT_FILE).is_file() else sorted(
                f for f in p.rglob(MEASUREMENT_FILE) if BY_DRAFT_LEN_DIR not in f.relative_to(p).parts)
            if not found:
                raise InputFileError(f"directory holds no {MEASUREMENT_FILE}", path=p)
        else:
            found = [p]
        for f in found:
            key = f.resolve()
            if key not in seen:
                seen.add(key)
                out.append(f)
    return out


def load_records(paths: Iterable[str | Path]) -> list[LoadedRecord]:
    """Load and validate every record named by ``paths`` (see :func:`expand_record_paths`)."""
    return [LoadedRecord(f, load_record(f), sha256_file(f)) for f in expand_record_paths(paths)]
