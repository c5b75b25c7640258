"""Acceptance counts as the engines report them, and the distributions they determine.

Every constructor takes already-parsed Python values (numbers, lists, dicts
from JSON or a Prometheus parser) and returns an :class:`AcceptanceCounts`: the
verify steps, accepted draft tokens, drafted tokens, per-position accepted
counts (``k`` entries) and the histogram of accepted drafts per step (``k + 1``
entries) when it can be derived. For chain drafts the per-position counts and
the histogram determine each other exactly:
``per_position[j-1] = sum_{i>=j} histogram[i]``, i.e. ``P(L - 1 >= j) = pos_j / steps``.

Engine formats mirrored here (versions from ``engine-facts.md``):

* vLLM 0.33.0 Prometheus counters (``vllm/v1/spec_decode/metrics.py``):
  ``vllm:spec_decode_num_drafts_total`` (one per request per step with drafts),
  ``..._num_draft_tokens_total``, ``..._num_accepted_tokens_total`` (bonus
  excluded) and ``..._num_accepted_tokens_per_pos_total{position="0".."K-1"}``.
  See :func:`from_vllm_counters` and :func:`from_vllm_prometheus`.
* vLLM 0.33.0 per-request ``metrics.speculative_decoding``
  (``vllm/v1/metrics/stats.py`` ``RequestSpecDecodeMetrics.to_dict``), see
  :func:`from_vllm_request_metrics`.
* SGLang 0.5.23 / 0.5.15.post1 / older per-request ``meta_info``
  (``python/sglang/srt/managers/tokenizer_manager.py``
  ``_calculate_spec_decoding_metrics``; histogram grown in
  ``schedule_batch.py`` ``Req.update_spec_correct_drafts_histogram``), see
  :func:`from_sglang_meta_info` and :func:`sglang_biased_al`.
* ATOM HEAD ffdf3bb5d ``GET /debug/mtp_stats``
  (``atom/model_engine/llm_engine.py`` ``get_mtp_statistics``), see
  :func:`from_atom_mtp_stats` and :func:`atom_mtp_stats_delta`.

Cumulative counters are turned into per-run counts with :func:`delta` (or
``after - before`` on two :class:`AcceptanceCounts`), which raises
:class:`~distributions.errors.CounterWentBackwardsError` when a count decreased
(a restarted server) instead of returning a silent zero.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from distributions import units
from distributions.acceptance import AcceptanceDistribution
from distributions.errors import CounterWentBackwardsError, DistributionError

__all__ = [
    "SGLANG_ACCEPTED_KEYS",
    "SGLANG_HISTOGRAM_KEYS",
    "SGLANG_PROPOSED_KEYS",
    "VLLM_COUNTER_NAMES",
    "AcceptanceCounts",
    "atom_mtp_stats_delta",
    "delta",
    "from_atom_mtp_stats",
    "from_histogram",
    "from_sglang_meta_info",
    "from_vllm_counters",
    "from_vllm_prometheus",
    "from_vllm_request_metrics",
    "sglang_biased_al",
    "tidy_count",
]

Count = int | float
"""A count: an int when observed, a float when it is an expectation or a Prometheus value."""

#: Relative tolerance for equalities between counts (Prometheus values are floats).
_REL_TOL = 1e-9

#: SGLang ``meta_info`` keys, newest first (engine-facts §1c).
SGLANG_HISTOGRAM_KEYS: tuple[str, ...] = ("spec_correct_drafts_histogram", "spec_accept_histogram")
SGLANG_ACCEPTED_KEYS: tuple[str, ...] = ("spec_num_correct_drafts", "spec_accepted_drafts", "spec_accept_token_num")
SGLANG_PROPOSED_KEYS: tuple[str, ...] = ("spec_num_proposed_drafts", "spec_proposed_drafts", "spec_draft_token_num")

#: vLLM 0.33.0 Prometheus counter names (family names; samples carry ``_total``).
VLLM_COUNTER_NAMES: dict[str, str] = {
    "num_drafts": "vllm:spec_decode_num_drafts",
    "num_draft_tokens": "vllm:spec_decode_num_draft_tokens",
    "num_accepted_tokens": "vllm:spec_decode_num_accepted_tokens",
    "accepted_per_position": "vllm:spec_decode_num_accepted_tokens_per_pos",
}

# How each source names our fields, so that errors speak the engine's language.
_FIELD_NAMES: dict[str, dict[str, str]] = {
    "vllm-counters": {
        "num_verify_steps": "num_drafts",
        "num_accepted_drafts": "num_accepted_tokens",
        "num_draft_tokens": "num_draft_tokens",
        "per_position_accepted": "accepted-per-position counters",
    },
    "vllm-request-metrics": {
        "num_verify_steps": "num_spec_steps",
        "num_accepted_drafts": "num_accepted_draft_tokens",
        "num_draft_tokens": "num_draft_tokens",
        "histogram": "acceptance_histogram",
    },
    "sglang-meta-info": {
        "num_verify_steps": "spec_verify_ct",
        "num_accepted_drafts": "spec_num_correct_drafts",
        "num_draft_tokens": "spec_num_proposed_drafts",
        "histogram": "spec_correct_drafts_histogram",
    },
    "atom-mtp-stats": {
        "num_verify_steps": "sum(distribution)",
        "num_accepted_drafts": "total_accepted_tokens",
        "num_draft_tokens": "total_draft_tokens",
        "histogram": "distribution",
    },
}


# ---------------------------------------------------------------------------- helpers
def _count(value: Any, name: str) -> Count:
    """A non-negative finite count; an int when it is integral."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise DistributionError(
            f"{name} must be a number, got {value!r} ({type(value).__name__})",
            hint="pass parsed JSON / Prometheus values, not strings",
        )
    v = float(value)
    if not math.isfinite(v) or v < 0:
        raise DistributionError(f"{name} must be a finite count >= 0, got {value!r}")
    return tidy_count(v)


