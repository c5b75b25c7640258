"""Replay: one target generation plus one teacher-forced draft pass gives every k.

1. The target generates each request on its own (greedy or sampled; KV cache,
   batched like :mod:`.live`).
2. The draft runs once, teacher-forced, over prompt + output, giving at every
   output position ``j`` its distribution ``q_j`` given the target's prefix
   ``y_<j``.

**Greedy** (temperature 0): at each step boundary of live decoding the draft's
context equals the target's prefix throughout an accepted run, so the draft's
proposal at position ``j`` is ``argmax q_j`` and it is accepted iff it equals
``y_j``. The step sequence for any ``k`` follows from this per-position
agreement (:func:`.accounting.greedy_accept_counts`): replay is **exact** and
equals live decoding step for step (tests prove it on tiny models).

**Sampling**: the per-position acceptance probability ``beta_j = sum_x min(p_j(x),
q_j(x))`` (``p`` the target's, ``q`` the draft's, both warped the same way) is
accumulated along the target's sampled trajectory into expected counts
(:func:`.accounting.expected_step_counts`). This is an **estimate**: records
carry ``estimate: true`` and ``mode: replay``.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from golden_al.reference.accounting import (
    StepCounts,
    counts_from_accept_counts,
    expected_step_counts,
    first_step,
    greedy_accept_counts,
)
from golden_al.reference.batch_cache import BatchedKV, left_pad
from golden_al.reference.live import (
    ProgressFn,
    admission_group,
    iter_generate,
    prefill_budget,
    target_generate_step,
    token_list,
)
from golden_al.reference.prefix import SharedPrefix
from golden_al.reference.sampling import SamplingParams, sample, warp

__all__ = ["ReplayOutput", "TargetOutput", "draft_agreement", "iter_replay", "iter_target_generate"]


@dataclass
class TargetOutput:
    """The target's own generation of one request."""

    index: int
    prompt_token_ids: list[int]
    output_token_ids: list[int] = field(default_factory=list)
    finish_reason: str = ""
    wall_s: float = 0.0
    p: list[torch.Tensor] | None = None
    """Warped target distributions per output position (sampling only)."""


@dataclass
class ReplayOutput:
    """One replayed request: the target's output and the counts at each ``k``."""

    index: int
    prompt_token_ids: list[int]
    output_token_ids: list[int]
    finish_reason: str
    estimate: bool
    """True for sampling (expected counts from sum-of-min(p, q)); False for exact greedy."""
    agreement: list[float]
    """Per output position: 1/0 draft-target agreement (greedy) or ``beta_j`` (sampling)."""
    counts: dict[int, StepCounts]
    wall_s: float = 0.0
    trajectory_check: bool | None = None
    """With a speculative trajectory at ``k0``: True when replay's steps at ``k0`` equal the
    live steps that produced the output (an internal consistency check); None otherwise."""

    def accepted(self, k: int) -> list[int] | None:
        """``n`` per verify step at draft length ``k`` (greedy only)."""
        c = self.counts[k]
        return None if c.accept_lengths is None else [L - 1 for L in c.accept_lengths]


