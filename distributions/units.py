"""The one home of every acceptance-length formula in golden-al.

Conventions (shared by every engine golden-al knows; how each engine spells ``k``
and its knobs lives in that engine's profile, ``golden_al/engines/``):

* ``k`` is the draft length: draft tokens proposed per verify step.
* ``L`` is the number of tokens one verify step emits for one request:
  accepted drafts + 1 bonus token, so ``1 <= L <= k + 1``.
* **AL** (acceptance length) is the mean of ``L``. It always includes the bonus
  token: ``AL = 1 + accepted_drafts / verify_steps``.
* The acceptance *rate* is ``(AL - 1) / k`` (the mean draft acceptance rate).
* Accepted draft tokens per step, bonus excluded, is ``AL - 1``
  (:func:`drafts_from_al`).
* Unconditional per-position rates ``p_j = P(L - 1 >= j)`` for ``j = 1..k``
  (per-position accepted counts divided by verify steps); conditional rates
  ``c_j = p_j / p_{j-1}`` with ``p_0 = 1``.

Nothing else in the code base may re-derive these; import them from here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral, Real
from typing import TYPE_CHECKING

from distributions.errors import DistributionError

if TYPE_CHECKING:  # numpy is imported where arrays are made: the scalar formulas need none (issue 52)
    import numpy as np
    from numpy.typing import ArrayLike, NDArray

__all__ = [
    "acceptance_rate_from_al",
    "al_curve_from_conditional",
    "al_curve_from_unconditional",
    "al_from_acceptance_rate",
    "al_from_counts",
    "al_from_drafts",
    "al_from_pmf",
    "check_al",
    "check_draft_len",
    "check_draft_lens",
    "conditional_to_unconditional",
    "drafts_from_al",
    "format_number",
    "min_variance_unconditional_rates",
    "per_request_mean_al",
    "pmf_from_unconditional",
    "unconditional_from_pmf",
    "unconditional_to_conditional",
]

#: Relative tolerance used when checking that probabilities sum to one.
_PMF_ATOL = 1e-9


def check_draft_len(k: int) -> int:
    """Return ``k`` if it is a valid draft length (an int >= 1), else raise."""
    if isinstance(k, bool) or not isinstance(k, Integral) or k < 1:
        raise DistributionError(
            f"draft length k must be an integer >= 1, got {k!r}",
            hint="k is the number of draft tokens per verify step",
        )
    return int(k)


def check_al(al: float, k: int) -> float:
    """Return ``al`` if ``1 <= al <= k + 1`` (and finite), else raise."""
    k = check_draft_len(k)
    if not isinstance(al, Real) or not math.isfinite(al):
        raise DistributionError(f"AL must be a finite number, got {al!r}")
    if not (1.0 <= float(al) <= k + 1):
        raise DistributionError(
            f"AL {al:g} is outside [1, {k + 1}] for draft length k={k}",
            hint="AL counts the bonus token, so it ranges from 1 (nothing accepted) to k+1",
        )
    return float(al)


def al_from_counts(num_accepted_drafts: float, num_verify_steps: float) -> float:
    """AL = 1 + accepted draft tokens / verify steps.

    Both counts exclude the bonus token.

    Raises:
        DistributionError: if there are no verify steps (AL is undefined, not 0
            or 1) or a count is negative.
    """
    if num_verify_steps is None or num_accepted_drafts is None:
        raise DistributionError("AL needs both accepted-draft and verify-step counts")
    if num_verify_steps < 0 or num_accepted_drafts < 0:
        raise DistributionError(
            f"counts must be >= 0, got accepted={num_accepted_drafts}, steps={num_verify_steps}"
        )
    if num_verify_steps == 0:
        raise DistributionError(
            "AL is undefined: zero verify steps were observed",
            hint="no request reached a decode step with drafts; send more or longer requests",
        )
    return 1.0 + float(num_accepted_drafts) / float(num_verify_steps)


def per_request_mean_al(accepted: Sequence[float], steps: Sequence[float]) -> float | None:
    """The unweighted mean of the requests' own ALs, ``mean(1 + accepted_i / steps_i)`` over the requests
    with a verify step (None when none has one). :func:`al_from_counts` of the totals weights each request
    by its steps; this one weights every request alike, as a per-request average of an engine does."""
    own = [1.0 + float(a) / float(s) for a, s in zip(accepted, steps, strict=True) if float(s) > 0]
    return sum(own) / len(own) if own else None


def acceptance_rate_from_al(al: float, k: int) -> float:
    """Mean draft acceptance rate ``(AL - 1) / k`` ."""
    al = check_al(al, k)
    return (al - 1.0) / k


def al_from_acceptance_rate(rate: float, k: int) -> float:
    """Inverse of :func:`acceptance_rate_from_al`: ``AL = 1 + k * rate``."""
    k = check_draft_len(k)
    if not (0.0 <= rate <= 1.0):
        raise DistributionError(f"acceptance rate must be in [0, 1], got {rate!r}")
    return 1.0 + k * float(rate)


def drafts_from_al(al: float) -> float:
    """Accepted draft tokens per step (bonus excluded) for a target AL: ``AL - 1``.

    Engines whose forcing knob counts draft tokens only take this value. The result is
    rounded to 12 significant decimals so that ``4.05`` gives ``3.05`` rather
    than ``3.0499999999999998``.
    """
    if not math.isfinite(al) or al < 1.0:
        raise DistributionError(f"AL must be >= 1, got {al!r}")
    return round(float(al) - 1.0, 12)


def al_from_drafts(forced: float) -> float:
    """Inverse of :func:`drafts_from_al`: ``AL = drafts + 1``."""
    if not math.isfinite(forced) or forced < 0.0:
        raise DistributionError(f"forced accepted tokens must be >= 0, got {forced!r}")
    return round(float(forced) + 1.0, 12)


def _as_rates(rates: ArrayLike, name: str) -> NDArray[np.float64]:
    import numpy as np
    arr = np.asarray(rates, dtype=np.float64)
    if arr.ndim != 1 or arr.size < 1:
        raise DistributionError(f"{name} must be a non-empty 1-D sequence, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < -_PMF_ATOL) or np.any(arr > 1 + _PMF_ATOL):
        raise DistributionError(f"{name} must lie in [0, 1], got {arr.tolist()}")
    return np.clip(arr, 0.0, 1.0)


def _unconditional_rates(p: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Validated unconditional rates and their predecessors ``p_{j-1}`` (``p_0 = 1``)."""
    import numpy as np
    arr = _as_rates(p, "unconditional rates")
    prev = np.concatenate(([1.0], arr[:-1]))
    if np.any(arr > prev + 1e-12):
        raise DistributionError(
            f"unconditional rates must be non-increasing, got {arr.tolist()}",
            hint="p_j = P(accepted drafts >= j) cannot grow with j",
        )
    return arr, prev


