"""Measurement records on disk: the one writer and the one reader of ``measurement.json`` and ``requests.jsonl``.

A cell directory holds ``measurement.json`` (:class:`~golden_al.measure.schema.MeasurementRecord`) and the
lines it rests on, ``requests.jsonl`` (one :class:`~golden_al.measure.schema.RequestResult` per finished
request, conversation, counter unit or window batch). Every producer writes through here and every consumer
reads through here:

* writing: :func:`append_request_result` (one line as it finishes, flushed and fsynced: a crash loses nothing),
  :func:`commit_rows` (several lines at once, atomically), :func:`write_cell` (a whole cell: its lines, then its
  record), :func:`write_record` (the record, atomically); :func:`build_record` makes the record from its lines,
  the one builder of the reference engine, servers, imports and derivations; :class:`RequestLog` is the
  reference engine's resumable per-k log;
* reading: :func:`load_record`, :func:`read_request_results` (a torn last line from a crash is dropped, a row
  counted twice refused), :func:`load_records` /
  :func:`expand_record_paths` (``fit``, ``report``, ``pool``) and :func:`record_dirs` (``verify``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from golden_al.errors import InputFileError, SchemaError, UsageError
from golden_al.measure.schema import (
    BY_DRAFT_LEN_DIR,
    MEASUREMENT_FILE,
    REQUESTS_FILE,
    SCHEMA_VERSION,
    MeasurementRecord,
    RequestResult,
    Uncertainty,
)
from golden_al.measure.totals import CellTotals, cell_totals, line_indices
from golden_al.provenance import atomic_write_text, sha256_file

__all__ = [
    "LoadedRecord",
    "RequestLog",
    "append_request_result",
    "build_record",
    "commit_rows",
    "expand_record_paths",
    "load_record",
    "load_records",
    "read_request_results",
    "record_dirs",
    "repair_jsonl_tail",
    "write_cell",
    "write_record",
]


# ---------------------------------------------------------------------------- writing
def write_record(record: MeasurementRecord, out_dir: str | Path, *, name: str = MEASUREMENT_FILE) -> Path:
    """Write ``record`` as indented JSON into ``out_dir/name`` atomically."""
    text = json.dumps(record.model_dump(mode="json"), indent=2) + "\n"
    return atomic_write_text(Path(out_dir) / name, text)


def _line(result: RequestResult) -> str:
    return json.dumps(result.model_dump(mode="json", exclude_none=True), separators=(",", ":")) + "\n"


def append_request_result(path: str | Path, result: RequestResult) -> None:
    """Append one result as a JSON line, flushed and fsynced (nothing lost on a crash)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("a", encoding="utf-8") as fh:
        fh.write(_line(result))
        fh.flush()
        os.fsync(fh.fileno())


def commit_rows(req_file: Path, rows: Sequence[RequestResult]) -> None:
    """Append ``rows`` to ``req_file`` all at once (a crash leaves the old file or the new one)."""
    old = req_file.read_text(encoding="utf-8") if req_file.exists() else ""
    atomic_write_text(req_file, old + "".join(_line(r) for r in rows))


