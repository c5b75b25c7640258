"""Float32 weights straight from a GGUF file: an exact, fast dequantizer and a tensor index.

A GGUF holds quantized blocks: an fp16 scale (and for some types an fp16 minimum, 6-bit
sub-block scales, high bits) and small integers. Dequantized to float32 they are the model's
weights exactly (every product of a scale and an integer fits float32's 24-bit significand; the
one subtraction of Q4_K/Q5_K and addition of Q4_1/Q5_1 rounds once, in the order the format
defines). Reading the 1.5 GB Q4_K_M files of the default pair and dequantizing them in memory
takes seconds, where reading 9 GB of float32 safetensors from a slow disk takes minutes
(``experiments/default-run/``).

:func:`tensor_index` records, once, where each tensor lies in the file (at conversion,
:mod:`golden_al.models.convert`, which also proves the result bit-identical to transformers' own
GGUF loader); :func:`load_state_dict` reads and dequantizes from that index with plain file reads
(no memory map, so the resident set holds only the float32 weights).

Block layouts and formulas: ggml's ``ggml/src/ggml-common.h`` (``block_q4_K`` etc.) and
``ggml/src/ggml-quants.c`` (``dequantize_row_*``) in llama.cpp; the unit tests compare every type
bit for bit with gguf-py's ``gguf.quants.dequantize`` (gguf 0.17+), which transformers uses.
Imports torch, and gguf-py only in :func:`tensor_index`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from golden_al.errors import ModelError

__all__ = [
    "BLOCKS",
    "GGUFTensor",
    "dequantize",
    "load_state_dict",
    "tensor_index",
]

#: type name -> (values per block, bytes per block), for the types :func:`dequantize` reads.
BLOCKS: dict[str, tuple[int, int]] = {
    "F32": (1, 4), "F16": (1, 2), "BF16": (1, 2),
    "Q4_0": (32, 18), "Q4_1": (32, 20), "Q5_0": (32, 22), "Q5_1": (32, 24), "Q8_0": (32, 34),
    "Q4_K": (256, 144), "Q5_K": (256, 176), "Q6_K": (256, 210),
}
#: Blocks dequantized per step (about 1-8 MB of float32 out): the temporaries stay in cache.
_CHUNK_BLOCKS = 8192

ProgressFn = Callable[..., None]


@dataclass(frozen=True)
class GGUFTensor:
    """Where one tensor lies in a GGUF file and which parameter it becomes."""

    gguf_name: str
    param: str
    """The transformers parameter name."""
    type: str
    """A key of :data:`BLOCKS`."""
    shape: tuple[int, ...]
    """Row-major, as the parameter (GGUF lists dimensions the other way round)."""
    offset: int
    """Byte offset of the data from the start of the file."""
    nbytes: int

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "shape": list(self.shape)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GGUFTensor:
        return cls(gguf_name=str(data["gguf_name"]), param=str(data["param"]), type=str(data["type"]),
                   shape=tuple(int(d) for d in data["shape"]), offset=int(data["offset"]), nbytes=int(data["nbytes"]))


def _f16(raw: torch.Tensor) -> torch.Tensor:
    """``(n, 2)`` little-endian bytes -> ``(n, 1)`` float32."""
    return raw.contiguous().view(torch.float16).to(torch.float32)


def _nibbles(qs: torch.Tensor) -> torch.Tensor:
    """``(n, m)`` bytes -> ``(n, 2m)``: all low nibbles, then all high nibbles."""
    return torch.cat([qs & 0x0F, qs >> 4], dim=1)


def _bits(qh: torch.Tensor) -> torch.Tensor:
    """``(n, 4)`` little-endian bytes -> ``(n, 32)`` bits 0..31 as uint8 0/1."""
    shifts = torch.arange(8, dtype=torch.uint8)
    return ((qh[:, :, None] >> shifts) & 1).reshape(qh.shape[0], 32)


def _k_scales(s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The 8 six-bit scales and minimums packed in 12 bytes (Q4_K, Q5_K), as float32 ``(n, 8)``."""
    lo, mid, hi = s[:, 0:4], s[:, 4:8], s[:, 8:12]
    sc = torch.cat([lo & 63, (hi & 0x0F) | ((lo >> 6) << 4)], dim=1)
    mn = torch.cat([mid & 63, (hi >> 4) | ((mid >> 6) << 4)], dim=1)
    return sc.to(torch.float32), mn.to(torch.float32)


