"""One validator of spec-decode counter semantics, for every source of counts.

Every engine guarantees, for any window of verify steps (a log interval, a Prometheus
delta, one request's ``meta_info``, a measurement record):

* every count is a finite number >= 0;
* ``accepted <= drafted tokens <= k * drafts`` (a request-step proposes at most k
  tokens and accepts at most what it proposed);
* per-position accepted counts are non-increasing (a token at position i+1 is accepted
  only after the one at i) and position 0 accepts at most one token per draft;
* the AL, ``1 + accepted / drafts``, lies in ``[1, k + 1]``.

:func:`check_counts` raises :class:`~golden_al.errors.CounterSemanticsError` (exit 2) naming
the file, line and values. It is used by :mod:`golden_al.formats.prometheus` (snapshots and
deltas), :mod:`golden_al.formats.logs` (each vLLM/ATOM line), :mod:`golden_al.formats.responses`,
``check-run`` and ``measure``'s records.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from golden_al.errors import CounterSemanticsError

__all__ = ["check_acceptance_counts", "check_counts", "check_observed_k"]

_TOL = 1e-9


def _fmt(x: float) -> str:
    return f"{x:.12g}"


def check_counts(*, what: str, accepted: float | None = None, drafted: float | None = None,
                 drafts: float | None = None, k: int | None = None,
                 per_position: Sequence[float] | None = None, al: float | None = None,
                 path: str | Path | None = None, line: int | None = None) -> None:
    """Refuse counts no engine can produce (see the module docstring).

    ``what`` names the source in the message (e.g. "vLLM SpecDecoding line"); ``accepted``
    are accepted draft tokens (bonus excluded), ``drafted`` proposed draft tokens, ``drafts``
    verify request-steps, ``al`` a reported or derived AL. Unknown quantities are None.

    Raises:
        CounterSemanticsError: the first violated rule, with the values seen.
    """
    def fail(rule: str, seen: str) -> CounterSemanticsError:
        return CounterSemanticsError(f"{what}: {seen} violates {rule}", path=path, line=line,
                                     hint="no engine produces these counts: a corrupted, edited or mixed-up file")

    named = {"accepted": accepted, "drafted": drafted, "drafts": drafts, "AL": al}
    for name, v in named.items():
        if v is not None and not (math.isfinite(v) and v >= 0):
            raise fail("counts are finite and >= 0", f"{name}={v!r}")
    for i, v in enumerate(per_position or ()):
        if not (math.isfinite(v) and v >= 0):
            raise fail("counts are finite and >= 0", f"accepted at position {i} = {v!r}")
    slack = _TOL
    if accepted is not None and drafted is not None and accepted > drafted * (1 + slack) + slack:
        raise fail("accepted <= drafted", f"accepted {_fmt(accepted)} > drafted {_fmt(drafted)}")
    if k is not None and drafts is not None:
        if drafted is not None and drafted > k * drafts * (1 + slack) + slack:
            raise fail("drafted <= k * drafts", f"drafted {_fmt(drafted)} > k*drafts = {k}*{_fmt(drafts)}")
        if accepted is not None and accepted > k * drafts * (1 + slack) + slack:
            raise fail("accepted <= k * drafts", f"accepted {_fmt(accepted)} > k*drafts = {k}*{_fmt(drafts)}")
    if per_position:
        pos = list(per_position)
        for i in range(1, len(pos)):
            if pos[i] > pos[i - 1] * (1 + slack) + slack:
                raise fail("non-increasing per-position counts",
                           f"position {i} accepted {_fmt(pos[i])} > position {i - 1} accepted {_fmt(pos[i - 1])}")
        if k is not None and len(pos) > k:
            nonzero = [i for i, v in enumerate(pos) if i >= k and v > 0]
            if nonzero:
                raise fail("at most k positions", f"{len(pos)} positions with counts at k={k}")
        if drafts is not None and pos[0] > drafts * (1 + slack) + slack:
            raise fail("position 0 accepts at most one token per draft",
                       f"position 0 accepted {_fmt(pos[0])} > drafts {_fmt(drafts)}")
    if al is None and accepted is not None and drafts:
        al = 1.0 + accepted / drafts
    if al is not None and al > 0 and (al < 1 - 1e-6 or (k is not None and al > k + 1 + 1e-6)):
        bound = f"[1, k+1] = [1, {k + 1}]" if k is not None else "[1, k+1]"
        raise fail(f"AL in {bound}", f"AL {_fmt(al)}")


def check_acceptance_counts(counts: object, *, what: str, path: str | Path | None = None, line: int | None = None,
                            reported_al: float | None = None) -> None:
    """:func:`check_counts` on a :class:`distributions.counts.AcceptanceCounts` (and the AL
    the engine reported next to it, when it is an unbiased one)."""
    check_counts(what=what, accepted=getattr(counts, "num_accepted_drafts", None),
                 drafted=getattr(counts, "num_draft_tokens", None), drafts=getattr(counts, "num_verify_steps", None),
                 k=getattr(counts, "k", None), per_position=getattr(counts, "per_position_accepted", None),
                 al=reported_al, path=path, line=line)


def check_observed_k(observed: int | None, k: int, *, what: str, path: str | Path | None = None) -> None:
    """Refuse counts whose own rows show another draft length than the claimed ``k``: ``observed`` is the most
    drafts one verify step proposed (None where the source does not show it).

    Raises:
        CounterSemanticsError: naming both.
    """
    if observed is not None and observed != k:
        raise CounterSemanticsError(f"{what} propose at most {observed} drafts per verify step: the engine ran "
                                    f"k = {observed}, not the claimed k = {k}", path=path,
                                    hint="pass the engine's own draft length as --draft-len (a golden AL is per k)")
