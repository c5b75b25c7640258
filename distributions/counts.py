"""Acceptance counts as the engines report them, and the distributions they determine.

Every constructor takes already-parsed Python values (numbers, lists, dicts
from JSON or a Prometheus parser) and returns an :class:`AcceptanceCounts`: the
verify steps, accepted draft tokens, drafted tokens, per-position accepted
counts (``k`` entries) and the histogram of accepted drafts per step (``k + 1``
entries) when it can be derived. For chain drafts the per-position counts and
the histogram determine each other exactly:
``per_position[j-1] = sum_{i>=j} histogram[i]``, i.e. ``P(L - 1 >= j) = pos_j / steps``.

Engine-neutral: nothing here knows an engine's field or metric names. Each engine's
reader (in the application, one per engine) picks its fields out of a
response or a metrics page and builds counts with :func:`from_histogram` or
:class:`AcceptanceCounts`, passing ``field_names`` so that errors speak the engine's
language. The helpers :func:`as_count`, :func:`as_counts`, :func:`position_counts`,
:func:`fit_length` and :func:`counts_close` validate raw values for those readers.

Cumulative counters are turned into per-run counts with :func:`delta` (or
``after - before`` on two :class:`AcceptanceCounts`), which raises
:class:`~distributions.errors.CounterWentBackwardsError` when a count decreased
(a restarted server) instead of returning a silent zero.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real
from typing import TYPE_CHECKING, Any

from distributions import units
from distributions.errors import CounterWentBackwardsError, DistributionError

if TYPE_CHECKING:  # numpy is imported where arrays are made: reading counts needs none (issue 52)
    import numpy as np
    from numpy.typing import NDArray

    from distributions.acceptance import AcceptanceDistribution

__all__ = [
    "AcceptanceCounts",
    "Count",
    "as_count",
    "as_counts",
    "counts_close",
    "delta",
    "fit_length",
    "format_count",
    "from_histogram",
    "position_counts",
    "split_steps_by_draft_len",
    "tidy_count",
]

Count = int | float
"""A count: an int when observed, a float when it is an expectation or a Prometheus value."""

#: Relative tolerance for equalities between counts (Prometheus values are floats).
_REL_TOL = 1e-9

# ---------------------------------------------------------------------------- helpers
def as_count(value: Any, name: str) -> Count:
    """A non-negative finite count (an ``int`` when integral); ``name`` labels the error."""
    if isinstance(value, bool) or not isinstance(value, Real):  # numpy's scalars are Real, its bool_ is not
        raise DistributionError(
            f"{name} must be a number, got {value!r} ({type(value).__name__})",
            hint="pass parsed JSON / Prometheus values, not strings",
        )
    v = float(value)
    if not math.isfinite(v) or v < 0:
        raise DistributionError(f"{name} must be a finite count >= 0, got {value!r}")
    return tidy_count(v)


def as_counts(values: Any, name: str) -> list[Count]:
    """A list of counts (see :func:`as_count`)."""
    array = getattr(sys.modules.get("numpy"), "ndarray", ())  # a numpy array exists only once numpy is imported
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, array)):
        raise DistributionError(f"{name} must be a list of counts, got {values!r}")
    return [as_count(v, f"{name}[{i}]") for i, v in enumerate(values)]


def counts_close(a: float, b: float) -> bool:
    """Whether two counts are equal up to float noise (Prometheus values are floats)."""
    return abs(float(a) - float(b)) <= _REL_TOL * max(1.0, abs(float(a)), abs(float(b)))


def format_count(x: float) -> str:
    """A count for an error message (10 significant digits)."""
    return f"{x:.10g}"


def position_counts(values: Any, name: str) -> list[Count]:
    """Per-position counts from a list (index = position) or a ``{position: count}`` dict."""
    if isinstance(values, Mapping):
        out: dict[int, Count] = {}
        for key, v in values.items():
            try:
                pos = int(key)
            except (TypeError, ValueError):
                raise DistributionError(
                    f"{name}: position label {key!r} is not an integer",
                    hint='positions are labelled "0".."K-1"',
                ) from None
            if pos < 0:
                raise DistributionError(f"{name}: position label {key!r} is negative")
            out[pos] = as_count(v, f"{name}[{key!r}]")
        size = max(out) + 1 if out else 0
        return [out.get(i, 0) for i in range(size)]
    return as_counts(values, name)


def fit_length(values: list[Count], size: int, name: str, what: str) -> list[Count]:
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
    import numpy as np

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
        k: draft length (draft tokens per verify step).
        num_verify_steps: request-steps that carried drafts.
        num_accepted_drafts: accepted draft tokens, bonus excluded.
        num_draft_tokens: drafted (proposed) tokens, if reported.
        per_position_accepted: ``k`` counts, steps that accepted position ``j``
            (``j = 1..k``); derived from ``histogram`` when only that is given.
        histogram: ``k + 1`` counts, steps that accepted ``j`` drafts; derived
            from ``per_position_accepted`` when only that is given (chain drafts).
        source: where the counts came from (a label chosen by the reader).
        field_names: how ``source`` names our fields (``num_verify_steps`` ->
            ``spec_verify_ct``, ...), so that errors speak the engine's language.
        most_drafts: the most drafts one verify step proposed, where the source shows
            it (the k the engine ran); a sum keeps the larger, a difference drops it.

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
    field_names: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    most_drafts: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        k = units.check_draft_len(self.k)
        names = {**{f: f for f in ("num_verify_steps", "num_accepted_drafts", "num_draft_tokens",
                                     "per_position_accepted", "histogram")},
                 **self.field_names}
        where = f"{self.source}: "
        steps = as_count(self.num_verify_steps, names["num_verify_steps"])
        acc = as_count(self.num_accepted_drafts, names["num_accepted_drafts"])
        drafted = None if self.num_draft_tokens is None else as_count(self.num_draft_tokens, names["num_draft_tokens"])
        if acc > k * steps * (1 + _REL_TOL):
            raise DistributionError(
                f"{where}{names['num_accepted_drafts']}={format_count(acc)} exceeds k*{names['num_verify_steps']}"
                f"={k}*{format_count(steps)}={format_count(k * steps)}",
                hint="a verify step accepts at most k drafts; is k right, and are both counts from the same snapshot?",
            )
        if drafted is not None and acc > drafted * (1 + _REL_TOL):
            raise DistributionError(
                f"{where}{names['num_accepted_drafts']}={format_count(acc)} exceeds {names['num_draft_tokens']}={format_count(drafted)}",
                hint="accepted draft tokens are a subset of drafted ones; were the counters read at different times?",
            )
        pos = None
        if self.per_position_accepted is not None:
            pos = as_counts(list(self.per_position_accepted), names["per_position_accepted"])
            if len(pos) != k:
                raise DistributionError(
                    f"{where}{names['per_position_accepted']} has {len(pos)} entries, expected k={k}"
                )
            _check_positions(pos, steps, acc, names, where)
        hist = None
        if self.histogram is not None:
            hist = as_counts(list(self.histogram), names["histogram"])
            if len(hist) != k + 1:
                raise DistributionError(f"{where}{names['histogram']} has {len(hist)} entries, expected k+1={k + 1}")
            total = float(sum(hist))
            if not counts_close(total, steps):
                raise DistributionError(
                    f"{where}{names['histogram']} sums to {format_count(total)} steps but "
                    f"{names['num_verify_steps']}={format_count(steps)}",
                    hint="the histogram has one entry per verify step; were both read from the same response?",
                )
            import numpy as np

            weighted = float(np.dot(np.arange(k + 1), hist))
            if not counts_close(weighted, acc):
                raise DistributionError(
                    f"{where}{names['histogram']} holds {format_count(weighted)} accepted drafts "
                    f"(sum of j*h[j]) but {names['num_accepted_drafts']}={format_count(acc)}",
                    hint="index j of the histogram is the number of accepted DRAFT tokens (bonus excluded)",
                )
            derived = _tail_sums(hist)
            if pos is None:
                pos = [tidy_count(v) for v in derived]
            elif not all(counts_close(a, b) for a, b in zip(pos, derived, strict=True)):
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
        """Accepted / drafted tokens ("draft acceptance rate"); None if drafted is unknown."""
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
        """``p_j = per_position[j] / steps`` (per-position acceptance rate)."""
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
        from distributions.acceptance import AcceptanceDistribution

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
            field_names=self.field_names if self.source == o.source else {},
            most_drafts=max((m for m in (self.most_drafts, o.most_drafts) if m is not None), default=None),
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
            field_names=self.field_names,
        )


def _check_positions(pos: list[Count], steps: Count, acc: Count, names: dict[str, str], where: str) -> None:
    label = names["per_position_accepted"]
    if pos and pos[0] > steps * (1 + _REL_TOL):
        raise DistributionError(
            f"{where}{label}: position 1 was accepted {format_count(pos[0])} times but there were only "
            f"{format_count(steps)} verify steps ({names['num_verify_steps']})",
            hint="each verify step accepts a given position at most once; were the counters read at different times?",
        )
    for j in range(1, len(pos)):
        if pos[j] > pos[j - 1] * (1 + _REL_TOL) + _REL_TOL:
            raise DistributionError(
                f"{where}{label} must be non-increasing, but position {j + 1} (0-based label \"{j}\") was "
                f"accepted {format_count(pos[j])} times, more than position {j} ({format_count(pos[j - 1])}): {pos}",
                hint="a chain draft accepts position j only after accepting every earlier position; "
                "were series from different snapshots or servers mixed, or is this a tree draft?",
            )
    total = float(sum(pos))
    if not counts_close(total, acc):
        raise DistributionError(
            f"{where}{label} sum to {format_count(total)} but {names['num_accepted_drafts']}={format_count(acc)}",
            hint="every accepted draft token is counted at exactly one position; sum every label series "
            "of both counters from the same snapshot",
        )


# ---------------------------------------------------------------------------- generic
def from_histogram(histogram: Sequence[Count], *, k: int | None = None,
                   num_draft_tokens: Count | None = None, source: str = "histogram",
                   field_names: Mapping[str, str] | None = None) -> AcceptanceCounts:
    """Counts from a histogram indexed by accepted draft tokens (padded to ``k + 1``)."""
    hist = as_counts(histogram, f"{source}: histogram")
    if k is None:
        k = max(len(hist) - 1, 1)
    k = units.check_draft_len(k)
    hist = fit_length(hist, k + 1, f"{source}: histogram", f"k+1={k + 1}")

    import numpy as np
    steps = tidy_count(float(sum(hist)))
    acc = tidy_count(float(np.dot(np.arange(k + 1), hist)))
    return AcceptanceCounts(k=k, num_verify_steps=steps, num_accepted_drafts=acc,
                            num_draft_tokens=num_draft_tokens, histogram=tuple(hist), source=source,
                            field_names=dict(field_names or {}))


def split_steps_by_draft_len(accepted: Sequence[int], drafted: Sequence[int], *, k: int,
                             output_tokens: int | None = None, max_tokens: int | None = None,
                             first_position: int = 1, source: str = "steps") -> dict[int, AcceptanceCounts]:
    """One request's verify steps split into one histogram per draft length.

    ``accepted[i]`` / ``drafted[i]`` are the accepted and proposed drafts of step ``i``
    (as a server that reports per-step lengths gives them). A step proposes ``k`` drafts
    unless the request's end caps it: the step that begins at output position ``s`` may
    propose only ``min(k, max_tokens - s)`` (the budget) or ``min(k, output_tokens - s)``
    (an engine that knows where the answer stops), and such a step is still a step of
    ``k``. Any other ``d < k`` is a step drafted at length ``d`` (adaptive speculation,
    a per-batch-size draft length) and goes into ``d``'s histogram. Steps that proposed
    nothing are not verify steps. ``s`` starts at ``first_position`` (1: the prefill
    emits the first token) and advances by ``accepted + 1`` per step.

    Raises:
        DistributionError: arrays of different lengths, a step that accepts more than it
            drafted, or drafts more than ``k``.
    """
    k = units.check_draft_len(k)
    acc = as_counts(accepted, f"{source}: accepted per step")
    dra = as_counts(drafted, f"{source}: drafted per step")
    if len(acc) != len(dra):
        raise DistributionError(f"{source}: {len(acc)} accepted counts but {len(dra)} drafted counts per step",
                                hint="the two per-step arrays come from one request and pair up step by step")
    hists: dict[int, list[int]] = {}
    pos = int(first_position)
    for i, (a, d) in enumerate(zip(acc, dra, strict=True)):
        a, d = int(a), int(d)
        if d > k or a > d:
            raise DistributionError(f"{source}: step {i} accepted {a} of {d} drafts with k={k}",
                                    hint="accepted <= drafted <= k must hold for every step")
        if d > 0:
            caps = {k} | {min(k, end - pos) for end in (max_tokens, output_tokens) if end is not None}
            length = k if d in caps else d
            hists.setdefault(length, [0] * (length + 1))[a] += 1
        pos += a + 1
    return {d: from_histogram(h, k=d, source=source) for d, h in sorted(hists.items())}


def delta(before: Any, after: Any, *, name: str = "counter", ignore: Sequence[str] = ()) -> Any:
    """``after - before`` for two snapshots of cumulative counts.

    Works on numbers, lists (element-wise; the shorter one is padded with
    zeros, since histograms and label sets grow) and dicts (key-wise; a
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
    b_val = as_count(before, f"{path} (before)")
    a_val = as_count(after, f"{path} (after)")
    if a_val < b_val and not counts_close(a_val, b_val):
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
