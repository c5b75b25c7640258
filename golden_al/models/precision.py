"""A ranking of numeric precisions, to refuse a model loaded below the precision it ships in.

Ranking (higher is more precise)::

    float64 > float32 > bfloat16 = float16 > fp8 > int8 / Q8 > Q6 > Q5 > 4-bit (Q4_*, int4, fp4, AWQ, GPTQ) > Q3 > Q2 > ~1-bit

A checkpoint shipped as a Q4_K_M GGUF and dequantized to float32 or bfloat16 is
*not* below its shipped precision: dequantization loses nothing, while loading a
bfloat16 checkpoint as int8 does. Names are case-insensitive and accept torch
(``torch.bfloat16``), short (``bf16``, ``fp8``) and GGUF file-type (``Q4_K_M``,
``MOSTLY_Q8_0``, ``ALL_F32``) spellings. An unrecognised name ranks as None and is
never refused (the check cannot judge it). Torch-free.
"""

from __future__ import annotations

import re

from golden_al.errors import ModelError

__all__ = ["canonical_dtype", "check_precision", "is_below", "precision_rank"]

_EXACT: dict[str, tuple[str, int]] = {}


def _add(canonical: str, rank: int, *aliases: str) -> None:
    for name in (canonical, *aliases):
        _EXACT[name.lower()] = (canonical, rank)


_add("float64", 100, "fp64", "f64", "double")
_add("float32", 90, "fp32", "f32", "float", "all_f32", "tf32")
_add("bfloat16", 80, "bf16", "mostly_bf16")
_add("float16", 80, "fp16", "f16", "half", "mostly_f16")
_add("fp8", 70, "float8", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
     "e4m3", "e5m2", "fp8_e4m3", "fp8_e5m2", "w8a8_fp8", "mxfp8")
_add("int8", 60, "i8", "8bit", "w8a8", "w8a16", "q8_0", "q8_1", "q8_k", "uint8")

_PATTERNS: list[tuple[re.Pattern[str], int]] = [
    (re.compile(r"^(?:mostly_)?q8(?:_.*)?$"), 60),
    (re.compile(r"^(?:mostly_)?q6(?:_.*)?$|^6bit$"), 55),
    (re.compile(r"^(?:mostly_)?q5(?:_.*)?$|^5bit$"), 50),
    (re.compile(r"^(?:mostly_)?(?:q4|iq4)(?:_.*)?$|^(?:int4|uint4|4bit|fp4|nvfp4|mxfp4|awq|gptq|w4a16|w4a8|nf4)$"), 40),
    (re.compile(r"^(?:mostly_)?(?:q3|iq3)(?:_.*)?$|^(?:3bit|int3)$"), 30),
    (re.compile(r"^(?:mostly_)?(?:q2|iq2)(?:_.*)?$|^(?:2bit|int2)$"), 20),
    (re.compile(r"^(?:mostly_)?(?:iq1|tq1|tq2)(?:_.*)?$|^1bit$"), 10),
]


def canonical_dtype(name: str | None) -> str | None:
    """``bf16`` -> ``bfloat16``, ``torch.float32`` -> ``float32``; GGUF types are upper-cased."""
    if name is None:
        return None
    key = str(name).strip().removeprefix("torch.").lower()
    if key in _EXACT:
        return _EXACT[key][0]
    return key.removeprefix("mostly_").upper() if re.match(r"^(mostly_)?(i?q\d|tq\d)", key) else key


def precision_rank(name: str | None) -> int | None:
    """The rank of a precision name (higher = more precise), or None when unknown."""
    if name is None:
        return None
    key = str(name).strip().removeprefix("torch.").lower()
    if key in _EXACT:
        return _EXACT[key][1]
    for pattern, rank in _PATTERNS:
        if pattern.match(key):
            return rank
    return None


def is_below(loaded: str | None, shipped: str | None) -> bool:
    """True when ``loaded`` is a known precision strictly below the known ``shipped`` one."""
    lo, hi = precision_rank(loaded), precision_rank(shipped)
    return lo is not None and hi is not None and lo < hi


def check_precision(name: str, loaded: str | None, shipped: str | None, *, allow_lower: bool = False,
                    role: str = "model") -> None:
    """Raise ModelError when ``name`` would be loaded below its shipped precision (unless allowed)."""
    if allow_lower or not is_below(loaded, shipped):
        return
    raise ModelError(
        f"{role} {name} would be loaded as {canonical_dtype(loaded)}, below the precision it ships in "
        f"({canonical_dtype(shipped)}); an AL measured that way is not the shipped model's",
        hint=f"load it as {canonical_dtype(shipped)} or higher, or pass --allow-lower-precision "
        "(allow_lower_precision=True) to measure it anyway",
    )
