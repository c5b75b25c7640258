"""Engines behind ``serve-reference``: the reference engine, or a deterministic fake.

Both answer one chat request with a :class:`Generation`: the text, the token
counts and the accepted drafts of every verify step, which the HTTP layer turns
into SGLang- or vLLM-shaped answers and counters.

* :class:`ReferenceServedEngine` wraps :class:`golden_al.reference.ReferenceEngine`
  (torch, imported lazily): chat template through the target's tokenizer, live
  chain speculative decoding, one request at a time.
* :class:`FakeServedEngine` needs no model: a chain draft whose acceptance at
  every step is a run of per-position Bernoulli trials (conditional rate
  ``accept_rate`` per position), drawn from a generator seeded by the prompt, the
  request seed and the step. The run does not depend on ``k`` (a step accepts
  ``min(run, k_eff)``), so truncating a measurement at a larger ``k`` to a smaller
  one is exact in expectation, as for a real chain draft. For tests of the HTTP
  layer, measurement, sweeps and faults.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from golden_al.plugin.flavor import Generation

__all__ = ["FakeServedEngine", "ReferenceServedEngine"]


def _prompt_key(messages: Sequence[Mapping[str, Any]] | None, text: str | None,
                chat_template_kwargs: Mapping[str, Any] | None) -> str:
    blob = json.dumps({"m": messages, "t": text, "c": chat_template_kwargs or {}}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


class FakeServedEngine:
    """A deterministic model-free chain draft (see the module docstring).

    Args:
        draft_len: ``k``.
        accept_rate: conditional acceptance of each draft position given the previous.
        min_len / max_len: the natural answer length (drawn per prompt) before ``max_tokens``.
        step_delay_s: seconds slept per verify step (to make requests take time).
        draft_lens: draft lengths (each <= ``k``) cycled step by step, standing for a server that
            changes its draft length as it goes (adaptive speculation); None: always ``k``.
        forced: ``(rng, k_step) -> accepted``: a step's accepted drafts when the server forces acceptance
            (an engine's synthetic knob, drawn by that engine's sampler), instead of the fake's own run.
    """

    def __init__(self, draft_len: int, *, accept_rate: float = 0.7, min_len: int = 24, max_len: int = 96,
                 step_delay_s: float = 0.0, model_name: str = "fake-target",
                 draft_lens: Sequence[int] | None = None,
                 forced: Callable[[np.random.Generator, int], int] | None = None) -> None:
        if draft_len < 1:
            raise ValueError(f"draft_len must be >= 1, got {draft_len}")
        if not 0.0 <= accept_rate < 1.0:
            raise ValueError(f"accept_rate must be in [0, 1), got {accept_rate}")
        self.draft_len = int(draft_len)
        self.accept_rate = float(accept_rate)
        self.min_len = int(min_len)
        self.max_len = int(max_len)
        self.step_delay_s = float(step_delay_s)
        self.draft_lens = tuple(int(d) for d in draft_lens) if draft_lens else None
        if self.draft_lens and not all(1 <= d <= self.draft_len for d in self.draft_lens):
            raise ValueError(f"draft_lens must lie in [1, {self.draft_len}], got {list(self.draft_lens)}")
        self.forced = forced
        self.model_name = model_name
        self.target_name = model_name
        self.draft_name = f"{model_name}-draft"

    def generate(self, *, messages: Sequence[Mapping[str, Any]] | None, text: str | None, max_tokens: int,
                 temperature: float, top_p: float, seed: int | None,
                 chat_template_kwargs: Mapping[str, Any] | None) -> Generation:
        key = _prompt_key(messages, text, chat_template_kwargs)
        base = int(key[:16], 16)
        prompt_rng = np.random.default_rng([base, 0])
        natural = int(prompt_rng.integers(self.min_len, self.max_len + 1))
        n_tokens = min(int(max_tokens), natural)
        finish = "stop" if natural <= max_tokens else "length"
        # temperature > 0 with a seed varies the draws; greedy is fixed per prompt
        salt = 0 if temperature == 0.0 else (1 + (seed if seed is not None else 0))
        k = self.draft_len
        accepted: list[int] = []
        drafted: list[int] = []
        pos = 1  # the prefill emits token 0
        step = 0
        while pos < n_tokens:
            rng = np.random.default_rng([base, 1, salt, step])
            # run of successes of per-position Bernoulli(accept_rate) trials, independent of k
            run = 0
            while run < 64 and rng.random() < self.accept_rate:
                run += 1
            k_step = self.draft_lens[step % len(self.draft_lens)] if self.draft_lens else k
            k_eff = min(k_step, n_tokens - pos)
            n = min(run if self.forced is None else self.forced(rng, k_step), k_eff)
            drafted.append(k_eff)
            accepted.append(n)
            # a step emits n + 1 tokens, except a final step ending on an accepted draft
            pos += n + 1 if pos + n < n_tokens else n
            step += 1
            if self.step_delay_s:
                time.sleep(self.step_delay_s)
        words = [f"w{(base >> (i % 48)) % 997}" for i in range(n_tokens)]
        prompt_len = len(json.dumps(messages if messages is not None else text)) // 4 + 1
        return Generation(" ".join(words), prompt_len, n_tokens, accepted, drafted, finish)


class ReferenceServedEngine:
    """The reference engine (transformers + torch) behind the HTTP server.

    Loads ``target`` and ``draft`` directories (safetensors + tokenizer), renders
    chat messages with the target tokenizer's chat template (``chat_template_kwargs``
    passed through), and runs live chain speculative decoding one request at a time.
    """

    def __init__(self, target: str, draft: str, draft_len: int, *, dtype: str = "float32",
                 model_name: str | None = None, device: str = "cpu") -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from golden_al.reference import ReferenceEngine

        torch_dtype = getattr(torch, dtype)
        self.tokenizer: Any = AutoTokenizer.from_pretrained(target)
        loader: Any = AutoModelForCausalLM
        t_model = loader.from_pretrained(target, dtype=torch_dtype).to(device)
        d_model = loader.from_pretrained(draft, dtype=torch_dtype).to(device)
        eos = t_model.generation_config.eos_token_id
        eos_ids = [eos] if isinstance(eos, int) else list(eos or [])
        if self.tokenizer.eos_token_id is not None and self.tokenizer.eos_token_id not in eos_ids:
            eos_ids.append(self.tokenizer.eos_token_id)
        self.engine = ReferenceEngine(t_model, d_model, eos_token_ids=eos_ids)
        self.draft_len = int(draft_len)
        self.target_name = str(target)
        self.draft_name = str(draft)
        self.model_name = model_name or str(target)
        self._lock = threading.Lock()

    def generate(self, *, messages: Sequence[Mapping[str, Any]] | None, text: str | None, max_tokens: int,
                 temperature: float, top_p: float, seed: int | None,
                 chat_template_kwargs: Mapping[str, Any] | None) -> Generation:
        from golden_al.reference import SamplingParams

        ids: Any
        if messages is not None:
            ids = self.tokenizer.apply_chat_template(
                list(messages), add_generation_prompt=True, tokenize=True, **dict(chat_template_kwargs or {})
            )
            if isinstance(ids, Mapping) or hasattr(ids, "input_ids"):
                ids = ids["input_ids"]
        else:
            ids = self.tokenizer(text or "", add_special_tokens=False)["input_ids"]
        ids = [int(t) for t in ids]
        sampling = SamplingParams(temperature=float(temperature), top_p=float(top_p), max_tokens=int(max_tokens))
        with self._lock:
            out = self.engine.generate([ids], draft_len=self.draft_len, sampling=sampling, seed=seed, batch_size=1)[0]
        decoded = str(self.tokenizer.decode(out.output_token_ids, skip_special_tokens=True))
        return Generation(decoded, len(ids), len(out.output_token_ids), list(out.accepted), list(out.drafted),
                          out.finish_reason or "length")
