"""A batched KV cache whose rows advance by different amounts.

Rows of one batch accept different numbers of drafts, so after a verify step
their caches would need different lengths. Instead of one cache per request,
:class:`BatchedKV` keeps one transformers ``DynamicCache`` of shape
``(B, heads, T, head_dim)`` per layer plus a boolean ``valid`` map ``(B, T)``:
slots holding rejected drafts or padding are marked invalid and masked out of
attention with an explicit 4D mask, and every token gets an explicit position
id (its index among the row's valid tokens). Columns that are invalid in every
row are cropped from the end (``DynamicCache.crop``); when holes pile up the
cache is compacted (valid slots gathered to the right, left padding).
:meth:`BatchedKV.extend` appends the rows of another cache (a newly prefilled
request, for continuous batching): the shorter side is left-padded with
invalid slots so both have one length, then rows are concatenated.

A padding slot attends to itself (and to its row's valid past), so no query row
is ever fully masked and nothing becomes NaN.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any

import torch

__all__ = ["BatchedKV", "left_pad", "new_cache"]


def new_cache(model: Any) -> Any:
    """An empty ``DynamicCache`` for ``model``."""
    from transformers import DynamicCache

    try:
        return DynamicCache(config=model.config)
    except TypeError:  # older transformers without the config argument
        return DynamicCache()


def _cache_kwarg(model: Any) -> str:
    """``cache`` (transformers >= 5.x) or ``past_key_values`` (older)."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _layers(cache: Any) -> list[Any]:
    layers = getattr(cache, "layers", None)
    if layers is None:
        raise TypeError("this transformers version's DynamicCache has no .layers; need transformers >= 4.56")
    return list(layers)


