"""Live chain speculative decoding, batched over prompts.

Each verify step, for every active request: the draft proposes ``gamma_eff =
min(k, tokens left)`` tokens autoregressively (its KV cache holds everything
accepted so far), the target scores the pending token plus the ``k`` drafts in
one forward pass (its KV cache likewise), and greedy verification or standard
rejection sampling (:mod:`.sampling`) picks ``n`` accepted drafts and the next
token ``t``. Rejected drafts are dropped from both caches (:class:`.BatchedKV`);
rows finish independently (end of sequence or token budget) and leave the batch.
The counting rules, including the last step of a request, are those of
:mod:`.accounting`.

Requests are processed in static batches of ``batch_size`` in the order given;
within a batch, rows advance by different amounts (ragged acceptance).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from golden_al.engines.offline_reference.accounting import StepCounts, counts_from_accept_counts
from golden_al.engines.offline_reference.batch_cache import BatchedKV, left_pad
from golden_al.engines.offline_reference.sampling import (
    SamplingParams,
    greedy_verification,
    sample,
    speculative_sampling,
    warp,
)

__all__ = ["ProgressFn", "RequestOutput", "iter_generate", "target_generate_step"]

ProgressFn = Callable[..., None]
"""``progress(advance=1, *, total=None, description=None)`` (see golden_al.cli._common)."""


@dataclass
class RequestOutput:
    """One finished request of live speculative decoding."""

    index: int
    """Position of the prompt in the input list."""
    prompt_token_ids: list[int]
    draft_len: int
    output_token_ids: list[int] = field(default_factory=list)
    accepted: list[int] = field(default_factory=list)
    """``n``, accepted drafts, per verify step in order."""
    drafted: list[int] = field(default_factory=list)
    """``gamma_eff``, drafts proposed, per verify step."""
    finish_reason: str = ""
    """``stop`` (an end-of-sequence token) or ``length`` (the token budget)."""
    wall_s: float = 0.0
    """Seconds from the start of its batch until it finished."""

    @property
    def accept_lengths(self) -> list[int]:
        """``L = n + 1`` per verify step (the bonus token counted, units.al_from_counts)."""
        return [n + 1 for n in self.accepted]

    def counts(self) -> StepCounts:
        """Histogram, per-position counts and totals of this request."""
        return counts_from_accept_counts(self.accepted, self.draft_len)


def _choose(logits: torch.Tensor, sampling: SamplingParams, generator: torch.Generator) -> torch.Tensor:
    """The target's own next token from `(B, vocab)` logits."""
    if sampling.greedy:
        return logits.argmax(dim=-1)
    return sample(warp(logits, sampling), generator)


def _tokens(t: torch.Tensor) -> list[int]:
    return [int(v) for v in t.tolist()]


def _prefill(kv: BatchedKV, rows: list[list[int]]) -> torch.Tensor | None:
    """Feed left-padded rows; returns the last position's logits `(B, vocab)` (None if empty)."""
    if not any(rows):
        return None
    ids, valid = left_pad(rows, device=kv.device)
    return kv.forward(ids, valid, logits_to_keep=1)[:, -1]


