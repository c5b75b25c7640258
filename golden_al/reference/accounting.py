"""What one verify step counts: the rules live decoding and replay share.

Torch-free, so the rules can be tested and reused without a model.

**Definitions** (one request; output tokens ``y_0 .. y_{N-1}``, 0-based):

* The output ends at the first end-of-sequence token (inclusive) or at the token
  budget ``M`` (``max_tokens``), whichever comes first; ``N <= M``.
* ``first_step``: where verify steps begin. With ``prefill_emits_token=True`` (the
  default, as vLLM and SGLang do) ``y_0`` comes from the target's prefill, is not a
  verify step, and steps begin at position 1. With ``False`` (transformers'
  assisted generation) the first verify step already drafts ``y_0``.
* A verify step that begins at position ``s`` proposes
  ``k_eff = min(k, M - s)`` drafts: **drafts beyond the budget are not proposed**.
* It accepts ``n`` drafts: the leading drafts the target accepts, counted up to
  and including an accepted end-of-sequence token (drafts after it are dropped,
  neither accepted nor rejected). ``0 <= n <= k_eff``. The recorded accept length
  is ``L = n + 1``.
* The step emits ``n + 1`` tokens (the accepted drafts plus the target's
  correction or bonus token) **except on the last step of a request that ends on
  an accepted draft** (an accepted end-of-sequence draft, or ``n = k_eff = M - s``):
  no bonus follows, so it emits ``n`` tokens.
* ``AL = 1 + sum(n) / steps`` (:func:`distributions.units.al_from_counts`) counts
  the bonus on every step. ``generated tokens / steps`` (what transformers'
  ``num_matches + 1`` sums to) differs from it only on such a final step.

In terms of the per-position agreement of a greedy draft with the target's own
output (``agree[j]``: the draft, given ``y_<j``, predicts ``y_j``), a step that
begins at ``s`` accepts ``n = min(run(s), k, N - s)`` where ``run(s)`` is the
number of consecutive agreements from ``s``; the next step begins at
``s + n + 1``. ``N - s <= M - s`` caps both endings at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "StepCounts",
    "counts_from_accept_counts",
    "expected_step_counts",
    "first_step",
    "greedy_accept_counts",
]


def first_step(prefill_emits_token: bool) -> int:
    """Output position where verify steps begin (1 when the prefill emits ``y_0``)."""
    return 1 if prefill_emits_token else 0


@dataclass(frozen=True)
class StepCounts:
    """Counts of one request at one draft length ``k`` (floats when expectations)."""

    k: int
    num_verify_steps: float
    num_accepted_drafts: float
    histogram: list[float]
    """``k + 1`` entries: steps that accepted ``n = 0..k`` drafts."""
    per_position_accepted: list[float]
    """``k`` entries: steps that accepted draft position ``j + 1`` (i.e. ``n > j``)."""
    accept_lengths: list[int] | None = None
    """``L = n + 1`` per verify step, in order (observed counts only)."""


def counts_from_accept_counts(accepted: Sequence[int], k: int) -> StepCounts:
    """Aggregate per-step accepted-draft counts ``n`` (``0 <= n <= k``) of one request."""
    hist = np.zeros(k + 1, dtype=np.int64)
    for n in accepted:
        if not 0 <= n <= k:
            raise ValueError(f"accepted count {n} outside [0, {k}]")
        hist[n] += 1
    # ints (observed counts) stored in the float-typed fields that expectations also use
    counts: list[float] = [int(v) for v in hist]
    pos: list[float] = [int(hist[j + 1:].sum()) for j in range(k)]
    return StepCounts(
        k=k,
        num_verify_steps=len(accepted),
        num_accepted_drafts=int(sum(accepted)),
        histogram=counts,
        per_position_accepted=pos,
        accept_lengths=[int(n) + 1 for n in accepted],
    )


def greedy_accept_counts(agree: Sequence[bool], k: int, *, start: int = 1) -> list[int]:
    """Accepted drafts per verify step for a greedy draft, from per-position agreement.

    Args:
        agree: ``agree[j]`` is True when the draft, given the target's prefix ``y_<j``,
            predicts ``y_j``; ``len(agree)`` is the output length ``N``.
        k: draft length.
        start: output position of the first verify step (:func:`first_step`).

    Returns:
        ``n`` per verify step, in order (see the module docstring for the rules).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    N = len(agree)
    # run[j]: consecutive agreements starting at j
    run = [0] * (N + 1)
    for j in range(N - 1, -1, -1):
        run[j] = run[j + 1] + 1 if agree[j] else 0
    out: list[int] = []
    s = start
    while s < N:
        n = min(run[s], k, N - s)
        out.append(n)
        s += n + 1
    return out


def expected_step_counts(beta: Sequence[float], k: int, *, start: int = 1) -> StepCounts:
    """Expected counts along one trajectory when position ``j`` is accepted w.p. ``beta[j]``.

    ``beta[j] = sum_x min(p_j(x), q_j(x))`` is the probability that standard
    rejection sampling accepts a draft at position ``j`` given the prefix
    ``y_<j`` (Leviathan et al. 2023, eq. 1; ``p`` target, ``q`` draft, both after
    the same temperature/top-p warping). Treating positions as independent along
    the target's sampled trajectory makes this an **estimate**: the step structure
    is averaged over (forward recursion on the probability that a step begins at
    ``s``), the trajectory is not. With 0/1 ``beta`` it equals the greedy walk of
    :func:`greedy_accept_counts` exactly.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    b = np.clip(np.asarray(beta, dtype=np.float64), 0.0, 1.0)
    N = b.size
    visit = np.zeros(N + k + 2)
    if start < N:
        visit[start] = 1.0
    hist = np.zeros(k + 1)
    pos = np.zeros(k)
    steps = 0.0
    accepted = 0.0
    for s in range(start, N):
        v = visit[s]
        if v == 0.0:
            continue
        steps += v
        cap = min(k, N - s)
        reach = 1.0  # P(n >= i)
        for i in range(cap + 1):
            p_i = reach * (1.0 - b[s + i]) if i < cap else reach  # P(n = i)
            if p_i:
                hist[i] += v * p_i
                accepted += v * p_i * i
                visit[s + i + 1] += v * p_i
            if i < cap:
                reach *= b[s + i]
                pos[i] += v * reach
    return StepCounts(
        k=k,
        num_verify_steps=float(steps),
        num_accepted_drafts=float(accepted),
        histogram=[float(x) for x in hist],
        per_position_accepted=[float(x) for x in pos],
        accept_lengths=None,
    )
