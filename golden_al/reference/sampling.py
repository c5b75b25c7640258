"""Sampling and verification for chain speculative decoding.

NOTE: unless otherwise stated, the variable names match those in the papers
(Leviathan et al. 2023, "Fast Inference from Transformers via Speculative
Decoding", Algorithm 1; Chen et al. 2023, "Accelerating Large Language Model
Decoding with Speculative Sampling", Algorithm 2): ``gamma`` drafts ``x_i``
sampled from the draft distributions ``q_i``; the target distributions ``p_i``
(``i = 1..gamma+1``); uniforms ``r_i``; ``n`` accepted drafts; the next token
``t`` drawn from ``norm(max(0, p_{n+1} - q_{n+1}))`` after a rejection and from
``p_{gamma+1}`` when every draft is accepted (the bonus token). Tensors carry a
leading batch dimension; ``gamma`` may differ per row (``gamma_eff``), since
drafts beyond a request's token budget are not proposed.

``p`` and ``q`` are both taken after the same warping: temperature, then top-p
(:func:`warp`). Temperature 0 means greedy: ``x_i = argmax q_i``, a draft is
accepted when it equals ``argmax p_i``, and ``t = argmax p_{n+1}``.
Every random draw comes from the explicit ``torch.Generator`` passed in.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = [
    "SamplingParams",
    "greedy_verification",
    "sample",
    "speculative_sampling",
    "warp",
]


@dataclass(frozen=True)
class SamplingParams:
    """Sampling settings: ``temperature`` 0 is greedy; ``top_p`` in (0, 1]."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256

    def __post_init__(self) -> None:
        if not self.temperature >= 0.0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


def warp(logits: torch.Tensor, params: SamplingParams) -> torch.Tensor:
    """Probabilities after temperature and top-p, in float32 (or float64 for float64 logits).

    Top-p keeps, in order of decreasing probability, every token whose preceding
    cumulative probability is below ``top_p`` (so at least the top token), then
    renormalises. ``logits``: `(..., vocab)`. Not for greedy (temperature 0).
    """
    if params.greedy:
        raise ValueError("warp() is for sampling; greedy decoding uses argmax")
    dtype = torch.float64 if logits.dtype == torch.float64 else torch.float32
    probs = torch.softmax(logits.to(dtype) / params.temperature, dim=-1)
    if params.top_p < 1.0:
        sorted_probs, order = torch.sort(probs, dim=-1, descending=True)
        before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs
        keep_sorted = before < params.top_p
        keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
        probs = torch.where(keep, probs, torch.zeros((), dtype=dtype))
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs


def sample(probs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One token per row of `(B, vocab)` probabilities -> `(B,)` int64."""
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


@dataclass(frozen=True)
class Verification:
    """Result of verifying one step for every row."""

    n: torch.Tensor
    """`(B,)` accepted drafts per row."""
    t: torch.Tensor
    """`(B,)` the target's next token: correction after a rejection, else the bonus."""


def greedy_verification(x: torch.Tensor, p_logits: torch.Tensor, gamma_eff: torch.Tensor) -> Verification:
    """Greedy verification: accept drafts while they equal the target's argmax.

    Args:
        x: `(B, gamma)` draft tokens.
        p_logits: `(B, gamma + 1, vocab)` target logits at the ``gamma + 1`` positions.
        gamma_eff: `(B,)` drafts actually proposed per row (``<= gamma``).
    """
    gamma = x.shape[1]
    target_tokens = p_logits.argmax(dim=-1)  # (B, gamma + 1)
    idx = torch.arange(gamma, device=x.device)
    ok = (x == target_tokens[:, :gamma]) & (idx[None, :] < gamma_eff[:, None])
    n = ok.long().cumprod(dim=-1).sum(dim=-1)
    t = target_tokens.gather(1, n[:, None]).squeeze(1)
    return Verification(n=n, t=t)


def speculative_sampling(
    x: torch.Tensor,
    q: torch.Tensor,
    p: torch.Tensor,
    gamma_eff: torch.Tensor,
    generator: torch.Generator,
) -> Verification:
    """Standard rejection sampling (Leviathan et al. Algorithm 1; Chen et al. Algorithm 2).

    Accept ``x_i`` with probability ``min(1, p_i(x_i) / q_i(x_i))``; at the first
    rejection sample ``t ~ norm(max(0, p_i - q_i))``; if all ``gamma_eff`` drafts
    are accepted, sample the bonus ``t ~ p_{gamma_eff + 1}``. The output then
    follows ``p`` exactly.

    Args:
        x: `(B, gamma)` drafts, ``x_i ~ q_i``.
        q: `(B, gamma, vocab)` warped draft distributions.
        p: `(B, gamma + 1, vocab)` warped target distributions.
        gamma_eff: `(B,)` drafts actually proposed per row.
        generator: source of the uniforms ``r_i`` and of ``t``.
    """
    B, gamma = x.shape
    r = torch.rand((B, gamma), generator=generator, dtype=p.dtype, device=p.device)
    p_x = p[:, :gamma].gather(-1, x[..., None]).squeeze(-1)
    q_x = q.gather(-1, x[..., None]).squeeze(-1)
    idx = torch.arange(gamma, device=x.device)
    # r_i < p_i(x_i) / q_i(x_i), written without the division (q_i(x_i) > 0 since x_i ~ q_i)
    accepted = (r * q_x < p_x) & (idx[None, :] < gamma_eff[:, None])
    n = accepted.long().cumprod(dim=-1).sum(dim=-1)
    rows = torch.arange(B, device=x.device)
    p_next = p[rows, n]  # (B, vocab): p_{n+1}
    rejected = n < gamma_eff
    if bool(rejected.any()):
        q_next = q[rows, n.clamp(max=gamma - 1)]
        residual = torch.clamp(p_next - q_next, min=0.0)
        mass = residual.sum(dim=-1, keepdim=True)
        # mass is 0 only when p == q at that position, where a rejection has probability 0;
        # fall back to p there so rounding can never make multinomial fail.
        residual = torch.where(mass > 0, residual / mass.clamp(min=torch.finfo(p.dtype).tiny), p_next)
        dist = torch.where(rejected[:, None], residual, p_next)
    else:
        dist = p_next
    t = sample(dist, generator)
    return Verification(n=n, t=t)