def unconditional_to_conditional(p: ArrayLike) -> NDArray[np.float64]:
    """Conditional rates ``c_j = p_j / p_{j-1}`` (``p_0 = 1``; ``c_j = 0`` once ``p_{j-1} = 0``).

    Same convention as vLLM's ``unconditional_to_conditional_rates``
    (``vllm/v1/spec_decode/utils.py``, 0.33.0).

    Raises:
        DistributionError: if ``p`` is not non-increasing.
    """
    import numpy as np
    arr, prev = _unconditional_rates(p)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(prev > 0.0, arr / np.where(prev > 0.0, prev, 1.0), 0.0)
    return np.clip(c, 0.0, 1.0)


def conditional_to_unconditional(c: ArrayLike) -> NDArray[np.float64]:
    """Unconditional rates ``p_j = prod_{i<=j} c_i`` from conditional rates."""
    import numpy as np
    return np.asarray(np.cumprod(_as_rates(c, "conditional rates")), dtype=np.float64)


def pmf_from_unconditional(p: ArrayLike) -> NDArray[np.float64]:
    """pmf of ``L`` (``pmf[i] = P(L = i + 1)``, length k+1) from unconditional rates."""
    import numpy as np
    arr, _ = _unconditional_rates(p)
    sf = np.concatenate(([1.0], np.minimum.accumulate(arr), [0.0]))
    return np.clip(sf[:-1] - sf[1:], 0.0, 1.0)


def unconditional_from_pmf(pmf: ArrayLike) -> NDArray[np.float64]:
    """``p_j = P(L - 1 >= j) = sum_{i >= j} pmf[i]`` for ``j = 1..k``."""
    import numpy as np
    arr = np.asarray(pmf, dtype=np.float64)
    tail = np.cumsum(arr[::-1])[::-1]
    return np.clip(tail[1:], 0.0, 1.0)


