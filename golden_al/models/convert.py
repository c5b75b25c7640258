"""Convert a GGUF file once into a model directory: GGUF-indexed or safetensors weights.

transformers loads a GGUF by dequantizing every tensor (slow: about 10-30 s per
model here, plus 10-60 s parsing the GGUF tokenizer) and then refuses, in some
versions, to ``save_pretrained`` it ("quantized with gguf and is not
serializable") although the weights are plain dense tensors by then. We load with
``GgufConfig(dequantize=True)``, check that every module is a plain dense layer
and every parameter a plain floating tensor, drop the quantization state, and save
config, weights, tokenizer (``tokenizer.json``, fast), chat template and a
generation config with the chat eos ids.

Two checks make the conversion trustworthy:

* every GGUF tensor of a known architecture (qwen2, llama-style names) is compared
  with gguf-py's own dequantization (``gguf.quants.dequantize``, maintained with
  llama.cpp) and must be bit-identical in float32;
* the re-loaded tokenizer must encode sample texts and render the chat template
  exactly like the GGUF-derived one.

Two weight layouts (``weights=``):

* ``safetensors``: the dequantized weights are saved as safetensors (a plain Hugging Face
  directory any tool can load; 4 bytes per weight in float32);
* ``gguf`` (float32, qwen2-style names): no weights are written. The manifest holds an index of
  the GGUF's tensors (parameter name, type, shape, byte range) and the loader dequantizes them
  from the GGUF itself (:mod:`golden_al.models.gguf_weights`), which is 6x smaller to keep and to
  read. The conversion proves that layout exact: every parameter golden-al's dequantizer makes
  from the index must equal transformers' own (gguf-py's dequantization) bit for bit, and every
  parameter of the model must be covered.

The output directory carries ``golden_al_conversion.json``: the GGUF's SHA-256 and
file type (e.g. ``Q4_K_M``), the dtype saved, parameter count, the checks' results,
the weight layout (with the tensor index for ``gguf``) and every file's size and SHA-256.

Why float32: the dequantized Q4_K/Q5_0/Q6_K/Q8_0 values are products of an fp16
scale and a small integer, which need up to ~16 significant bits; bfloat16 keeps 8,
so a bfloat16 copy would not be the GGUF's weights. float32 holds them exactly. Kept as
float32 safetensors they take 4 bytes per weight on disk (9 GB for the Qwen pair, minutes to
read from a slow disk); read from the GGUF they take its 4.5-5 bits (``experiments/default-run/``
measures both).

Imports torch, transformers and gguf lazily (inside functions).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from golden_al.errors import ModelError
from golden_al.provenance import atomic_write_text, now_iso, package_versions, sha256_file

__all__ = ["CONVERSION_MANIFEST", "TOKENIZER_SAMPLES", "WEIGHT_LAYOUTS", "convert_gguf", "gguf_metadata",
           "hf_name_for_gguf_tensor"]

CONVERSION_MANIFEST = "golden_al_conversion.json"

#: Texts the saved tokenizer must encode exactly like the GGUF-derived one.
TOKENIZER_SAMPLES: tuple[str, ...] = (
    "def fibonacci(n: int) -> int:\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n    return n if n < 2 else fibonacci(n - 1) + fibonacci(n - 2)\n",
    "Hello, world! Ünïcödé — 中文字符 and emoji 🚀 with   multiple   spaces\tand\ttabs.",
    "<|im_start|>user\nWrite a haiku.<|im_end|>\n<|im_start|>assistant\n",
    "    if x == 0x1F and y != 3.14e-10:\n        return [i ** 2 for i in range(10)]  # comment\n",
    "1234567890 12 345 6789 -42 +7 3,141,592",
)

_LAYER = re.compile(r"^blk\.(\d+)\.(.+)$")
_BLOCK_NAMES = {
    "attn_q": "self_attn.q_proj",
    "attn_k": "self_attn.k_proj",
    "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj",
    "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj",
    "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
}
_TOP_NAMES = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
}
#: Architectures whose GGUF tensors map to HF names without permutation (llama's q/k are permuted).
_CHECKABLE_ARCHS = {"qwen2"}
#: ``convert_gguf(weights=...)``: safetensors files, or an index into the GGUF (float32, qwen2-style).
WEIGHT_LAYOUTS = ("safetensors", "gguf")

ProgressFn = Callable[..., None]


def _field_value(reader: Any, key: str) -> Any:
    field = reader.fields.get(key)
    if field is None:
        return None
    if not field.data:
        return None
    value = field.parts[field.data[0]]
    try:
        if value.dtype.kind == "u" and value.dtype.itemsize == 1 and len(field.data) == 1 and len(value) > 1:
            return bytes(value).decode("utf-8", errors="replace")
        if len(value) == 1:
            return value[0].item()
    except AttributeError:
        pass
    return bytes(value).decode("utf-8", errors="replace")


def gguf_metadata(path: str | Path) -> dict[str, Any]:
    """Architecture, file type (e.g. ``Q4_K_M``), name and tensor-type counts of a GGUF file.

    Memoized per file (path, size, modification time): gguf-py's reader parses every
    metadata field in Python (seconds for a 150k-token vocabulary), and one ``measure`` run
    resolves the same file several times.
    """
    try:
        st = Path(path).stat()
    except OSError as err:
        raise ModelError(f"{path} is not a readable GGUF file: {err}",
                         hint="check the file (its SHA-256) or re-fetch it") from err
    meta = _gguf_metadata(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)
    return {**meta, "tensor_types": dict(meta["tensor_types"])}


@functools.lru_cache(maxsize=16)
def _gguf_metadata(path: str, size: int, mtime_ns: int) -> dict[str, Any]:
    try:
        import gguf
    except ImportError as err:
        raise ModelError("reading a GGUF file needs the 'gguf' package",
                         hint="pip install 'golden-al[engine]'") from err
    try:
        reader = gguf.GGUFReader(str(path))
    except (ValueError, OSError) as err:
        raise ModelError(f"{path} is not a readable GGUF file: {err}",
                         hint="check the file (its SHA-256) or re-fetch it") from err
    file_type_id = _field_value(reader, "general.file_type")
    file_type: str | None
    try:
        file_type = gguf.LlamaFileType(int(file_type_id)).name.removeprefix("MOSTLY_")
    except (TypeError, ValueError):
        file_type = None if file_type_id is None else f"file_type={file_type_id}"
    return {
        "architecture": _field_value(reader, "general.architecture"),
        "name": _field_value(reader, "general.name"),
        "file_type": file_type,
        "tensor_count": len(reader.tensors),
        "tensor_types": dict(Counter(t.tensor_type.name for t in reader.tensors)),
    }


def hf_name_for_gguf_tensor(name: str) -> str | None:
    """The transformers parameter name of a qwen2-style GGUF tensor, or None if unknown."""
    if name in _TOP_NAMES:
        return _TOP_NAMES[name]
    m = _LAYER.match(name)
    if not m:
        return None
    layer, rest = m.groups()
    base, _, kind = rest.rpartition(".")
    if base not in _BLOCK_NAMES or kind not in ("weight", "bias"):
        return None
    return f"model.layers.{layer}.{_BLOCK_NAMES[base]}.{kind}"


def _check_dense(model: Any, torch_dtype: Any) -> None:
    """Every module a plain torch/transformers layer, every parameter a plain float tensor."""
    import torch

    bad_modules = sorted({type(m).__name__ for m in model.modules()
                          if re.search(r"gguf|quant|ggml", type(m).__name__, re.IGNORECASE)})
    if bad_modules:
        raise ModelError(f"GGUF load left packed modules {bad_modules}; refusing to save them as dense weights",
                         hint="upgrade or downgrade transformers; GgufConfig(dequantize=True) should unpack all")
    for name, param in model.named_parameters():
        if type(param.data) is not torch.Tensor or param.dtype != torch_dtype:
            raise ModelError(f"parameter {name} is {type(param.data).__name__} {param.dtype}, "
                             f"expected a plain {torch_dtype} tensor after dequantization")
    for mod_name, mod in model.named_modules():
        if isinstance(mod, torch.nn.Linear) and type(mod).__module__.split(".")[0] not in ("torch", "transformers"):
            raise ModelError(f"module {mod_name} is {type(mod).__module__}.{type(mod).__name__}, not a plain Linear")


def _drop_quantization_state(model: Any) -> None:
    """Forget that the model came from a GGUF, so ``save_pretrained`` accepts it."""
    for attr in ("hf_quantizer", "quantization_method"):
        if getattr(model, attr, None) is not None:
            setattr(model, attr, None)
    if getattr(model, "is_quantized", False):
        model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        delattr(model.config, "quantization_config")


def _compare_with_gguf(model: Any, gguf_path: Path, progress: ProgressFn) -> dict[str, Any]:
    """Bit-compare every mapped tensor with gguf-py's dequantization (float32)."""
    import gguf
    import numpy as np
    import torch

    reader = gguf.GGUFReader(str(gguf_path))
    state = model.state_dict()
    checked = 0
    mismatched: list[str] = []
    unmapped: list[str] = []
    for i, tensor in enumerate(reader.tensors):
        hf_name = hf_name_for_gguf_tensor(tensor.name)
        if hf_name is None or hf_name not in state:
            unmapped.append(tensor.name)
            continue
        ref = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        ref = np.array(ref, dtype=np.float32, copy=True).reshape(tuple(int(d) for d in reversed(tensor.shape)))
        ours = state[hf_name].detach().to(torch.float32).cpu()
        if tuple(ours.shape) != ref.shape or not torch.equal(ours, torch.from_numpy(ref)):
            mismatched.append(tensor.name)
        checked += 1
        if i % 32 == 0:
            progress(0, description=f"checking tensors against gguf-py ({i}/{len(reader.tensors)})")
    if mismatched or unmapped:
        raise ModelError(
            f"{gguf_path.name}: {len(mismatched)} tensors differ from gguf-py's dequantization "
            f"({', '.join(mismatched[:5])}) and {len(unmapped)} could not be matched ({', '.join(unmapped[:5])})",
            hint="the transformers GGUF loader changed; do not use this conversion",
        )
    covered = set()
    for t in reader.tensors:
        name = hf_name_for_gguf_tensor(t.name)
        if name is not None:
            covered.add(name)
    not_in_gguf = sorted(set(state) - covered)
    return {"compared_with": f"gguf-py {package_versions(['gguf']).get('gguf')} gguf.quants.dequantize",
            "tensors_checked": checked, "bit_identical": True, "params_not_in_gguf": not_in_gguf}


