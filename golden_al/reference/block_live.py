"""Live block speculative decoding (DFlash, DFlash2), batched over prompts.

The loop of z-lab/dflash ``dflash/model.py`` 0.1.0 (``dflash_generate``) and SGLang's
``DFLASH`` worker, written for this engine's accounting:

1. The target prefills the prompt (its hidden states kept) and emits ``y_0``: no verify step.
2. Each verify step at output position ``s`` proposes ``k_eff = min(k, M - s)`` drafts: the
   draft reads the block ``[y_{s-1}, mask x k_eff]`` (embedded with the target's embedding)
   against the cached context of every verified position, and its outputs at the mask
   positions, through the target's LM head, are the drafts (argmax, a sample of each
   position's distribution, or DFlash2's selector walk).
3. The target scores the whole block in one forward pass; greedy verification accepts the
   leading drafts equal to its argmax, sampling uses standard rejection sampling with the
   drafts' distributions (:mod:`.sampling`); then the correction or bonus token.
4. The target's cache keeps the verified positions; their hidden states become the draft's
   new context. The counting rules (an accepted end-of-sequence draft ends the request, no
   bonus after the budget's last draft) are :mod:`.accounting`'s, as in the chain engine.

Batching is continuous, like the chain engine's (:mod:`.live`): up to ``batch_size`` requests
decode together in one target pass and one draft pass per step; the target's cache is a
:class:`.BatchedKV` (rows advance by different amounts), the draft's a
:class:`.BatchedContext`; a row near its budget drafts a shorter block (its padding is masked
from every attention), and a finished request is replaced by the next prompt at once.

``k`` may be smaller than the draft's own ``block_size - 1``: the block is then shorter, so
its drafts differ from the first ``k`` drafts of a full block (non-causal attention sees the
whole block). That is why AL at smaller k is measured, not derived, for block drafts.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from golden_al.reference.batch_cache import BatchedKV, left_pad
from golden_al.reference.block_draft import BatchedContext, BlockDraft, output_head
from golden_al.reference.live import ProgressFn, RequestOutput, _choose, commit_step
from golden_al.reference.sampling import (
    SamplingParams,
    greedy_verification,
    sample,
    speculative_sampling,
    warp,
)

__all__ = ["iter_block_generate"]


@dataclass
class _Row:
    out: RequestOutput
    t0: float


def _propose(draft: BlockDraft, target: Any, ctx: BatchedContext, pending: torch.Tensor, gamma: torch.Tensor,
             sampling: SamplingParams, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Drafts `(B, k)` after each row's pending token (row ``b`` drafts ``gamma[b] <= k``; the rest is
    padding), and their distributions `(B, k, vocab)` when sampling."""
    k = int(gamma.max())
    B = pending.shape[0]
    block = torch.full((B, k + 1), draft.cfg.mask_token_id, dtype=torch.long, device=pending.device)
    block[:, 0] = pending
    valid = torch.arange(k + 1, device=pending.device)[None, :] <= gamma[:, None]
    hidden = draft.block_batch(draft.embed(target, block), ctx, valid)[:, 1:]
    logits = draft.logits(hidden, output_head(target))
    if draft.candidate_selector is not None:
        return draft.candidate_selector.walk(hidden, logits, pending, sampling.temperature, generator)
    if sampling.greedy:
        return logits.argmax(dim=-1), None
    q = warp(logits, sampling)
    return sample(q.view(-1, q.shape[-1]), generator).view(B, k), q


