"""llama-server's acceptance reports: ``/metrics`` counters, log lines, response ``timings``.

Names and patterns come from :mod:`golden_al.engines.llamacpp` (llama.cpp commit 0c1e570):

* ``/metrics`` (``tools/server/server-task.cpp``, server started with ``--metrics``):
  ``llamacpp:spec_decode_num_drafts_total`` (verify steps), ``..._num_draft_tokens_total``,
  ``..._num_accepted_tokens_total`` and ``..._num_accepted_tokens_per_pos_total{position=i}``.
  One verify step per request step with a draft, accepted excludes the bonus token
  (:func:`golden_al.engines.llamacpp.counts_from_counters` turns them into counts). The
  per-position series appear only after the first request with drafts.
* the per-request log line ``draft acceptance = R (A accepted / N generated), mean len = L``
  (``server_slot::print_timings``, ``tools/server/server-context.cpp``);
* the startup lines of synthetic acceptance (``common/speculative.cpp``
  ``common_speculative_init``);
* ``timings.draft_n`` / ``timings.draft_n_accepted`` of a response
  (``tools/server/server-common.cpp``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from distributions import units
from distributions.counts import AcceptanceCounts
from golden_al.engines import llamacpp as profile
from golden_al.errors import CounterResetError, InputFileError, NoVerifyStepsError

__all__ = [
    "DraftAcceptanceLine",
    "LlamaCppLog",
    "LlamaCppSpecCounters",
    "SyntheticLine",
    "read_counters",
    "scan_log",
    "timings_counts",
]

_DRAFT_RE = re.compile(profile.LOG_DRAFT_ACCEPTANCE)
_SYNTH_WARN_RE = re.compile(profile.LOG_SYNTH_WARNING)
_SYNTH_INFO_RE = re.compile(profile.LOG_SYNTH_INFO)
#: Longest line looked at (a log line longer than this is not one of ours).
_MAX_LINE = 4096


@dataclass(frozen=True)
class LlamaCppSpecCounters:
    """llama-server's cumulative spec-decode counters (or a delta of two snapshots)."""

    num_drafts: float
    num_draft_tokens: float
    num_accepted_tokens: float
    accepted_per_position: tuple[float, ...] = ()
    source: str | None = None
    busy: float | None = None  #: requests processing + deferred (gauges), None when absent

    engine: Literal["llamacpp"] = "llamacpp"

    @property
    def num_verify_steps(self) -> float:
        """Verify steps (``spec_decode_num_drafts_total``)."""
        return self.num_drafts

    @property
    def num_accepted_drafts(self) -> float:
        """Accepted draft tokens (bonus excluded)."""
        return self.num_accepted_tokens

    @property
    def al(self) -> float:
        """``1 + accepted / verify steps``."""
        if self.num_drafts <= 0:
            raise NoVerifyStepsError(f"{self.source + ': ' if self.source else ''}llama.cpp recorded zero verify "
                                     "steps: AL is undefined", hint="send requests long enough to draft")
        return units.al_from_counts(self.num_accepted_tokens, self.num_drafts)

    def to_counts(self, k: int | None = None) -> AcceptanceCounts:
        """:class:`~distributions.counts.AcceptanceCounts` (``k`` defaults to the positions seen)."""
        return profile.counts_from_counters(self.num_drafts, self.num_draft_tokens, self.num_accepted_tokens,
                                            list(self.accepted_per_position) or None, k=k)

    def minus(self, before: LlamaCppSpecCounters) -> LlamaCppSpecCounters:
        """``self - before``; CounterResetError when a counter went backwards (a restart)."""
        n = max(len(before.accepted_per_position), len(self.accepted_per_position))
        pb = list(before.accepted_per_position) + [0.0] * (n - len(before.accepted_per_position))
        pa = list(self.accepted_per_position) + [0.0] * (n - len(self.accepted_per_position))
        pairs = [(profile.DRAFTS_METRIC, before.num_drafts, self.num_drafts),
                 (profile.DRAFT_TOKENS_METRIC, before.num_draft_tokens, self.num_draft_tokens),
                 (profile.ACCEPTED_METRIC, before.num_accepted_tokens, self.num_accepted_tokens)]
        pairs += [(f'{profile.ACCEPTED_PER_POS_METRIC}{{position="{i}"}}', b, a)
                  for i, (b, a) in enumerate(zip(pb, pa, strict=True))]
        for name, b, a in pairs:
            if a < b:
                raise CounterResetError(f"{self.source + ': ' if self.source else ''}counter {name} went backwards "
                                        f"({b:g} -> {a:g}): the server restarted between the snapshots",
                                        hint="take both snapshots from one server run")
        return LlamaCppSpecCounters(self.num_drafts - before.num_drafts,
                                    self.num_draft_tokens - before.num_draft_tokens,
                                    self.num_accepted_tokens - before.num_accepted_tokens,
                                    tuple(a - b for a, b in zip(pa, pb, strict=True)), source=self.source)


