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

Batching is continuous: up to ``batch_size`` requests decode together, and a
request that finishes is replaced by the next prompt at once (prefilled on its
own or with a few others, then appended to both caches, :meth:`.BatchedKV.extend`); rows advance by
different amounts (ragged acceptance) and the caches are compacted as holes pile up.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from golden_al.reference.accounting import StepCounts, counts_from_accept_counts
from golden_al.reference.batch_cache import BatchedKV, left_pad
from golden_al.reference.prefix import SharedPrefix
from golden_al.reference.sampling import (
    SamplingParams,
    greedy_verification,
    sample,
    speculative_sampling,
    warp,
)

__all__ = ["ProgressFn", "RequestOutput", "StepFn", "admission_group", "commit_step", "iter_generate", "prefill_budget", "remaining_steps",
           "target_generate_step", "token_list"]

#: Tokens per admission prefill (prompt tokens x prompts, padding included). On a CPU one
#: prompt or a few at a time keeps progress moving every few seconds; a GPU takes many.
PREFILL_TOKENS = {"cpu": 256, "cuda": 16384}


def prefill_budget(device: Any) -> int:
    """:data:`PREFILL_TOKENS` for ``device`` (a torch.device or its name)."""
    return PREFILL_TOKENS.get(getattr(device, "type", str(device)), PREFILL_TOKENS["cpu"])


#: A prompt joins an admission group only while left-padding adds at most this fraction to
#: the group's prefill (padding slots are computed like tokens).
MAX_PAD_FRACTION = 0.125


def admission_group(queue: deque[tuple[int, list[int]]], free: int, budget: int,
                    skip: int = 0) -> list[tuple[int, list[int]]]:
    """Pop the next prompts for ``free`` rows: at least one, and more while the left-padded
    group stays within ``budget`` tokens and its padding within :data:`MAX_PAD_FRACTION`
    (``skip``: leading tokens already cached, not prefilled)."""
    group: list[tuple[int, list[int]]] = []
    width = real = 0
    while queue and len(group) < free:
        n = max(0, len(queue[0][1]) - skip)
        w = max(width, n)
        padded = w * (len(group) + 1)
        if group and (padded > budget or padded > (real + n) * (1 + MAX_PAD_FRACTION)):
            break
        group.append(queue.popleft())
        width, real = w, real + n
    return group

ProgressFn = Callable[..., None]
"""``progress(advance, *, total=None, description=None, eta_s=None)`` in output tokens (see golden_al.cli._common).

Engines call ``progress(0, total=len(prompts) * max_tokens)`` first, then ``progress(n)``
with the tokens each step emitted; a request that ends before its budget advances by the
budget it did not use, so the bar ends exactly at its total. ``description`` says how many
requests are decoding and queued (after each admission). ``eta_s`` is the time left from the
rates measured so far (:func:`remaining_steps`), not from the token rate, which falls as the
batch empties."""


StepFn = Callable[[int, int, float, float, float], None]
"""``on_step(rows, tokens, wall_s, draft_s, cpu_s)`` after every verify step: the requests it decoded, the tokens it
emitted, its wall time and that of its draft phase (seconds; CUDA is synchronized first so both are real), and the
process's CPU time over it (what the step cost on a machine shared with other jobs, whose wall time it is not)."""


def remaining_steps(left: Sequence[int], queued: int, per_request: int, rows: int) -> int:
    """Verify steps until every request is done, when continuous batching keeps ``rows`` busy.

    ``left``: steps each decoding request still needs; ``queued`` requests of ``per_request``
    steps each take the first row to free up. The answer is the makespan of that schedule,
    so the last request's tail counts in full (the token rate over a full batch would call it
    ``sum / rows``).
    """
    if rows < 1:
        raise ValueError(f"rows must be >= 1, got {rows}")
    import heapq

    slots = [max(0, int(n)) for n in left]
    slots += [0] * max(0, rows - len(slots))
    heapq.heapify(slots)
    for _ in range(max(0, int(queued))):
        heapq.heappush(slots, heapq.heappop(slots) + max(0, int(per_request)))
    return max(slots, default=0)


