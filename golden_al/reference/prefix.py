"""A prompt prefix that every request shares, prefilled once per model.

Chat-templated prompts of one set start with the same tokens (the template's system turn,
a shared instruction): 20 to 40 of HumanEval's ~130 tokens per prompt with Qwen2.5's
template. Each model prefills that prefix once, one row; every admitted request starts
from a copy of those keys and values (:meth:`.BatchedKV.fork`) and prefills only the rest
of its prompt. Live decoding, the target's generation and replay's teacher-forced draft
pass all start from the same prefix computation, so the modes stay exact with each other.
The caller fixes the prefix over the whole prompt set, so a resumed run (a subset of the
prompts) computes every request the same way as the run it continues.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from golden_al.reference.batch_cache import BatchedKV

__all__ = ["MIN_SHARED_PREFIX", "SharedPrefix", "shared_prefix_len"]

#: Shorter common prefixes are not worth a separate forward pass.
MIN_SHARED_PREFIX = 4
#: Tokens of each prompt left after the prefix (a prefill without its last token still has one).
KEEP_TOKENS = 2


def shared_prefix_len(prompts: Sequence[Sequence[int]]) -> int:
    """Length of the prefix all ``prompts`` share, leaving :data:`KEEP_TOKENS` of each; 0 when
    fewer than two prompts or shorter than :data:`MIN_SHARED_PREFIX`."""
    if len(prompts) < 2:
        return 0
    first = list(prompts[0])
    n = min(len(p) for p in prompts) - KEEP_TOKENS
    for p in prompts[1:]:
        m = 0
        while m < n and int(p[m]) == int(first[m]):
            m += 1
        n = m
    return n if n >= MIN_SHARED_PREFIX else 0


class SharedPrefix:
    """The shared prefix of a run and its one-row caches, one per model (prefilled lazily)."""

    def __init__(self, prompts: Sequence[Sequence[int]], length: int | None) -> None:
        """``length``: the prefix to share (None: :func:`shared_prefix_len` of ``prompts``).

        Raises:
            ValueError: a prompt does not start with the prefix or leaves too little after it.
        """
        n = shared_prefix_len(prompts) if length is None else int(length)
        self.tokens: list[int] = [int(t) for t in prompts[0][:n]] if (n and prompts) else []
        for i, p in enumerate(prompts):
            if self.tokens and ([int(t) for t in p[:n]] != self.tokens or len(p) < n + KEEP_TOKENS):
                raise ValueError(f"prompt {i} does not start with the {n}-token shared prefix "
                                 f"(or leaves fewer than {KEEP_TOKENS} tokens after it)")
        self._caches: dict[int, BatchedKV] = {}

    def __len__(self) -> int:
        return len(self.tokens)

    def cache(self, model: Any, rows: int) -> BatchedKV:
        """A cache of ``rows`` rows holding the prefix for ``model`` (empty when there is none)."""
        if not self.tokens:
            return BatchedKV(model, rows)
        one = self._caches.get(id(model))
        if one is None:
            one = BatchedKV(model, 1)
            ids = torch.tensor([self.tokens], dtype=torch.long, device=one.device)
            one.forward(ids, torch.ones_like(ids, dtype=torch.bool), logits_to_keep=1)
            self._caches[id(model)] = one
        return one.fork(rows)

    def rest(self, prompt: Sequence[int]) -> list[int]:
        """The part of ``prompt`` after the prefix."""
        return [int(t) for t in prompt[len(self.tokens):]]
