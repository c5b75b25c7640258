"""A block draft's checkpoint config (DFlash, DFlash2), read and checked before torch loads.

Torch-free: ``measure`` reads it during its cheap checks, so a bad checkpoint fails in a
second with the field, the value seen and the value expected, not after the target loads.

Two published layouts:

* **z-lab** (``config.json`` of a Qwen3-style draft with a ``dflash_config`` object;
  z-lab/dflash ``dflash/model.py`` 0.1.0, ``DFlashDraftModel`` / ``DFlash2DraftModel``): the
  draft fields (``block_size``, ``mask_token_id``, ``target_layer_ids``, DFlash2's
  ``conv_kernel_size``, ``conv_group_size``, ``selector_rank``, ``selector_top_k``) are read from
  ``dflash_config`` first, then from the top level. Loaded by :mod:`.block_draft`.
* **speculators** (vllm-project/speculators 0.9.0 ``speculators/models/dflash/config.py`` and
  ``core.py``: ``speculators_model_type`` ``dflash``, ``transformer_layer_config``,
  ``aux_hidden_state_layer_ids``, ``block_size``, ``mask_token_id``): the same layers under the same
  parameter names; the checkpoint may also hold the verifier's norm (used only to train) and, for a
  full-vocabulary draft, a copy of the target's LM head, which the loader sets aside. A draft with
  a reduced vocabulary (``draft_vocab_size`` below the target's, a ``d2t`` map), one that samples
  from the anchor (``sample_from_anchor``) and a speculators ``dflash2`` are refused by name
  (:class:`BlockDraftFormatError`).

DFlash2 is told from DFlash by its architecture name or by ``selector_top_k > 0`` (the rule
llama.cpp uses, ``common/speculative.cpp``).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from golden_al.errors import InputFileError, UsageError

__all__ = [
    "ALGORITHMS",
    "BlockDraftConfig",
    "BlockDraftConfigError",
    "BlockDraftFormatError",
    "default_target_layer_ids",
    "is_block_draft",
    "read_block_draft_config",
]

#: The block-draft algorithms this engine runs (``measure --algorithm``; records' ``block_draft.algorithm``).
ALGORITHMS = ("dflash", "dflash2")
CONFIG_FILE = "config.json"
MAX_CONFIG_BYTES = 1 << 20


class BlockDraftConfigError(InputFileError):
    """A block draft's config lacks a field or holds a value this engine cannot run."""


class BlockDraftFormatError(BlockDraftConfigError):
    """A block draft in a layout whose weights this engine does not load."""