class _Rates:
    """Seconds per verify step and per prefill token, and tokens per row-step, as measured so far."""

    def __init__(self) -> None:
        self.step_s: float | None = None
        self.prefill_s_per_token: float | None = None
        self.row_steps = 0
        self.tokens = 0
        self.finished_tokens: list[int] = []

    @staticmethod
    def _ema(old: float | None, new: float, weight: float = 0.3) -> float:
        return new if old is None else (1 - weight) * old + weight * new

    def step(self, seconds: float, rows: int, tokens: int) -> None:
        self.step_s = self._ema(self.step_s, seconds)
        self.row_steps += rows
        self.tokens += tokens

    def prefill(self, seconds: float, tokens: int) -> None:
        if tokens > 0:
            self.prefill_s_per_token = self._ema(self.prefill_s_per_token, seconds / tokens)

    def eta_s(self, left_tokens: Sequence[int], queued_prompt_tokens: Sequence[int], max_tokens: int,
              rows: int) -> float | None:
        """The time left, or None until a step and (when prompts wait) a prefill have been timed."""
        if self.step_s is None or not self.row_steps or (queued_prompt_tokens and self.prefill_s_per_token is None):
            return None
        per_step = max(self.tokens / self.row_steps, 1e-9)
        # a queued request is expected to run as long as the finished ones did, at most max_tokens
        expect = (sum(self.finished_tokens) / len(self.finished_tokens)) if self.finished_tokens else max_tokens
        steps = remaining_steps([math.ceil(n / per_step) for n in left_tokens], len(queued_prompt_tokens),
                                math.ceil(min(expect, max_tokens) / per_step), rows)
        prefill = sum(queued_prompt_tokens) * (self.prefill_s_per_token or 0.0)
        return steps * self.step_s + prefill


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
    """Seconds from its admission to the batch (its prefill) until it finished."""

    @property
    def accept_lengths(self) -> list[int]:
        """``L = n + 1`` per verify step (the bonus token counted, units.al_from_counts)."""
        return [n + 1 for n in self.accepted]

    def counts(self) -> StepCounts:
        """Histogram, per-position counts and totals of this request."""
        return counts_from_accept_counts(self.accepted, self.draft_len)


def commit_step(r: RequestOutput, drafts: Sequence[int], n: int, t: int, gamma: int, eos: set[int],
                max_tokens: int) -> None:
    """Commit one verify step of request ``r``: ``n`` of its ``gamma`` ``drafts`` accepted, then the
    target's token ``t``, under the end-of-request rules of :mod:`.accounting` (an accepted
    end-of-sequence draft ends the request, and no bonus follows the budget's last draft). Sets
    ``finish_reason`` when the request ends. Chain and block drafts share it."""
    accepted = [int(v) for v in drafts[:n]]
    stop_at = next((j for j, v in enumerate(accepted) if v in eos), None)
    r.drafted.append(int(gamma))
    if stop_at is not None:  # an accepted end-of-sequence draft: no bonus follows
        r.accepted.append(stop_at + 1)
        r.output_token_ids.extend(accepted[: stop_at + 1])
        r.finish_reason = "stop"
    elif n == max_tokens - len(r.output_token_ids):  # every draft up to the budget accepted: no bonus follows
        r.accepted.append(n)
        r.output_token_ids.extend(accepted)
        r.finish_reason = "length"
    else:
        r.accepted.append(n)
        r.output_token_ids.extend([*accepted, t])
        if t in eos:
            r.finish_reason = "stop"
        elif len(r.output_token_ids) >= max_tokens:
            r.finish_reason = "length"


def _choose(logits: torch.Tensor, sampling: SamplingParams, generator: torch.Generator) -> torch.Tensor:
    """The target's own next token from `(B, vocab)` logits."""
    if sampling.greedy:
        return logits.argmax(dim=-1)
    return sample(warp(logits, sampling), generator)


