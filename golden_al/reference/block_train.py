"""Train a block draft (DFlash, DFlash2) on a target's own outputs, in plain torch.

The recipe of the DFlash paper (Chen et al. 2026, "DFlash: Block Diffusion for Flash
Speculative Decoding"; vllm-project/speculators 0.9.0 ``speculators/train``): sequences the
target wrote itself, the target's hidden states at ``target_layer_ids`` as context, random
anchors ``a`` per sequence, the block ``[y_a, mask x (B-1)]`` trained to predict
``y_{a+1} .. y_{a+B-1}`` with cross-entropy weighted ``exp(-(j-1)/decay)`` at block position
``j`` (early positions matter most: a rejection ends the step). The target is frozen; the
draft reads its embedding and LM head without training them.

Library code: returns values, takes an explicit generator, reports through a callback.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from golden_al.reference.batch_cache import _cache_kwarg
from golden_al.reference.block_draft import BlockDraft, output_head

__all__ = ["TrainStats", "sequence_features", "train_block_draft"]


@dataclass(frozen=True)
class TrainStats:
    """Loss per logged step and the final top-1 accuracy per block position on the last batches."""

    losses: list[float]
    steps: int
    position_accuracy: list[float]


@torch.no_grad()
def sequence_features(target: Any, draft: BlockDraft, sequences: Sequence[Sequence[int]]) -> list[torch.Tensor]:
    """The target context features `(1, T, K*H)` of each full sequence (prompt and output)."""
    device = next(target.parameters()).device
    kw = _cache_kwarg(target)
    out = []
    for seq in sequences:
        ids = torch.tensor([list(seq)], dtype=torch.long, device=device)
        res = target(ids, **{kw: None}, use_cache=False, output_hidden_states=True, logits_to_keep=1)
        out.append(draft.features(res.hidden_states).detach().clone())
    return out


def train_block_draft(draft: BlockDraft, target: Any, sequences: Sequence[Sequence[int]],
                      features: Sequence[torch.Tensor], *, starts: Sequence[int], steps: int, generator: torch.Generator,
                      anchors_per_step: int = 32, lr: float = 3e-4, decay: float = 4.0,
                      log_every: int = 50, progress: Callable[[int, float], None] | None = None) -> TrainStats:
    """Train ``draft`` in place for ``steps`` AdamW steps (cosine schedule, 5 % warm-up).

    ``starts[i]``: the first output position of sequence ``i`` (anchors are drawn from its
    output, where the draft will be used, so they need a context of at least one position).
    Each step takes one random sequence and ``anchors_per_step`` anchors in it.
    """
    if not sequences or len(sequences) != len(features) or len(starts) != len(sequences):
        raise ValueError("sequences, features and starts must be non-empty and of one length")
    B = draft.cfg.block_size
    device = features[0].device
    head = output_head(target)
    weights = torch.tensor([math.exp(-j / decay) for j in range(B - 1)], device=device)
    usable = [i for i, s in enumerate(sequences) if len(s) - max(1, starts[i]) >= 2]
    if not usable:
        raise ValueError("no sequence has an output of at least 2 tokens to anchor a block in")
    params = [p for p in draft.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    warm = max(1, steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (1 + math.cos(math.pi * min(1.0, s / max(1, steps)))))
    draft.train()
    losses: list[float] = []
    hits = torch.zeros(B - 1, device=device)
    seen = torch.zeros(B - 1, device=device)
    mask_id = draft.cfg.mask_token_id
    for step in range(steps):
        i = usable[int(torch.randint(len(usable), (1,), generator=generator))]
        seq = torch.tensor(list(sequences[i]), dtype=torch.long, device=device)
        lo, hi = max(1, starts[i]), len(seq) - 1  # an anchor needs context before it and a label after it
        anchors = torch.randint(lo, hi, (anchors_per_step,), generator=generator).to(device)
        offsets = torch.arange(B, device=device)[None, :]
        pos = anchors[:, None] + offsets
        inside = pos < len(seq)
        labels = torch.where(inside, seq[pos.clamp(max=len(seq) - 1)], torch.full_like(pos, -100))[:, 1:]
        block = torch.full_like(pos, mask_id)
        block[:, 0] = seq[anchors]
        with torch.no_grad():
            emb = draft.embed(target, block)
        hidden = draft.train_blocks(features[i], anchors, emb)[:, 1:]
        logits = draft.logits(hidden, head).float()
        ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100,
                             reduction="none").view_as(labels)
        valid = (labels != -100).float()
        loss = (ce * valid * weights).sum() / (valid * weights).sum().clamp(min=1e-9)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        if steps - step <= max(1, steps // 10):
            with torch.no_grad():
                hits += ((logits.argmax(-1) == labels).float() * valid).sum(0)
                seen += valid.sum(0)
        if (step + 1) % log_every == 0 or step + 1 == steps:
            losses.append(round(loss.item(), 5))
            if progress is not None:
                progress(step + 1, losses[-1])
    draft.eval()
    acc = (hits / seen.clamp(min=1)).tolist()
    return TrainStats(losses=losses, steps=steps, position_accuracy=[round(a, 4) for a in acc])
