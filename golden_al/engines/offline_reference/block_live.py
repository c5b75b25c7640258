"""Live block speculative decoding (DFlash, DFlash2), one request at a time.

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

``k`` may be smaller than the draft's own ``block_size - 1``: the block is then shorter, so
its drafts differ from the first ``k`` drafts of a full block (non-causal attention sees the
whole block). That is why AL at smaller k is measured, not derived, for block drafts.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from golden_al.engines.offline_reference.batch_cache import _cache_kwarg, new_cache
from golden_al.engines.offline_reference.block_draft import BlockDraft, output_head
from golden_al.engines.offline_reference.live import ProgressFn, RequestOutput
from golden_al.engines.offline_reference.sampling import (
    SamplingParams,
    greedy_verification,
    sample,
    speculative_sampling,
    warp,
)

__all__ = ["iter_block_generate"]


def _choose(logits: torch.Tensor, sampling: SamplingParams, generator: torch.Generator) -> torch.Tensor:
    return logits.argmax(dim=-1) if sampling.greedy else sample(warp(logits, sampling), generator)


def _crop(cache: Any, keep: int) -> None:
    """Keep the first ``keep`` positions of a ``DynamicCache`` (a negative crop removes from the end,
    the form every transformers version since 4.56 takes)."""
    remove = cache.get_seq_length() - keep
    if remove > 0:
        cache.crop(-remove)


def _propose(draft: BlockDraft, target: Any, pending: int, k: int, cache: Any, sampling: SamplingParams,
             generator: torch.Generator, device: torch.device) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``k`` drafts `(1, k)` after the pending token, and their distributions `(1, k, vocab)` when sampling."""
    block = torch.full((1, k + 1), draft.cfg.mask_token_id, dtype=torch.long, device=device)
    block[0, 0] = pending
    hidden = draft.block(draft.embed(target, block), cache)[:, 1:]
    logits = draft.logits(hidden, output_head(target))
    if draft.candidate_selector is not None:
        anchor = block[:, 0]
        return draft.candidate_selector.walk(hidden, logits, anchor, sampling.temperature, generator)
    if sampling.greedy:
        return logits.argmax(dim=-1), None
    q = warp(logits, sampling)
    return sample(q.view(-1, q.shape[-1]), generator).view(1, k), q


def _decode_one(draft: BlockDraft, target: Any, index: int, prompt: Sequence[int], k: int, sampling: SamplingParams,
                eos: set[int], generator: torch.Generator, progress: ProgressFn | None) -> RequestOutput:
    device = next(target.parameters()).device
    t0 = time.perf_counter()
    out = RequestOutput(index=index, prompt_token_ids=list(prompt), draft_len=k)
    M = sampling.max_tokens
    ids = torch.tensor([list(prompt)], dtype=torch.long, device=device)
    tcache = new_cache(target)
    kw = _cache_kwarg(target)
    pre = target(ids, **{kw: tcache}, use_cache=True, output_hidden_states=True, logits_to_keep=1)
    y = int(_choose(pre.logits[:, -1], sampling, generator)[0])
    out.output_token_ids.append(y)
    dcache = draft.new_cache()
    draft.extend(dcache, draft.features(pre.hidden_states), 0)
    if progress is not None:
        progress(1)
    n_prompt = len(prompt)
    finish = "stop" if y in eos else ""
    while not finish and len(out.output_token_ids) < M:
        s = len(out.output_token_ids)
        k_eff = min(k, M - s)
        x, q = _propose(draft, target, out.output_token_ids[-1], k_eff, dcache, sampling, generator, device)
        block = torch.cat([torch.tensor([[out.output_token_ids[-1]]], device=device), x], dim=1)
        ver = target(block, **{kw: tcache}, use_cache=True, output_hidden_states=True)
        gamma = torch.tensor([k_eff], device=device)
        if sampling.greedy:
            v = greedy_verification(x, ver.logits, gamma)
        else:
            assert q is not None
            v = speculative_sampling(x, q.to(torch.float32), warp(ver.logits, sampling), gamma, generator)
        n, t = int(v.n[0]), int(v.t[0])
        drafts = [int(a) for a in x[0, :n].tolist()]
        stop_at = next((j for j, tok in enumerate(drafts) if tok in eos), None)
        if stop_at is not None:  # an accepted end-of-sequence draft ends the request: no bonus
            n, emitted, finish = stop_at + 1, drafts[:stop_at + 1], "stop"
        elif n == k_eff and s + n >= M:  # the budget's last draft was accepted: no bonus follows
            emitted = drafts
        else:
            emitted = [*drafts, t]
            if t in eos:
                finish = "stop"
        out.accepted.append(n)
        out.drafted.append(k_eff)
        out.output_token_ids.extend(emitted)
        if progress is not None:
            progress(len(emitted))
        if finish or len(out.output_token_ids) >= M:
            break
        # keep the pending token and the n accepted drafts: their positions are verified
        verified = n + 1
        _crop(tcache, n_prompt + s - 1 + verified)
        draft.extend(dcache, draft.features(ver.hidden_states)[:, :verified], n_prompt + s - 1)
    out.finish_reason = finish or "length"
    if progress is not None and len(out.output_token_ids) < M:
        progress(M - len(out.output_token_ids))
    out.wall_s = round(time.perf_counter() - t0, 3)
    return out


@torch.inference_mode()
def iter_block_generate(target: Any, draft: BlockDraft, prompts: Sequence[Sequence[int]], *, draft_len: int,
                        sampling: SamplingParams, eos_token_ids: Sequence[int], generator: torch.Generator,
                        indices: Sequence[int] | None = None,
                        progress: ProgressFn | None = None) -> Iterator[RequestOutput]:
    """Decode every prompt with the block draft at ``draft_len`` drafts per step; yields each request
    as it finishes (in order). ``indices``: the prompts' positions in the full set (default 0..).

    Raises:
        ValueError: ``draft_len`` outside ``1 .. block_size - 1``.
    """
    if not 1 <= draft_len <= draft.cfg.max_draft_len:
        raise ValueError(f"draft length {draft_len} is outside 1..{draft.cfg.max_draft_len} "
                         f"(this draft's block is {draft.cfg.block_size})")
    idx = list(indices) if indices is not None else list(range(len(prompts)))
    if len(idx) != len(prompts):
        raise ValueError(f"{len(idx)} indices for {len(prompts)} prompts")
    if progress is not None:
        progress(0, total=len(prompts) * sampling.max_tokens)
    eos = {int(e) for e in eos_token_ids}
    for done, (i, prompt) in enumerate(zip(idx, prompts, strict=True)):
        if progress is not None:
            progress(0, description=f"{done}/{len(prompts)} done")
        yield _decode_one(draft, target, i, prompt, draft_len, sampling, eos, generator, progress)