def token_list(t: torch.Tensor) -> list[int]:
    """A 1-D tensor of token ids as Python ints."""
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
    shared_prefix: int | SharedPrefix | None = None,
    on_step: StepFn | None = None,
) -> Iterator[RequestOutput]:
    """Speculative decoding of ``prompts``; yields each request as it finishes.

    Args:
        target, draft: causal LMs sharing one vocabulary (transformers models).
        prompts: token ids per request (already chat-templated).
        draft_len: ``k >= 1``.
        sampling: temperature, top-p and ``max_tokens``.
        eos_token_ids: tokens that end a request (included in its output).
        generator: the only source of randomness (seed it).
        batch_size: requests decoded together (continuous batching: a finished request's
            row goes to the next prompt at once).
        prefill_emits_token: the target's prefill emits the first token, which is not
            a verify step (vLLM, SGLang). False: the first verify step drafts the first
            token too (transformers' assisted generation). See :mod:`.accounting`.
        indices: the index reported for each prompt (default ``0..len-1``).
        progress: output tokens, see :data:`ProgressFn`.
        shared_prefix: leading tokens every prompt shares, prefilled once per model
            (:mod:`.prefix`; None: the longest such prefix of ``prompts``, 0: none; or a
            :class:`.SharedPrefix` whose caches are reused).
        on_step: called after every verify step (:data:`StepFn`).
    """
    k = int(draft_len)
    if k < 1:
        raise ValueError(f"draft_len must be >= 1, got {k}")
    idx = list(range(len(prompts))) if indices is None else list(indices)
    queue = deque((idx[i], [int(t) for t in prompts[i]]) for i in range(len(prompts)))
    if progress is not None:
        progress(0, total=len(prompts) * sampling.max_tokens)
    prefix = shared_prefix if isinstance(shared_prefix, SharedPrefix) else SharedPrefix(prompts, shared_prefix)
    with torch.inference_mode():
        yield from _LiveBatch(target, draft, k, sampling, {int(e) for e in eos_token_ids}, generator,
                              prefill_emits_token, max(1, int(batch_size)), progress, prefix, on_step).run(queue)


