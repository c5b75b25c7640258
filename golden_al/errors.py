"""Exceptions raised by golden-al library code.

The tree::

    distributions.errors.Error         the root of every error of the package (message, hint, exit_code)
    +-- distributions.errors.DistributionError  bad input to the math layer (a ValueError)
    +-- simulators.registry.DuplicateEntryError  code registered a name that is taken
    GoldenALError(Error)               golden-al's errors; ``exit_code`` 2 unless stated
    +-- UsageError                     bad arguments or option combinations
    +-- golden_al.shell.ShellSyntaxError  a script bash does not parse (``check``: unreadable)
    +-- LockedError                    a folder (store, cell, model cache) stayed locked by another process
    +-- InputFileError                 a file that cannot be read or parsed (file, line)
    |   +-- SchemaError                a record or curve that violates its schema
    |   +-- UnreadableInputError       not read in full: too large, not regular, denied, undecodable, unparsable
    |   +-- ReadOnlyTargetError        a write would replace a read-only file (no --force)
    |   +-- CounterSemanticsError      counts that no engine can produce (accepted > drafted, restarts, ...)
    +-- NoGoldenValueError             no committed value for (model, mode, k)
    |   +-- AmbiguousCurveError        several curves match; a method/variant must choose
    +-- TimeLimitError                 reading a run's inputs took longer than its time cap (``--max-seconds``)
    +-- ModelError                     a model cannot be found, fetched or loaded
    |   +-- HashMismatchError          a downloaded or assembled file has the wrong SHA-256
    +-- EngineError                    a serving engine misbehaved
    |   +-- ServerError                a server failed to start, died, or answered badly
    |   +-- MetricMissingError         an expected metric or field is absent (never read as 0)
    |   +-- CounterResetError          a cumulative counter went backwards (server restarted)
    |   +-- CountsDisagreeError        a server's counts contradict its tokens or the draft length
    |   +-- NoVerifyStepsError         zero verify steps: AL is undefined (``exit_code`` 2)
    |   +-- SyntheticAcceptanceActiveError  a "measurement" would read injected acceptance
    |   +-- MixedDraftLengthsError     the server drafted at more than one length (adaptive speculation)
    |   +-- SchedulerError             Slurm is missing, refused a job, or answered unreadably
    +-- CheckFailedError               a check ran and failed (``exit_code`` 1)
        +-- InjectionConflictError     a recipe already pins a different value (``inject``)

The CLI catches the root once and exits with its ``exit_code``. Library code raises these; only
:mod:`golden_al.cli` prints and exits.
"""

from __future__ import annotations

from pathlib import Path

from distributions.errors import Error

__all__ = [
    "AmbiguousCurveError",
    "CheckFailedError",
    "CounterResetError",
    "CounterSemanticsError",
    "CountsDisagreeError",
    "EngineError",
    "GoldenALError",
    "HashMismatchError",
    "InjectionConflictError",
    "InputFileError",
    "LockedError",
    "MetricMissingError",
    "MixedDraftLengthsError",
    "ModelError",
    "NoGoldenValueError",
    "NoVerifyStepsError",
    "ReadOnlyTargetError",
    "SchemaError",
    "ServerError",
    "SyntheticAcceptanceActiveError",
    "TimeLimitError",
    "UnreadableInputError",
    "UsageError",
]


class GoldenALError(Error):
    """golden-al's errors (the root, :class:`distributions.errors.Error`, gives message, hint and exit code)."""


class UsageError(GoldenALError):
    """Bad command-line arguments or option combinations."""


class LockedError(GoldenALError):
    """A folder (golden store, measurement cell, model cache) stayed locked by another process;
    the message names the holder (pid, host, command, since when)."""

    def __init__(self, message: str, *, path: str | Path | None = None, hint: str | None = None) -> None:
        self.path = str(path) if path is not None else None
        super().__init__(message, hint=hint)


class InputFileError(GoldenALError):
    """A file that cannot be read or parsed; carries the file and line when known."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.path = str(path) if path is not None else None
        self.line = line
        self.problem = message  #: the message without the file and line
        where = ""
        if self.path is not None:
            where = self.path + (f":{line}" if line is not None else "") + ": "
        super().__init__(where + message, hint=hint)


class SchemaError(InputFileError):
    """A record or curve file that violates its schema (unknown key, bad value)."""


class UnreadableInputError(InputFileError):
    """A file that was not read and parsed in full; ``reason`` says why.

    Reasons: ``too-large``, ``not-regular`` (FIFO, device, socket, directory),
    ``permission-denied``, ``not-found``, ``symlink-loop``, ``os-error``,
    ``not-decodable``, ``nul-byte``, ``parse-error``, ``duplicate-key``, ``too-deep``,
    ``alias-budget``, ``recursive-alias``.
    """

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None,
                 reason: str = "unreadable", hint: str | None = None) -> None:
        self.reason = reason
        super().__init__(message, path=path, line=line, hint=hint)


class ReadOnlyTargetError(InputFileError):
    """A write would replace a read-only file (allowed only with ``--force``)."""


class CounterSemanticsError(InputFileError):
    """Spec-decode counts that violate what every engine guarantees (file, line, values)."""


class NoGoldenValueError(GoldenALError):
    """No committed golden value exists for the requested (model, mode, k)."""


class AmbiguousCurveError(NoGoldenValueError):
    """Several golden curves match (e.g. two variants of one model and method); never guess."""


class TimeLimitError(GoldenALError):
    """Reading a run's inputs took longer than its time cap: the run is refused, nothing is written."""


class ModelError(GoldenALError):
    """A model cannot be found, fetched or loaded."""


class HashMismatchError(ModelError):
    """A file's SHA-256 differs from the expected one."""


class EngineError(GoldenALError):
    """A serving engine misbehaved."""

    exit_code = 1


class ServerError(EngineError):
    """A server failed to start, died, or answered with an error."""


class MetricMissingError(EngineError):
    """An expected metric, counter or response field is absent. Never read as zero."""


class CounterResetError(EngineError):
    """A cumulative counter went backwards: the server restarted mid-measurement."""


class NoVerifyStepsError(EngineError):
    """Zero verify steps (drafts) were observed, so AL is undefined: never read as 0 or 1.

    The input is usable in form but carries no evidence (no request reached a decode
    step with drafts, or the window between two snapshots saw none).
    """

    exit_code = 2


class SchedulerError(EngineError):
    """The batch scheduler (Slurm) is missing, refused a submission, or answered in a form we cannot read."""


class SyntheticAcceptanceActiveError(EngineError):
    """Synthetic (forced) acceptance is active, so a measurement would not be real."""

    exit_code = 2


class LossyAcceptanceError(EngineError):
    """The server accepts drafts the target would reject (thresholds below 1): its AL is not the real,
    lossless one, so a measurement of it is refused."""

    exit_code = 2


class CheckFailedError(GoldenALError):
    """A check ran to completion and failed."""

    exit_code = 1


class InjectionConflictError(CheckFailedError):
    """A recipe already pins a different synthetic-acceptance value (``inject`` without --force)."""


class MixedDraftLengthsError(EngineError):
    """The server drafted at more than one length in one cell (SGLang adaptive speculation)."""

    exit_code = 2


class CountsDisagreeError(EngineError):
    """A server's counts contradict the tokens it generated or the draft length: not recorded (exit 1)."""