def target_generate_step(
    target_kv: BatchedKV, last: list[int], sampling: SamplingParams, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """One plain autoregressive target step: returns (tokens `(B,)`, logits `(B, vocab)`)."""
    ids = torch.tensor(last, dtype=torch.long, device=target_kv.device)[:, None]
    logits = target_kv.forward(ids, torch.ones_like(ids, dtype=torch.bool))[:, -1]
    return _choose(logits, sampling, generator), logits


def iter_generate(
    target: Any,
    draft: Any,
    prompts: Sequence[Sequence[int]],
    *,
    draft_len: int,
    sampling: SamplingParams,
    eos_token_ids: Sequence[int],
    generator: torch.Generator,
    batch_size: int = 8,
    prefill_emits_token: bool = True,
    indices: Sequence[int] | None = None,
    progress: ProgressFn | None = None,
) -> Iterator[RequestOutput]:
    """Speculative decoding of ``prompts``; yields each request as it finishes.

    Args:
        target, draft: causal LMs sharing one vocabulary (transformers models).
        prompts: token ids per request (already chat-templated).
        draft_len: ``k >= 1``.
        sampling: temperature, top-p and ``max_tokens``.
        eos_token_ids: tokens that end a request (included in its output).
        generator: the only source of randomness (seed it).
        batch_size: requests decoded together.
        prefill_emits_token: the target's prefill emits the first token, which is not
            a verify step (vLLM, SGLang). False: the first verify step drafts the first
            token too (transformers' assisted generation). See :mod:`.accounting`.
        indices: the index reported for each prompt (default ``0..len-1``).
        progress: called with ``advance=1`` per finished request.
    """
    k = int(draft_len)
    if k < 1:
        raise ValueError(f"draft_len must be >= 1, got {k}")
    idx = list(range(len(prompts))) if indices is None else list(indices)
    if progress is not None:
        progress(0, total=len(prompts))
    for start in range(0, len(prompts), max(1, batch_size)):
        chunk = [(idx[i], [int(t) for t in prompts[i]]) for i in range(start, min(len(prompts), start + batch_size))]
        with torch.inference_mode():
            for out in _generate_batch(target, draft, chunk, k, sampling, set(int(e) for e in eos_token_ids),
                                       generator, prefill_emits_token):
                if progress is not None:
                    progress(1)
                yield out


def _generate_batch(
    target: Any,
    draft: Any,
    chunk: list[tuple[int, list[int]]],
    k: int,
    sampling: SamplingParams,
    eos: set[int],
    generator: torch.Generator,
    prefill_emits_token: bool,
) -> Iterator[RequestOutput]:
    t0 = time.perf_counter()
    M = sampling.max_tokens
    reqs = [RequestOutput(index=i, prompt_token_ids=p, draft_len=k) for i, p in chunk]
    for r in reqs:
        if not r.prompt_token_ids:
            raise ValueError(f"prompt {r.index} is empty")
    tkv = BatchedKV(target, len(reqs))
    dkv = BatchedKV(draft, len(reqs))
    active = list(range(len(reqs)))  # row -> position in reqs

    if prefill_emits_token:
        rows = [r.prompt_token_ids for r in reqs]
        logits = _prefill(tkv, rows)
        assert logits is not None
        _prefill(dkv, rows)
        y0 = _tokens(_choose(logits, sampling, generator))
        pending_t = [[y] for y in y0]
        pending_d = [[y] for y in y0]
        for r, y in zip(reqs, y0, strict=True):
            r.output_token_ids.append(y)
            if y in eos:
                r.finish_reason = "stop"
            elif M == 1:
                r.finish_reason = "length"
    else:
        rows = [r.prompt_token_ids[:-1] for r in reqs]
        _prefill(tkv, rows)
        _prefill(dkv, rows)
        pending_t = [[r.prompt_token_ids[-1]] for r in reqs]
        pending_d = [[r.prompt_token_ids[-1]] for r in reqs]

    def retire() -> Iterator[RequestOutput]:
        nonlocal active, pending_t, pending_d
        keep = [row for row, ri in enumerate(active) if not reqs[ri].finish_reason]
        for ri in active:
            if reqs[ri].finish_reason:
                reqs[ri].wall_s = time.perf_counter() - t0
                yield reqs[ri]
        if len(keep) < len(active):
            sel = torch.tensor(keep, dtype=torch.long, device=tkv.device)
            if keep:
                tkv.select(sel)
                dkv.select(sel)
            active = [active[row] for row in keep]
            pending_t = [pending_t[row] for row in keep]
            pending_d = [pending_d[row] for row in keep]

    yield from retire()
    while active:
        B = len(active)
        left = [M - len(reqs[ri].output_token_ids) for ri in active]
        gamma_eff = torch.tensor([min(k, m) for m in left], dtype=torch.long, device=tkv.device)

        # 1. the draft proposes k tokens autoregressively (rows with gamma_eff < k ignore the rest)
        ids, valid = left_pad(pending_d, device=dkv.device)
        logits = dkv.forward(ids, valid, logits_to_keep=1)[:, -1]
        xs: list[torch.Tensor] = []
        qs: list[torch.Tensor] = []
        for i in range(k):
            if i > 0:
                x_prev = xs[-1][:, None]
                logits = dkv.forward(x_prev, torch.ones_like(x_prev, dtype=torch.bool))[:, -1]
            if sampling.greedy:
                xs.append(logits.argmax(dim=-1))
            else:
                q_i = warp(logits, sampling)
                qs.append(q_i)
                xs.append(sample(q_i, generator))
        x = torch.stack(xs, dim=1)  # (B, k)

        # 2. the target scores pending token + k drafts in one forward pass
        last = torch.tensor([p[-1] for p in pending_t], dtype=torch.long, device=tkv.device)[:, None]
        verify_ids = torch.cat([last, x], dim=1)
        p_logits = tkv.forward(verify_ids, torch.ones_like(verify_ids, dtype=torch.bool))  # (B, k+1, V)

        # 3. verification
        if sampling.greedy:
            ver = greedy_verification(x, p_logits, gamma_eff)
        else:
            ver = speculative_sampling(x, torch.stack(qs, dim=1), warp(p_logits, sampling), gamma_eff, generator)
        n_list = _tokens(ver.n)
        t_list = _tokens(ver.t)
        x_rows = x.tolist()

        # 4. commit tokens, apply the end-of-request rules (accounting.py)
        for row, ri in enumerate(active):
            r = reqs[ri]
            n, t = n_list[row], t_list[row]
            drafts = [int(v) for v in x_rows[row][:n]]
            stop_at = next((j for j, v in enumerate(drafts) if v in eos), None)
            r.drafted.append(int(gamma_eff[row]))
            if stop_at is not None:  # an accepted end-of-sequence draft: no bonus follows
                r.accepted.append(stop_at + 1)
                r.output_token_ids.extend(drafts[: stop_at + 1])
                r.finish_reason = "stop"
                continue
            r.accepted.append(n)
            if n == left[row]:  # every draft up to the budget accepted: no bonus follows
                r.output_token_ids.extend(drafts)
                r.finish_reason = "length"
                continue
            r.output_token_ids.extend([*drafts, t])
            if t in eos:
                r.finish_reason = "stop"
            elif len(r.output_token_ids) >= M:
                r.finish_reason = "length"

        # 5. drop rejected drafts from both caches; set what each model must see next
        tkv.drop_last(k - ver.n)
        dkv.drop_last((k - 1) - ver.n.clamp(max=k - 1))
        pending_t = [[t] for t in t_list]
        pending_d = [[x_rows[row][k - 1], t_list[row]] if n_list[row] == k else [t_list[row]]
                     for row in range(B)]
        yield from retire()
        if active:
            tkv.maybe_compact()
            dkv.maybe_compact()
