"""DFlash and DFlash2 block drafts in plain torch: the module, its context cache, its weights.

Our own implementation of the published architecture (z-lab/dflash ``dflash/model.py``
0.1.0: ``Qwen3DFlashAttention``, ``Qwen3DFlashDecoderLayer``, ``DFlashDraftModel``,
``GroupedDynamicCausalConv``, ``CandidateSelector``; SGLang
``python/sglang/srt/models/dflash.py``), with the parameter names of its checkpoints so
published z-lab weights load as they are:

* N Qwen3-style layers. The draft has **no embedding and no LM head**: the block is embedded
  with the target's input embedding (times ``input_embedding_scale``) and the drafts are read
  through the target's LM head (times ``output_multiplier``, soft-capped when configured).
* Context: the target's hidden states after layers ``target_layer_ids`` (``hidden_states[i + 1]``),
  concatenated, projected by ``fc`` and normed by ``hidden_norm``. Every layer projects that
  context with its own ``k_proj``/``v_proj`` into keys and values in front of the block's own;
  :class:`BatchedContext` keeps them for every verified position of every row, so a step
  computes only the block and the positions verified since the last step.
* The block ``[last verified token, mask x k]`` attends to itself without a causal mask in
  full-attention layers; sliding layers are causal within their window.
* DFlash2 adds a grouped dynamic causal convolution (over the block's positions) before the
  attention and before the MLP of every layer, and a candidate selector that walks the block
  left to right over each position's top ``selector_top_k`` logits, scoring a candidate by its
  logit plus a low-rank predecessor/successor codebook term.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from golden_al.models.block_config import (
    BlockDraftConfig,
    BlockDraftConfigError,
    read_block_draft_config,
)
from golden_al.reference.sampling import sample

__all__ = ["BatchedContext", "BlockDraft", "load_block_draft", "output_head", "save_block_draft", "target_embedding"]


def target_embedding(target: Any) -> torch.Tensor:
    """The target's input embedding matrix `(vocab, H)` (the draft embeds with it)."""
    return target.get_input_embeddings().weight


def output_head(target: Any) -> nn.Module:
    """The target's LM head (the draft reads its drafts through it)."""
    head = getattr(target, "lm_head", None)
    return head if head is not None else target.get_output_embeddings()


class _RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(dtype)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class _Rotary(nn.Module):
    """Plain RoPE (``rope_type: default``): cos and sin `(T, head_dim)` for absolute positions."""

    inv_freq: torch.Tensor

    def __init__(self, head_dim: int, theta: float) -> None:
        super().__init__()
        inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        self.register_buffer("inv_freq", inv, persistent=False)

    def forward(self, positions: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """``positions`` `(T,)` gives `(T, d)`; `(A, T)` (training: one row per block) gives `(A, 1, T, d)`."""
        freqs = positions.float()[..., None] * self.inv_freq.float()
        if freqs.dim() == 3:
            freqs = freqs[:, None]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype), emb.sin().to(dtype)


def _rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """``x`` `(B, heads, T, d)` rotated at the positions of ``cos``/``sin`` `(T, d)`."""
    return x * cos + _rotate_half(x) * sin