@torch.inference_mode()
def iter_block_generate(target: Any, draft: BlockDraft, prompts: Sequence[Sequence[int]], *, draft_len: int,
                        sampling: SamplingParams, eos_token_ids: Sequence[int], generator: torch.Generator,
                        batch_size: int = 8, indices: Sequence[int] | None = None,
                        progress: ProgressFn | None = None) -> Iterator[RequestOutput]:
    """Decode every prompt with the block draft at ``draft_len`` drafts per step, ``batch_size`` requests
    at a time; yields each request as it finishes (any order). ``indices``: the prompts' positions in the
    full set (default 0..).

    Raises:
        ValueError: ``draft_len`` outside ``1 .. block_size - 1``, or ``batch_size`` < 1.

    Kept whole: the continuous-batching loop (admit, draft a block, verify, retire) shares one step's batch
    state; it mirrors the chain engine's ``iter_generate``.
    """
    if not 1 <= draft_len <= draft.cfg.max_draft_len:
        raise ValueError(f"draft length {draft_len} is outside 1..{draft.cfg.max_draft_len} "
                         f"(this draft's block is {draft.cfg.block_size})")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    idx = list(indices) if indices is not None else list(range(len(prompts)))
    if len(idx) != len(prompts):
        raise ValueError(f"{len(idx)} indices for {len(prompts)} prompts")
    M = sampling.max_tokens
    if progress is not None:
        progress(0, total=len(prompts) * M)
    eos = {int(e) for e in eos_token_ids}
    device = next(target.parameters()).device
    queue = deque(zip(idx, prompts, strict=True))
    rows: list[_Row] = []
    tkv = BatchedKV(target, 0)
    ctx = draft.new_batch(0, device)
    done_count = 0

    def finish(row: _Row) -> RequestOutput:
        out = row.out
        out.wall_s = round(time.perf_counter() - row.t0, 3)
        if progress is not None and len(out.output_token_ids) < M:
            progress(M - len(out.output_token_ids))
        return out

    while queue or rows:
        while queue and len(rows) < batch_size:  # admit: prefill one prompt, append its row to both caches
            i, prompt = queue.popleft()
            row = _Row(RequestOutput(index=i, prompt_token_ids=list(prompt), draft_len=draft_len), time.perf_counter())
            one = BatchedKV(target, 1)
            ids, valid = left_pad([list(prompt)], device=device)
            pre = one.forward_output(ids, valid, logits_to_keep=1, output_hidden_states=True)
            y = int(_choose(pre.logits[:, -1], sampling, generator)[0])
            row.out.output_token_ids.append(y)
            if progress is not None:
                progress(1)
            if y in eos or M <= 1:
                row.out.finish_reason = "stop" if y in eos else "length"
                done_count += 1
                yield finish(row)
                continue
            new = draft.new_batch(1, device)
            draft.extend_batch(new, draft.features(pre.hidden_states), valid)
            tkv.extend(one)
            ctx.extend(new)
            rows.append(row)
            if progress is not None:
                progress(0, description=f"{len(rows)} decoding, {len(queue)} queued, {done_count} done")
        if not rows:
            continue
        gamma = torch.tensor([min(draft_len, M - len(r.out.output_token_ids)) for r in rows], device=device)
        pending = torch.tensor([r.out.output_token_ids[-1] for r in rows], dtype=torch.long, device=device)
        x, q = _propose(draft, target, ctx, pending, gamma, sampling, generator)
        block = torch.cat([pending[:, None], x], dim=1)
        fed = torch.arange(block.shape[1], device=device)[None, :] <= gamma[:, None]
        ver = tkv.forward_output(block, fed, output_hidden_states=True)
        if sampling.greedy:
            v = greedy_verification(x, ver.logits, gamma)
        else:
            assert q is not None
            p = warp(ver.logits, sampling)
            v = speculative_sampling(x, q.to(p.dtype), p, gamma, generator)  # the selector's q is float32
        n_list, t_list, x_list = v.n.tolist(), v.t.tolist(), x.tolist()
        keep_rows: list[int] = []
        ended: list[int] = []
        for b, row in enumerate(rows):
            before = len(row.out.output_token_ids)
            commit_step(row.out, x_list[b], int(n_list[b]), int(t_list[b]), int(gamma[b]), eos, M)
            if progress is not None:
                progress(len(row.out.output_token_ids) - before)
            (ended if row.out.finish_reason else keep_rows).append(b)
        # the pending token and the accepted drafts are verified: drop the rest from the target's cache,
        # and their hidden states join the draft's context
        verified = v.n + 1
        tkv.drop_last(gamma + 1 - verified)
        kept = torch.arange(block.shape[1], device=device)[None, :] < verified[:, None]
        draft.extend_batch(ctx, draft.features(ver.hidden_states), kept)
        for b in ended:
            done_count += 1
            yield finish(rows[b])
        if ended:
            sel = torch.tensor(keep_rows, dtype=torch.long, device=device)
            tkv.select(sel)
            ctx.select(sel)
            rows = [rows[b] for b in keep_rows]
