"""ATOM's ``[MTP Stats ...]`` log lines, read by the general log reader (:func:`golden_al.formats.logs.read_log_file`) through the
profile's ``log_reader`` hook. The pattern is built from the upstream format string, anchored on the message
itself so any log prefix works:

* ATOM ``SpecStats._log`` in ``atom/model_engine/scheduler.py`` (ROCm/ATOM HEAD
  ffdf3bb5d), every 1000 decode steps::

      "[MTP Stats Interval] Average toks/fwd: {:.2f}, Accepted/Total Draft tokens: {a}/{d}, "
      "Acceptance rate: {:.2%}, Accepted tokens distribution: {k: 'p%', ...}"

  and the same with ``[MTP Stats         ]`` for the cumulative totals. Each
  request-step is charged ``K`` draft tokens, so steps = d / K.

A line that does not match is not a record.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from golden_al import plugin

from . import PROFILE

__all__ = ['AtomMtpStatsRecord', 'parse_atom_mtp_line']

# --------------------------------------------------------------------------- ATOM

#: "[MTP Stats Interval] Average toks/fwd: {:.2f}, Accepted/Total Draft tokens: {a}/{d}, "
#: "Acceptance rate: {:.2%}, Accepted tokens distribution: { {k: f'{v:.2%}'} }"
_ATOM = plugin.pattern(PROFILE, "mtp-stats")
_ATOM_MARK = PROFILE.log_pattern("mtp-stats").marker
_ATOM_DIST_ITEM = plugin.pattern(PROFILE, "mtp-distribution-item")


@dataclass(frozen=True)
class AtomMtpStatsRecord:
    """One ATOM ``[MTP Stats ...]`` line: an interval or the cumulative totals."""

    line_no: int
    kind: Literal["interval", "cumulative"]
    avg_tokens_per_forward: float | None
    accepted_tokens: int
    draft_tokens: int
    acceptance_rate_pct: float | None = None
    distribution_pct: tuple[tuple[int, float], ...] = ()  # (accepted drafts j, % of steps)
    #: False for a line cut inside its distribution (the reader's policy refuses it)
    complete: bool = True

    engine: Literal["atom"] = "atom"

    def validate(self, source: Path | str | None) -> None:
        """Refuse counts no ATOM server can print (:func:`golden_al.formats.validate.check_counts`)."""

        plugin.check_counts(what="ATOM MTP stats line", accepted=self.accepted_tokens, drafted=self.draft_tokens,
                            al=self.avg_tokens_per_forward, path=source, line=self.line_no)


def parse_atom_mtp_line(line: str, line_no: int = 0) -> AtomMtpStatsRecord | None:
    """Parse one ATOM ``[MTP Stats Interval]`` / ``[MTP Stats         ]`` line, or None."""
    if _ATOM_MARK not in line:
        return None
    m = _ATOM.search(line.rstrip("\r\n"))
    if m is None:
        return None
    dist: tuple[tuple[int, float], ...] = ()
    if m.group("dist"):
        dist = tuple((int(d.group("k")), float(d.group("p"))) for d in _ATOM_DIST_ITEM.finditer(m.group("dist")))
    return AtomMtpStatsRecord(
        line_no=line_no,
        kind="interval" if m.group("kind").strip() == "Interval" else "cumulative",
        avg_tokens_per_forward=plugin.number(m.group("avg")),
        accepted_tokens=int(m.group("acc")),
        draft_tokens=int(m.group("draft")),
        acceptance_rate_pct=plugin.number(m.group("rate")),
        distribution_pct=dist,
        complete=m.group("dist") is not None or "distribution" not in line[m.end():],
    )