class _DynamicConv(nn.Module):
    """DFlash2's grouped dynamic causal convolution over the block's positions.

    ``kernel_projection`` makes, per position, two sets of ``kernel_size`` taps per channel
    group (one used before the wrapped sublayer, one after); ``base_kernel`` `(2, kernel, H)`
    adds static per-channel taps. Tap ``j`` reads the position ``j`` steps back (zero before
    the block's first position).
    """

    def __init__(self, hidden: int, kernel: int, group: int) -> None:
        super().__init__()
        self.kernel, self.group = kernel, group
        self.base_kernel = nn.Parameter(torch.zeros(2, kernel, hidden))
        self.kernel_projection = nn.Linear(hidden, 2 * kernel * (hidden // group), bias=False)

    def _convolve(self, x: torch.Tensor, taps: torch.Tensor, base: torch.Tensor) -> torch.Tensor:
        B, L, H = x.shape
        G = H // self.group
        xg = x.view(B, L, G, self.group)
        out = torch.zeros_like(xg)
        for j in range(self.kernel):
            shifted = xg if j == 0 else F.pad(xg[:, :-j], (0, 0, 0, 0, j, 0))
            out = out + base[j].view(1, 1, G, self.group).to(x.dtype) * shifted
            out = out + taps[:, :, j].view(B, L, G, 1) * shifted
        return out.view(B, L, H)

    def before(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        B, L, H = x.shape
        taps = self.kernel_projection(x).view(B, L, 2, self.kernel, H // self.group)
        return self._convolve(x, taps[:, :, 0], self.base_kernel[0]), taps[:, :, 1]

    def after(self, x: torch.Tensor, taps: torch.Tensor) -> torch.Tensor:
        return self._convolve(x, taps, self.base_kernel[1])


class _Attention(nn.Module):
    def __init__(self, cfg: BlockDraftConfig, index: int) -> None:
        super().__init__()
        H, d = cfg.hidden_size, cfg.head_dim
        self.heads, self.kv_heads, self.head_dim = cfg.num_attention_heads, cfg.num_key_value_heads, d
        self.q_proj = nn.Linear(H, self.heads * d, bias=cfg.attention_bias)
        self.k_proj = nn.Linear(H, self.kv_heads * d, bias=cfg.attention_bias)
        self.v_proj = nn.Linear(H, self.kv_heads * d, bias=cfg.attention_bias)
        self.o_proj = nn.Linear(self.heads * d, H, bias=cfg.attention_bias)
        self.q_norm = _RMSNorm(d, cfg.rms_norm_eps)
        self.k_norm = _RMSNorm(d, cfg.rms_norm_eps)
        sliding = cfg.layer_type(index) == "sliding_attention"
        self.causal = sliding if cfg.is_causal is None else cfg.is_causal
        self.window = cfg.sliding_window if sliding else None

    def keys_values(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Normed, rotated keys and values `(B, kv_heads, T, d)` of ``x`` `(B, T, H)`."""
        B, T, _ = x.shape
        k = self.k_norm(self.k_proj(x).view(B, T, self.kv_heads, self.head_dim)).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
        return _rope(k, cos, sin), v

    def forward(self, x: torch.Tensor, ctx_k: torch.Tensor, ctx_v: torch.Tensor, cos: torch.Tensor,
                sin: torch.Tensor, key_visible: torch.Tensor | None = None) -> torch.Tensor:
        """``key_visible`` `(B, S_ctx + L)`: which context and block positions each row may see (a batch
        of rows with different contexts and blocks, or training; None: all)."""
        B, L, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(B, L, self.heads, self.head_dim)).transpose(1, 2)
        q = _rope(q, cos, sin)
        k_blk, v_blk = self.keys_values(x, cos, sin)
        k = torch.cat([ctx_k, k_blk], dim=2)
        v = torch.cat([ctx_v, v_blk], dim=2)
        if self.kv_heads != self.heads:
            rep = self.heads // self.kv_heads
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        mask = None
        if self.causal or self.window is not None:
            S = k.shape[2]
            qpos = (S - L + torch.arange(L, device=x.device))[:, None]
            kpos = torch.arange(S, device=x.device)[None, :]
            mask = torch.ones(L, S, dtype=torch.bool, device=x.device)
            if self.causal:
                mask &= kpos <= qpos
            if self.window is not None:
                mask &= (qpos - kpos) < self.window
                if not self.causal:
                    mask &= (kpos - qpos) < self.window
        if key_visible is not None:
            rows = key_visible[:, None, None, :]
            mask = rows if mask is None else rows & mask
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=self.head_dim ** -0.5)
        return self.o_proj(out.transpose(1, 2).reshape(B, L, self.heads * self.head_dim))


class _MLP(nn.Module):
    def __init__(self, hidden: int, inner: int) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inner, bias=False)
        self.up_proj = nn.Linear(hidden, inner, bias=False)
        self.down_proj = nn.Linear(inner, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class _Layer(nn.Module):
    def __init__(self, cfg: BlockDraftConfig, index: int) -> None:
        super().__init__()
        self.self_attn = _Attention(cfg, index)
        self.mlp = _MLP(cfg.hidden_size, cfg.intermediate_size)
        self.input_layernorm = _RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = _RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.attention_conv: _DynamicConv | None = None
        self.mlp_conv: _DynamicConv | None = None
        if cfg.algorithm == "dflash2":
            self.attention_conv = _DynamicConv(cfg.hidden_size, cfg.conv_kernel_size, cfg.conv_group_size)
            self.mlp_conv = _DynamicConv(cfg.hidden_size, cfg.conv_kernel_size, cfg.conv_group_size)

    @staticmethod
    def _wrapped(conv: _DynamicConv | None, x: torch.Tensor, sublayer: Any) -> torch.Tensor:
        if conv is None:
            return sublayer(x)
        x, taps = conv.before(x)
        return conv.after(sublayer(x), taps)

    def forward(self, x: torch.Tensor, ctx_k: torch.Tensor, ctx_v: torch.Tensor, cos: torch.Tensor,
                sin: torch.Tensor, key_visible: torch.Tensor | None = None) -> torch.Tensor:
        h = self.input_layernorm(x)
        x = x + self._wrapped(self.attention_conv, h,
                              lambda t: self.self_attn(t, ctx_k, ctx_v, cos, sin, key_visible))
        h = self.post_attention_layernorm(x)
        return x + self._wrapped(self.mlp_conv, h, self.mlp)


class _Selector(nn.Module):
    """DFlash2's candidate selector (parameter names as in z-lab's ``CandidateSelector``)."""

    def __init__(self, cfg: BlockDraftConfig) -> None:
        super().__init__()
        self.top_k = cfg.selector_top_k
        self.predecessor_codebook = nn.Embedding(cfg.vocab_size, cfg.selector_rank)
        self.successor_codebook = nn.Embedding(cfg.vocab_size, cfg.selector_rank)
        self.hidden_projection = nn.Linear(cfg.hidden_size, cfg.selector_rank, bias=False)

    def walk(self, hidden: torch.Tensor, logits: torch.Tensor, anchor: torch.Tensor, temperature: float,
             generator: torch.Generator | None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Drafts `(B, k)` and, when sampling, their full-vocabulary distributions `(B, k, vocab)`."""
        unary, cand = torch.topk(logits, self.top_k, dim=-1)
        proj = self.hidden_projection(hidden)
        prev, path, dists = anchor, [], []
        for j in range(hidden.shape[1]):
            pair = (self.predecessor_codebook(prev) * proj[:, j])[:, None, :] * self.successor_codebook(cand[:, j])
            scores = unary[:, j] + pair.sum(-1)
            if temperature > 0:
                if generator is None:
                    raise ValueError("sampling needs a generator")
                q = torch.softmax(scores.float() / temperature, dim=-1)
                pick = sample(q, generator)
                dists.append(torch.zeros(logits.shape[0], logits.shape[-1], dtype=q.dtype,
                                         device=q.device).scatter(-1, cand[:, j], q))
            else:
                pick = scores.argmax(dim=-1)
            prev = cand[:, j].gather(-1, pick[:, None])[:, 0]
            path.append(prev)
        return torch.stack(path, dim=1), (torch.stack(dists, dim=1) if dists else None)


@dataclass
class BatchedContext:
    """The context cache of a batch of rows: per draft layer, keys and values `(B, kv_heads, T, d)`,
    left-padded, with the valid slots `(B, T)` and each row's next position `(B,)`."""

    keys: list[torch.Tensor]
    values: list[torch.Tensor]
    valid: torch.Tensor
    next_pos: torch.Tensor

    @property
    def rows(self) -> int:
        return int(self.valid.shape[0])

    def select(self, rows: torch.Tensor) -> None:
        """Keep only ``rows`` (finished requests leave the batch); drop columns no row uses."""
        self.keys = [k[rows] for k in self.keys]
        self.values = [v[rows] for v in self.values]
        self.valid, self.next_pos = self.valid[rows], self.next_pos[rows]
        used = self.valid.any(dim=0)
        first = int(torch.nonzero(used).min()) if bool(used.any()) else self.valid.shape[1]
        if first:
            self.keys = [k[:, :, first:] for k in self.keys]
            self.values = [v[:, :, first:] for v in self.values]
            self.valid = self.valid[:, first:]

    def extend(self, other: BatchedContext) -> None:
        """Append ``other``'s rows (a newly prefilled request), left-padding both to one width."""
        if self.rows == 0:
            self.keys, self.values, self.valid, self.next_pos = other.keys, other.values, other.valid, other.next_pos
            return
        W = max(self.valid.shape[1], other.valid.shape[1])

        def pad(x: torch.Tensor, dim: int) -> torch.Tensor:
            n = W - x.shape[dim]
            if n <= 0:
                return x
            shape = list(x.shape)
            shape[dim] = n
            return torch.cat([x.new_zeros(shape), x], dim=dim)

        self.keys = [torch.cat([pad(a, 2), pad(b, 2)]) for a, b in zip(self.keys, other.keys, strict=True)]
        self.values = [torch.cat([pad(a, 2), pad(b, 2)]) for a, b in zip(self.values, other.values, strict=True)]
        self.valid = torch.cat([pad(self.valid, 1), pad(other.valid, 1)])
        self.next_pos = torch.cat([self.next_pos, other.next_pos])


class BlockDraft(nn.Module):
    """A DFlash or DFlash2 draft (parameter names as in z-lab checkpoints)."""

    def __init__(self, cfg: BlockDraftConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.layers = nn.ModuleList([_Layer(cfg, i) for i in range(cfg.num_hidden_layers)])
        self.norm = _RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.fc = nn.Linear(len(cfg.target_layer_ids) * cfg.hidden_size, cfg.hidden_size, bias=False)
        self.hidden_norm = _RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.rotary = _Rotary(cfg.head_dim, cfg.rope_theta)
        self.candidate_selector = _Selector(cfg) if cfg.algorithm == "dflash2" else None

    def blocks(self) -> list[_Layer]:
        """The decoder layers, typed."""
        return [layer for layer in self.layers if isinstance(layer, _Layer)]

    def features(self, hidden_states: Any) -> torch.Tensor:
        """The context features `(B, T, K*H)` from a target forward's ``hidden_states`` tuple."""
        return torch.cat([hidden_states[i + 1] for i in self.cfg.target_layer_ids], dim=-1)

    def new_batch(self, rows: int, device: Any) -> BatchedContext:
        """A :class:`BatchedContext` of ``rows`` rows with no context yet."""
        return BatchedContext(keys=[], values=[], valid=torch.zeros((rows, 0), dtype=torch.bool, device=device),
                              next_pos=torch.zeros(rows, dtype=torch.long, device=device))

    def extend_batch(self, ctx: BatchedContext, features: torch.Tensor, valid: torch.Tensor) -> None:
        """Append each row's valid positions of ``features`` `(B, n, K*H)` (``valid`` `(B, n)`) to the context."""
        pos = ctx.next_pos[:, None] + torch.cumsum(valid.long(), dim=1) - 1
        pos = torch.where(valid, pos, ctx.next_pos[:, None]).clamp(min=0)
        proj = self.hidden_norm(self.fc(features))
        cos, sin = self.rotary(pos, proj.dtype)
        for i, layer in enumerate(self.blocks()):
            k, v = layer.self_attn.keys_values(proj, cos, sin)
            if i < len(ctx.keys):
                ctx.keys[i] = torch.cat([ctx.keys[i], k], dim=2)
                ctx.values[i] = torch.cat([ctx.values[i], v], dim=2)
            else:
                ctx.keys.append(k)
                ctx.values.append(v)
        ctx.valid = torch.cat([ctx.valid, valid], dim=1)
        ctx.next_pos = ctx.next_pos + valid.long().sum(dim=1)

    def block_batch(self, embeddings: torch.Tensor, ctx: BatchedContext, block_valid: torch.Tensor) -> torch.Tensor:
        """The draft's final hidden states `(B, L, H)` for blocks embedded as ``embeddings`` `(B, L, H)`:
        row ``b``'s block is its first ``block_valid[b].sum()`` positions (the rest are padding nobody
        attends to), at the positions right after its own context."""
        L = embeddings.shape[1]
        positions = ctx.next_pos[:, None] + torch.arange(L, device=embeddings.device)[None, :]
        cos, sin = self.rotary(positions, embeddings.dtype)
        visible = torch.cat([ctx.valid, block_valid], dim=1)
        x = embeddings
        for layer, k, v in zip(self.blocks(), ctx.keys, ctx.values, strict=True):
            x = layer(x, k, v, cos, sin, visible)
        return self.norm(x)

    def train_blocks(self, features: torch.Tensor, anchors: torch.Tensor, embeddings: torch.Tensor) -> torch.Tensor:
        """Training forward: many blocks over one sequence's context at once.

        ``features`` `(1, T, K*H)`: the target context of the sequence's positions 0..T-1;
        ``anchors`` `(A,)`: each block's first position ``a``; ``embeddings`` `(A, L, H)`: the
        embedded blocks ``[y_a, mask x (L-1)]``. Block ``j`` sees the context of positions ``< a_j``
        and itself, exactly as at inference. Returns the final hidden states `(A, L, H)`.
        """
        A, L, _ = embeddings.shape
        T = features.shape[1]
        ctx = self.hidden_norm(self.fc(features))
        cos_c, sin_c = self.rotary(torch.arange(T, device=ctx.device), ctx.dtype)
        positions = anchors[:, None] + torch.arange(L, device=ctx.device)[None, :]
        cos_b, sin_b = self.rotary(positions, embeddings.dtype)
        visible = torch.cat([torch.arange(T, device=ctx.device)[None, :] < anchors[:, None],
                             torch.ones(A, L, dtype=torch.bool, device=ctx.device)], dim=1)
        x = embeddings
        for layer in self.blocks():
            k, v = layer.self_attn.keys_values(ctx, cos_c, sin_c)
            x = layer(x, k.expand(A, -1, -1, -1), v.expand(A, -1, -1, -1), cos_b, sin_b, visible)
        return self.norm(x)

    def logits(self, hidden: torch.Tensor, head: nn.Module) -> torch.Tensor:
        """Draft logits through the target's LM head (``output_multiplier``, soft-capping)."""
        out = head(hidden) * self.cfg.output_multiplier
        cap = self.cfg.final_logit_softcapping
        return torch.tanh(out / cap) * cap if cap else out

    def embed(self, target: Any, token_ids: torch.Tensor) -> torch.Tensor:
        return F.embedding(token_ids, target_embedding(target)) * self.cfg.input_embedding_scale


# ------------------------------------------------------------------------------------------ weights
_SELECTOR_ALIASES = {f"candidate_selector.{n}": f"candidate_selector.{n}.weight"
                     for n in ("predecessor_codebook", "successor_codebook")}
#: Tensors a speculators checkpoint may hold beside the draft's own (speculators 0.9.0
#: ``speculators/models/dflash/core.py``): the verifier's norm and head (training only), the target's
#: embedding, a full-vocabulary copy of the target's LM head, and the vocabulary maps.
_SPECULATORS_ASIDE = frozenset({"verifier_norm.weight", "verifier_lm_head.weight", "embed_tokens.weight",
                                "lm_head.weight", "t2d", "d2t"})


_MAX_INDEX_BYTES = 16 << 20


def _read_weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    from golden_al import safeio

    index = folder / "model.safetensors.index.json"
    if index.is_file():
        raw = safeio.read_bytes(index, max_bytes=_MAX_INDEX_BYTES)  # bounded, regular files only
        try:
            files = sorted(set(json.loads(raw.decode("utf-8"))["weight_map"].values()))
        except (ValueError, KeyError, AttributeError) as exc:
            raise BlockDraftConfigError(f"cannot read the safetensors index: {exc}", path=index) from None
    else:
        files = sorted(p.name for p in folder.glob("*.safetensors"))
    if not files:
        raise BlockDraftConfigError("no *.safetensors weights in the draft folder", path=folder)
    state: dict[str, torch.Tensor] = {}
    for name in files:
        try:
            state.update(load_file(str(folder / name)))
        except Exception as exc:  # safetensors raises its own error types for a bad header
            raise BlockDraftConfigError(f"cannot read weights: {exc}", path=folder / name) from None
    if state and all(k.startswith("model.") for k in state):
        state = {k[len("model."):]: v for k, v in state.items()}
    return {_SELECTOR_ALIASES.get(k, k): v for k, v in state.items()}


def load_block_draft(path: str | Path, target: Any) -> BlockDraft:
    """Load the z-lab-format block draft in folder ``path`` for ``target`` (same device and dtype).

    Every parameter must be present with its shape; a missing, extra or misshapen tensor is a
    :class:`BlockDraftConfigError` naming it.
    """
    cfg = read_block_draft_config(path)
    tcfg = target.config
    n_layers = getattr(tcfg, "num_hidden_layers", None) or tcfg.get_text_config().num_hidden_layers
    emb = target_embedding(target)
    cfg.check_target(num_target_layers=int(n_layers), target_hidden_size=int(emb.shape[1]),
                     target_vocab_size=int(emb.shape[0]))
    draft = BlockDraft(cfg)
    state = _read_weights(Path(path))
    if cfg.layout == "speculators":
        state = {k: v for k, v in state.items() if k not in _SPECULATORS_ASIDE}
    own = draft.state_dict()
    missing = sorted(set(own) - set(state))
    extra = sorted(set(state) - set(own))
    if missing or extra:
        parts = ([f"missing {len(missing)} tensor(s) e.g. {missing[:3]}"] if missing else []) + (
            [f"{len(extra)} unexpected e.g. {extra[:3]}"] if extra else [])
        raise BlockDraftConfigError("the weights do not fit the config: " + "; ".join(parts), path=path,
                                    hint="the folder should hold the draft's own config.json and weights")
    for name, tensor in own.items():
        if tuple(state[name].shape) != tuple(tensor.shape):
            raise BlockDraftConfigError(f"tensor {name} has shape {tuple(state[name].shape)}; the config makes it "
                                        f"{tuple(tensor.shape)}", path=path)
    draft.load_state_dict(state, strict=True)
    return draft.to(device=emb.device, dtype=emb.dtype).eval()


def save_block_draft(draft: BlockDraft, folder: str | Path, *, num_target_layers: int) -> Path:
    """Write ``draft`` in the z-lab layout (``config.json`` + ``model.safetensors``); returns the folder."""
    from safetensors.torch import save_file

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(draft.cfg.zlab_json(num_target_layers=num_target_layers),
                                                indent=2) + "\n", encoding="utf-8")
    state = {k: v.detach().contiguous().cpu() for k, v in draft.state_dict().items()}
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    return out