def _index_and_check(model: Any, gguf_path: Path, out_dir: Path, progress: ProgressFn) -> dict[str, Any]:
    """The ``gguf`` layout's record: the tensor index, proven against gguf-py and the model's parameters.

    Every tensor golden-al's dequantizer reads through the index must equal gguf-py's
    dequantization of it (what transformers' GGUF loader uses) bit for bit and have its
    parameter's shape, and together the tensors must cover every parameter of ``model`` (which
    may live on the meta device). One tensor at a time, so memory stays small.
    """
    import gguf
    import numpy as np

    from golden_al.models.gguf_weights import load_state_dict, tensor_index

    index = tensor_index(gguf_path, hf_name_for_gguf_tensor)
    reference = {t.name: t for t in gguf.GGUFReader(str(gguf_path)).tensors}
    params = dict(model.named_parameters())
    mismatched: list[str] = []
    unknown: list[str] = []
    progress(0, total=len(index), unit="tensors", description=f"checking {gguf_path.name} bit for bit")
    for entry in index:
        progress(1)
        param = params.get(entry.param)
        if param is None:
            unknown.append(entry.gguf_name)
            continue
        ours = load_state_dict(gguf_path, [entry])[entry.param].numpy()
        ref_tensor = reference[entry.gguf_name]
        ref = np.asarray(gguf.quants.dequantize(ref_tensor.data, ref_tensor.tensor_type), dtype=np.float32)
        if (tuple(param.shape) != entry.shape or ours.size != ref.size
                or not np.array_equal(ours.reshape(-1).view(np.uint32), ref.reshape(-1).view(np.uint32))):
            mismatched.append(entry.gguf_name)
    uncovered = sorted(set(params) - {e.param for e in index})
    twice = sorted(name for name, n in Counter(e.param for e in index).items() if n > 1)
    if mismatched or unknown or uncovered or twice:
        raise ModelError(
            f"{gguf_path.name}: cannot read the weights from the GGUF exactly: {len(mismatched)} tensors differ from "
            f"gguf-py's dequantization or their parameter's shape ({', '.join(mismatched[:5])}), {len(unknown)} name "
            f"no parameter ({', '.join(unknown[:5])}), {len(twice)} parameters are named twice "
            f"({', '.join(twice[:5])}), {len(uncovered)} parameters are not in the GGUF ({', '.join(uncovered[:5])})",
            hint="convert with weights='safetensors' (models fetch --weights safetensors)",
        )
    return {
        "format": "gguf",
        "gguf_file": gguf_path.name,
        "gguf_relpath": os.path.relpath(gguf_path, out_dir),
        "gguf_size": gguf_path.stat().st_size,
        "check": {"compared_with": f"gguf-py {package_versions(['gguf']).get('gguf')} gguf.quants.dequantize "
                                   f"(what transformers' GGUF loader uses), every tensor",
                  "tensors_checked": len(index), "bit_identical": True, "parameters_covered": len(params)},
        "tensors": [e.to_json() for e in index],
    }