def _counts(values: Any, name: str) -> list[Count]:
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise DistributionError(f"{name} must be a list of counts, got {values!r}")
    return [_count(v, f"{name}[{i}]") for i, v in enumerate(values)]


def _close(a: float, b: float) -> bool:
    return abs(float(a) - float(b)) <= _REL_TOL * max(1.0, abs(float(a)), abs(float(b)))


def _fmt(x: float) -> str:
    return f"{x:.10g}"


def _position_list(values: Any, name: str) -> list[Count]:
    """Per-position counts from a list (index = position) or a ``{position: count}`` dict."""
    if isinstance(values, Mapping):
        out: dict[int, Count] = {}
        for key, v in values.items():
            try:
                pos = int(key)
            except (TypeError, ValueError):
                raise DistributionError(
                    f"{name}: position label {key!r} is not an integer",
                    hint='vLLM labels positions "0".."K-1"',
                ) from None
            if pos < 0:
                raise DistributionError(f"{name}: position label {key!r} is negative")
            out[pos] = _count(v, f"{name}[{key!r}]")
        size = max(out) + 1 if out else 0
        return [out.get(i, 0) for i in range(size)]
    return _counts(values, name)


def _fit_length(values: list[Count], size: int, name: str, what: str) -> list[Count]:
    """Pad ``values`` with zeros to ``size``; refuse non-zero entries beyond it."""
    if len(values) > size:
        extra = values[size:]
        if any(v > 0 for v in extra):
            raise DistributionError(
                f"{name} has {len(values)} entries with non-zero counts beyond {size} ({what}): {values}",
                hint="the draft length k given is smaller than the one the engine ran with",
            )
        values = values[:size]
    return values + [0] * (size - len(values))


def _tail_sums(histogram: Sequence[float]) -> list[float]:
    """``per_position[j-1] = sum_{i>=j} histogram[i]`` for ``j = 1..k``."""
    tail = np.cumsum(np.asarray(histogram, dtype=np.float64)[::-1])[::-1]
    return [float(v) for v in tail[1:]]


def tidy_count(x: float) -> Count:
    """A summed count as an ``int`` when it is integral up to float noise, else the float."""
    return round(x) if abs(x - round(x)) <= _REL_TOL * max(1.0, abs(x)) else float(x)


