"""Target and draft models: the registry of known pairs, fetching, GGUF conversion and loading.

Importing this package never imports torch or transformers; :func:`load_model`,
:func:`load_pair` and :func:`convert_gguf` import them when called.

Public API::

    fetch_pair(name, cache_dir, *, progress=None, pip=None, convert=True, verify=False) -> FetchedPair
    load_model(spec, *, cache_dir, dtype="float32", device="cpu", allow_lower_precision=False,
               auto_fetch=False, progress=None) -> LoadedModel
    load_pair(target_spec, draft_spec, *, cache_dir, dtype="float32", draft_dtype=None, device="cpu",
              allow_lower_precision=False, auto_fetch=False, progress=None) -> LoadedPair
    resolve_model(spec, *, cache_dir) -> ResolvedModel          (torch-free)
    convert_gguf(gguf_path, out_dir, *, dtype="float32", ...) -> dict
"""

from __future__ import annotations

from golden_al.models.convert import convert_gguf, gguf_metadata
from golden_al.models.fetch import (
    DEFAULT_CONVERT_DTYPE,
    FetchedModel,
    FetchedPair,
    converted_dir_for,
    fetch_model,
    fetch_pair,
    model_dir,
)
from golden_al.models.load import (
    LoadedModel,
    LoadedPair,
    ResolvedModel,
    check_tokenizers_compatible,
    load_model,
    load_pair,
    load_tokenizer,
    resolve_model,
)
from golden_al.models.precision import canonical_dtype, check_precision, is_below, precision_rank
from golden_al.models.registry import MODELS, PAIRS, ModelEntry, PairEntry, WheelPart, get_model

__all__ = [
    "DEFAULT_CONVERT_DTYPE",
    "MODELS",
    "PAIRS",
    "FetchedModel",
    "FetchedPair",
    "LoadedModel",
    "LoadedPair",
    "ModelEntry",
    "PairEntry",
    "ResolvedModel",
    "WheelPart",
    "canonical_dtype",
    "check_precision",
    "check_tokenizers_compatible",
    "convert_gguf",
    "converted_dir_for",
    "fetch_model",
    "fetch_pair",
    "get_model",
    "gguf_metadata",
    "is_below",
    "load_model",
    "load_pair",
    "load_tokenizer",
    "model_dir",
    "precision_rank",
    "resolve_model",
]