def write_cell(directory: str | Path, record: MeasurementRecord, rows: Sequence[RequestResult]) -> Path:
    """A whole cell (a derived, pooled, imported or split record): its ``requests.jsonl`` replaced atomically by
    ``rows``, then its ``measurement.json``. Returns the record's path."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    atomic_write_text(d / REQUESTS_FILE, "".join(_line(r) for r in rows))
    return write_record(record, d)


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
        keep = fh.read().rfind(b"\n") + 1
        fh.truncate(keep)
        fh.flush()
        os.fsync(fh.fileno())
    return True


# ---------------------------------------------------------------------------- reading
def load_record(path: str | Path) -> MeasurementRecord:
    """Load and validate a ``measurement.json`` (or a directory holding one)."""
    from golden_al import safeio

    p = Path(path)
    if p.is_dir():
        p = p / MEASUREMENT_FILE
    if not os.path.lexists(p):
        raise InputFileError("no such measurement record", path=p)
    data = safeio.read_json(p, max_bytes=safeio.DEFAULT_MAX_RECORD_BYTES)
    if not isinstance(data, dict) or data.get("kind", "measurement") != "measurement":
        raise SchemaError("not a measurement record (expected kind: measurement)", path=p)
    try:
        return MeasurementRecord.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise SchemaError(f"{loc}: {first['msg']}", path=p,
                          hint=f"{len(exc.errors())} schema error(s); schema_version {SCHEMA_VERSION}") from None


def read_request_results(path: str | Path, *, strict: bool = False) -> list[RequestResult]:
    """Read ``requests.jsonl``. A torn last line (a crash mid-write: no newline at its end) is dropped
    unless ``strict``; any other line that is not a result, and a prompt (index and turn) or request id
    that a line at the same draft length already holds, is a SchemaError with its line."""
    from golden_al import safeio

    p = Path(path)
    if not p.exists():
        return []
    text = safeio.read_text(p, max_bytes=safeio.DEFAULT_MAX_RECORD_BYTES)
    lines = text.splitlines()
    torn = bool(text) and not text.endswith("\n")  # only a line written without its newline is torn
    out: list[RequestResult] = []
    seen: dict[tuple[int, str], int] = {}
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            out.append(RequestResult.model_validate_json(line))
        except ValidationError as exc:
            if i == len(lines) and torn and not strict:
                break  # torn final line from an interrupted write
            first = exc.errors()[0]
            loc = ".".join(str(x) for x in first["loc"])
            raise SchemaError(f"{loc}: {first['msg']}", path=p, line=i) from None
        _refuse_repeats(out[-1], i, seen, p)
    return out


def _refuse_repeats(r: RequestResult, line: int, seen: dict[tuple[int, str], int], path: Path) -> None:
    """Each prompt (index, turn) and each request id once per draft length: a repeated row is not more evidence."""
    extra = r.extra or {}
    ids = extra["request_ids"] if isinstance(extra.get("request_ids"), list) else [r.request_id]
    names = [f"prompt {i}" + (f" turn {r.turn}" if r.turn is not None else "") for i in line_indices(r)]
    for name in [*names, *(f"request id {str(x)!r}" for x in ids if str(x))]:
        first = seen.setdefault((r.draft_len, name), line)
        if first != line:
            raise SchemaError(f"{name} has two results at k={r.draft_len} (lines {first} and {line})", path=path,
                              line=line, hint="a row counted twice is not more evidence: the file was edited, "
                                              "concatenated, or two runs wrote to it")


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
    """Every ``measurement.json`` named by ``paths``: files, or directories searched recursively (a directory
    without a record of its own: ``DIR/k1/measurement.json`` ... as ``measure --draft-lens 1-8`` writes them;
    ``by_draft_len/`` splits are left out). The same file named twice is read once.

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


def record_dirs(root: Path, *, max_depth: int = 6) -> list[Path]:
    """Every measurement directory under ``root`` (itself included), sorted; bounded depth, links not followed.

    Raises:
        InputFileError: none found.
    """
    found: list[Path] = []

    def walk(d: Path, depth: int) -> None:
        if (d / MEASUREMENT_FILE).is_file():
            found.append(d)
        if depth >= max_depth:
            return
        for child in sorted(p for p in d.iterdir() if p.is_dir() and not p.is_symlink()):
            walk(child, depth + 1)

    walk(root, 0)
    if not found:
        raise InputFileError(f"no {MEASUREMENT_FILE} under it", path=root,
                             hint="pass a measurement or sweep directory, or engine logs with --engine")
    return found