def _q4_0(b: torch.Tensor) -> torch.Tensor:
    d = _f16(b[:, 0:2])
    return (_nibbles(b[:, 2:18]).to(torch.float32) - 8.0) * d


def _q4_1(b: torch.Tensor) -> torch.Tensor:
    d, m = _f16(b[:, 0:2]), _f16(b[:, 2:4])
    return _nibbles(b[:, 4:20]).to(torch.float32) * d + m


def _q5_0(b: torch.Tensor) -> torch.Tensor:
    d = _f16(b[:, 0:2])
    q = _nibbles(b[:, 6:22]) | (_bits(b[:, 2:6]) << 4)
    return (q.to(torch.float32) - 16.0) * d


def _q5_1(b: torch.Tensor) -> torch.Tensor:
    d, m = _f16(b[:, 0:2]), _f16(b[:, 2:4])
    q = _nibbles(b[:, 8:24]) | (_bits(b[:, 4:8]) << 4)
    return q.to(torch.float32) * d + m


def _q8_0(b: torch.Tensor) -> torch.Tensor:
    d = _f16(b[:, 0:2])
    return b[:, 2:34].contiguous().view(torch.int8).to(torch.float32) * d


def _q4_k(b: torch.Tensor) -> torch.Tensor:
    n = b.shape[0]
    d, dmin = _f16(b[:, 0:2]), _f16(b[:, 2:4])
    sc, mn = _k_scales(b[:, 4:16])
    scale, low = (d * sc)[:, :, None], (dmin * mn)[:, :, None]  # exact: fp16 x 6 bits
    qs = b[:, 16:144].reshape(n, 4, 1, 32)
    q = torch.cat([qs & 0x0F, qs >> 4], dim=2).reshape(n, 8, 32).to(torch.float32)
    return (scale * q - low).reshape(n, 256)


def _q5_k(b: torch.Tensor) -> torch.Tensor:
    n = b.shape[0]
    d, dmin = _f16(b[:, 0:2]), _f16(b[:, 2:4])
    sc, mn = _k_scales(b[:, 4:16])
    scale, low = (d * sc)[:, :, None], (dmin * mn)[:, :, None]
    qh = b[:, 16:48]
    qs = b[:, 48:176].reshape(n, 4, 1, 32)
    ql = torch.cat([qs & 0x0F, qs >> 4], dim=2).reshape(n, 8, 32)
    hi = ((qh[:, None, :] >> torch.arange(8, dtype=torch.uint8)[None, :, None]) & 1) << 4
    return (scale * (ql | hi).to(torch.float32) - low).reshape(n, 256)


def _q6_k(b: torch.Tensor) -> torch.Tensor:
    n = b.shape[0]
    ql = b[:, 0:128].reshape(n, 2, 2, 32)  # (half, first/second 32 bytes, 32)
    qh = b[:, 128:192].reshape(n, 2, 1, 32)
    sc = b[:, 192:208].contiguous().view(torch.int8).to(torch.float32)
    d = _f16(b[:, 208:210])
    low = torch.cat([ql & 0x0F, ql >> 4], dim=2)  # (n, 2, 4, 32): q1, q2, q3, q4 of each half
    high = (qh >> torch.tensor([0, 2, 4, 6], dtype=torch.uint8)[None, None, :, None]) & 3
    q = ((low | (high << 4)).to(torch.float32) - 32.0).reshape(n, 16, 16)
    return ((d * sc)[:, :, None] * q).reshape(n, 256)  # (d * scale) first, then x q: the format's order


_KERNELS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "Q4_0": _q4_0, "Q4_1": _q4_1, "Q5_0": _q5_0, "Q5_1": _q5_1, "Q8_0": _q8_0,
    "Q4_K": _q4_k, "Q5_K": _q5_k, "Q6_K": _q6_k,
}


