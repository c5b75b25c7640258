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

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from distributions.counts import AcceptanceCounts
from distributions.errors import DistributionError
from golden_al.engines import atom, sglang, vllm
from golden_al.errors import InputFileError, MetricMissingError, NoVerifyStepsError
from golden_al.formats.validate import check_acceptance_counts

__all__ = [
    "RequestSpecCounts",
    "find_spec_records",
    "parse_atom_mtp_stats",
    "parse_sglang_meta_info",
    "parse_vllm_spec_metrics",
    "read_atom_mtp_stats_file",
    "sum_request_counts",
]

_SGL_HIST_EXTRA = (sglang.META_HISTOGRAM_OLDEST,)


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
                f"{_where(self.source)}{self.engine} reports zero verify steps: AL is undefined",
                hint="the request finished without a decode step that carried drafts",
            )
        return self.counts.al


def _where(source: str | None) -> str:
    return f"{source}: " if source else ""


def _build(fn: Callable[[], AcceptanceCounts], what: str, source: str | None) -> AcceptanceCounts:
    try:
        return fn()
    except DistributionError as exc:
        raise InputFileError(f"{what}: {exc.message}", path=source, hint=exc.hint) from None


def _optional_number(obj: Mapping[str, Any], key: str, source: str | None) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputFileError(f"{key} must be a number, got {value!r}", path=source)
    return float(value)


def _optional_count(obj: Mapping[str, Any], key: str, source: str | None) -> int | None:
    value = _optional_number(obj, key, source)
    if value is None:
        return None
    if value < 0 or value != int(value):
        raise InputFileError(f"{key} must be a count (integer >= 0), got {obj[key]!r}", path=source)
    return int(value)


def parse_sglang_meta_info(meta: Mapping[str, Any], *, k: int | None = None,
                           source: str | None = None) -> RequestSpecCounts:
    """Counts of one SGLang request from ``meta_info`` or ``spec_tokens_details``.

    Args:
        k: draft length; inferred from proposed / verify steps when omitted.

    Raises:
        MetricMissingError: no ``spec_verify_ct`` and no histogram, or no accepted
            count (speculative decoding off, or the request has not finished).
        InputFileError: fields of the wrong type or that contradict each other, or
            ``k`` not given and not inferable.
    """
    if not isinstance(meta, Mapping):
        raise InputFileError(f"SGLang meta_info must be an object, got {type(meta).__name__}", path=source)
    hint = "SGLang fills these only for finished requests with speculative decoding on"
    if sglang.META_VERIFY not in meta and not any(key in meta for key in sglang.META_HISTOGRAM_KEYS):
        raise MetricMissingError(f"{_where(source)}SGLang meta_info has no {sglang.META_VERIFY}", hint=hint)
    if not any(key in meta for key in (*sglang.META_ACCEPTED_KEYS, *sglang.META_HISTOGRAM_KEYS,
                                       *_SGL_HIST_EXTRA)):
        raise MetricMissingError(
            f"{_where(source)}SGLang meta_info has no {' / '.join(sglang.META_ACCEPTED_KEYS)} "
            f"and no {sglang.META_HISTOGRAM_KEYS[0]}", hint=hint)
    view = dict(meta)
    for old in _SGL_HIST_EXTRA:  # map the oldest histogram name onto one counts knows
        if old in view and not any(key in view for key in sglang.META_HISTOGRAM_KEYS):
            view[sglang.META_HISTOGRAM_KEYS[0]] = view.pop(old)
    counts = _build(lambda: sglang.counts_from_meta_info(view, k=k), "SGLang meta_info", source)
    check_acceptance_counts(counts, what="SGLang meta_info", path=source)  # its own AL is biased: not checked
    return RequestSpecCounts("sglang", counts, _optional_number(meta, sglang.META_ACCEPT_LENGTH, source),
                             _optional_count(meta, "completion_tokens", source), source)


def parse_vllm_spec_metrics(obj: Mapping[str, Any], *, k: int | None = None,
                            source: str | None = None) -> RequestSpecCounts:
    """Counts of one vLLM request from ``metrics.speculative_decoding`` (or that object).

    Raises:
        MetricMissingError: the object or its ``acceptance_histogram`` is absent
            (server started without ``--per-request-spec-decode-metrics``).
        InputFileError: fields of the wrong type or that contradict each other.
    """
    if not isinstance(obj, Mapping):
        raise InputFileError(f"vLLM speculative_decoding must be an object, got {type(obj).__name__}", path=source)
    spec: Mapping[str, Any] = obj
    metrics = obj.get("metrics")
    if isinstance(metrics, Mapping) and isinstance(metrics.get(vllm.REQUEST_SPEC), Mapping):
        spec = metrics[vllm.REQUEST_SPEC]
    elif isinstance(obj.get(vllm.REQUEST_SPEC), Mapping):
        spec = obj[vllm.REQUEST_SPEC]
    if vllm.REQ_HISTOGRAM not in spec:
        raise MetricMissingError(
            f"{_where(source)}vLLM {vllm.REQUEST_METRICS}.{vllm.REQUEST_SPEC} has no {vllm.REQ_HISTOGRAM}",
            hint=f"start vLLM (>= {vllm.VERSION}) with {vllm.FLAG_PER_REQUEST_METRICS} summary",
        )
    counts = _build(lambda: vllm.counts_from_request_metrics(spec, k=k), "vLLM speculative_decoding", source)
    reported = _optional_number(spec, vllm.REQ_MEAN_AL, source)
    check_acceptance_counts(counts, what="vLLM speculative_decoding", path=source, reported_al=reported)
    return RequestSpecCounts("vllm", counts, reported, None, source)