def al_from_pmf(pmf: ArrayLike) -> float:
    """Mean of ``L`` for ``pmf[i] = P(L = i + 1)``."""
    import numpy as np
    arr = np.asarray(pmf, dtype=np.float64)
    return float(np.dot(np.arange(1, arr.size + 1), arr))


def min_variance_unconditional_rates(al: float, k: int) -> NDArray[np.float64]:
    """vLLM's / ATOM's "minimum-variance schedule" for a target AL.

    With ``d = AL - 1`` and ``m = floor(d)``: ``[1.0] * m + [d - m] + [0.0] * ...``
    truncated to ``k`` entries (vLLM ``SpeculativeConfig._acceptance_length_to_rates``,
    ``vllm/config/speculative.py`` 0.33.0; ATOM ``acceptance_length_to_rates``,
    ``atom/model_ops/rejection_sampler.py`` HEAD ffdf3bb5d). The resulting L takes
    only the two values ``floor(AL)`` and ``floor(AL) + 1``.
    """
    import numpy as np
    al = check_al(al, k)
    d = al - 1.0
    m = math.floor(d)
    rates = [1.0] * m + [d - m] + [0.0] * max(0, k - m - 1)
    return np.asarray(rates[:k], dtype=np.float64)


def check_draft_lens(ks: ArrayLike) -> NDArray[np.int64]:
    """Return ``ks`` as a 1-D int array if every entry is a valid draft length, else raise."""
    import numpy as np
    arr = np.atleast_1d(np.asarray(ks))
    if arr.ndim != 1 or arr.size == 0:
        raise DistributionError(f"draft lengths must be a non-empty 1-D list, got {ks!r}")
    if arr.dtype.kind not in "iuf" or np.any(arr != np.floor(arr)) or np.any(arr < 1):
        raise DistributionError(
            f"draft lengths must be integers >= 1, got {np.asarray(ks).tolist()!r}",
            hint="k is the number of draft tokens per verify step",
        )
    return arr.astype(np.int64)


def al_curve_from_unconditional(p: ArrayLike, ks: ArrayLike) -> NDArray[np.float64]:
    """AL at each draft length in ``ks`` for a chain draft with unconditional rates ``p``.

    A chain draft proposes the same first ``k`` tokens whatever ``k`` is, so
    ``AL(k) = 1 + sum_{j<=k} p_j`` with ``p_j = P(L - 1 >= j)`` (the mean of a
    variable on ``{0..k}`` is the sum of its tail probabilities). ``p`` must hold
    at least ``max(ks)`` rates.
    """
    import numpy as np
    arr, _ = _unconditional_rates(p)
    k = check_draft_lens(ks)
    if int(k.max()) > arr.size:
        raise DistributionError(
            f"the profile has {arr.size} rates, too few for draft length k={int(k.max())}",
            hint="a profile c_1..c_K gives AL(k) only for k <= K",
        )
    cum = np.concatenate(([0.0], np.cumsum(arr)))
    return 1.0 + cum[k]


def al_curve_from_conditional(c: ArrayLike, ks: ArrayLike) -> NDArray[np.float64]:
    """AL at each draft length in ``ks`` from a conditional profile ``c_1..c_K``.

    ``AL(k) = 1 + sum_{j<=k} prod_{i<=j} c_i`` (chain drafts). This is THE formula
    for a curve from a profile; the fit, the parametric families and every caller
    use it rather than re-deriving it.
    """
    return al_curve_from_unconditional(conditional_to_unconditional(c), ks)


def format_number(x: float) -> str:
    """A number as the harnesses write it into env vars, flags and YAML (``f"{x:g}"`` style).

    Float noise from arithmetic is removed by rounding to 10 decimals first, and up
    to 15 significant digits are kept: ``4.05 -> "4.05"``, ``4.0 -> "4"``,
    ``4.05 - 1 -> "3.05"`` (not ``3.0499999999999998``), ``10.400390625`` unchanged.
    """
    if not math.isfinite(x):
        raise DistributionError(f"cannot format non-finite value {x!r}")
    text = f"{round(float(x), 10):.15g}"
    return "0" if text == "-0" else text