@dataclass(frozen=True)
class BlockDraftConfig:
    """What the reference engine needs of a DFlash or DFlash2 draft."""

    path: str
    algorithm: str
    """``dflash`` or ``dflash2``."""
    layout: str
    """``z-lab`` or ``speculators``."""
    block_size: int
    """The draft's own block: the verified token plus ``block_size - 1`` drafts (the largest k + 1)."""
    mask_token_id: int
    target_layer_ids: tuple[int, ...]
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    rms_norm_eps: float
    rope_theta: float
    vocab_size: int
    attention_bias: bool = False
    layer_types: tuple[str, ...] = ()
    sliding_window: int | None = None
    is_causal: bool | None = None
    input_embedding_scale: float = 1.0
    output_multiplier: float = 1.0
    final_logit_softcapping: float | None = None
    conv_kernel_size: int = 0
    conv_group_size: int = 0
    selector_rank: int = 0
    selector_top_k: int = 0

    @property
    def max_draft_len(self) -> int:
        """The largest k this draft proposes: ``block_size - 1``."""
        return self.block_size - 1

    def layer_type(self, index: int) -> str:
        return self.layer_types[index] if self.layer_types else "full_attention"

    def summary(self) -> dict[str, Any]:
        """The fields a record names (``block_draft`` in measurement.json)."""
        return {"algorithm": self.algorithm, "layout": self.layout, "block_size": self.block_size,
                "mask_token_id": self.mask_token_id, "target_layer_ids": list(self.target_layer_ids),
                "num_draft_layers": self.num_hidden_layers}

    def zlab_json(self, *, num_target_layers: int) -> dict[str, Any]:
        """This config in the z-lab layout (a Qwen3 config with ``dflash_config``), as checkpoints ship it."""
        dflash: dict[str, Any] = {"block_size": self.block_size, "mask_token_id": self.mask_token_id,
                                  "target_layer_ids": list(self.target_layer_ids)}
        if self.algorithm == "dflash2":
            dflash.update(conv_kernel_size=self.conv_kernel_size, conv_group_size=self.conv_group_size,
                          selector_rank=self.selector_rank, selector_top_k=self.selector_top_k)
        for name, default in (("input_embedding_scale", 1.0), ("output_multiplier", 1.0)):
            if getattr(self, name) != default:
                dflash[name] = getattr(self, name)
        if self.final_logit_softcapping:
            dflash["final_logit_softcapping"] = self.final_logit_softcapping
        return {
            "architectures": ["DFlash2DraftModel" if self.algorithm == "dflash2" else "DFlashDraftModel"],
            "model_type": "qwen3", "hidden_act": "silu", "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size, "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads, "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim, "rms_norm_eps": self.rms_norm_eps, "vocab_size": self.vocab_size,
            "rope_theta": self.rope_theta, "rope_parameters": {"rope_type": "default", "rope_theta": self.rope_theta},
            "attention_bias": self.attention_bias, "tie_word_embeddings": False,
            "layer_types": list(self.layer_types) or ["full_attention"] * self.num_hidden_layers,
            "num_target_layers": num_target_layers, "max_position_embeddings": 32768, "dflash_config": dflash,
        }

    def check_target(self, *, num_target_layers: int, target_hidden_size: int, target_vocab_size: int) -> None:
        """Raise :class:`BlockDraftConfigError` when the draft cannot sit on this target."""
        bad = [i for i in self.target_layer_ids if not 0 <= i < num_target_layers]
        if bad:
            raise BlockDraftConfigError(
                f"target_layer_ids {list(self.target_layer_ids)} name layer(s) {bad}, but the target has "
                f"{num_target_layers} layers (expected 0..{num_target_layers - 1})", path=self.path,
                hint="this draft was trained for another target")
        if self.hidden_size != target_hidden_size:
            raise BlockDraftConfigError(
                f"hidden_size {self.hidden_size} differs from the target's {target_hidden_size}; the draft "
                "embeds with the target's embedding and projects with its LM head", path=self.path,
                hint="this draft was trained for another target")
        if not 0 <= self.mask_token_id < target_vocab_size:
            raise BlockDraftConfigError(
                f"mask_token_id {self.mask_token_id} is outside the target's vocabulary (0..{target_vocab_size - 1})",
                path=self.path)