class BatchedKV:
    """One model's KV cache for a batch of rows, with per-row validity and positions.

    Args:
        model: a causal LM (transformers ``PreTrainedModel``).
        batch_size: rows.
    """

    def __init__(self, model: Any, batch_size: int) -> None:
        self.model = model
        self.cache = new_cache(model)
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        self.valid = torch.zeros((batch_size, 0), dtype=torch.bool, device=self.device)
        self.next_pos = torch.zeros(batch_size, dtype=torch.long, device=self.device)
        self._cache_kw = _cache_kwarg(model)

    @property
    def batch_size(self) -> int:
        return int(self.valid.shape[0])

    @property
    def length(self) -> int:
        return int(self.valid.shape[1])

    def forward(self, input_ids: torch.Tensor, input_valid: torch.Tensor, *, logits_to_keep: int = 0) -> torch.Tensor:
        """Feed `(B, n)` tokens (invalid slots are padding) and return logits.

        Returns `(B, n, vocab)` logits, or the last ``logits_to_keep`` positions when > 0.
        """
        return self.forward_output(input_ids, input_valid, logits_to_keep=logits_to_keep).logits

    def forward_output(self, input_ids: torch.Tensor, input_valid: torch.Tensor, *, logits_to_keep: int = 0,
                       output_hidden_states: bool = False) -> Any:
        """:meth:`forward`, returning the model's whole output (``hidden_states`` when asked: block drafts)."""
        B, n = input_ids.shape
        T = self.length
        # positions: the index of each token among its row's valid tokens
        pos = self.next_pos[:, None] + torch.cumsum(input_valid.long(), dim=1) - 1
        pos = torch.where(input_valid, pos, self.next_pos[:, None]).clamp(min=0)
        # 4D additive mask (B, 1, n, T + n)
        past = self.valid[:, None, :].expand(B, n, T)
        causal = torch.ones((n, n), dtype=torch.bool, device=self.device).tril()
        new = causal[None] & input_valid[:, None, :]
        new = new | torch.eye(n, dtype=torch.bool, device=self.device)[None]
        allowed = torch.cat([past, new], dim=2)[:, None]
        mask = torch.zeros(allowed.shape, dtype=self.dtype, device=self.device)
        mask.masked_fill_(~allowed, torch.finfo(self.dtype).min)
        kwargs: dict[str, Any] = {
            "input_ids": input_ids,
            "attention_mask": mask,
            "position_ids": pos,
            self._cache_kw: self.cache,
            "use_cache": True,
        }
        if logits_to_keep:
            kwargs["logits_to_keep"] = logits_to_keep
        if output_hidden_states:
            kwargs["output_hidden_states"] = True
        out = self.model(**kwargs)
        self.valid = torch.cat([self.valid, input_valid], dim=1)
        self.next_pos = self.next_pos + input_valid.long().sum(dim=1)
        return out

    def fork(self, rows: int) -> BatchedKV:
        """A new cache of ``rows`` rows, each a copy of this one-row cache (a shared prompt prefix)."""
        if self.batch_size != 1:
            raise ValueError(f"fork() copies a one-row cache; this one has {self.batch_size} rows")
        out = BatchedKV(self.model, 0)
        out.cache = copy.deepcopy(self.cache)
        if self.length and rows != 1:
            out.cache.batch_repeat_interleave(rows)
        out.valid = self.valid.repeat(rows, 1)
        out.next_pos = self.next_pos.repeat(rows)
        return out

    def drop_last(self, count: torch.Tensor) -> None:
        """Mark the last ``count[b]`` valid tokens of each row invalid (rejected drafts)."""
        if not bool((count > 0).any()):
            return
        from_right = self.valid.flip(1).long().cumsum(1).flip(1)  # valid slots at or after j
        drop = self.valid & (from_right <= count[:, None])
        self.valid = self.valid & ~drop
        self.next_pos = self.next_pos - count
        self._crop_tail()

    def _crop_tail(self) -> None:
        any_valid = self.valid.any(dim=0)
        if not bool(any_valid.any()):
            keep = 0
        else:
            keep = int(torch.nonzero(any_valid).max()) + 1
        remove = self.length - keep
        if remove > 0:
            self.cache.crop(-remove)
            self.valid = self.valid[:, :keep]

    def select(self, rows: torch.Tensor) -> None:
        """Keep only ``rows`` (indices into the batch), e.g. drop finished requests."""
        self.cache.batch_select_indices(rows)
        self.valid = self.valid[rows]
        self.next_pos = self.next_pos[rows]
        self._crop_tail()
        self.maybe_compact()

    def extend(self, other: BatchedKV) -> None:
        """Append ``other``'s rows (same model) after this cache's rows, e.g. a newly prefilled request.

        Both sides are left-padded with invalid slots to one length; positions are per row,
        so no row sees a change.
        """
        if other.batch_size == 0:
            return
        if self.batch_size == 0:
            self.cache, self.valid, self.next_pos = other.cache, other.valid, other.next_pos
            return
        T, U = self.length, other.length
        W = max(T, U)
        for la, lb in zip(_layers(self.cache), _layers(other.cache), strict=True):
            ka, va = _kv(la, self.batch_size, lb)
            kb, vb = _kv(lb, other.batch_size, la)
            if ka is None or kb is None or va is None or vb is None:  # neither side has a token in this layer yet
                continue
            la.keys = torch.cat([_left_pad_time(ka, W - T), _left_pad_time(kb, W - U)], dim=0)
            la.values = torch.cat([_left_pad_time(va, W - T), _left_pad_time(vb, W - U)], dim=0)
            if not getattr(la, "is_initialized", True):
                la.device, la.is_initialized = la.keys.device, True
        pad = torch.zeros
        self.valid = torch.cat([
            torch.cat([pad((self.batch_size, W - T), dtype=torch.bool, device=self.device), self.valid], dim=1),
            torch.cat([pad((other.batch_size, W - U), dtype=torch.bool, device=self.device), other.valid], dim=1),
        ], dim=0)
        self.next_pos = torch.cat([self.next_pos, other.next_pos])

    def maybe_compact(self, max_hole_fraction: float = 0.5) -> None:
        """Gather valid slots to the right when more than ``max_hole_fraction`` are holes."""
        T = self.length
        if T == 0:
            return
        counts = self.valid.sum(dim=1)
        width = int(counts.max())
        holes = 1.0 - float(counts.sum()) / float(self.batch_size * T)
        if holes <= max_hole_fraction or width == T:
            return
        # stable sort puts invalid slots first, valid slots last in their original order
        order = torch.sort(self.valid.long(), dim=1, stable=True).indices[:, T - width:]
        for layer in _layers(self.cache):
            if getattr(layer, "keys", None) is None or layer.keys.numel() == 0:
                continue
            idx = order[:, None, :, None].expand(-1, layer.keys.shape[1], -1, layer.keys.shape[3])
            layer.keys = layer.keys.gather(2, idx)
            vidx = order[:, None, :, None].expand(-1, layer.values.shape[1], -1, layer.values.shape[3])
            layer.values = layer.values.gather(2, vidx)
        self.valid = self.valid.gather(1, order)


def _kv(layer: Any, rows: int, like: Any) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """A layer's keys and values, or empty `(rows, heads, 0, dim)` ones shaped like ``like``'s."""
    keys = getattr(layer, "keys", None)
    if keys is not None and keys.dim() == 4:
        return keys, layer.values
    other = getattr(like, "keys", None)
    if other is None or other.dim() != 4:
        return None, None
    shape_k = (rows, other.shape[1], 0, other.shape[3])
    shape_v = (rows, like.values.shape[1], 0, like.values.shape[3])
    return other.new_zeros(shape_k), like.values.new_zeros(shape_v)


def _left_pad_time(x: torch.Tensor, n: int) -> torch.Tensor:
    """Prepend ``n`` zero slots on the time axis of `(B, H, T, D)`."""
    if n <= 0:
        return x
    return torch.cat([x.new_zeros((x.shape[0], x.shape[1], n, x.shape[3])), x], dim=2)


def left_pad(rows: list[list[int]], *, pad_id: int = 0, device: Any = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Left-pad token lists into `(B, n)` ids and a `(B, n)` validity mask."""
    n = max((len(r) for r in rows), default=0)
    ids = torch.full((len(rows), n), pad_id, dtype=torch.long, device=device)
    valid = torch.zeros((len(rows), n), dtype=torch.bool, device=device)
    for b, r in enumerate(rows):
        if r:
            ids[b, n - len(r):] = torch.tensor(r, dtype=torch.long, device=device)
            valid[b, n - len(r):] = True
    return ids, valid
