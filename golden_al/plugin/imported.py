"""What an engine's importer (its profile's ``run_logs.importers`` hook, ``(paths, ImportOptions) ->
list[ImportedRun]``) gets and gives: the options a user passed for what the files do not say, bounded reading of
the files, and the run it read (:class:`ImportedRun`: windows of counts and what the files say of them).
:func:`golden_al.measure.imported.import_files` turns each run into a record.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from distributions.counts import AcceptanceCounts
from golden_al.errors import InputFileError

__all__ = ["MAX_BYTES", "ImportOptions", "ImportedDataset", "ImportedRun", "ImportedWindows", "TimedUnit", "json_lines",
           "looks_json", "read_capped", "read_json_doc"]

MAX_BYTES = 1 << 30


@dataclass
class ImportOptions:
    """What the files do not say (each may be required by a format)."""

    model: str | None = None
    draft_method: str | None = None
    draft_len: int | None = None
    thinking: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    max_tokens: int | None = None
    dataset: str | None = None
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    decode_log_interval: int | None = None  #: SGLang ``--decode-log-interval`` (sglang-log), when the log lacks it


@dataclass(frozen=True)
class ImportedWindows:
    """The windows of counts an import read (one cluster each), with the output tokens of each where known."""

    windows: Sequence[AcceptanceCounts]
    k: int
    what: str  #: the import's name for them (``vllm-log-intervals``): each row's ``request_id`` prefix
    output_tokens: Sequence[int] = ()
    unit: str = "window"  #: what one window is (``request``, ``window``)


@dataclass(frozen=True)
class ImportedDataset:
    """The dataset of an imported run, identified by ``key`` (the record keeps its hash)."""

    name: str
    count: int
    key: str
    source: str


@dataclass(frozen=True)
class ImportedRun:
    """One imported cell as an engine's importer reads it; the measurement floor makes its record."""

    rows: ImportedWindows
    k: int
    opts: ImportOptions
    engine: str
    source: str
    files: Sequence[Path]
    model: str | None
    num_requests: int
    dataset: ImportedDataset
    warnings: list[str]
    max_concurrency: Any = None
    unit: str = "imported counter window"
    engine_version: str | None = None
    extra_provenance: Mapping[str, Any] | None = field(default=None)
    #: what the run timed (:class:`TimedUnit`), its source's name and what one unit is: the record's ``timing``
    timed: Sequence[TimedUnit] = ()
    timing_source: str = ""
    timing_unit: Literal["step", "request"] = "request"


def read_capped(path: Path) -> bytes:
    """The bytes of one imported file, bounded (:data:`MAX_BYTES`)."""
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise InputFileError(f"file is {size} bytes, more than the {MAX_BYTES} read", path=path,
                                 hint="split it, or import the part that holds the run")
        return path.read_bytes()
    except OSError as exc:
        raise InputFileError(f"cannot read: {exc.strerror or exc}", path=path) from None


def read_json_doc(path: Path) -> Mapping[str, Any]:
    """One imported JSON document, which must be an object."""
    try:
        value = json.loads(read_capped(path).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputFileError(f"not a JSON document: {exc}", path=path,
                             hint="a vllm bench serve --save-result file is one JSON object") from None
    if not isinstance(value, Mapping):
        raise InputFileError(f"expected a JSON object, got {type(value).__name__}", path=path)
    return value


def looks_json(p: Path) -> bool:
    """Whether a file starts like a JSON document."""
    head = read_capped(p)[:64].lstrip()
    return head.startswith(b"{")


def json_lines(path: Path) -> list[tuple[int, Mapping[str, Any]]]:
    """The JSON objects of a JSON-lines file (a file that is one JSON object counts as one line)."""
    text = read_capped(path).decode("utf-8", errors="replace")
    stripped = text.strip()
    if stripped.startswith("{") and "\n" in stripped:
        try:  # one pretty-printed object
            whole = json.loads(stripped)
        except json.JSONDecodeError:
            whole = None
        if isinstance(whole, Mapping):
            return [(1, whole)]
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputFileError(f"not a JSON line: {exc.msg} (column {exc.colno})", path=path, line=n,
                                 hint="bench_serving --output-file writes one JSON object per line") from None
        if not isinstance(obj, Mapping):
            raise InputFileError(f"expected a JSON object, got {type(obj).__name__}", path=path, line=n)
        out.append((n, obj))
    if not out:
        raise InputFileError("empty: no JSON object", path=path)
    return out


@dataclass(frozen=True)
class TimedUnit:
    """One timed step, or one request with the decode steps it took (summed into :class:`Timing`)."""

    batch: int
    steps: int
    tokens: int
    wall_ms: float
    load1: float | None
    draft_ms: float | None = None
    cpu_ms: float | None = None