def iter_target_generate(
    target: Any,
    prompts: Sequence[Sequence[int]],
    *,
    sampling: SamplingParams,
    eos_token_ids: Sequence[int],
    generator: torch.Generator,
    batch_size: int = 8,
    keep_distributions: bool = False,
    indices: Sequence[int] | None = None,
    progress: ProgressFn | None = None,
    shared_prefix: int | SharedPrefix | None = None,
) -> Iterator[TargetOutput]:
    """Plain autoregressive generation by the target alone (KV cache, continuous batching).

    A finished request's row goes to the next prompt at once (prefilled, a few prompts
    together, and appended, :meth:`.BatchedKV.extend`). ``progress``: output tokens (:data:`.live.ProgressFn`).
    ``shared_prefix``: as in :func:`.live.iter_generate` (or a :class:`.SharedPrefix` to reuse).

    Kept whole: the continuous-batching loop (admit, decode one token, retire) shares one step's batch state
    and KV cache.
    """
    prefix = shared_prefix if isinstance(shared_prefix, SharedPrefix) else SharedPrefix(prompts, shared_prefix)
    eos = {int(e) for e in eos_token_ids}
    idx = list(range(len(prompts))) if indices is None else list(indices)
    queue = deque((idx[i], [int(t) for t in prompts[i]]) for i in range(len(prompts)))
    M = sampling.max_tokens
    B = max(1, int(batch_size))
    if progress is not None:
        progress(0, total=len(prompts) * M)

    def advance(n: int) -> None:
        if progress is not None and n:
            progress(n)

    with torch.inference_mode():
        kv = BatchedKV(target, 0)
        rows: list[TargetOutput] = []
        started: list[float] = []

        def commit(row_reqs: list[TargetOutput], toks: list[int], lg: torch.Tensor) -> None:
            for row, r in enumerate(row_reqs):
                r.output_token_ids.append(toks[row])
                if r.p is not None:
                    r.p.append(warp(lg[row], sampling).float())
                if toks[row] in eos:
                    r.finish_reason = "stop"
                elif len(r.output_token_ids) >= M:
                    r.finish_reason = "length"
            advance(len(row_reqs))

        while True:
            # admit: prefill the next prompts (a few at a time) and append them to the batch
            while queue and len(rows) < B:
                group = admission_group(queue, B - len(rows), prefill_budget(kv.device), len(prefix))
                new = [TargetOutput(index=i, prompt_token_ids=p, p=[] if keep_distributions else None)
                       for i, p in group]
                one = prefix.cache(target, len(new))
                ids, valid = left_pad([prefix.rest(r.prompt_token_ids) for r in new], device=one.device)
                lg = one.forward(ids, valid, logits_to_keep=1)[:, -1]
                commit(new, _choose_tokens(lg, sampling, generator), lg)
                kv.extend(one)
                rows.extend(new)
                now = time.perf_counter()
                started.extend(now for _ in new)
            keep = [row for row, r in enumerate(rows) if not r.finish_reason]
            if len(keep) < len(rows):
                now = time.perf_counter()
                for row, r in enumerate(rows):
                    if r.finish_reason:
                        r.wall_s = now - started[row]
                        advance(M - len(r.output_token_ids))
                        yield r
                if keep:
                    kv.select(torch.tensor(keep, dtype=torch.long, device=kv.device))
                else:
                    kv = BatchedKV(target, 0)
                rows = [rows[row] for row in keep]
                started = [started[row] for row in keep]
                if queue:
                    continue  # refill the freed rows before the next step
            if not rows:
                return
            last = [r.output_token_ids[-1] for r in rows]
            tok_t, logits = target_generate_step(kv, last, sampling, generator)
            commit(rows, token_list(tok_t), logits)
            kv.maybe_compact()


def _choose_tokens(logits: torch.Tensor, sampling: SamplingParams, generator: torch.Generator) -> list[int]:
    tok = logits.argmax(dim=-1) if sampling.greedy else sample(warp(logits, sampling), generator)
    return token_list(tok)


def draft_agreement(draft: Any, out: TargetOutput, sampling: SamplingParams,
                    prefix: SharedPrefix | None = None) -> list[float]:
    """Teacher-forced draft pass over prompt + output: agreement (greedy) or ``beta_j`` per position.

    ``prefix``: the run's shared prompt prefix; the pass starts from its cached keys and values.
    """
    y = out.output_token_ids
    with torch.inference_mode():
        if prefix is None:
            kv, seq = BatchedKV(draft, 1), out.prompt_token_ids + y[:-1]
        else:
            kv, seq = prefix.cache(draft, 1), prefix.rest(out.prompt_token_ids) + y[:-1]
        ids = torch.tensor([seq], dtype=torch.long, device=kv.device)
        logits = kv.forward(ids, torch.ones_like(ids, dtype=torch.bool), logits_to_keep=len(y))[0]
        if sampling.greedy:
            guess = logits.argmax(dim=-1)
            return [float(v) for v in (guess == torch.tensor(y, device=guess.device)).tolist()]
        assert out.p is not None, "sampling replay needs the target's distributions"
        q = warp(logits, sampling).float()
        p = torch.stack(out.p)
        return [float(v) for v in torch.minimum(p, q).sum(dim=-1).clamp(max=1.0).tolist()]