# ---------------------------------------------------------------------------- building
@dataclass
class RequestLog:
    """``requests.jsonl`` of one draft length, with what is already done (for ``--resume``).

    ``settings`` is stored in every line's ``extra["run"]``; resuming a file written
    with other settings, or whose prompt hash at an index differs, is an error.
    """

    path: Path
    draft_len: int
    settings: dict[str, Any]
    done: dict[int, RequestResult] = field(default_factory=dict)
    resumed: set[int] = field(default_factory=set)
    """Indices read back from an earlier run."""

    @classmethod
    def open(cls, out_dir: Path, draft_len: int, settings: dict[str, Any], *, resume: bool) -> RequestLog:
        """Open (or start) ``out_dir/requests.jsonl``; refuses to mix runs unless ``resume``."""
        path = Path(out_dir) / REQUESTS_FILE
        log = cls(path=path, draft_len=draft_len, settings=settings)
        if path.exists() and path.stat().st_size > 0:
            if not resume:
                raise UsageError(
                    f"{path} already holds results",
                    hint="pass --resume to continue that run, or choose another --out directory",
                )
            for r in read_request_results(path):
                run = (r.extra or {}).get("run")
                if r.draft_len != draft_len or run != settings:
                    diff = {k: (run or {}).get(k) for k in settings if (run or {}).get(k) != settings[k]}
                    raise InputFileError(
                        f"request {r.index} was measured with other settings {diff or r.draft_len} "
                        f"than this run ({ {k: settings[k] for k in diff} or draft_len})",
                        path=path,
                        hint="resume with the same options, or choose another --out directory",
                    )
                log.done[r.index] = r
                log.resumed.add(r.index)
        elif (Path(out_dir) / MEASUREMENT_FILE).exists() and not resume:
            raise UsageError(f"{Path(out_dir) / MEASUREMENT_FILE} already exists",
                             hint="choose another --out directory")
        return log

    def check_prompt(self, index: int, prompt_hash: str) -> None:
        """Raise when a done request at ``index`` was made from another prompt."""
        old = self.done.get(index)
        if old is not None and old.prompt_hash != prompt_hash:
            raise InputFileError(
                f"request {index} in this file was made from another prompt "
                f"(hash {old.prompt_hash[:12]}..., now {prompt_hash[:12]}...)",
                path=self.path, hint="resume with the same --prompts and --num-prompts, or another --out",
            )

    def append(self, result: RequestResult) -> None:
        """Append a finished request (flushed and fsynced), tagged with the run settings."""
        if result.index in self.done:
            raise ValueError(f"request {result.index} is already in {self.path}")
        result.extra = {**(result.extra or {}), "run": self.settings}
        append_request_result(self.path, result)
        self.done[result.index] = result

    def results(self) -> list[RequestResult]:
        """All results, in index order."""
        return [self.done[i] for i in sorted(self.done)]


def _observed_k(results: Sequence[RequestResult], draft_len: int, al_source: str) -> int | None:
    """The k the cell's rows show (the most drafts a verify step proposed), None where none shows it.

    Raises:
        CounterSemanticsError: another k than ``draft_len`` (:func:`golden_al.formats.validate.check_observed_k`).
    """
    from golden_al.formats.validate import check_observed_k

    observed = max((r.draft_len_observed for r in results if r.draft_len == draft_len
                    and r.draft_len_observed is not None), default=None)
    check_observed_k(observed, draft_len, what=f"the {al_source} rows of the cell")
    return observed


def build_record(*, results: Sequence[RequestResult], draft_len: int, al_source: str, seed: int | None,
                 warnings: Sequence[str] = (), totals: CellTotals | None = None, unit: str | None = None,
                 num_requests: int | None = None, what: str = "", **fields: Any) -> MeasurementRecord:
    """The record of one cell from its per-request results (AL and its 95% interval over clusters): the
    one builder of the reference engine, servers, imports and derivations.

    ``fields``: the record's own fields, as they are (``engine``, ``engine_version``, ``mode``, ``estimate``,
    ``target``, ``draft``, ``draft_method``, ``thinking``, ``chat_template_kwargs``, ``sampling``, ``dataset``,
    ``provenance``, and where they apply ``block_draft``, ``server``, ``timing``, ``per_request_file``); the
    schema refuses a name it does not know. ``totals``: the cell's totals when the caller needed them first (else
    computed here, ``what`` naming the cell in the error); ``unit``: what one cluster is, when the lines' own form
    does not say it (an imported window); ``num_requests``: the run's requests, when the lines do not list them.
    A line that holds totals only (``histogram_known`` false) makes the record's histogram unknown: it is written
    as zeros, never as a partial sum.

    Raises:
        NoVerifyStepsError: no request made a verify step (:func:`golden_al.measure.totals.cell_totals`).
        CounterSemanticsError: the rows show another k (``draft_len_observed``) than ``draft_len``.
    """
    if totals is None:
        totals = cell_totals(results, draft_len, seed=0 if seed is None else seed, what=what)
    counts, interval = totals.counts, totals.interval
    known = all(r.histogram_known for r in results if r.draft_len == draft_len)
    return MeasurementRecord(
        **{"per_request_file": REQUESTS_FILE, **fields}, draft_len=draft_len,
        draft_len_observed=_observed_k(results, draft_len, al_source), al=interval.al, al_ci95=interval.ci,
        uncertainty=Uncertainty.of(interval, unit or totals.unit), al_source=al_source,
        num_requests=totals.num_requests if num_requests is None else num_requests,
        num_verify_steps=counts.num_verify_steps, num_accepted_drafts=counts.num_accepted_drafts,
        per_position_accepted=counts.per_position_accepted if known else [0] * draft_len,
        histogram=counts.histogram if known else [0] * (draft_len + 1), histogram_known=known,
        warnings=[*warnings, *totals.notes])
