"""The reference engine: a target and a draft model, generate and replay.

A thin object over :mod:`.live` and :mod:`.replay` that holds the models, the
end-of-sequence ids and the step convention, so callers (the measurement
runner, the HTTP server of ``serve-reference``) need only prompts and settings::

    engine = ReferenceEngine(target_model, draft_model, eos_token_ids=[151645, 151643])
    outs = engine.generate([prompt_ids], draft_len=5, sampling=SamplingParams(max_tokens=64), seed=0)
    outs[0].output_token_ids, outs[0].accept_lengths   # tokens; L per verify step
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import torch

from golden_al.reference.live import ProgressFn, RequestOutput, StepFn, iter_generate
from golden_al.reference.replay import (
    ReplayOutput,
    TargetOutput,
    iter_replay,
    iter_target_generate,
)
from golden_al.reference.sampling import SamplingParams

__all__ = ["ReferenceEngine", "make_generator"]


def make_generator(seed: int | None, device: Any = "cpu") -> torch.Generator:
    """A ``torch.Generator`` seeded with ``seed`` (a fixed default when None: runs are reproducible)."""
    g = torch.Generator(device=device)
    g.manual_seed(0 if seed is None else int(seed))
    return g


class ReferenceEngine:
    """Chain speculative decoding with a draft model, in transformers + torch.

    Args:
        target: the target causal LM (a transformers model, eval mode).
        draft: the draft causal LM with the same vocabulary.
        eos_token_ids: tokens that end a request.
        prefill_emits_token: True (default, vLLM/SGLang): the target's prefill emits the
            first output token and verify steps start after it. False: transformers'
            assisted-generation convention (the first verify step drafts token 1).
    """

    def __init__(self, target: Any, draft: Any, *, eos_token_ids: Sequence[int],
                 prefill_emits_token: bool = True) -> None:
        t_vocab = target.get_output_embeddings().weight.shape[0]
        d_vocab = draft.get_output_embeddings().weight.shape[0]
        if t_vocab != d_vocab:
            raise ValueError(f"target and draft vocabularies differ: {t_vocab} vs {d_vocab} logits")
        self.target = target.eval()
        self.draft = draft.eval()
        self.eos_token_ids = [int(e) for e in eos_token_ids]
        self.prefill_emits_token = prefill_emits_token
        self.device = next(target.parameters()).device

    def _gen(self, seed: int | None, generator: torch.Generator | None) -> torch.Generator:
        return generator if generator is not None else make_generator(seed, self.device)

    def iter_generate(self, prompts: Sequence[Sequence[int]], *, draft_len: int, sampling: SamplingParams,
                      seed: int | None = None, generator: torch.Generator | None = None, batch_size: int = 8,
                      indices: Sequence[int] | None = None, progress: ProgressFn | None = None,
                      shared_prefix: int | None = None, on_step: StepFn | None = None) -> Iterator[RequestOutput]:
        """Live speculative decoding; yields each request as soon as it finishes (any order).

        ``shared_prefix``: leading tokens all prompts share, prefilled once (:mod:`.prefix`;
        None: found from ``prompts``; a resumed run passes the full set's). ``on_step``: called after
        every verify step with its timings (:data:`.live.StepFn`).
        """
        return iter_generate(self.target, self.draft, prompts, draft_len=draft_len, sampling=sampling,
                             eos_token_ids=self.eos_token_ids, generator=self._gen(seed, generator),
                             batch_size=batch_size, prefill_emits_token=self.prefill_emits_token,
                             indices=indices, progress=progress, shared_prefix=shared_prefix, on_step=on_step)

    def generate(self, prompts: Sequence[Sequence[int]], *, draft_len: int, sampling: SamplingParams,
                 seed: int | None = None, generator: torch.Generator | None = None, batch_size: int = 8,
                 progress: ProgressFn | None = None) -> list[RequestOutput]:
        """Live speculative decoding of every prompt; results in prompt order.

        Each :class:`RequestOutput` has ``output_token_ids``, ``accepted`` (``n`` per
        verify step), ``accept_lengths`` (``L = n + 1``), ``drafted`` and ``finish_reason``.
        One prompt at a time: ``generate([ids], ...)[0]``.
        """
        outs = list(self.iter_generate(prompts, draft_len=draft_len, sampling=sampling, seed=seed,
                                       generator=generator, batch_size=batch_size, progress=progress))
        return sorted(outs, key=lambda o: o.index)

    def iter_replay(self, prompts: Sequence[Sequence[int]], *, draft_lens: Sequence[int],
                    sampling: SamplingParams, seed: int | None = None, generator: torch.Generator | None = None,
                    batch_size: int = 8, indices: Sequence[int] | None = None,
                    progress: ProgressFn | None = None,
                    trajectory_draft_len: int | None = None,
                    shared_prefix: int | None = None) -> Iterator[ReplayOutput]:
        """Replay (one target generation + one teacher-forced draft pass) for every ``k`` at once.

        ``trajectory_draft_len``: greedy only; generate the target's output by speculative
        decoding at that draft length (same output, faster; checked, see :func:`.replay.iter_replay`).
        ``shared_prefix``: as in :meth:`iter_generate`.
        """
        return iter_replay(self.target, self.draft, prompts, draft_lens=draft_lens, sampling=sampling,
                           eos_token_ids=self.eos_token_ids, generator=self._gen(seed, generator),
                           batch_size=batch_size, prefill_emits_token=self.prefill_emits_token,
                           indices=indices, progress=progress, trajectory_draft_len=trajectory_draft_len,
                           shared_prefix=shared_prefix)

    def replay(self, prompts: Sequence[Sequence[int]], *, draft_lens: Sequence[int], sampling: SamplingParams,
               seed: int | None = None, generator: torch.Generator | None = None,
               batch_size: int = 8, progress: ProgressFn | None = None,
               trajectory_draft_len: int | None = None) -> list[ReplayOutput]:
        """:meth:`iter_replay`, collected in prompt order."""
        outs = list(self.iter_replay(prompts, draft_lens=draft_lens, sampling=sampling, seed=seed,
                                     generator=generator, batch_size=batch_size, progress=progress,
                                     trajectory_draft_len=trajectory_draft_len))
        return sorted(outs, key=lambda o: o.index)

    def target_generate(self, prompts: Sequence[Sequence[int]], *, sampling: SamplingParams,
                        seed: int | None = None, generator: torch.Generator | None = None,
                        batch_size: int = 8) -> list[TargetOutput]:
        """The target's own generation (no draft), in prompt order."""
        outs = list(iter_target_generate(self.target, prompts, sampling=sampling,
                                         eos_token_ids=self.eos_token_ids,
                                         generator=self._gen(seed, generator), batch_size=batch_size))
        return sorted(outs, key=lambda o: o.index)