# ---------------------------------------------------------------------------- the counts
@dataclass(frozen=True)
class AcceptanceCounts:
    """Counts for one draft length ``k`` (one request, one run, or a delta of snapshots).

    Args:
        k: draft length (``num_speculative_tokens``).
        num_verify_steps: request-steps that carried drafts (vLLM ``num_drafts``,
            SGLang ``spec_verify_ct``, ATOM ``sum(distribution)``).
        num_accepted_drafts: accepted draft tokens, bonus excluded.
        num_draft_tokens: drafted (proposed) tokens, if reported.
        per_position_accepted: ``k`` counts, steps that accepted position ``j``
            (``j = 1..k``); derived from ``histogram`` when only that is given.
        histogram: ``k + 1`` counts, steps that accepted ``j`` drafts; derived
            from ``per_position_accepted`` when only that is given (chain drafts).
        source: where the counts came from (``vllm-counters``, ``sglang-meta-info``...).

    Raises:
        DistributionError: if the counts contradict each other (each message
            names the engine's field, the values seen and what must hold).
    """

    k: int
    num_verify_steps: Count
    num_accepted_drafts: Count
    num_draft_tokens: Count | None = None
    per_position_accepted: tuple[Count, ...] | None = None
    histogram: tuple[Count, ...] | None = None
    source: str = "counts"

    def __post_init__(self) -> None:
        k = units.check_draft_len(self.k)
        names = {**{f: f for f in ("num_verify_steps", "num_accepted_drafts", "num_draft_tokens",
                                     "per_position_accepted", "histogram")},
                 **_FIELD_NAMES.get(self.source, {})}
        where = f"{self.source}: "
        steps = _count(self.num_verify_steps, names["num_verify_steps"])
        acc = _count(self.num_accepted_drafts, names["num_accepted_drafts"])
        drafted = None if self.num_draft_tokens is None else _count(self.num_draft_tokens, names["num_draft_tokens"])
        if acc > k * steps * (1 + _REL_TOL):
            raise DistributionError(
                f"{where}{names['num_accepted_drafts']}={_fmt(acc)} exceeds k*{names['num_verify_steps']}"
                f"={k}*{_fmt(steps)}={_fmt(k * steps)}",
                hint="a verify step accepts at most k drafts; is k right, and are both counts from the same snapshot?",
            )
        if drafted is not None and acc > drafted * (1 + _REL_TOL):
            raise DistributionError(
                f"{where}{names['num_accepted_drafts']}={_fmt(acc)} exceeds {names['num_draft_tokens']}={_fmt(drafted)}",
                hint="accepted draft tokens are a subset of drafted ones; were the counters read at different times?",
            )
        pos = None
        if self.per_position_accepted is not None:
            pos = _counts(list(self.per_position_accepted), names["per_position_accepted"])
            if len(pos) != k:
                raise DistributionError(
                    f"{where}{names['per_position_accepted']} has {len(pos)} entries, expected k={k}"
                )
            _check_positions(pos, steps, acc, names, where)
        hist = None
        if self.histogram is not None:
            hist = _counts(list(self.histogram), names["histogram"])
            if len(hist) != k + 1:
                raise DistributionError(f"{where}{names['histogram']} has {len(hist)} entries, expected k+1={k + 1}")
            total = float(sum(hist))
            if not _close(total, steps):
                raise DistributionError(
                    f"{where}{names['histogram']} sums to {_fmt(total)} steps but "
                    f"{names['num_verify_steps']}={_fmt(steps)}",
                    hint="the histogram has one entry per verify step; were both read from the same response?",
                )
            weighted = float(np.dot(np.arange(k + 1), hist))
            if not _close(weighted, acc):
                raise DistributionError(
                    f"{where}{names['histogram']} holds {_fmt(weighted)} accepted drafts "
                    f"(sum of j*h[j]) but {names['num_accepted_drafts']}={_fmt(acc)}",
                    hint="index j of the histogram is the number of accepted DRAFT tokens (bonus excluded)",
                )
            derived = _tail_sums(hist)
            if pos is None:
                pos = [tidy_count(v) for v in derived]
            elif not all(_close(a, b) for a, b in zip(pos, derived, strict=True)):
                raise DistributionError(
                    f"{where}per-position accepted counts {pos} disagree with the histogram {hist} "
                    f"(which implies {[tidy_count(v) for v in derived]})",
                    hint="for a chain draft, position j is accepted exactly when at least j drafts are",
                )
        elif pos is not None:
            edges = [steps, *pos, 0]
            hist = [tidy_count(float(edges[j]) - float(edges[j + 1])) for j in range(k + 1)]
        object.__setattr__(self, "k", k)
        object.__setattr__(self, "num_verify_steps", steps)
        object.__setattr__(self, "num_accepted_drafts", acc)
        object.__setattr__(self, "num_draft_tokens", drafted)
        object.__setattr__(self, "per_position_accepted", None if pos is None else tuple(pos))
        object.__setattr__(self, "histogram", None if hist is None else tuple(hist))

    # ------------------------------------------------------------------ views
    @property
    def al(self) -> float:
        """AL = 1 + accepted drafts / verify steps (:func:`units.al_from_counts`)."""
        return units.al_from_counts(self.num_accepted_drafts, self.num_verify_steps)

    @property
    def acceptance_rate(self) -> float | None:
        """Accepted / drafted tokens (vLLM's "draft acceptance rate"); None if drafted is unknown."""
        if self.num_draft_tokens is None:
            return None
        if self.num_draft_tokens == 0:
            raise DistributionError(f"{self.source}: acceptance rate undefined: zero drafted tokens")
        return float(self.num_accepted_drafts) / float(self.num_draft_tokens)

    @property
    def has_distribution(self) -> bool:
        """Whether the counts determine the pmf of ``L`` (a histogram or per-position counts)."""
        return self.histogram is not None

    def unconditional_rates(self) -> NDArray[np.float64]:
        """``p_j = per_position[j] / steps`` (vLLM's per-position acceptance rate)."""
        return self.distribution().unconditional_rates()

    def distribution(self) -> AcceptanceDistribution:
        """The empirical pmf of ``L`` from the histogram (or the per-position counts).

        Raises:
            DistributionError: with totals only (the pmf is not determined) or zero steps.
        """
        if self.histogram is None:
            raise DistributionError(
                f"{self.source}: only totals were reported, so the distribution of L is not determined",
                hint="use the per-position counters / histogram, or model it (AcceptanceDistribution.min_variance)",
            )
        return AcceptanceDistribution.from_accepted_histogram(self.histogram, k=self.k)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (lists, not tuples)."""
        return {
            "k": self.k,
            "num_verify_steps": self.num_verify_steps,
            "num_accepted_drafts": self.num_accepted_drafts,
            "num_draft_tokens": self.num_draft_tokens,
            "per_position_accepted": None if self.per_position_accepted is None else list(self.per_position_accepted),
            "histogram": None if self.histogram is None else list(self.histogram),
            "source": self.source,
        }

    # ------------------------------------------------------------------ arithmetic
    def _check_same_k(self, other: object, op: str) -> AcceptanceCounts:
        if not isinstance(other, AcceptanceCounts):
            raise TypeError(f"cannot {op} AcceptanceCounts and {type(other).__name__}")
        if other.k != self.k:
            raise DistributionError(
                f"cannot {op} counts of draft length k={self.k} and k={other.k}",
                hint="aggregate each draft length separately",
            )
        return other

    def __add__(self, other: object) -> AcceptanceCounts:
        """Sum of two count sets of the same ``k`` (e.g. per-request counts into a run)."""
        o = self._check_same_k(other, "add")

        def opt_sum(a: Any, b: Any) -> Any:
            if a is None or b is None:
                return None
            if isinstance(a, tuple):
                return tuple(tidy_count(float(x) + float(y)) for x, y in zip(a, b, strict=True))
            return tidy_count(float(a) + float(b))

        return AcceptanceCounts(
            k=self.k,
            num_verify_steps=opt_sum(self.num_verify_steps, o.num_verify_steps),
            num_accepted_drafts=opt_sum(self.num_accepted_drafts, o.num_accepted_drafts),
            num_draft_tokens=opt_sum(self.num_draft_tokens, o.num_draft_tokens),
            per_position_accepted=opt_sum(self.per_position_accepted, o.per_position_accepted),
            histogram=opt_sum(self.histogram, o.histogram),
            source=self.source if self.source == o.source else f"{self.source}+{o.source}",
        )

    def __sub__(self, other: object) -> AcceptanceCounts:
        """``after - before`` for cumulative snapshots; raises if any count went backwards."""
        o = self._check_same_k(other, "subtract")
        d = delta(o.to_dict(), self.to_dict(), name=self.source,
                  ignore=("k", "source"))
        return AcceptanceCounts(
            k=self.k,
            num_verify_steps=d["num_verify_steps"],
            num_accepted_drafts=d["num_accepted_drafts"],
            num_draft_tokens=d["num_draft_tokens"],
            per_position_accepted=None if d["per_position_accepted"] is None else tuple(d["per_position_accepted"]),
            histogram=None if d["histogram"] is None else tuple(d["histogram"]),
            source=self.source,
        )


def _check_positions(pos: list[Count], steps: Count, acc: Count, names: dict[str, str], where: str) -> None:
    label = names["per_position_accepted"]
    if pos and pos[0] > steps * (1 + _REL_TOL):
        raise DistributionError(
            f"{where}{label}: position 1 was accepted {_fmt(pos[0])} times but there were only "
            f"{_fmt(steps)} verify steps ({names['num_verify_steps']})",
            hint="each verify step accepts a given position at most once; were the counters read at different times?",
        )
    for j in range(1, len(pos)):
        if pos[j] > pos[j - 1] * (1 + _REL_TOL) + _REL_TOL:
            raise DistributionError(
                f"{where}{label} must be non-increasing, but position {j + 1} (0-based label \"{j}\") was "
                f"accepted {_fmt(pos[j])} times, more than position {j} ({_fmt(pos[j - 1])}): {pos}",
                hint="a chain draft accepts position j only after accepting every earlier position; "
                "were series from different snapshots or servers mixed, or is this a tree draft?",
            )
    total = float(sum(pos))
    if not _close(total, acc):
        raise DistributionError(
            f"{where}{label} sum to {_fmt(total)} but {names['num_accepted_drafts']}={_fmt(acc)}",
            hint="every accepted draft token is counted at exactly one position; sum every label series "
            "(model_name, engine) of both counters from the same snapshot",
        )


# ---------------------------------------------------------------------------- generic
def from_histogram(histogram: Sequence[Count], *, k: int | None = None,
                   num_draft_tokens: Count | None = None, source: str = "histogram") -> AcceptanceCounts:
    """Counts from a histogram indexed by accepted draft tokens (padded to ``k + 1``)."""
    hist = _counts(histogram, f"{source}: histogram")
    if k is None:
        k = max(len(hist) - 1, 1)
    k = units.check_draft_len(k)
    hist = _fit_length(hist, k + 1, f"{source}: histogram", f"k+1={k + 1}")
    steps = tidy_count(float(sum(hist)))
    acc = tidy_count(float(np.dot(np.arange(k + 1), hist)))
    return AcceptanceCounts(k=k, num_verify_steps=steps, num_accepted_drafts=acc,
                            num_draft_tokens=num_draft_tokens, histogram=tuple(hist), source=source)


def delta(before: Any, after: Any, *, name: str = "counter", ignore: Sequence[str] = ()) -> Any:
    """``after - before`` for two snapshots of cumulative counts.

    Works on numbers, lists (element-wise; the shorter one is padded with
    zeros, since SGLang's histogram and label sets grow) and dicts (key-wise; a
    key absent from ``before`` counts as 0, a new label series). ``None`` in
    both snapshots stays ``None``; keys in ``ignore`` are copied from ``after``.

    Raises:
        CounterWentBackwardsError: if any count is smaller in ``after``, or a
            series present (and non-zero) in ``before`` vanished from ``after``:
            the server restarted between the snapshots. Never a silent zero.
    """
    return _delta(before, after, name, tuple(ignore))


def _backwards(path: str, before: Any, after: Any) -> CounterWentBackwardsError:
    return CounterWentBackwardsError(
        f"{path} went backwards between the snapshots: before={before!r}, after={after!r}",
        hint="cumulative counters only grow while a server lives: the server restarted (or the two "
        "snapshots came from different servers); re-run the measurement against one server",
    )


def _delta(before: Any, after: Any, path: str, ignore: tuple[str, ...]) -> Any:
    if before is None and after is None:
        return None
    if isinstance(after, Mapping) or isinstance(before, Mapping):
        if not isinstance(after, Mapping) or not isinstance(before, Mapping):
            raise DistributionError(f"{path}: cannot subtract {type(before).__name__} from {type(after).__name__}")
        out: dict[Any, Any] = {}
        for key in before:
            if key not in after and key not in ignore and _nonzero(before[key]):
                raise _backwards(f"{path}[{key!r}]", before[key], "<missing>")
        for key, value in after.items():
            out[key] = value if key in ignore else _delta(before.get(key, _zero_like(value)), value,
                                                          f"{path}[{key!r}]", ignore)
        return out
    if isinstance(after, (list, tuple)) or isinstance(before, (list, tuple)):
        if not isinstance(after, (list, tuple)) or not isinstance(before, (list, tuple)):
            raise DistributionError(f"{path}: cannot subtract {type(before).__name__} from {type(after).__name__}")
        size = max(len(before), len(after))
        b = list(before) + [0] * (size - len(before))
        a = list(after) + [0] * (size - len(after))
        if len(after) < len(before) and any(_nonzero(v) for v in before[len(after):]):
            raise _backwards(f"{path} (length)", list(before), list(after))
        return [_delta(x, y, f"{path}[{i}]", ignore) for i, (x, y) in enumerate(zip(b, a, strict=True))]
    if before is None or after is None:
        raise DistributionError(
            f"{path}: present in one snapshot only (before={before!r}, after={after!r})",
            hint="read the same fields in both snapshots",
        )
    b_val = _count(before, f"{path} (before)")
    a_val = _count(after, f"{path} (after)")
    if a_val < b_val and not _close(a_val, b_val):
        raise _backwards(path, b_val, a_val)
    return tidy_count(max(float(a_val) - float(b_val), 0.0))


def _nonzero(value: Any) -> bool:
    if isinstance(value, Mapping):
        return any(_nonzero(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_nonzero(v) for v in value)
    return value is not None and float(value) != 0.0


def _zero_like(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {}
    if isinstance(value, (list, tuple)):
        return []
    return None if value is None else 0


# ---------------------------------------------------------------------------- vLLM
def from_vllm_counters(
    num_drafts: Count,
    num_draft_tokens: Count,
    num_accepted_tokens: Count,
    accepted_per_position: Sequence[Count] | Mapping[str | int, Count] | None = None,
    *,
    k: int | None = None,
) -> AcceptanceCounts:
    """Counts from vLLM's spec-decode counters (one snapshot, or a delta of two).

    Mirrors vLLM 0.33.0 ``vllm/v1/spec_decode/metrics.py`` (``SpecDecodingProm``):
    ``num_drafts`` is +1 per request per step with drafts, ``num_accepted_tokens``
    excludes the bonus, ``accepted_per_position`` is indexed by ``position``
    (``"0".."K-1"``; a list or a ``{position: count}`` dict, summed over the other
    labels). AL = 1 + accepted / drafts; the unconditional rate at position
    ``j`` is ``accepted_pos_j / num_drafts``, which fixes the pmf of a chain draft.

    Args:
        k: draft length; defaults to the number of positions reported.

    Raises:
        DistributionError: unless ``0 <= accepted <= draft_tokens <= k*drafts``,
            ``sum(per_position) == accepted`` and the per-position counts are
            non-increasing (each message explains which law was broken).
    """
    src = "vllm-counters"
    pos = None if accepted_per_position is None else _position_list(accepted_per_position, f"{src}: accepted-per-position")
    if k is None:
        if not pos:
            raise DistributionError(
                f"{src}: the draft length k is unknown (no per-position counters given)",
                hint="pass k=num_speculative_tokens",
            )
        k = len(pos)
    k = units.check_draft_len(k)
    if pos is not None:
        pos = _fit_length(pos, k, f"{src}: accepted-per-position", f"k={k} positions")
    drafts = _count(num_drafts, f"{src}: num_drafts")
    drafted = _count(num_draft_tokens, f"{src}: num_draft_tokens")
    if drafted > k * drafts * (1 + _REL_TOL):
        raise DistributionError(
            f"{src}: num_draft_tokens={_fmt(drafted)} exceeds k*num_drafts={k}*{_fmt(drafts)}={_fmt(k * drafts)}",
            hint="a request-step drafts at most k tokens; is k (num_speculative_tokens) right?",
        )
    return AcceptanceCounts(
        k=k,
        num_verify_steps=drafts,
        num_accepted_drafts=num_accepted_tokens,
        num_draft_tokens=drafted,
        per_position_accepted=None if pos is None else tuple(pos),
        source=src,
    )


def from_vllm_prometheus(values: Mapping[str, Any], *, k: int | None = None) -> AcceptanceCounts:
    """Counts from vLLM counter values keyed by metric name (see :data:`VLLM_COUNTER_NAMES`).

    ``values`` maps ``vllm:spec_decode_num_drafts`` (with or without ``_total``)
    etc. to a number already summed over label series, and the per-position
    family to a list or a ``{position: value}`` dict.
    """
    def get(key: str, required: bool = True) -> Any:
        base = VLLM_COUNTER_NAMES[key]
        for name in (base, base + "_total"):
            if name in values:
                return values[name]
        if required:
            raise DistributionError(
                f"vllm-counters: metric {base}_total not found among {sorted(values)}",
                hint="is speculative decoding on and --disable-log-stats off? (vLLM 0.33.0 metric names)",
            )
        return None

    return from_vllm_counters(get("num_drafts"), get("num_draft_tokens"), get("num_accepted_tokens"),
                              get("accepted_per_position", required=False), k=k)


def from_vllm_request_metrics(metrics: Mapping[str, Any], *, k: int | None = None) -> AcceptanceCounts:
    """Counts from one vLLM response's ``metrics.speculative_decoding``.

    Mirrors vLLM 0.33.0 ``vllm/v1/metrics/stats.py`` ``RequestSpecDecodeMetrics.to_dict``
    (server flag ``--per-request-spec-decode-metrics summary|detailed``):
    ``acceptance_histogram`` (dense, index = accepted drafts, length K+1),
    ``num_spec_steps`` (= sum of the histogram), ``num_accepted_draft_tokens``,
    ``num_draft_tokens``, ``num_spec_tokens`` (= K) and, at the detailed level,
    ``per_step_accepted``. Accepts the outer ``metrics`` dict too. Reported
    totals are checked against the histogram.
    """
    src = "vllm-request-metrics"
    if "speculative_decoding" in metrics and isinstance(metrics["speculative_decoding"], Mapping):
        metrics = metrics["speculative_decoding"]
    if "acceptance_histogram" not in metrics:
        raise DistributionError(
            f"{src}: no acceptance_histogram in {sorted(metrics)}",
            hint="start vLLM (>= 0.33.0) with --per-request-spec-decode-metrics summary",
        )
    hist = _counts(metrics["acceptance_histogram"], f"{src}: acceptance_histogram")
    spec_tokens = metrics.get("num_spec_tokens")
    if spec_tokens is not None:
        spec_tokens = int(_count(spec_tokens, f"{src}: num_spec_tokens"))
        if k is not None and int(k) != spec_tokens:
            raise DistributionError(f"{src}: num_spec_tokens={spec_tokens} but k={k} was given")
    k = k if k is not None else (spec_tokens if spec_tokens is not None else len(hist) - 1)
    counts = from_histogram(hist, k=k, num_draft_tokens=metrics.get("num_draft_tokens"), source=src)
    for key, have in (("num_spec_steps", counts.num_verify_steps),
                      ("num_accepted_draft_tokens", counts.num_accepted_drafts)):
        if metrics.get(key) is not None and not _close(_count(metrics[key], f"{src}: {key}"), have):
            raise DistributionError(
                f"{src}: {key}={metrics[key]!r} but acceptance_histogram {hist} implies {_fmt(have)}",
                hint="index j of acceptance_histogram is the number of accepted draft tokens in a step",
            )
    per_step = metrics.get("per_step_accepted")
    if per_step is not None:
        steps = _counts(per_step, f"{src}: per_step_accepted")
        if len(steps) != counts.num_verify_steps or not _close(sum(steps), counts.num_accepted_drafts):
            raise DistributionError(
                f"{src}: per_step_accepted ({len(steps)} steps, {sum(steps)} accepted) disagrees with the "
                f"histogram ({counts.num_verify_steps} steps, {counts.num_accepted_drafts} accepted)"
            )
    return counts


# ---------------------------------------------------------------------------- SGLang
def _first_key(meta: Mapping[str, Any], keys: Sequence[str], what: str) -> tuple[str | None, Any]:
    """The value under the first present alias; aliases present together must agree."""
    found = [(key, meta[key]) for key in keys if key in meta and meta[key] is not None]
    if not found:
        return None, None
    key0, val0 = found[0]
    for key, val in found[1:]:
        if val != val0:
            raise DistributionError(
                f"sglang-meta-info: {what} aliases disagree: {key0}={val0!r} but {key}={val!r}",
                hint="SGLang emits the old names as backward-compat copies of the new ones",
            )
    return key0, val0


def from_sglang_meta_info(meta: Mapping[str, Any], *, k: int | None = None) -> AcceptanceCounts:
    """Counts from one finished SGLang request's ``meta_info`` (or ``sglext.spec_tokens_details``).

    Reads (engine-facts §1c; ``python/sglang/srt/managers/tokenizer_manager.py``,
    0.5.23, with the 0.5.15.post1 and older aliases):

    * histogram: ``spec_correct_drafts_histogram`` or ``spec_accept_histogram``;
      index = accepted DRAFT tokens (bonus excluded), one entry per verify step.
      It grows only as far as the largest value seen, so it is padded to ``k+1``.
    * verify steps: ``spec_verify_ct`` (decode steps only; prefill is not counted).
    * accepted: ``spec_num_correct_drafts`` / ``spec_accepted_drafts`` / ``spec_accept_token_num``.
    * proposed: ``spec_num_proposed_drafts`` / ``spec_proposed_drafts`` / ``spec_draft_token_num``
      (``spec_verify_ct * (speculative_num_draft_tokens - 1)``).

    AL from these counts (``1 + accepted / spec_verify_ct``) is bias-free; the
    ``spec_accept_length`` SGLang itself reports is not (see :func:`sglang_biased_al`).

    Args:
        k: draft length (``speculative_num_steps`` for EAGLE-family chains). If
            omitted it is inferred as proposed / verify steps, which is
            ``speculative_num_draft_tokens - 1`` (the tree size, not its depth,
            when ``speculative_eagle_topk > 1``).
    """
    src = "sglang-meta-info"
    if "spec_tokens_details" in meta and isinstance(meta["spec_tokens_details"], Mapping):
        meta = meta["spec_tokens_details"]
    _, hist_raw = _first_key(meta, SGLANG_HISTOGRAM_KEYS, "histogram")
    _, acc_raw = _first_key(meta, SGLANG_ACCEPTED_KEYS, "accepted-drafts")
    _, prop_raw = _first_key(meta, SGLANG_PROPOSED_KEYS, "proposed-drafts")
    verify_raw = meta.get("spec_verify_ct")
    if verify_raw is None and hist_raw is None:
        raise DistributionError(
            f"{src}: neither spec_verify_ct nor a histogram in meta_info keys {sorted(meta)}",
            hint="speculative decoding is off, or the request has not finished (meta_info is filled at finish)",
        )
    verify = None if verify_raw is None else _count(verify_raw, f"{src}: spec_verify_ct")
    proposed = None if prop_raw is None else _count(prop_raw, f"{src}: spec_num_proposed_drafts")
    if k is None:
        if proposed is not None and verify:
            ratio = float(proposed) / float(verify)
            if abs(ratio - round(ratio)) > 1e-9 or round(ratio) < 1:
                raise DistributionError(
                    f"{src}: cannot infer k: proposed/verify = {_fmt(proposed)}/{_fmt(verify)} is not a whole number",
                    hint="pass k=speculative_num_steps",
                )
            k = (round(ratio))
        else:
            raise DistributionError(
                f"{src}: the draft length k is unknown and cannot be inferred from meta_info",
                hint="pass k=speculative_num_steps (the histogram only grows as far as the largest value seen)",
            )
    k = units.check_draft_len(k)
    if hist_raw is None and verify == 0:
        hist_raw = [0]  # older SGLang omits an empty histogram
    if hist_raw is None:  # totals only: AL is known, the pmf is not
        assert verify is not None  # checked above: one of the two is present
        if acc_raw is None:
            raise DistributionError(f"{src}: no histogram and no accepted-draft count in {sorted(meta)}")
        return AcceptanceCounts(k=k, num_verify_steps=verify, num_accepted_drafts=acc_raw,
                                num_draft_tokens=proposed, source=src)
    counts = from_histogram(hist_raw, k=k, num_draft_tokens=proposed, source=src)
    if verify is not None and not _close(verify, counts.num_verify_steps):
        raise DistributionError(
            f"{src}: spec_verify_ct={_fmt(verify)} but the histogram {list(hist_raw)} counts "
            f"{_fmt(counts.num_verify_steps)} steps",
            hint="SGLang adds one histogram entry per verify step; were the fields taken from different requests?",
        )
    if acc_raw is not None and not _close(_count(acc_raw, f"{src}: accepted"), counts.num_accepted_drafts):
        raise DistributionError(
            f"{src}: accepted drafts={acc_raw!r} but the histogram {list(hist_raw)} holds "
            f"{_fmt(counts.num_accepted_drafts)} (sum of j*h[j])",
            hint="index j of the histogram is the number of accepted DRAFT tokens (bonus excluded)",
        )
    return counts


def sglang_biased_al(completion_tokens: Count, spec_verify_ct: Count) -> float:
    """SGLang's own per-request ``spec_accept_length = completion_tokens / spec_verify_ct``.

    This is biased and exists so callers can show the difference:
    ``completion_tokens`` includes the first token, produced by prefill, which
    is not a verify step, so for a request whose last step was not cut short
    ``completion_tokens = 1 + sum(L)`` and the value is ``AL + 1 / spec_verify_ct``
    (about 1/steps too high; 0.01 at 100 steps). Prometheus
    ``generation_tokens_total / spec_verify_calls_total`` has the same bias. The
    bias-free AL comes from the histogram: :func:`from_sglang_meta_info` ``.al``.
    """
    completion = _count(completion_tokens, "completion_tokens")
    verify = _count(spec_verify_ct, "spec_verify_ct")
    if verify == 0:
        raise DistributionError(
            "spec_accept_length is undefined: spec_verify_ct = 0",
            hint="the request produced no decode step with drafts",
        )
    return float(completion) / float(verify)


# ---------------------------------------------------------------------------- ATOM
def _atom_distribution(dist: Any, where: str) -> list[Count]:
    if not isinstance(dist, Mapping):
        raise DistributionError(f"{where}: distribution must be a {{accepted: steps}} object, got {dist!r}")
    out: dict[int, Count] = {}
    for key, value in dist.items():
        try:
            j = int(key)
        except (TypeError, ValueError):
            raise DistributionError(f"{where}: distribution key {key!r} is not an integer") from None
        if j < 0:
            raise DistributionError(f"{where}: distribution key {key!r} is negative")
        out[j] = _count(value, f"{where}: distribution[{key!r}]")
    size = max(out) + 1 if out else 1
    return [out.get(j, 0) for j in range(size)]


def from_atom_mtp_stats(stats: Mapping[str, Any], *, k: int | None = None) -> AcceptanceCounts:
    """Counts from ATOM's ``GET /debug/mtp_stats`` JSON (cumulative since server start).

    Mirrors ATOM HEAD ffdf3bb5d ``atom/model_engine/llm_engine.py``
    ``get_mtp_statistics`` (summed over DP ranks): ``distribution`` ``{accepted
    draft tokens: steps}`` (JSON keys are strings; only values seen appear),
    ``total_draft_tokens`` (every step is charged K, ``atom/model_engine/scheduler.py``
    ``SpecStats.update``) and ``total_accepted_tokens``. For one run use
    :func:`atom_mtp_stats_delta` on snapshots taken before and after it.

    Args:
        k: ``--num-speculative-tokens``; inferred as drafted / steps when omitted.
    """
    src = "atom-mtp-stats"
    if stats.get("enabled") is False:
        raise DistributionError(
            f"{src}: enabled=false: the server runs without speculative decoding",
            hint="start ATOM with --method mtp|eagle3|dspark --num-speculative-tokens K",
        )
    missing = [key for key in ("distribution", "total_draft_tokens", "total_accepted_tokens") if key not in stats]
    if missing:
        raise DistributionError(f"{src}: missing {missing} in {sorted(stats)}", hint="is this /debug/mtp_stats?")
    hist = _atom_distribution(stats["distribution"], src)
    steps = float(sum(hist))
    drafted = _count(stats["total_draft_tokens"], f"{src}: total_draft_tokens")
    if k is None:
        if steps == 0:
            raise DistributionError(f"{src}: no steps recorded, so k cannot be inferred", hint="pass k")
        ratio = float(drafted) / steps
        if abs(ratio - round(ratio)) > 1e-9 or round(ratio) < 1:
            raise DistributionError(
                f"{src}: total_draft_tokens={_fmt(drafted)} is not a whole multiple of the {_fmt(steps)} steps",
                hint="ATOM charges K draft tokens per step; pass k=--num-speculative-tokens",
            )
        k = (round(ratio))
    k = units.check_draft_len(k)
    if not _close(drafted, k * steps):
        raise DistributionError(
            f"{src}: total_draft_tokens={_fmt(drafted)} but k*steps={k}*{_fmt(steps)}={_fmt(k * steps)}",
            hint="ATOM charges K draft tokens to every step; is k right, and are the fields from one snapshot?",
        )
    acc = _count(stats["total_accepted_tokens"], f"{src}: total_accepted_tokens")
    weighted = float(np.dot(np.arange(len(hist)), hist))
    if not _close(weighted, acc):
        raise DistributionError(
            f"{src}: distribution {hist} holds {_fmt(weighted)} accepted drafts (sum of j*steps_j) "
            f"but total_accepted_tokens={_fmt(acc)}",
            hint="keys of distribution are accepted DRAFT tokens per step (bonus excluded)",
        )
    return from_histogram(hist, k=k, num_draft_tokens=drafted, source=src)


def atom_mtp_stats_delta(before: Mapping[str, Any], after: Mapping[str, Any], *,
                         k: int | None = None) -> AcceptanceCounts:
    """Counts of one run from two ``/debug/mtp_stats`` snapshots (ATOM has no reset endpoint).

    Raises:
        CounterWentBackwardsError: if any count decreased (the server restarted).
    """
    src = "atom-mtp-stats"
    picked = []
    for snap, label in ((before, "before"), (after, "after")):
        if snap.get("enabled") is False:
            raise DistributionError(f"{src} ({label}): enabled=false: speculative decoding is off")
        try:
            picked.append({
                "distribution": dict(enumerate(_atom_distribution(snap["distribution"], f"{src} ({label})"))),
                "total_draft_tokens": snap["total_draft_tokens"],
                "total_accepted_tokens": snap["total_accepted_tokens"],
            })
        except KeyError as exc:
            raise DistributionError(f"{src} ({label}): missing {exc.args[0]!r}", hint="is this /debug/mtp_stats?") from None
    d = delta(picked[0], picked[1], name=src)
    return from_atom_mtp_stats(d, k=k)
