"""Per-request spec-decode counts in engine responses, and ATOM's ``/debug/mtp_stats``.

* SGLang ``meta_info`` (``/generate``; chat ``choices[i].meta_info`` with
  ``return_meta_info``) and ``sglext.spec_tokens_details`` (OpenAI endpoints with
  ``return_spec_tokens_details``), filled when a request finishes
  (``_calculate_spec_decoding_metrics`` in
  ``python/sglang/srt/managers/tokenizer_manager.py``; protocol in
  ``python/sglang/srt/entrypoints/openai/protocol.py``, 0.5.23). Keys, with the older
  names accepted as aliases:

  ==============================  =========================================================
  0.5.23                          aliases
  ==============================  =========================================================
  ``spec_verify_ct``              (same in every version)
  ``spec_num_correct_drafts``     ``spec_accepted_drafts`` (0.5.15.post1), ``spec_accept_token_num`` (older)
  ``spec_num_proposed_drafts``    ``spec_proposed_drafts`` (0.5.15.post1), ``spec_draft_token_num`` (older)
  ``spec_correct_drafts_histogram``  ``spec_accept_histogram``, ``spec_acceptance_histogram``
  ``spec_accept_length``          ``completion_tokens / spec_verify_ct`` (biased, see below)
  ==============================  =========================================================

  ``spec_accept_length`` counts the prefill token, so it is about ``1/verify_ct``
  above the per-step AL; the AL here comes from the histogram when present, else
  from the correct-draft count: ``1 + accepted / verify_ct``.
* vLLM ``metrics.speculative_decoding`` (``--per-request-spec-decode-metrics``,
  ``vllm/entrypoints/generate/base/protocol.py`` ``SpeculativeDecodingMetrics``, 0.33.0):
  ``num_spec_steps``, ``num_accepted_draft_tokens``, ``num_draft_tokens``,
  ``num_spec_tokens``, ``acceptance_histogram`` (index = accepted drafts),
  ``mean_acceptance_length``, ``draft_acceptance_rate``.
* ATOM ``GET /debug/mtp_stats`` (``LLMEngine.get_mtp_statistics`` in
  ``atom/model_engine/llm_engine.py``, ROCm/ATOM HEAD ffdf3bb5d): ``enabled``,
  ``total_draft_tokens``, ``total_accepted_tokens``, ``average_tokens_per_forward``,
  ``distribution`` {accepted drafts: steps}; cumulative since server start.

This module finds the fields in engine output and says where they came from; the
counts themselves (consistency checks, histogram <-> per-position, AL) are
:class:`distributions.counts.AcceptanceCounts`, built with that module's
constructors. Absent fields raise :class:`~golden_al.errors.MetricMissingError`
(never zero); fields of the wrong type or counts that contradict each other raise
:class:`~golden_al.errors.InputFileError`; zero verify steps make :attr:`RequestSpecCounts.al`
raise :class:`~golden_al.errors.NoVerifyStepsError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from distributions.counts import AcceptanceCounts
from distributions.errors import DistributionError
from golden_al.errors import InputFileError, NoVerifyStepsError

__all__ = [
    "RequestSpecCounts",
    "build_counts",
    "optional_count",
    "optional_number",
    "where",
]

@dataclass(frozen=True)
class RequestSpecCounts:
    """Spec-decode counts of one request (or ATOM's server totals) and where they came from.

    ``counts`` holds the verify steps, accepted drafts and, when reported, the
    histogram of accepted drafts per step; ``reported_al`` is the engine's own
    per-request value (SGLang's is biased by the prefill token, see
    :func:`golden_al.engines.sglang.biased_al`).
    """

    engine: str
    counts: AcceptanceCounts
    reported_al: float | None = None
    completion_tokens: int | None = None
    source: str | None = None

    @property
    def verify_steps(self) -> float:
        """Verify steps (request-steps with drafts)."""
        return self.counts.num_verify_steps

    @property
    def accepted_drafts(self) -> float:
        """Accepted draft tokens, bonus excluded."""
        return self.counts.num_accepted_drafts

    @property
    def al(self) -> float:
        """``1 + accepted / verify_steps``; zero steps raise NoVerifyStepsError."""
        if self.counts.num_verify_steps <= 0:
            raise NoVerifyStepsError(
                f"{where(self.source)}{self.engine} reports zero verify steps: AL is undefined",
                hint="the request finished without a decode step that carried drafts",
            )
        return self.counts.al


def where(source: str | None) -> str:
    return f"{source}: " if source else ""


def build_counts(fn: Callable[[], AcceptanceCounts], what: str, source: str | None) -> AcceptanceCounts:
    try:
        return fn()
    except DistributionError as exc:
        raise InputFileError(f"{what}: {exc.message}", path=source, hint=exc.hint) from None


def optional_number(obj: Mapping[str, Any], key: str, source: str | None) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputFileError(f"{key} must be a number, got {value!r}", path=source)
    return float(value)


def optional_count(obj: Mapping[str, Any], key: str, source: str | None) -> int | None:
    value = optional_number(obj, key, source)
    if value is None:
        return None
    if value < 0 or value != int(value):
        raise InputFileError(f"{key} must be a count (integer >= 0), got {obj[key]!r}", path=source)
    return int(value)
