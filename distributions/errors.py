"""The one error root of the package (:class:`Error`), and the exceptions raised by :mod:`distributions`.

Every error golden-al raises derives from :class:`Error`: a one-line message, a hint and the exit code the CLI
returns for it, so the CLI catches it once. ``DistributionError`` also subclasses :class:`ValueError`, so callers
that only care about bad input can catch ``ValueError``; its exit code is 2.
"""

from __future__ import annotations

__all__ = ["CounterWentBackwardsError", "DistributionError", "Error", "FitError"]


class Error(Exception):
    """The root of every error of the package: ``str(err)`` is one line (what was wrong, seen vs expected, a hint);
    :attr:`exit_code` is what the CLI returns (2: bad input, 1: a failed check)."""

    exit_code: int = 2

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} (hint: {self.hint})" if self.hint else self.message


class DistributionError(Error, ValueError):
    """Bad input to a distribution computation (value seen, value expected, hint)."""


class FitError(DistributionError):
    """A curve fit could not be carried out (too few points, inconsistent input)."""


class CounterWentBackwardsError(DistributionError):
    """A cumulative counter is smaller in the later snapshot than in the earlier one.

    Engine counters (vLLM Prometheus, ATOM ``/debug/mtp_stats``) only grow while
    a server lives, so a decrease means the server restarted (or the snapshots
    came from different servers) between the two reads. The delta is then
    meaningless; it is never replaced by a silent zero.
    """
