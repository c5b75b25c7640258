"""CPU matrix products for the reference engine's linear layers.

On the CPU, ``nn.Linear`` computes ``y = x W^T`` through torch's BLAS (MKL in the official
wheels). For the row counts of speculative decoding (a few to a few hundred token rows
against weights of 900 to 150,000 output features) two other routes to the same float32
product are faster on the CPUs we measured (``experiments/default-run/``):

* ``onednn``: oneDNN's float32 inner product (``torch.ops.mkldnn._linear_pointwise``) on the
  plain weights, as they are (no reordered copy, so no extra memory or load time). oneDNN
  picks its kernels by instruction set (AVX-512 where the CPU has it); MKL's are tuned by CPU
  vendor. It accumulates in float32 (no lower-precision math mode).
* ``transposed``: the same BLAS, but the product written as ``y^T = W x^T``, which MKL blocks
  better for few rows.

:func:`use_cpu_kernels` switches every float32 CPU ``nn.Linear`` of a model to one of them
(the class is swapped in place, so parameters, tied weights and ``state_dict`` stay as they
are); ``use_cpu_kernels(model, "torch")`` switches back. The results equal ``nn.Linear``'s to
float32 rounding (another order of the same sums), not bit for bit.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = [
    "KERNELS",
    "MAX_ROWS",
    "MIN_ROWS",
    "OneDNNLinear",
    "TransposedLinear",
    "onednn_available",
    "use_cpu_kernels",
]

#: The forms :func:`use_cpu_kernels` knows, fastest first on the CPUs measured.
KERNELS = ("onednn", "transposed", "torch")

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


def onednn_available() -> bool:
    """True when this torch build has oneDNN and its float32 linear operator
    (``aten/src/ATen/native/mkldnn/Linear.cpp``, ``mkldnn::_linear_pointwise``, torch >= 2.0)."""
    if not torch.backends.mkldnn.is_available():
        return False
    try:
        return hasattr(torch.ops.mkldnn, "_linear_pointwise")
    except (AttributeError, RuntimeError):
        return False


class OneDNNLinear(torch.nn.Linear):
    """``nn.Linear`` computed by oneDNN's float32 inner product on the plain weights."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.numel() == 0 or not x.is_contiguous():
            return super().forward(x)
        return torch.ops.mkldnn._linear_pointwise(x, self.weight, self.bias, "none", [], "")


_CLASSES: dict[str, type[torch.nn.Linear]] = {
    "onednn": OneDNNLinear, "transposed": TransposedLinear, "torch": torch.nn.Linear}


def use_cpu_kernels(model: Any, kind: str) -> int:
    """Switch every float32 CPU linear layer of ``model`` to ``kind`` (one of :data:`KERNELS`).

    Returns how many layers now compute in that form and did not before (0 when the model is
    not float32 on the CPU, or ``onednn`` is asked of a torch without it: check
    :func:`onednn_available`).

    Raises:
        ValueError: ``kind`` is not one of :data:`KERNELS`.
    """
    if kind not in _CLASSES:
        raise ValueError(f"unknown cpu kernels {kind!r}; expected one of {', '.join(KERNELS)}")
    if kind == "onednn" and not onednn_available():
        return 0
    cls = _CLASSES[kind]
    switched = 0
    for module in model.modules():
        if (type(module) in _CLASSES.values() and type(module) is not cls
                and module.weight.device.type == "cpu" and module.weight.dtype == torch.float32):
            module.__class__ = cls
            switched += 1
    return switched
