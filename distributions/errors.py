"""Exceptions raised by :mod:`distributions`.

``DistributionError`` subclasses :class:`ValueError`, so callers that only care
about bad input can catch ``ValueError``. The CLI maps it to exit code 2.
"""

from __future__ import annotations

__all__ = ["CounterWentBackwardsError", "DistributionError", "FitError"]


class DistributionError(ValueError):
    """Bad input to a distribution computation (value seen, value expected, hint)."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} (hint: {self.hint})" if self.hint else self.message


class FitError(DistributionError):
    """A curve fit could not be carried out (too few points, inconsistent input)."""


class CounterWentBackwardsError(DistributionError):
    """A cumulative counter is smaller in the later snapshot than in the earlier one.

    Engine counters (vLLM Prometheus, ATOM ``/debug/mtp_stats``) only grow while
    a server lives, so a decrease means the server restarted (or the snapshots
    came from different servers) between the two reads. The delta is then
    meaningless; it is never replaced by a silent zero.
    """