def iter_replay(
    target: Any,
    draft: Any,
    prompts: Sequence[Sequence[int]],
    *,
    draft_lens: Sequence[int],
    sampling: SamplingParams,
    eos_token_ids: Sequence[int],
    generator: torch.Generator,
    batch_size: int = 8,
    prefill_emits_token: bool = True,
    indices: Sequence[int] | None = None,
    progress: ProgressFn | None = None,
    trajectory_draft_len: int | None = None,
    shared_prefix: int | None = None,
) -> Iterator[ReplayOutput]:
    """Replay ``prompts`` once and yield each request with its counts at every ``k`` in ``draft_lens``.

    ``trajectory_draft_len`` (greedy only): produce the target's greedy output by live
    speculative decoding at that draft length instead of by the target alone. The
    output is the same (greedy speculative decoding is lossless) and it is faster when
    acceptance is high; replay's steps at that draft length must then equal the live
    steps, which is checked (``ReplayOutput.trajectory_check``).
    ``shared_prefix``: as in :func:`.live.iter_generate`; every pass starts from the same
    prefix computation, so replay stays exact with live decoding.
    """
    ks = sorted({int(k) for k in draft_lens})
    if not ks or ks[0] < 1:
        raise ValueError(f"draft lengths must be >= 1, got {list(draft_lens)}")
    if trajectory_draft_len is not None and not sampling.greedy:
        raise ValueError("a speculative trajectory is for greedy replay only (sampled replay needs p at every position)")
    start = first_step(prefill_emits_token)
    prefix = SharedPrefix(prompts, shared_prefix)
    live_accepted: dict[int, list[int]] = {}
    if trajectory_draft_len is None:
        outs: Iterator[TargetOutput] = iter_target_generate(
            target, prompts, sampling=sampling, eos_token_ids=eos_token_ids, generator=generator,
            batch_size=batch_size, keep_distributions=not sampling.greedy, indices=indices,
            progress=progress, shared_prefix=prefix)
    else:
        def _spec() -> Iterator[TargetOutput]:
            for o in iter_generate(target, draft, prompts, draft_len=trajectory_draft_len, sampling=sampling,
                                   eos_token_ids=eos_token_ids, generator=generator, batch_size=batch_size,
                                   prefill_emits_token=prefill_emits_token, indices=indices,
                                   progress=progress, shared_prefix=prefix):
                live_accepted[o.index] = o.accepted
                yield TargetOutput(index=o.index, prompt_token_ids=o.prompt_token_ids,
                                   output_token_ids=o.output_token_ids, finish_reason=o.finish_reason,
                                   wall_s=o.wall_s)
        outs = _spec()
    for out in outs:
        t0 = time.perf_counter()
        agree = draft_agreement(draft, out, sampling, prefix)
        out.p = None  # free the distributions
        if sampling.greedy:
            flags = [a > 0.5 for a in agree]
            counts = {k: counts_from_accept_counts(greedy_accept_counts(flags, k, start=start), k) for k in ks}
        else:
            counts = {k: expected_step_counts(agree, k, start=start) for k in ks}
        check: bool | None = None
        if trajectory_draft_len is not None:
            k0 = int(trajectory_draft_len)
            derived = greedy_accept_counts([a > 0.5 for a in agree], k0, start=start)
            check = derived == live_accepted.pop(out.index)
        yield ReplayOutput(
            index=out.index,
            prompt_token_ids=out.prompt_token_ids,
            output_token_ids=out.output_token_ids,
            finish_reason=out.finish_reason,
            estimate=not sampling.greedy,
            agreement=agree,
            counts=counts,
            wall_s=out.wall_s + time.perf_counter() - t0,
            trajectory_check=check,
        )