def read_counters(snap: Any, labels: Mapping[str, str] | None = None) -> LlamaCppSpecCounters:
    """The llama.cpp counters of a :class:`~golden_al.formats.prometheus.MetricsSnapshot`.

    Raises:
        MetricMissingError: ``spec_decode_num_drafts_total`` is absent (no ``--metrics``).
        InputFileError: a counter is not a finite count, or a position label is not an integer.
    """
    def counter(name: str) -> float:
        value = float(snap.total(name, labels))  # MetricMissingError when absent
        if not math.isfinite(value) or value < 0:
            raise InputFileError(f"counter {name} is {value!r}", path=snap.source,
                                 hint="a cumulative counter is a finite number >= 0")
        return value

    per_pos: tuple[float, ...] = ()
    if snap.select(profile.ACCEPTED_PER_POS_METRIC, labels):
        by_pos = snap.by_label(profile.ACCEPTED_PER_POS_METRIC, "position", labels)
        idx: dict[int, float] = {}
        for key, value in by_pos.items():
            if not str(key).isdigit():
                raise InputFileError(f"metric {profile.ACCEPTED_PER_POS_METRIC} has a non-integer position label "
                                     f"{key!r}", path=snap.source, hint='expected position="0", "1", ...')
            if not (math.isfinite(value) and value >= 0):
                raise InputFileError(f"counter {profile.ACCEPTED_PER_POS_METRIC}{{position={key!r}}} is {value!r}",
                                     path=snap.source)
            idx[int(key)] = float(value)
        per_pos = tuple(idx.get(i, 0.0) for i in range(max(idx) + 1))
    busy = None
    if snap.has(profile.REQUESTS_PROCESSING_METRIC):
        busy = float(snap.total(profile.REQUESTS_PROCESSING_METRIC, labels))
        if snap.has(profile.REQUESTS_DEFERRED_METRIC):
            busy += float(snap.total(profile.REQUESTS_DEFERRED_METRIC, labels))
    return LlamaCppSpecCounters(counter(profile.DRAFTS_METRIC), counter(profile.DRAFT_TOKENS_METRIC),
                                counter(profile.ACCEPTED_METRIC), per_pos, source=snap.source, busy=busy)


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
    """What a llama-server log says about acceptance."""

    source: str | None = None
    requests: list[DraftAcceptanceLine] = field(default_factory=list)
    synthetic: list[SyntheticLine] = field(default_factory=list)


def scan_log(text: str, *, source: str | None = None) -> LlamaCppLog:
    """Every acceptance line of a llama-server log, with line numbers (1-based)."""
    out = LlamaCppLog(source)
    for lineno, line in enumerate(text.splitlines(), start=1):
        if len(line) > _MAX_LINE:
            continue
        m = _DRAFT_RE.search(line)
        if m:
            out.requests.append(DraftAcceptanceLine(lineno, float(m["rate"]), int(m["accepted"]),
                                                    int(m["generated"]), float(m["mean_len"])))
            continue
        m = _SYNTH_INFO_RE.search(line)
        if m:
            rates = tuple(float(x) for x in m["rates"].split(",") if x.strip())
            out.synthetic.append(SyntheticLine(lineno, line.strip(), int(m["n_max"]), float(m["mean_len"]), rates))
        elif _SYNTH_WARN_RE.search(line):
            out.synthetic.append(SyntheticLine(lineno, line.strip()))
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
        raise InputFileError(f"timings.draft_n/draft_n_accepted are not counts: {drafted!r}, {accepted!r}")
    if accepted > drafted:
        raise InputFileError(f"timings.draft_n_accepted {accepted} > draft_n {drafted}")
    return drafted, accepted