def dequantize(raw: torch.Tensor, type_name: str, *, out: torch.Tensor | None = None) -> torch.Tensor:
    """Dequantize the bytes of one tensor (``uint8``, 1-D) of GGUF type ``type_name`` to float32 (1-D).

    Raises:
        ModelError: an unknown type, or a byte count that is not a whole number of blocks.
    """
    if type_name not in BLOCKS:
        raise ModelError(f"GGUF tensor type {type_name} is not supported here; known: {', '.join(BLOCKS)}")
    per_block, block_bytes = BLOCKS[type_name]
    if raw.dtype != torch.uint8 or raw.dim() != 1 or raw.numel() % block_bytes:
        raise ModelError(f"{raw.numel()} bytes of {type_name} are not whole {block_bytes}-byte blocks")
    n_blocks = raw.numel() // block_bytes
    if out is None:
        out = torch.empty(n_blocks * per_block, dtype=torch.float32)
    if type_name == "F32":
        out.copy_(raw.view(torch.float32))
        return out
    if type_name in ("F16", "BF16"):
        out.copy_(raw.view(torch.float16 if type_name == "F16" else torch.bfloat16))
        return out
    kernel = _KERNELS[type_name]
    blocks = raw.view(n_blocks, block_bytes)
    dest = out.view(n_blocks, per_block)
    for start in range(0, n_blocks, _CHUNK_BLOCKS):
        stop = min(start + _CHUNK_BLOCKS, n_blocks)
        dest[start:stop] = kernel(blocks[start:stop])
    return out


def tensor_index(gguf_path: str | Path, param_name: Callable[[str], str | None]) -> list[GGUFTensor]:
    """Every tensor of ``gguf_path`` with its parameter name (``param_name(gguf_name)``), type, shape
    and byte range, read once with gguf-py's reader.

    Raises:
        ModelError: a tensor with no parameter name or of a type :func:`dequantize` does not read.
    """
    import gguf

    reader = gguf.GGUFReader(str(gguf_path))
    out: list[GGUFTensor] = []
    for t in reader.tensors:
        param = param_name(t.name)
        kind = t.tensor_type.name
        if param is None:
            raise ModelError(f"{Path(gguf_path).name}: no parameter name for GGUF tensor {t.name}")
        if kind not in BLOCKS:
            raise ModelError(f"{Path(gguf_path).name}: tensor {t.name} is {kind}, which is not read here")
        out.append(GGUFTensor(gguf_name=t.name, param=param, type=kind,
                              shape=tuple(int(d) for d in reversed(t.shape.tolist())),
                              offset=int(t.data_offset), nbytes=int(t.n_bytes)))
    return out


def load_state_dict(gguf_path: str | Path, tensors: Sequence[GGUFTensor], *,
                    progress: ProgressFn | None = None, label: str = "") -> dict[str, torch.Tensor]:
    """Read and dequantize ``tensors`` of ``gguf_path`` into float32 parameters (name -> tensor).

    One thread reads the next tensor's bytes while this one dequantizes the current tensor (file
    reads release the GIL), so a slow disk and the dequantizing overlap; two buffers of the
    largest tensor's bytes are all the extra memory. ``progress`` counts the tensors, a phase of its own.

    Raises:
        ModelError: the file is unreadable or shorter than the index says.
    """
    path = Path(gguf_path)
    state: dict[str, torch.Tensor] = {}
    if not tensors:
        return state
    biggest = max(t.nbytes for t in tensors)
    # one buffer per tensor in flight: two, or one when there is a single tensor (conversion's check)
    buffers = [torch.empty(biggest, dtype=torch.uint8) for _ in range(min(2, len(tensors)))]
    if progress is not None:
        progress(0, total=len(tensors), unit="tensors", description=f"dequantizing {label or path.name}")
    try:
        with path.open("rb", buffering=0) as fh, ThreadPoolExecutor(1, thread_name_prefix="gguf-read") as reader:

            def read(i: int) -> int:  # runs in the reader thread, the only user of ``fh``
                t = tensors[i]
                fh.seek(t.offset)
                return fh.readinto(buffers[i % len(buffers)][: t.nbytes].numpy().data) or 0

            pending: Future[int] = reader.submit(read, 0)
            for i, t in enumerate(tensors):
                got = pending.result()
                if i + 1 < len(tensors):
                    pending = reader.submit(read, i + 1)  # the other buffer: free since tensor i - 1 is done
                if got != t.nbytes:
                    raise ModelError(f"{path} ends inside tensor {t.gguf_name} ({got} of {t.nbytes} bytes)",
                                     hint="the file is truncated or not the one indexed; re-fetch it")
                numel = 1
                for dim in t.shape:
                    numel *= dim
                values = dequantize(buffers[i % len(buffers)][: t.nbytes], t.type)
                if values.numel() != numel:
                    raise ModelError(f"{path}: tensor {t.gguf_name} holds {values.numel()} values, "
                                     f"its shape {list(t.shape)} needs {numel}")
                state[t.param] = values.view(t.shape)
                if progress is not None:
                    progress(1)
    except OSError as err:
        raise ModelError(f"cannot read {path}: {err}", hint="check the file, or re-fetch it") from err
    return state
