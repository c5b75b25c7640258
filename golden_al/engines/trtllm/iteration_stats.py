"""TensorRT-LLM's iteration statistics: the rows of ``trtllm-bench --iteration_log`` and of
``trtllm-serve``'s JSON ``/metrics``, read as acceptance evidence.

Upstream (NVIDIA/TensorRT-LLM, index commit 00b6d5a25c30): ``cpp/include/tensorrt_llm/executor/types.h``
``struct SpecDecodingStats`` (``numDraftTokens``: proposed draft tokens of all requests of the
iteration; ``numAcceptedTokens``: their accepted draft tokens; ``numRequestsWithDraftTokens``: the
requests with at least one draft token, i.e. the iteration's verify request-steps;
``acceptanceLength``: tokens per step of those requests, ``(accepted + requests) / requests``);
``IterationStats`` carries it as ``specDecodingStats`` next to ``iter``. ``trtllm-bench`` writes one
row per iteration, as JSON or as the Python ``str`` of the dict (both are read here); ``trtllm-serve``
``/metrics`` answers a JSON list of the same rows. With attention data parallelism every rank writes
a row per iteration and the rows of ranks other than 0 repeat rank 0's counters (as InferenceX's
reader ``utils/evals/trtllm_speedbench_al_from_log.py`` counts them): only rank 0 is counted, and a
rank-0 iteration seen twice (all-rank metrics, ``TLLM_METRICS_ALL_RANKS=1``, without a rank field)
is refused, never summed twice.

The run's AL is ``1 + sum(numAcceptedTokens) / sum(numRequestsWithDraftTokens)`` over the rows.
Each row is checked on its own: whole non-negative counts, accepted <= drafted, no drafts without a
request, the reported ``acceptanceLength`` equal to the counts'; a row that fails names its line.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from golden_al import plugin

__all__ = ["SPEC_STATS", "IterationRow", "IterationScan", "most_drafts", "rank_of", "read_iteration_file",
           "read_iteration_source", "rows_from_json", "scan_rows"]

SPEC_STATS = "specDecodingStats"
DRAFTED = "numDraftTokens"
ACCEPTED = "numAcceptedTokens"
REQUESTS = "numRequestsWithDraftTokens"
AL = "acceptanceLength"
ITER = "iter"
#: the attention-DP rank of a row, as the readers of these logs spell it
RANK_KEYS: tuple[str, ...] = ("attentionDpRank", "attention_dp_rank", "dpRank")
#: a row's iteration key, as JSON or a Python literal writes it (a line naming it, or the stats, is a row)
_ITER_KEY = re.compile(r"""["']iter["']\s*:""")
#: relative tolerance of the reported acceptanceLength against the counts (it is a double of them)
_AL_TOL = 1e-6


@dataclass(frozen=True)
class IterationRow:
    """One iteration's spec-decode counts (rank 0, or a run without attention DP)."""

    line: int
    iteration: int | None
    drafted: int
    accepted: int
    requests: int
    reported_al: float | None = None


@dataclass
class IterationScan:
    """The rows of one source: counted rows, and what was left out (with why)."""

    source: str
    rows: list[IterationRow] = field(default_factory=list)
    other_ranks: int = 0  #: rows of attention-DP ranks other than 0 (copies of rank 0)
    without_stats: int = 0  #: iteration rows without ``specDecodingStats`` (speculation off, or a context-only step)
    notes: list[str] = field(default_factory=list)  #: what the reader left out (a cut last line)

    @property
    def steps(self) -> int:
        """Verify request-steps of the counted rows."""
        return sum(r.requests for r in self.rows)

    @property
    def accepted(self) -> int:
        """Accepted draft tokens of the counted rows."""
        return sum(r.accepted for r in self.rows)

    @property
    def drafted(self) -> int:
        """Proposed draft tokens of the counted rows."""
        return sum(r.drafted for r in self.rows)


def most_drafts(rows: Iterable[IterationRow]) -> int | None:
    """The k the rows show: the most drafts one request proposed in an iteration (a row of several requests gives
    its mean, rounded up); None without a drafting row."""
    return max((-(-r.drafted // r.requests) for r in rows if r.requests), default=None)


def _count(stats: Mapping[str, Any], key: str, where: str, line: int) -> int:
    if key not in stats:
        raise plugin.InputFileError(f"{where}: {SPEC_STATS} has no {key}", line=line,
                                    hint="a TensorRT-LLM iteration row carries numDraftTokens, numAcceptedTokens and "
                                  "numRequestsWithDraftTokens")
    v = stats[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 or v != int(v):
        raise plugin.CounterSemanticsError(f"{where}: {SPEC_STATS}.{key} is {v!r}, not a whole non-negative count",
                                           line=line, hint="a corrupted or edited iteration log")
    return int(v)


def rank_of(obj: Mapping[str, Any]) -> Any:
    """The attention-DP rank a row names (under any of :data:`RANK_KEYS`), as written; None when it names none."""
    return next((obj[k] for k in RANK_KEYS if k in obj), None)


def _row(obj: Mapping[str, Any], line: int, where: str) -> tuple[IterationRow | None, int | None]:
    """(row, rank) of one iteration object; the row is None when it has no spec-decode stats."""
    rank_raw = rank_of(obj)
    if rank_raw is not None and (isinstance(rank_raw, bool) or not isinstance(rank_raw, int) or rank_raw < 0):
        raise plugin.InputFileError(f"{where}: attention-DP rank {rank_raw!r} is not a rank", line=line)
    stats = obj.get(SPEC_STATS)
    if stats is None:
        return None, rank_raw
    if not isinstance(stats, Mapping):
        raise plugin.InputFileError(f"{where}: {SPEC_STATS} is a {type(stats).__name__}, not an object", line=line)
    drafted, accepted, requests = (_count(stats, k, where, line) for k in (DRAFTED, ACCEPTED, REQUESTS))
    if accepted > drafted:
        raise plugin.CounterSemanticsError(f"{where}: {ACCEPTED} {accepted} > {DRAFTED} {drafted}", line=line,
                                           hint="no engine accepts more drafts than it proposed")
    if requests == 0 and drafted > 0:
        raise plugin.CounterSemanticsError(f"{where}: {drafted} draft tokens but {REQUESTS} = 0", line=line,
                                           hint="drafts belong to requests: a corrupted or edited row")
    al_raw = stats.get(AL)
    reported = None
    if al_raw is not None:
        if isinstance(al_raw, bool) or not isinstance(al_raw, (int, float)) or not math.isfinite(al_raw):
            raise plugin.CounterSemanticsError(f"{where}: {AL} is {al_raw!r}, not a number", line=line)
        reported = float(al_raw)
        if requests > 0:
            implied = (accepted + requests) / requests
            if abs(reported - implied) > _AL_TOL * implied + 1e-9:
                raise plugin.CounterSemanticsError(
                    f"{where}: {AL} {reported:g} but the counts give ({accepted} + {requests}) / {requests} = "
                    f"{implied:g}", line=line, hint="the row's fields disagree: a corrupted or edited row")
    it = obj.get(ITER)
    iteration = it if isinstance(it, int) and not isinstance(it, bool) else None
    return IterationRow(line, iteration, drafted, accepted, requests, reported), rank_raw


def _parse_line(text: str) -> Any:
    """The object of one row: JSON, else a Python literal (``str`` of the dict); None when neither."""
    start = text.find("{")
    if start < 0:
        return None
    body = text[start:].strip()
    try:
        return json.loads(body)
    except ValueError:
        pass
    try:
        return ast.literal_eval(body)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def scan_rows(objects: Iterable[tuple[int, Any]], source: str) -> IterationScan:
    """Count ``(line, object)`` iteration rows (see the module docstring).

    Raises:
        InputFileError: a row without a field the reading needs, a rank-0 iteration seen twice.
        CounterSemanticsError: counts no engine produces (named with the line).
    """
    scan = IterationScan(source)
    seen: dict[int, int] = {}
    for line, obj in objects:
        if not isinstance(obj, Mapping) or (SPEC_STATS not in obj and ITER not in obj):
            continue
        row, rank = _row(obj, line, source)
        if rank not in (None, 0):
            scan.other_ranks += 1
            continue
        if row is None:
            scan.without_stats += 1
            continue
        if row.iteration is not None:
            if row.iteration in seen:
                raise plugin.InputFileError(
                    f"{source}: iteration {row.iteration} appears twice (lines {seen[row.iteration]} and {line}) "
                    "without an attention-DP rank to tell the copies apart: summing both would count its steps "
                    "twice", line=line,
                    hint="all-rank metrics (TLLM_METRICS_ALL_RANKS=1) repeat rank 0's counters; pass one rank's "
                         "rows, or rows that name their attentionDpRank")
            seen[row.iteration] = line
        scan.rows.append(row)
    return scan


def read_iteration_file(path: str | Path, *, max_bytes: int, tally: plugin.LineTally | None = None) -> IterationScan:
    """The iteration rows of a ``--iteration_log`` file or a log holding such rows (streamed, bounded), under the
    one reader policy (:class:`~golden_al.formats.logs.LineTally`): a line naming ``specDecodingStats`` that does
    not parse is refused unless it is the file's cut last line; a row seen twice is refused.

    Raises:
        UnreadableInputError: not a regular file, unreadable, or over ``max_bytes``.
        InputFileError, CounterSemanticsError: as :func:`scan_rows`, and the policy's refusals.
    """

    p, stats, tally = Path(path), plugin.LineStats(), tally or plugin.LineTally()
    before = len(tally.notes)

    def objects() -> Iterable[tuple[int, Any]]:
        for number, line in plugin.iter_lines(p, max_bytes=max_bytes, stats=stats, keep=lambda b: b"{" in b):
            if SPEC_STATS in line or ITER in line:
                obj = _parse_line(line)
                if not isinstance(obj, Mapping) and (SPEC_STATS in line or _ITER_KEY.search(line)):
                    tally.unread(number, line, "TensorRT-LLM iteration")
                yield number, obj
                if isinstance(obj, Mapping):  # after scan_rows read it: an iteration seen twice is named as such
                    tally.row(p, number, line)

    scan = scan_rows(objects(), str(p))
    tally.close(p, stats.lines)
    scan.notes = tally.notes[before:]
    return scan


def rows_from_json(doc: Any, source: str) -> IterationScan:
    """The rows of a JSON document: ``trtllm-serve`` ``/metrics`` (a list of iteration objects) or one object; a
    row held twice is refused (:class:`~golden_al.formats.logs.LineTally`).

    Raises:
        InputFileError: not a list of objects, or a row seen twice.
    """
    items: Sequence[Any] = doc if isinstance(doc, list) else [doc]
    if not all(isinstance(i, Mapping) for i in items):
        raise plugin.InputFileError(f"{source}: not a list of TensorRT-LLM iteration objects")
    tally = plugin.LineTally()
    for i, obj in enumerate(items):
        tally.row(source, i + 1, json.dumps(obj, sort_keys=True, default=str))
    return scan_rows(((i + 1, obj) for i, obj in enumerate(items)), source)


#: how a saved ``/metrics`` answer starts: a JSON list of objects (a log line may start with ``[`` too)
_JSON_LIST = re.compile(rb"\[\s*[{\]]")


def read_iteration_source(path: str | Path, *, max_bytes: int, tally: plugin.LineTally | None = None) -> IterationScan:
    """The rows of one file, whichever TensorRT-LLM source it is: a saved ``/metrics`` answer (a JSON
    list, read whole under ``max_bytes``) or an iteration log (streamed, :func:`read_iteration_file`).

    Raises:
        UnreadableInputError: not a regular file, unreadable, over ``max_bytes``, or not valid JSON.
        InputFileError, CounterSemanticsError: as :func:`scan_rows`.
    """

    p = Path(path)
    head = b""
    try:
        with p.open("rb") as fh:
            head = fh.read(64).lstrip()
    except OSError:
        pass  # the read below names what is wrong with it
    if _JSON_LIST.match(head):
        return rows_from_json(plugin.read_json(p, max_bytes=max_bytes), str(p))
    return read_iteration_file(p, max_bytes=max_bytes, tally=tally)