def _compare_tokenizers(reference: Any, saved_dir: Path) -> dict[str, Any]:
    """The tokenizer re-loaded from ``saved_dir`` must behave exactly like ``reference``."""
    from transformers import AutoTokenizer

    reloaded = AutoTokenizer.from_pretrained(str(saved_dir))
    for text in TOKENIZER_SAMPLES:
        a = reference(text, add_special_tokens=False)["input_ids"]
        b = reloaded(text, add_special_tokens=False)["input_ids"]
        if a != b:
            raise ModelError(f"the saved tokenizer encodes {text[:40]!r} differently from the GGUF tokenizer",
                             hint="do not use this conversion; report the transformers version")
    msgs = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": TOKENIZER_SAMPLES[0]}]
    rendered = [t.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True) for t in (reference, reloaded)]
    if rendered[0] != rendered[1]:
        raise ModelError("the saved chat template renders differently from the GGUF's",
                         hint="do not use this conversion")
    if len(reloaded) != len(reference):
        raise ModelError(f"the saved tokenizer has {len(reloaded)} tokens, the GGUF's {len(reference)}")
    def normalizer(tok: Any) -> str | None:
        norm = tok.backend_tokenizer.normalizer
        return type(norm).__name__ if norm is not None else None

    # transformers' Qwen2 class adds NFC on load (as upstream's tokenizer.json has) while its GGUF
    # tokenizer has none: the two then differ on non-NFC text only. Recorded, not an error.
    return {"samples": len(TOKENIZER_SAMPLES), "identical": True, "vocab_size": len(reloaded),
            "class": type(reloaded).__name__, "gguf_normalizer": normalizer(reference),
            "saved_normalizer": normalizer(reloaded)}


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Silence transformers' own progress bars while converting (the caller shows its own progress).

    Its GGUF loader calls ``tqdm`` directly, so that one name is swapped for a pass-through
    for the duration and restored afterwards.
    """
    from transformers.utils import logging as hf_logging

    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    gguf_utils: Any = None
    original: Any = None
    try:
        import transformers.modeling_gguf_pytorch_utils as gguf_utils

        original = getattr(gguf_utils, "tqdm", None)
        if original is not None:
            gguf_utils.tqdm = lambda iterable=None, *args, **kwargs: iterable
    except ImportError:
        gguf_utils = None
    try:
        yield
    finally:
        if gguf_utils is not None and original is not None:
            gguf_utils.tqdm = original
        if was_enabled:
            hf_logging.enable_progress_bar()


@contextlib.contextmanager
def _one_parse(gguf_path: Path) -> Iterator[None]:
    """Parse ``gguf_path`` once for the whole conversion, however many readers ask for it.

    gguf-py's ``GGUFReader`` builds every metadata field in Python (10-20 s for a 150k-token
    vocabulary on 2 cores), and a conversion needs it five times: the file's metadata, the
    tokenizer and the configuration (transformers' ``load_gguf_checkpoint`` in
    transformers/modeling_gguf_pytorch_utils.py, 5.x, imports ``gguf.GGUFReader`` and is imported by
    ``AutoTokenizer``/``AutoConfig`` when they run), the tensor index and the reference tensors.
    For the duration, ``gguf.GGUFReader`` of this file returns one shared reader (it is read-only: a
    memory map and views of it) and ``load_gguf_checkpoint(..., return_tensors=False)`` of this file
    returns a deep copy of its first answer; both are restored afterwards.
    """
    import copy

    import gguf
    import transformers.modeling_gguf_pytorch_utils as gguf_utils

    target = str(gguf_path.resolve())
    original_reader, original_load = gguf.GGUFReader, gguf_utils.load_gguf_checkpoint
    readers: dict[str, Any] = {}
    answers: dict[str, Any] = {}

    def same_file(path: Any) -> bool:
        try:
            return str(Path(path).resolve()) == target
        except (TypeError, OSError):
            return False

    def shared_reader(path: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs or not same_file(path):
            return original_reader(path, *args, **kwargs)
        if target not in readers:
            readers[target] = original_reader(path)
        return readers[target]

    def shared_load(path: Any, return_tensors: bool = False, *args: Any, **kwargs: Any) -> Any:
        if return_tensors or args or kwargs or not same_file(path):
            return original_load(path, return_tensors, *args, **kwargs)
        if target not in answers:
            answers[target] = original_load(path, False)
        return copy.deepcopy(answers[target])

    gguf.GGUFReader = shared_reader  # type: ignore[misc,assignment]
    gguf_utils.load_gguf_checkpoint = shared_load  # type: ignore[assignment]
    try:
        yield
    finally:
        gguf.GGUFReader = original_reader  # type: ignore[misc]
        gguf_utils.load_gguf_checkpoint = original_load


def _with_heartbeat(progress: ProgressFn, description: str, fn: Callable[[], Any], *, every_s: float = 1.0) -> Any:
    """``fn()`` in a worker thread while ``description (N s)`` moves once per ``every_s``.

    For the library calls that report nothing themselves (transformers parsing a GGUF), so a
    first run never stands still. The worker is a daemon: Ctrl-C in the caller is not held up.
    """
    import threading

    result: dict[str, Any] = {}

    def work() -> None:
        try:
            result["value"] = fn()
        except BaseException as err:  # handed to the caller below
            result["error"] = err

    worker = threading.Thread(target=work, name="golden-al-heartbeat", daemon=True)
    started = time.perf_counter()
    worker.start()
    progress(0, description=description)
    while True:
        worker.join(every_s)
        if not worker.is_alive():
            break
        progress(0, description=f"{description} ({time.perf_counter() - started:.0f} s)")
    if "error" in result:
        raise result["error"]
    return result["value"]


@contextlib.contextmanager
def _counting_dequantize(name: str, total: int, progress: ProgressFn) -> Iterator[None]:
    """Count the tensors (a phase of the task) while transformers dequantizes.

    transformers' GGUF loader (transformers/modeling_gguf_pytorch_utils.py, 5.x,
    ``load_gguf_checkpoint``) imports ``gguf.dequantize`` when it runs and calls it once per
    tensor, so wrapping that module attribute for the duration counts the tensors.
    """
    import gguf

    original = gguf.dequantize
    progress(0, total=total or None, unit="tensors", description=f"dequantizing {name}")

    def counted(data: Any, qtype: Any) -> Any:
        out = original(data, qtype)
        progress(1)
        return out

    gguf.dequantize = counted
    try:
        yield
    finally:
        gguf.dequantize = original


def _write_full_tokenizer_json(saved_dir: Path) -> dict[str, Any]:
    """Rewrite ``tokenizer.json`` as the complete backend AutoTokenizer builds, and verify the fast path.

    transformers' Qwen2 tokenizer class adds an NFC normalizer on load that the file
    saved from a GGUF lacks (upstream Qwen2.5's tokenizer.json has it). Saving the
    backend AutoTokenizer actually uses makes the file self-describing, so
    :func:`golden_al.models.tokenizer.fast_tokenizer` can load it directly.
    Returns the equivalence check, or ``{"verified": False, "reason": ...}``.
    """
    from transformers import AutoTokenizer

    from golden_al.models.tokenizer import check_fast_equivalent

    reference = AutoTokenizer.from_pretrained(str(saved_dir))
    reference.backend_tokenizer.save(str(saved_dir / "tokenizer.json"))
    try:
        return check_fast_equivalent(saved_dir, TOKENIZER_SAMPLES)
    except ModelError as err:
        return {"verified": False, "reason": err.message}


def convert_gguf(
    gguf_path: str | Path,
    out_dir: str | Path,
    *,
    dtype: str = "float32",
    gguf_sha256: str | None = None,
    eos_token_ids: list[int] | None = None,
    shipped_dtype: str | None = None,
    extra_files: Mapping[str, str] | None = None,
    progress: ProgressFn | None = None,
    weights: str = "safetensors",
) -> dict[str, Any]:
    """Convert ``gguf_path`` into ``out_dir`` (written atomically: a temp dir renamed at the end).

    Returns the conversion manifest (also written as ``out_dir/golden_al_conversion.json``).
    ``shipped_dtype`` defaults to the GGUF's file type; transformers' own progress bars are silenced. ``weights``: one of :data:`WEIGHT_LAYOUTS` (``gguf``:
    float32 only; the directory then needs the GGUF where ``gguf_relpath`` says).
    Needs torch, transformers, gguf and accelerate.
    """
    try:
        import torch
        from transformers.utils.quantization_config import GgufConfig  # noqa: F401 - checked here, used in _convert
    except ImportError as err:
        raise ModelError("converting a GGUF needs torch, transformers, gguf and accelerate",
                         hint="pip install 'golden-al[engine]'") from err
    progress = progress or (lambda *a, **k: None)
    gguf_path = Path(gguf_path).resolve()
    out_dir = Path(out_dir)
    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}.get(dtype)
    if torch_dtype is None:
        raise ModelError(f"cannot convert to dtype {dtype!r}; expected float32, bfloat16 or float16")
    if weights not in WEIGHT_LAYOUTS:
        raise ModelError(f"unknown weight layout {weights!r}; expected one of {', '.join(WEIGHT_LAYOUTS)}")
    if weights == "gguf" and dtype != "float32":
        raise ModelError(f"weights read from the GGUF are float32 (exact); {dtype} needs weights='safetensors'")
    started = time.perf_counter()
    with _one_parse(gguf_path), _quiet_transformers():
        meta = _with_heartbeat(progress, f"reading the header of {gguf_path.name}", lambda: gguf_metadata(gguf_path))
        digest = gguf_sha256 or sha256_file(gguf_path)
        return _convert(gguf_path, out_dir, meta=meta, digest=digest, dtype=dtype, torch_dtype=torch_dtype,
                        eos_token_ids=eos_token_ids, shipped_dtype=shipped_dtype, extra_files=extra_files,
                        progress=progress, started=started, weights=weights)


def _convert(gguf_path: Path, out_dir: Path, *, meta: dict[str, Any], digest: str, dtype: str, torch_dtype: Any,
             eos_token_ids: list[int] | None, shipped_dtype: str | None, extra_files: Mapping[str, str] | None,
             progress: ProgressFn, started: float, weights: str) -> dict[str, Any]:
    """Kept whole: one conversion's steps (tokenizer, weights, checks, saving), each timed into the one
    manifest it returns."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    from transformers.utils.quantization_config import GgufConfig

    t0 = time.perf_counter()
    tokenizer = _with_heartbeat(progress, f"parsing the tokenizer of {gguf_path.name}",
                                lambda: AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name))
    tokenizer_s = time.perf_counter() - t0

    tensor_check: dict[str, Any] = {"skipped": f"no tensor-name map for architecture {meta['architecture']!r}"}
    weights_record: dict[str, Any] = {"format": "safetensors"}
    t0 = time.perf_counter()
    if weights == "gguf":  # the configuration and a skeleton on the meta device; the weights stay in the GGUF
        if meta["architecture"] not in _CHECKABLE_ARCHS:
            raise ModelError(f"{gguf_path.name}: no tensor-name map for architecture {meta['architecture']!r}, so its "
                             "weights cannot be read from the GGUF", hint="convert with weights='safetensors'")
        config = _with_heartbeat(progress, f"reading the configuration of {gguf_path.name}",
                                 lambda: AutoConfig.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name))
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        load_s = time.perf_counter() - t0
        weights_record = _index_and_check(model, gguf_path, out_dir, progress)
        tensor_check = weights_record["check"]
    else:
        progress(0, description=f"dequantizing {gguf_path.name}")
        with _counting_dequantize(gguf_path.name, int(meta.get("tensor_count") or 0), progress):
            model = AutoModelForCausalLM.from_pretrained(
                str(gguf_path.parent), gguf_file=gguf_path.name, dtype=torch.float32,
                quantization_config=GgufConfig(dequantize=True),
            )
        load_s = time.perf_counter() - t0
    model.eval()
    _check_dense(model, torch.float32)
    if weights != "gguf" and meta["architecture"] in _CHECKABLE_ARCHS:  # the gguf layout is checked above
        tensor_check = _compare_with_gguf(model, gguf_path, progress)
    _drop_quantization_state(model)
    if torch_dtype != torch.float32:
        model = model.to(torch_dtype)  # type: ignore[arg-type]
    num_parameters = sum(p.numel() for p in model.parameters())

    gen = model.generation_config
    if eos_token_ids:
        gen.eos_token_id = list(eos_token_ids)
    if gen.pad_token_id is None and tokenizer.pad_token_id is not None:
        gen.pad_token_id = tokenizer.pad_token_id
    gen.do_sample = False
    model.config.name_or_path = meta.get("name") or gguf_path.stem

    tmp = out_dir.with_name(f".{out_dir.name}.tmp-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    try:
        progress(0, description=f"saving {out_dir.name}")
        if weights == "gguf":  # configuration only: the weights stay in the GGUF
            model.config.architectures = [type(model).__name__]
            model.config.save_pretrained(str(tmp))
            model.generation_config.save_pretrained(str(tmp))
        else:
            model.save_pretrained(str(tmp), safe_serialization=True)
        tokenizer.save_pretrained(str(tmp))
        tokenizer_check = _compare_tokenizers(tokenizer, tmp)
        fast_check = _write_full_tokenizer_json(tmp)
        del model
        for name, text in (extra_files or {}).items():
            (tmp / name).write_text(text, encoding="utf-8")
        files = {}
        for path in sorted(p for p in tmp.rglob("*") if p.is_file()):
            rel = str(path.relative_to(tmp))
            files[rel] = {"size": path.stat().st_size, "sha256": sha256_file(path)}
        manifest = {
            "schema": "golden-al/conversion/1",
            "gguf_file": gguf_path.name,
            "gguf_sha256": digest,
            "gguf_size": gguf_path.stat().st_size,
            "file_type": meta["file_type"],
            "gguf_architecture": meta["architecture"],
            "gguf_general_name": meta["name"],
            "gguf_tensor_types": meta["tensor_types"],
            "shipped_dtype": shipped_dtype or meta["file_type"],
            "dtype": dtype,
            "num_parameters": num_parameters,
            "eos_token_ids": list(eos_token_ids) if eos_token_ids else None,
            "tensor_check": tensor_check,
            "weights": weights_record,
            "tokenizer_check": tokenizer_check,
            "fast_tokenizer": fast_check,
            "timings_s": {"tokenizer_from_gguf": round(tokenizer_s, 2),
                          ("config_from_gguf" if weights == "gguf" else "model_from_gguf"): round(load_s, 2),
                          "total": round(time.perf_counter() - started, 2)},
            "transformers": package_versions(["transformers"]).get("transformers"),
            "packages": package_versions(["torch", "transformers", "gguf", "safetensors", "tokenizers"]),
            "created": now_iso(),
            "files": files,
        }
        atomic_write_text(tmp / CONVERSION_MANIFEST, json.dumps(manifest, indent=2) + "\n")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        tmp.replace(out_dir)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return manifest
