"""llama-server's acceptance reports: ``/metrics`` counters, log lines, response ``timings``.

Names and patterns come from :mod:`golden_al.engines.llamacpp` (llama.cpp commit 0c1e570):

* ``/metrics`` (``tools/server/server-task.cpp``, server started with ``--metrics``):
  ``llamacpp:spec_decode_num_drafts_total`` (verify steps), ``..._num_draft_tokens_total``,
  ``..._num_accepted_tokens_total`` and ``..._num_accepted_tokens_per_pos_total{position=i}``.
  One verify step per request step with a draft, accepted excludes the bonus token
  (:meth:`~golden_al.formats.counters.DraftCounters.counts` turns them into counts). The
  per-position series appear only after the first request with drafts.
* the per-request log line ``draft acceptance = R (A accepted / N generated), mean len = L``
  (``server_slot::print_timings``, ``tools/server/server-context.cpp``);
* the startup lines of synthetic acceptance (``common/speculative.cpp``
  ``common_speculative_init``);
* ``timings.draft_n`` / ``timings.draft_n_accepted`` of a response
  (``tools/server/server-common.cpp``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from golden_al import plugin

from . import LOG_DRAFT_ACCEPTANCE, LOG_DRAFT_ACCEPTANCE_MARKER, LOG_SYNTH_INFO, LOG_SYNTH_WARNING, PROFILE

__all__ = ["DraftAcceptanceLine", "LlamaCppLog", "SyntheticLine", "scan_lines", "scan_log",
           "timings_counts"]


_DRAFT_RE = re.compile(LOG_DRAFT_ACCEPTANCE)
_SYNTH_WARN_RE = re.compile(LOG_SYNTH_WARNING)
_SYNTH_INFO_RE = re.compile(LOG_SYNTH_INFO)
#: Longest line looked at (a log line longer than this is not one of ours).
_MAX_LINE = 4096


# ---------------------------------------------------------------------------- logs
@dataclass(frozen=True)
class DraftAcceptanceLine:
    """One request's ``draft acceptance = ...`` line."""

    line: int
    rate: float
    accepted: int
    generated: int
    mean_len: float  #: printed with two decimals

    def verify_steps(self, k: int) -> int | None:
        """Verify steps of the request: ``generated / k`` (exact with n_min = n_max = k), else None."""
        return self.generated // k if self.generated % k == 0 else None


@dataclass(frozen=True)
class SyntheticLine:
    """A startup line saying synthetic acceptance is on (with the schedule when printed)."""

    line: int
    text: str
    n_max: int | None = None
    mean_len: float | None = None
    rates: tuple[float, ...] = ()


@dataclass
class LlamaCppLog:
    """What a llama-server log says about acceptance (``notes``: what the reader left out)."""

    source: str | None = None
    requests: list[DraftAcceptanceLine] = field(default_factory=list)
    synthetic: list[SyntheticLine] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def scan_log(text: str, *, source: str | None = None) -> LlamaCppLog:
    """Every acceptance line of a llama-server log text, with line numbers (1-based)."""
    return scan_lines(enumerate(text.splitlines(), start=1), source=source)


def scan_lines(lines: Iterable[tuple[int, str]], *, source: str | None = None,
               tally: plugin.LineTally | None = None) -> LlamaCppLog:
    """:func:`scan_log` over ``(line number, text)`` pairs (e.g. :func:`golden_al.safeio.iter_lines`), under the one
    reader policy (:class:`~golden_al.formats.logs.LineTally`, shared by the files of one read when given)."""
    out, tally = LlamaCppLog(source), tally or plugin.LineTally()
    before, lineno = len(tally.notes), 0
    for lineno, line in lines:
        m = _DRAFT_RE.search(line) if len(line) <= _MAX_LINE else None
        if m:
            tally.row(source or "log", lineno, line)
            out.requests.append(DraftAcceptanceLine(lineno, float(m["rate"]), int(m["accepted"]),
                                                    int(m["generated"]), float(m["mean_len"])))
            continue
        if LOG_DRAFT_ACCEPTANCE_MARKER in line:
            tally.unread(lineno, line, PROFILE.display_name)
            continue
        if len(line) > _MAX_LINE:
            continue
        m = _SYNTH_INFO_RE.search(line)
        if m:
            rates = tuple(float(x) for x in m["rates"].split(",") if x.strip())
            out.synthetic.append(SyntheticLine(lineno, line.strip(), int(m["n_max"]), float(m["mean_len"]), rates))
        elif _SYNTH_WARN_RE.search(line):
            out.synthetic.append(SyntheticLine(lineno, line.strip()))
    tally.close(source or "log", lineno)
    out.notes = tally.notes[before:]
    return out


# ---------------------------------------------------------------------------- responses
def timings_counts(resp: Mapping[str, Any]) -> tuple[int, int] | None:
    """``(draft_n, draft_n_accepted)`` of one response, or None when it made no draft.

    llama.cpp omits both fields when a request drafted nothing.

    Raises:
        InputFileError: the fields are there but not non-negative integers, or accepted > drafted.
    """
    timings = resp.get("timings")
    if not isinstance(timings, Mapping) or "draft_n" not in timings:
        return None
    drafted, accepted = timings.get("draft_n"), timings.get("draft_n_accepted")
    if not (isinstance(drafted, int) and isinstance(accepted, int)) or isinstance(drafted, bool) \
            or isinstance(accepted, bool) or drafted < 0 or accepted < 0:
        raise plugin.InputFileError(f"timings.draft_n/draft_n_accepted are not counts: {drafted!r}, {accepted!r}")
    if accepted > drafted:
        raise plugin.InputFileError(f"timings.draft_n_accepted {accepted} > draft_n {drafted}")
    return drafted, accepted