def parse_atom_mtp_stats(obj: Mapping[str, Any], *, k: int | None = None,
                         source: str | None = None) -> RequestSpecCounts:
    """Server-wide cumulative counts from ATOM's ``/debug/mtp_stats`` JSON.

    Raises:
        MetricMissingError: ``enabled`` is false (MTP off) or a total is absent.
        InputFileError: fields of the wrong type or that contradict each other.
    """
    if not isinstance(obj, Mapping):
        raise InputFileError(f"ATOM /debug/mtp_stats must be an object, got {type(obj).__name__}", path=source)
    if obj.get(atom.STATS_ENABLED) is False:
        raise MetricMissingError(f"{_where(source)}ATOM reports MTP statistics disabled (enabled: false)",
                                 hint=f"start ATOM with {atom.FLAG_METHOD} and {atom.FLAG_K}")
    for key in (atom.STATS_DRAFT_TOKENS, atom.STATS_ACCEPTED, atom.STATS_DISTRIBUTION):
        if obj.get(key) is None:
            raise MetricMissingError(f"{_where(source)}ATOM {atom.MTP_STATS_PATH} has no {key}",
                                     hint=f"pass the body of GET {atom.MTP_STATS_PATH}")
    counts = _build(lambda: atom.counts_from_mtp_stats(obj, k=k), "ATOM /debug/mtp_stats", source)
    reported = _optional_number(obj, atom.STATS_AVG_TOKENS, source)
    check_acceptance_counts(counts, what="ATOM /debug/mtp_stats", path=source, reported_al=reported)
    return RequestSpecCounts("atom", counts, reported, None,
                             source)


def read_atom_mtp_stats_file(path: str | Path, *, k: int | None = None) -> RequestSpecCounts:
    """Read a saved ``/debug/mtp_stats`` body.

    Raises:
        InputFileError: unreadable or not JSON.
    """
    from golden_al import safeio

    p = Path(path)
    obj = safeio.read_json(p)  # regular file, byte cap, depth limit
    return parse_atom_mtp_stats(obj, k=k, source=str(p))


def find_spec_records(obj: Any, *, k: int | None = None, source: str | None = None) -> list[RequestSpecCounts]:
    """Every per-request spec record inside one JSON response (any engine).

    Looks at ``meta_info`` (SGLang ``/generate``, and ``choices[i].meta_info``),
    ``sglext.spec_tokens_details`` (object or list, ``n > 1``) and vLLM
    ``metrics.speculative_decoding``; a list of responses is walked element by
    element. Responses without spec fields contribute nothing.
    """
    out: list[RequestSpecCounts] = []

    def visit(node: Any, depth: int) -> None:
        if depth > 6:
            return
        if isinstance(node, list):
            for item in node:
                visit(item, depth + 1)
            return
        if not isinstance(node, Mapping):
            return
        meta = node.get(sglang.META_INFO)
        if isinstance(meta, Mapping) and sglang.META_VERIFY in meta:
            out.append(parse_sglang_meta_info(meta, k=k, source=source))
        ext = node.get(sglang.META_EXTENSION)
        if isinstance(ext, Mapping) and ext.get(sglang.META_DETAILS) is not None:
            details = ext[sglang.META_DETAILS]
            for d in details if isinstance(details, list) else [details]:
                if isinstance(d, Mapping) and sglang.META_VERIFY in d:
                    out.append(parse_sglang_meta_info(d, k=k, source=source))
        metrics = node.get(vllm.REQUEST_METRICS)
        if isinstance(metrics, Mapping) and isinstance(metrics.get(vllm.REQUEST_SPEC), Mapping):
            out.append(parse_vllm_spec_metrics(metrics[vllm.REQUEST_SPEC], k=k, source=source))
        for key in ("choices", "responses", "results"):
            if isinstance(node.get(key), list):
                visit(node[key], depth + 1)

    visit(obj, 0)
    return out


def sum_request_counts(records: Iterable[RequestSpecCounts]) -> AcceptanceCounts:
    """The run's counts: per-request counts of one draft length summed (ratio estimator inputs).

    Raises:
        InputFileError: no records, or records of different draft lengths.
    """
    total: AcceptanceCounts | None = None
    for r in records:
        try:
            total = r.counts if total is None else total + r.counts
        except DistributionError as exc:
            raise InputFileError(f"cannot sum per-request counts: {exc.message}", path=r.source,
                                 hint=exc.hint) from None
    if total is None:
        raise InputFileError("no per-request spec-decode records to sum",
                             hint="were the requests sent with the engine's per-request metrics on?")
    return total