def default_target_layer_ids(num_target_layers: int, num_draft_layers: int) -> list[int]:
    """The target layers a draft conditions on when its config names none: evenly spaced from
    layer 1 to ``num_target_layers - 3``, or the middle layer for a one-layer draft
    (z-lab/dflash ``dflash/model.py`` 0.1.0 ``build_target_layer_ids``)."""
    if num_draft_layers == 1:
        return [num_target_layers // 2]
    start, end = 1, num_target_layers - 3
    return [round(start + i * (end - start) / (num_draft_layers - 1)) for i in range(num_draft_layers)]


def _read_json(path: Path) -> dict[str, Any]:
    """The config object, read bounded (a regular file of at most MAX_CONFIG_BYTES: safeio)."""
    from golden_al import safeio

    raw = safeio.read_bytes(path, max_bytes=MAX_CONFIG_BYTES)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BlockDraftConfigError(f"the draft config is not JSON: {exc}", path=path) from None
    if not isinstance(data, dict):
        raise BlockDraftConfigError(f"the draft config is a JSON {type(data).__name__}, expected an object",
                                    path=path)
    return data


def is_block_draft(path: str | Path) -> bool:
    """True when ``path`` is a folder whose config.json describes a DFlash or DFlash2 draft."""
    cfg = Path(path) / CONFIG_FILE
    if not cfg.is_file():
        return False
    try:
        data = _read_json(cfg)
    except InputFileError:
        return False
    arch = " ".join(str(a) for a in data.get("architectures") or [])
    return ("dflash_config" in data or "DFlash" in arch
            or str(data.get("speculators_model_type", "")).lower() in ALGORITHMS)


class _Fields:
    """Typed reads of one config object, each failure naming the field, the value and what was expected."""

    def __init__(self, path: Path, *sources: dict[str, Any]) -> None:
        self.path, self.sources = path, sources

    def raw(self, name: str) -> Any:
        for src in self.sources:
            if name in src and src[name] is not None:
                return src[name]
        return None

    def fail(self, name: str, seen: Any, expected: str, hint: str | None = None) -> BlockDraftConfigError:
        what = "is missing" if seen is None else f"is {seen!r}"
        return BlockDraftConfigError(f"{name} {what}; expected {expected}", path=self.path, hint=hint)

    def integer(self, name: str, *, default: int | None = None, minimum: int = 0) -> int:
        v = self.raw(name)
        if v is None and default is not None:
            return default
        if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
            raise self.fail(name, v, f"an integer >= {minimum}")
        return v

    def number(self, name: str, *, default: float | None = None, positive: bool = True) -> float:
        v = self.raw(name)
        if v is None and default is not None:
            return default
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (positive and not v > 0):
            raise self.fail(name, v, "a positive number" if positive else "a number")
        return float(v)


def _rope_theta(f: _Fields) -> float:
    params = f.raw("rope_parameters") or f.raw("rope_scaling")
    if isinstance(params, dict):
        kind = params.get("rope_type", params.get("type", "default"))
        if kind not in ("default", None):
            raise f.fail("rope_parameters.rope_type", kind, "'default' (no RoPE scaling)",
                         hint="this engine implements the draft's plain rotary embedding only")
        if "rope_theta" in params:
            return _Fields(f.path, params).number("rope_theta")
    return f.number("rope_theta", default=10000.0)


def read_block_draft_config(path: str | Path) -> BlockDraftConfig:
    """Read and check the config of the block draft in folder ``path`` (z-lab or speculators layout).

    Raises :class:`BlockDraftConfigError` naming the field, the value seen and the value
    expected; :class:`BlockDraftFormatError` for a layout whose weights are not loaded here.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise UsageError(f"block draft {str(path)!r} is not a folder",
                         hint="pass the folder holding the draft's config.json and safetensors")
    cfg_path = folder / CONFIG_FILE
    if not cfg_path.is_file():
        raise BlockDraftConfigError(f"no {CONFIG_FILE} in the draft folder", path=folder)
    data = _read_json(cfg_path)
    spec_type = str(data.get("speculators_model_type", "")).lower()
    if spec_type:
        return _speculators(cfg_path, data, spec_type)
    dflash = data.get("dflash_config", {})
    if not isinstance(dflash, dict):
        raise BlockDraftConfigError(f"dflash_config is a JSON {type(dflash).__name__}, expected an object",
                                    path=cfg_path)
    arch = " ".join(str(a) for a in data.get("architectures") or [])
    if not dflash and "DFlash" not in arch:
        raise BlockDraftConfigError(
            "this config describes no block draft (no dflash_config and no DFlash architecture)", path=cfg_path,
            hint="a chain draft runs with --algorithm draft-model")
    f = _Fields(cfg_path, dflash, data)
    selector_top_k = f.integer("selector_top_k", default=0)
    algorithm = "dflash2" if ("DFlash2" in arch or selector_top_k > 0) else "dflash"
    return _build(cfg_path, f, data, algorithm=algorithm, layout="z-lab",
                  layer_ids=f.raw("target_layer_ids"), num_target_layers=f.raw("num_target_layers"))


def _speculators(cfg_path: Path, data: dict[str, Any], spec_type: str) -> BlockDraftConfig:
    if spec_type not in ALGORITHMS:
        raise BlockDraftConfigError(f"speculators_model_type is {spec_type!r}; expected one of {', '.join(ALGORITHMS)}",
                                    path=cfg_path, hint="this engine runs DFlash and DFlash2 block drafts")
    layer = data.get("transformer_layer_config")
    if not isinstance(layer, dict):
        raise BlockDraftConfigError("transformer_layer_config is missing; expected the draft layers' config object",
                                    path=cfg_path)
    f = _Fields(cfg_path, data, layer)
    cfg = _build(cfg_path, f, layer, algorithm="dflash", layout="speculators",
                 layer_ids=data.get("aux_hidden_state_layer_ids"), num_target_layers=None,
                 block_default=8, sliding_non_causal=bool(data.get("sliding_window_non_causal", False)))
    what = (f"a speculators-format {spec_type} draft (block {cfg.block_size}, mask token {cfg.mask_token_id}, "
            f"target layers {list(cfg.target_layer_ids)})")
    hint = "measure it through a server (golden-al measure --engine vllm)"
    if spec_type != "dflash":
        raise BlockDraftFormatError(f"{what}: the speculators DFlash2 layout is not loaded by this engine",
                                    path=cfg_path, hint=hint)
    draft_vocab = data.get("draft_vocab_size")
    if draft_vocab is not None and draft_vocab != cfg.vocab_size:
        raise BlockDraftFormatError(
            f"{what}: draft_vocab_size {draft_vocab} is a reduced vocabulary (the target's is {cfg.vocab_size}); "
            "its own LM head and d2t map are not loaded by this engine", path=cfg_path, hint=hint)
    if data.get("sample_from_anchor"):
        raise BlockDraftFormatError(f"{what}: sample_from_anchor is true (block_size drafts per step, the anchor "
                                    "included); this engine drafts block_size - 1 after the anchor",
                                    path=cfg_path, hint=hint)
    return cfg


def _build(cfg_path: Path, f: _Fields, layer: dict[str, Any], *, algorithm: str, layout: str, layer_ids: Any,
           num_target_layers: Any, block_default: int = 16, sliding_non_causal: bool = False) -> BlockDraftConfig:
    hidden = f.integer("hidden_size", minimum=1)
    n_layers = f.integer("num_hidden_layers", minimum=1)
    heads = f.integer("num_attention_heads", minimum=1)
    kv_heads = f.integer("num_key_value_heads", default=heads, minimum=1)
    if heads % kv_heads:
        raise f.fail("num_key_value_heads", kv_heads, f"a divisor of num_attention_heads ({heads})")
    head_dim = f.integer("head_dim", default=hidden // heads, minimum=1)
    act = f.raw("hidden_act") or "silu"
    if act != "silu":
        raise f.fail("hidden_act", act, "'silu' (the Qwen3 MLP)")
    block = f.integer("block_size", default=block_default, minimum=2)
    mask = f.raw("mask_token_id")
    if isinstance(mask, bool) or not isinstance(mask, int) or mask < 0:
        raise f.fail("mask_token_id", mask, "a token id (an integer >= 0)",
                     hint="z-lab drafts set it in dflash_config; it fills the block's draft positions")
    if layer_ids is None:
        if not isinstance(num_target_layers, int) or isinstance(num_target_layers, bool) or num_target_layers < 1:
            raise f.fail("target_layer_ids", None, "a list of target layer indices (or num_target_layers to derive it)")
        layer_ids = default_target_layer_ids(num_target_layers, n_layers)
    if (not isinstance(layer_ids, list) or not layer_ids
            or any(isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in layer_ids)):
        raise f.fail("target_layer_ids", layer_ids, "a non-empty list of target layer indices (integers >= 0)")
    layer_types = layer.get("layer_types") or ()
    if layer_types and (not isinstance(layer_types, list) or len(layer_types) != n_layers
                        or any(t not in ("full_attention", "sliding_attention") for t in layer_types)):
        raise f.fail("layer_types", layer_types,
                     f"{n_layers} entries of 'full_attention' or 'sliding_attention'")
    sliding = f.raw("sliding_window")
    if "sliding_attention" in layer_types and (not isinstance(sliding, int) or sliding < 1):
        raise f.fail("sliding_window", sliding, "a positive integer (the draft has sliding layers)")
    softcap = f.raw("final_logit_softcapping")
    is_causal = False if sliding_non_causal else f.raw("is_causal")
    cfg = BlockDraftConfig(
        path=str(cfg_path.parent), algorithm=algorithm, layout=layout, block_size=block, mask_token_id=mask,
        target_layer_ids=tuple(layer_ids), hidden_size=hidden, num_hidden_layers=n_layers,
        num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=head_dim,
        intermediate_size=f.integer("intermediate_size", minimum=1),
        rms_norm_eps=f.number("rms_norm_eps", default=1e-6), rope_theta=_rope_theta(f),
        vocab_size=f.integer("vocab_size", minimum=1), attention_bias=bool(f.raw("attention_bias") or False),
        layer_types=tuple(layer_types), sliding_window=sliding if isinstance(sliding, int) else None,
        is_causal=None if is_causal is None else bool(is_causal),
        input_embedding_scale=f.number("input_embedding_scale", default=1.0),
        output_multiplier=f.number("output_multiplier", default=1.0),
        final_logit_softcapping=float(softcap) if isinstance(softcap, (int, float)) and softcap > 0 else None,
    )
    if algorithm == "dflash2":
        kernel = f.integer("conv_kernel_size", minimum=1)
        group = f.integer("conv_group_size", minimum=1)
        if hidden % group:
            raise f.fail("conv_group_size", group, f"a divisor of hidden_size ({hidden})")
        top_k = f.integer("selector_top_k", minimum=1)
        if top_k > cfg.vocab_size:
            raise f.fail("selector_top_k", top_k, f"at most vocab_size ({cfg.vocab_size})")
        cfg = dataclasses.replace(cfg, conv_kernel_size=kernel, conv_group_size=group,
                                  selector_rank=f.integer("selector_rank", minimum=1), selector_top_k=top_k)
    return cfg