class _LiveBatch:
    """The rows decoding together: their requests, both caches and what each model sees next."""

    def __init__(self, target: Any, draft: Any, k: int, sampling: SamplingParams, eos: set[int],
                 generator: torch.Generator, prefill_emits_token: bool, batch_size: int,
                 progress: ProgressFn | None, prefix: SharedPrefix, on_step: StepFn | None = None) -> None:
        self.target, self.draft, self.k, self.sampling, self.eos = target, draft, k, sampling, eos
        self.prefix = prefix
        self.generator, self.prefill_emits_token = generator, prefill_emits_token
        self.batch_size, self.progress = batch_size, progress
        self.tkv, self.dkv = BatchedKV(target, 0), BatchedKV(draft, 0)
        self.rows: list[RequestOutput] = []
        self.started: list[float] = []
        self.pending_t: list[list[int]] = []
        self.pending_d: list[list[int]] = []
        self.rates = _Rates()
        self.queue: deque[tuple[int, list[int]]] = deque()
        self.on_step, self.draft_s = on_step, 0.0

    def _advance(self, n: int) -> None:
        if self.progress is not None and n:
            self.progress(n)

    def _eta(self) -> None:
        if self.progress is None:
            return
        left = [self.sampling.max_tokens - len(r.output_token_ids) for r in self.rows]
        queued = [max(0, len(p) - len(self.prefix)) for _, p in self.queue]
        eta = self.rates.eta_s(left, queued, self.sampling.max_tokens, self.batch_size)
        if eta is not None:
            self.progress(0, eta_s=eta)

    def _status(self, queued: int) -> None:
        if self.progress is not None:
            self.progress(0, description=f"{len(self.rows)} decoding, {queued} queued")

    def _finish_rules(self, r: RequestOutput, last: int) -> None:
        if last in self.eos:
            r.finish_reason = "stop"
        elif len(r.output_token_ids) >= self.sampling.max_tokens:
            r.finish_reason = "length"

    def admit(self, group: list[tuple[int, list[int]]]) -> None:
        """Prefill a group of prompts together (left-padded) and append them to the batch."""
        new = [RequestOutput(index=i, prompt_token_ids=p, draft_len=self.k) for i, p in group]
        started = time.perf_counter()
        tkv, dkv = self.prefix.cache(self.target, len(new)), self.prefix.cache(self.draft, len(new))
        if self.prefill_emits_token:
            rows = [self.prefix.rest(r.prompt_token_ids) for r in new]
            logits = _prefill(tkv, rows)
            assert logits is not None
            _prefill(dkv, rows)
            ys = token_list(_choose(logits, self.sampling, self.generator))
            for r, y in zip(new, ys, strict=True):
                r.output_token_ids.append(y)
                self._finish_rules(r, y)
            pending = [[y] for y in ys]
            self._advance(len(new))
        else:
            rows = [self.prefix.rest(r.prompt_token_ids)[:-1] for r in new]
            _prefill(tkv, rows)
            _prefill(dkv, rows)
            pending = [[r.prompt_token_ids[-1]] for r in new]
        self.tkv.extend(tkv)
        self.dkv.extend(dkv)
        now = time.perf_counter()
        self.rates.prefill(now - started, sum(len(self.prefix.rest(r.prompt_token_ids)) for r in new))
        self.rows.extend(new)
        self.started.extend(now for _ in new)
        self.pending_t.extend(list(p) for p in pending)
        self.pending_d.extend(list(p) for p in pending)

    def retire(self) -> Iterator[RequestOutput]:
        """Yield finished rows and drop them from both caches."""
        keep = [row for row, r in enumerate(self.rows) if not r.finish_reason]
        if len(keep) == len(self.rows):
            return
        now = time.perf_counter()
        done = [(self.rows[row], self.started[row]) for row in range(len(self.rows)) if row not in set(keep)]
        if keep:
            sel = torch.tensor(keep, dtype=torch.long, device=self.tkv.device)
            self.tkv.select(sel)
            self.dkv.select(sel)
        else:
            self.tkv, self.dkv = BatchedKV(self.target, 0), BatchedKV(self.draft, 0)
        self.rows = [self.rows[row] for row in keep]
        self.started = [self.started[row] for row in keep]
        self.pending_t = [self.pending_t[row] for row in keep]
        self.pending_d = [self.pending_d[row] for row in keep]
        for r, t0 in done:
            r.wall_s = now - t0
            self.rates.finished_tokens.append(len(r.output_token_ids))
            self._advance(self.sampling.max_tokens - len(r.output_token_ids))
            yield r

    def run(self, queue: deque[tuple[int, list[int]]]) -> Iterator[RequestOutput]:
        self.queue = queue
        while True:
            budget = prefill_budget(self.tkv.device)
            while queue and len(self.rows) < self.batch_size:
                self.admit(admission_group(queue, self.batch_size - len(self.rows), budget, len(self.prefix)))
                self._status(len(queue))
                yield from self.retire()
            if not self.rows:
                return
            started, cpu, rows = time.perf_counter(), time.process_time(), len(self.rows)
            emitted = self.step()
            self._sync()
            self.rates.step(wall := time.perf_counter() - started, rows, emitted)
            if self.on_step is not None:
                self.on_step(rows, emitted, wall, self.draft_s, time.process_time() - cpu)
            yield from self.retire()
            self._eta()
            if self.rows:
                self.tkv.maybe_compact()
                self.dkv.maybe_compact()

    def _sync(self) -> None:
        """Wait for the device when steps are timed (CUDA runs asynchronously; the CPU does not)."""
        if self.on_step is not None and self.tkv.device.type == "cuda":
            torch.cuda.synchronize(self.tkv.device)

    def step(self) -> int:
        """One verify step of every row; returns the tokens it emitted."""
        started = time.perf_counter()
        k, sampling, generator, eos = self.k, self.sampling, self.generator, self.eos
        tkv, dkv = self.tkv, self.dkv
        M = sampling.max_tokens
        B = len(self.rows)
        left = [M - len(r.output_token_ids) for r in self.rows]
        gamma_eff = torch.tensor([min(k, m) for m in left], dtype=torch.long, device=tkv.device)

        # 1. the draft proposes k tokens autoregressively (rows with gamma_eff < k ignore the rest)
        ids, valid = left_pad(self.pending_d, device=dkv.device)
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
        self._sync()
        self.draft_s = time.perf_counter() - started

        # 2. the target scores pending token + k drafts in one forward pass
        last = torch.tensor([p[-1] for p in self.pending_t], dtype=torch.long, device=tkv.device)[:, None]
        verify_ids = torch.cat([last, x], dim=1)
        p_logits = tkv.forward(verify_ids, torch.ones_like(verify_ids, dtype=torch.bool))  # (B, k+1, V)

        # 3. verification
        if sampling.greedy:
            ver = greedy_verification(x, p_logits, gamma_eff)
        else:
            ver = speculative_sampling(x, torch.stack(qs, dim=1), warp(p_logits, sampling), gamma_eff, generator)
        n_list = token_list(ver.n)
        t_list = token_list(ver.t)
        x_rows = x.tolist()

        # 4. commit tokens, apply the end-of-request rules (accounting.py)
        emitted = 0
        for row, r in enumerate(self.rows):
            before = len(r.output_token_ids)
            commit_step(r, x_rows[row], n_list[row], t_list[row], int(gamma_eff[row]), eos, M)
            emitted += len(r.output_token_ids) - before
        self._advance(emitted)

        # 5. drop rejected drafts from both caches; set what each model must see next
        tkv.drop_last(k - ver.n)
        dkv.drop_last((k - 1) - ver.n.clamp(max=k - 1))
        self.pending_t = [[t] for t in t_list]
        self.pending_d = [[x_rows[row][k - 1], t_list[row]] if n_list[row] == k else [t_list[row]]
                          for row in range(B)]
        return emitted
