"""Which guards ran while a record was measured: each guard notes itself as it passes, and the record
lists them (``checks``: guard -> how many times it passed, over answers, units or probes).

A guard never skips itself (missing evidence is a refusal), so a guard that is absent from the list did not
apply to this engine or source (for example ``answer-model`` on SGLang's native ``/generate``, whose answers
name no model), never one that was skipped for want of evidence. Names:

* ``synthetic-off`` (every self-description and log read: no synthetic acceptance), ``lossless-thresholds``
  (SGLang's acceptance thresholds are 1.0);
* ``answer-model`` (an OpenAI answer names the measured model), ``completion-tokens`` (each answer's token
  count is present and whole), ``tokens-upper-bound`` / ``tokens-lower-bound`` (counts against the tokens
  generated), ``k-bound`` (no step accepts more than k), ``proposed-exact`` / ``proposed-at-most-k`` /
  ``proposed-floor`` (the proposed drafts against k);
* ``metrics-vs-timings`` (llama.cpp's ``/metrics`` delta equals its answers' timings);
* ``server-unchanged-at-end`` (the server probed again after the last unit reports what it did at the start).

The record is per context (:func:`recording`): concurrent requests of one run share it.
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar

__all__ = ["current", "ran", "recording"]

_RAN: ContextVar[collections.Counter[str] | None] = ContextVar("golden_al_checks_ran", default=None)


def ran(name: str, times: int = 1) -> None:
    """Note that guard ``name`` passed (``times`` answers or units); nothing when no run records."""
    counter = _RAN.get()
    if counter is not None:
        counter[name] += times


@contextlib.contextmanager
def recording(initial: Mapping[str, int] | None = None) -> Iterator[collections.Counter[str]]:
    """Record the guards that pass inside the block (starting from ``initial``)."""
    counter: collections.Counter[str] = collections.Counter(initial or {})
    token = _RAN.set(counter)
    try:
        yield counter
    finally:
        _RAN.reset(token)


def current() -> dict[str, int] | None:
    """The guards recorded so far (sorted by name), or None outside :func:`recording`."""
    counter = _RAN.get()
    return None if counter is None else dict(sorted(counter.items()))
