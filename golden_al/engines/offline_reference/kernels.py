"""CPU matrix products for the reference engine's linear layers.

On the CPU, ``nn.Linear`` computes ``y = x W^T`` through torch's BLAS (MKL in the official
wheels). For the row counts of speculative decoding (a few to a few hundred token rows
against weights of 900 to 150,000 output features), MKL runs the same product written as
``y^T = W x^T`` 1.2-1.8x faster on the CPUs we measured (``experiments/default-run/``):
same float32 weights, no copy, only another blocking of the same sums.
:func:`use_transposed_linear` switches every float32 CPU ``nn.Linear`` of a model to
:class:`TransposedLinear` (the class is swapped in place, so parameters, tied weights and
``state_dict`` stay as they are); :func:`use_torch_linear` switches back.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["MAX_ROWS", "MIN_ROWS", "TransposedLinear", "use_torch_linear", "use_transposed_linear"]

#: Row counts (tokens in the call) that take the transposed product; others use ``nn.Linear``'s
#: (a single row is a matrix-vector product either way; long prefills gain nothing).
MIN_ROWS, MAX_ROWS = 2, 512


class TransposedLinear(torch.nn.Linear):
    """``nn.Linear`` computing ``(W x^T)^T`` for ``MIN_ROWS..MAX_ROWS`` rows (same weights, same result up to rounding)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.numel() // self.in_features if self.in_features else 0
        if not MIN_ROWS <= rows <= MAX_ROWS:
            return super().forward(x)
        flat = x.reshape(rows, self.in_features).t()
        if self.bias is not None:
            out = torch.addmm(self.bias[:, None], self.weight, flat)
        else:
            out = torch.mm(self.weight, flat)
        return out.t().contiguous().reshape(*x.shape[:-1], self.out_features)


def use_transposed_linear(model: Any) -> int:
    """Switch each float32 CPU ``nn.Linear`` of ``model`` to :class:`TransposedLinear`; returns how many."""
    switched = 0
    for module in model.modules():
        if (type(module) is torch.nn.Linear and module.weight.device.type == "cpu"
                and module.weight.dtype == torch.float32):
            module.__class__ = TransposedLinear
            switched += 1
    return switched


def use_torch_linear(model: Any) -> int:
    """Undo :func:`use_transposed_linear`; returns how many layers were switched back."""
    switched = 0
    for module in model.modules():
        if type(module) is TransposedLinear:
            module.__class__ = torch.nn.Linear  # type: ignore[assignment]
            switched += 1
    return switched
