"""Target and draft models: the registry of known pairs, fetching, GGUF conversion and loading.

Importing this package never imports torch or transformers; :func:`load_model`,
:func:`load_pair` and :func:`convert_gguf` import them when called.

Public API (loading here; fetching in :mod:`.fetch`, conversion in :mod:`.convert`)::

    fetch_pair(name, cache_dir, *, progress=None, pip=None, convert=True, verify=False) -> FetchedPair
    load_model(spec, *, cache_dir, dtype="float32", device="cpu", allow_lower_precision=False,
               auto_fetch=False, progress=None) -> LoadedModel
    load_pair(target_spec, draft_spec, *, cache_dir, dtype="float32", draft_dtype=None, device="cpu",
              allow_lower_precision=False, auto_fetch=False, progress=None) -> LoadedPair
    resolve_model(spec, *, cache_dir) -> ResolvedModel          (torch-free)
    convert_gguf(gguf_path, out_dir, *, dtype="float32", ...) -> dict
"""

from __future__ import annotations

from golden_al.models.load import LoadedModel, LoadedPair, load_model, load_pair, resolve_model

__all__ = [
    "LoadedModel",
    "LoadedPair",
    "load_model",
    "load_pair",
    "resolve_model",
]
