"""Each engine's check-run evidence reader: the realized AL of a run from the engine's own log lines.

The engine profile's ``run_evidence`` names the reader (a hook, usually ``lazy("module:function")``);
:func:`golden_al.measure.evidence.evidence_from_files` calls it with the files that are not Prometheus
snapshots (those are read the same way for every engine). A reader's signature is
``(files, k, *, decode_log_interval) -> RunEvidence``; it raises ``InputFileError`` when the files
hold no usable line of its engine and ``NoVerifyStepsError`` when they count no verify step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from golden_al.errors import InputFileError

__all__ = ["RunEvidence", "no_lines", "read_logs", "run_budget"]


@dataclass(frozen=True)
class RunEvidence:
    """What the files say about one run: realized AL and what it rests on."""

    engine: str
    source: str  # "sglang decode log", "vllm SpecDecoding log", "atom MTP stats log", "prometheus delta"
    realized_al: float
    request_steps: float
    independent_draws: float  # batch steps for SGLang, request-steps otherwise
    effective_draws: float  # Kish effective count used for the variance
    lines_used: int
    notes: tuple[str, ...] = ()
    #: SGLang decode lines: batch steps per line, and (share of the realized mean, lines) per batch size.
    steps_per_line: int | None = None
    line_weights: tuple[tuple[float, int], ...] = ()
    #: the run split into its logged windows, in log order: (accepted drafts, verify steps) of each line (or
    #: request), so that AL = 1 + sum(accepted) / sum(steps); a real run's interval rests on them (``verify``)
    windows: tuple[tuple[float, float], ...] = ()
    #: what one window is: ``log line`` (consecutive windows of one server: correlated) or ``request`` (independent)
    window_unit: str = "log line"


def run_budget(files: Sequence[str | Path], max_total_bytes: int | None = None) -> int:
    """The byte budget the logs of one ``check-run`` share (:func:`golden_al.safeio.run_budget`, default: the cap
    of one log, :data:`golden_al.safeio.DEFAULT_MAX_LOG_BYTES`); returns it.

    Raises:
        UnreadableInputError: ``too-large``: the files together pass it (each named, with its size).
    """
    from golden_al import safeio

    return safeio.run_budget(files, safeio.DEFAULT_MAX_LOG_BYTES if max_total_bytes is None else max_total_bytes,
                             what="log files", hint="pass only the server's own log of this run (or the lines of "
                                                    "it that report acceptance: grep them out)")


def read_logs(files: Sequence[str | Path], engine: str, *, max_total_bytes: int | None = None,
              ) -> tuple[list[tuple[str, Any]], dict[str, int]]:
    """Each file's recognised log records (:func:`golden_al.formats.logs.read_log_file`), and how many
    lines of *other* engines they hold (for the error when none is ``engine``'s).

    The files share one byte budget (:func:`run_budget`): a run over it is refused before any is
    parsed, and a file that grows while it is read is stopped at what is left of it. They share one reader policy
    (:class:`golden_al.formats.logs.LineTally`); each scan's ``notes`` say what it left out.
    """
    from golden_al.formats.logs import LineTally, read_log_file

    left = run_budget(files, max_total_bytes)
    logs: list[tuple[str, Any]] = []
    other: dict[str, int] = {}
    tally = LineTally()  # one policy over the run's files: a row held twice is refused, not summed
    for f in files:
        scan = read_log_file(f, max_bytes=max(left, 0), tally=tally)
        left -= Path(f).stat().st_size if Path(f).is_file() else 0
        for r in scan.records:
            if r.engine != engine:
                other[r.engine] = other.get(r.engine, 0) + 1
        logs.append((str(f), scan))
    return logs, other


def no_lines(what: str, logs: list[tuple[str, Any]], other: dict[str, int]) -> InputFileError:
    names = ", ".join(name for name, _ in logs)
    extra = f" (found {', '.join(f'{n} {e} line(s)' for e, n in other.items())} instead)" if other else ""
    return InputFileError(f"no usable {what} in {names}{extra}",
                          hint="pass the server log (or the lines extracted from it) of the engine named by --engine")
