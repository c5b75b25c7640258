"""Each engine's own spelling of draft length and of synthetic acceptance.

One place for the per-engine knowledge that ``env``, ``inject``, ``check``,
``check-run`` and ``measure --launch`` share (sources: engine-facts.md; SGLang
0.5.23 ``python/sglang/srt/arg_groups/speculative_hook.py`` and ``environ.py``;
vLLM 0.33.0 ``vllm/config/speculative.py``; TensorRT-LLM
``tensorrt_llm/_torch/speculative/interface.py``; ATOM HEAD ffdf3bb5d
``atom/model_engine/arg_utils.py`` and ``atom/config.py``):

* how the draft length ``k`` (vLLM/ATOM ``num_speculative_tokens``) follows from
  each engine's flags: :func:`sglang_draft_len`, :func:`vllm_draft_len`,
  :func:`trtllm_draft_len`, :func:`atom_draft_len`;
* the flags that ask an engine for draft length ``k``: :func:`sglang_spec_flags`,
  :func:`vllm_speculative_config`, :func:`atom_spec_flags`;
* the exact synthetic-acceptance settings for a golden AL:
  :func:`synthetic_settings` (the ``golden-al env --format json`` contract);
* :func:`format_value`: numbers as the harnesses write them (``f"{x:g}"`` without
  float noise).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from distributions import units
from golden_al.errors import UsageError

__all__ = [
    "ATOM_LENGTH_FLAG",
    "ATOM_RATE_FLAG",
    "ENGINES",
    "SGLANG_ALGORITHMS",
    "SGLANG_ENV_LEN",
    "SGLANG_ENV_METHOD",
    "SGLANG_ENV_TOKEN_MODE",
    "SGLANG_LEGACY_ENV_LEN",
    "SGLANG_LEGACY_ENV_METHOD",
    "TRTLLM_ENV_FORCE",
    "VLLM_LENGTH_KEY",
    "VLLM_METHOD_KEY",
    "VLLM_RATES_KEY",
    "DraftLen",
    "atom_draft_len",
    "atom_spec_flags",
    "format_value",
    "normalize_sglang_algorithm",
    "sglang_draft_len",
    "sglang_max_len",
    "sglang_spec_flags",
    "synthetic_settings",
    "trtllm_draft_len",
    "vllm_draft_len",
    "vllm_speculative_config",
]

Engine = Literal["sglang", "vllm", "trtllm", "atom"]
ENGINES: tuple[str, ...] = ("sglang", "vllm", "trtllm", "atom", "llamacpp")

# SGLang (python/sglang/srt/environ.py, 0.5.23): read once at import, so they must be in
# the server's launch environment.
SGLANG_ENV_LEN = "SGLANG_SIMULATE_ACC_LEN"
SGLANG_ENV_METHOD = "SGLANG_SIMULATE_ACC_METHOD"
SGLANG_ENV_TOKEN_MODE = "SGLANG_SIMULATE_ACC_TOKEN_MODE"
#: Older SGLang read these un-prefixed names; 0.5.23 no longer aliases them.
SGLANG_LEGACY_ENV_LEN = "SIMULATE_ACC_LEN"
SGLANG_LEGACY_ENV_METHOD = "SIMULATE_ACC_METHOD"
SGLANG_METHODS: tuple[str, ...] = ("match-expected", "multinomial")
SGLANG_TOKEN_MODES: tuple[str, ...] = ("fixed", "real-draft-token")

# vLLM (vllm/config/speculative.py, 0.33.0): keys inside --speculative-config.
VLLM_METHOD_KEY = "rejection_sample_method"
VLLM_LENGTH_KEY = "synthetic_acceptance_length"
VLLM_RATES_KEY = "synthetic_acceptance_rates"

# TensorRT-LLM (tensorrt_llm/_torch/speculative/interface.py): counts draft tokens (AL - 1).
TRTLLM_ENV_FORCE = "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS"

# ATOM (atom/model_engine/arg_utils.py): mutually exclusive length and rate forms.
ATOM_LENGTH_FLAG = "--spec-decode-acceptance-length"
ATOM_RATE_FLAG = "--spec-decode-acceptance-rate"

#: SGLang --speculative-algorithm values (upper-cased by SGLang) and their family.
SGLANG_ALGORITHMS: dict[str, str] = {
    "EAGLE": "eagle",
    "EAGLE3": "eagle",
    "NEXTN": "eagle",
    "STANDALONE": "eagle",
    "FROZEN_KV_MTP": "eagle",
    "UNO": "eagle",
    "DFLASH": "dflash",
    "DSPARK": "dspark",
    "NGRAM": "ngram",
}


@dataclass(frozen=True)
class DraftLen:
    """A draft length derived from an engine's flags, with the rule that gave it."""

    k: int
    rule: str
    chain: bool = True  # False for SGLang EAGLE trees (topk > 1) and NGRAM


def format_value(x: float) -> str:
    """A number as the harnesses print it (``f"{x:g}"``), without float noise.

    ``4.05 -> "4.05"``, ``4.0 -> "4"``, ``4.05 - 1 -> "3.05"`` (not 3.0499999999999998).
    """
    if not math.isfinite(x):
        raise UsageError(f"cannot format non-finite value {x!r}")
    return units.format_number(x)


def _int_flag(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise UsageError(f"{name} must be an integer, got {value!r}")
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be an integer, got {value!r}") from None
    if not f.is_integer():
        raise UsageError(f"{name} must be an integer, got {value!r}")
    return int(f)


def normalize_sglang_algorithm(algorithm: str) -> str:
    """Upper-case an SGLang ``--speculative-algorithm`` value and check it is known."""
    name = str(algorithm).strip().upper().replace("-", "_")
    if name not in SGLANG_ALGORITHMS:
        raise UsageError(
            f"unknown SGLang speculative algorithm {algorithm!r}",
            hint="one of " + ", ".join(a.lower() for a in SGLANG_ALGORITHMS),
        )
    return name


def sglang_draft_len(
    algorithm: str,
    *,
    num_steps: Any = None,
    eagle_topk: Any = None,
    num_draft_tokens: Any = None,
    dflash_block_size: Any = None,
    dspark_block_size: Any = None,
) -> DraftLen:
    """Draft length ``k`` from SGLang's flags (0.5.23 ``speculative_hook.py``).

    * EAGLE/EAGLE3/NEXTN/STANDALONE: ``k = speculative_num_steps`` (topk 1 forces
      ``num_draft_tokens = steps + 1``; topk > 1 is a tree of depth ``steps``).
    * DFLASH: ``k = num_draft_tokens - 1`` (== ``dflash_block_size - 1``; block 8 holds
      the verified token plus 7 drafts).
    * DSPARK: ``k = dspark_block_size`` (gamma); ``num_draft_tokens`` is forced to gamma+1.
    * NGRAM: ``k = num_draft_tokens - 1``.

    Raises:
        UsageError: when the flags are contradictory or do not determine ``k`` (SGLang
            would then pick a value from the checkpoint or its own defaults).
    """
    algo = normalize_sglang_algorithm(algorithm)
    family = SGLANG_ALGORITHMS[algo]
    steps = _int_flag(num_steps, "speculative-num-steps")
    topk = _int_flag(eagle_topk, "speculative-eagle-topk")
    ndt = _int_flag(num_draft_tokens, "speculative-num-draft-tokens")
    dfb = _int_flag(dflash_block_size, "speculative-dflash-block-size")
    dsb = _int_flag(dspark_block_size, "speculative-dspark-block-size")
    if family == "eagle":
        if steps is None:
            raise UsageError(
                f"SGLang {algo} without --speculative-num-steps: SGLang auto-chooses the draft length",
                hint="pin --speculative-num-steps K (with --speculative-eagle-topk 1)",
            )
        if steps < 1:
            raise UsageError(f"speculative-num-steps must be >= 1, got {steps}")
        chain = topk in (None, 1)
        if chain and ndt is not None and ndt != steps + 1:
            # SGLang silently adjusts num_draft_tokens to steps+1 when topk == 1.
            pass
        return DraftLen(steps, "speculative-num-steps", chain=chain)
    if family == "dflash":
        if dfb is not None and ndt is not None and dfb != ndt:
            raise UsageError(
                f"DFLASH block size {dfb} != num-draft-tokens {ndt}: SGLang rejects this",
                hint="--speculative-dflash-block-size is an alias of --speculative-num-draft-tokens",
            )
        block = ndt if ndt is not None else dfb
        if block is None:
            raise UsageError(
                "SGLang DFLASH without --speculative-num-draft-tokens: the block size comes from the checkpoint",
                hint="pin --speculative-num-draft-tokens K+1",
            )
        if block < 2:
            raise UsageError(f"DFLASH block size must be >= 2, got {block}")
        rule = "num-draft-tokens - 1" if ndt is not None else "dflash-block-size - 1"
        return DraftLen(block - 1, rule, chain=True)
    if family == "dspark":
        if dsb is not None:
            if ndt is not None and ndt != dsb + 1:
                raise UsageError(
                    f"DSPARK block size {dsb} needs num-draft-tokens {dsb + 1}, got {ndt}: SGLang rejects this"
                )
            return DraftLen(dsb, "dspark-block-size", chain=True)
        if ndt is not None:
            return DraftLen(ndt - 1, "num-draft-tokens - 1", chain=True)
        raise UsageError(
            "SGLang DSPARK without --speculative-dspark-block-size: gamma comes from the checkpoint (default 7)",
            hint="pin --speculative-dspark-block-size K",
        )
    # ngram
    if ndt is None:
        raise UsageError("SGLang NGRAM needs --speculative-num-draft-tokens to fix the draft length")
    return DraftLen(ndt - 1, "num-draft-tokens - 1", chain=False)


def sglang_max_len(algorithm: str, k: int) -> int:
    """SGLang's simulator clamp ``max_len`` for draft length ``k`` (always ``k + 1``).

    EAGLE family ``steps + 1``; DFLASH ``block_size``; DSPARK ``gamma + 1``; NGRAM
    ``num_draft_tokens``: with the draft-length rules above each is ``k + 1``.
    """
    normalize_sglang_algorithm(algorithm)
    return units.check_draft_len(k) + 1


def sglang_spec_flags(algorithm: str, k: int) -> list[str]:
    """The SGLang launch flags that ask for draft length ``k`` (chain, topk 1)."""
    algo = normalize_sglang_algorithm(algorithm)
    k = units.check_draft_len(k)
    family = SGLANG_ALGORITHMS[algo]
    base = ["--speculative-algorithm", algo]
    if family == "eagle":
        return [*base, "--speculative-num-steps", str(k), "--speculative-eagle-topk", "1",
                "--speculative-num-draft-tokens", str(k + 1)]
    if family == "dflash":
        return [*base, "--speculative-num-draft-tokens", str(k + 1)]
    if family == "dspark":
        return [*base, "--speculative-dspark-block-size", str(k)]
    return [*base, "--speculative-num-draft-tokens", str(k + 1)]


def _load_json_config(config: Mapping[str, Any] | str, what: str) -> Mapping[str, Any]:
    if isinstance(config, str):
        try:
            loaded = json.loads(config)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{what} is not valid JSON: {exc.msg} at column {exc.colno}") from None
        if not isinstance(loaded, dict):
            raise UsageError(f"{what} must be a JSON object, got {type(loaded).__name__}")
        return loaded
    return config


def vllm_draft_len(speculative_config: Mapping[str, Any] | str) -> DraftLen:
    """``k = num_speculative_tokens`` from vLLM's ``--speculative-config`` (dict or JSON)."""
    cfg = _load_json_config(speculative_config, "--speculative-config")
    k = _int_flag(cfg.get("num_speculative_tokens"), "num_speculative_tokens")
    if k is None:
        raise UsageError("--speculative-config has no num_speculative_tokens",
                         hint='e.g. {"method": "mtp", "num_speculative_tokens": 3}')
    return DraftLen(units.check_draft_len(k), "num_speculative_tokens", chain=True)


def vllm_speculative_config(k: int, *, method: str | None = None, model: str | None = None,
                            extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A ``--speculative-config`` dict asking vLLM for draft length ``k``."""
    cfg: dict[str, Any] = {}
    if method:
        cfg["method"] = method
    if model:
        cfg["model"] = model
    cfg["num_speculative_tokens"] = units.check_draft_len(k)
    cfg.update(extra or {})
    return cfg


def trtllm_draft_len(speculative_config: Mapping[str, Any]) -> DraftLen:
    """``k = speculative_config.max_draft_len`` for TensorRT-LLM.

    For ``decoding_type: MTP`` TensorRT-LLM sets ``max_draft_len`` to
    ``num_nextn_predict_layers`` (``tensorrt_llm/llmapi/llm_args.py``
    ``MTPDecodingConfig.set_max_total_draft_tokens``), so that key gives k there, with or
    without ``max_draft_len``.
    """
    decoding = str(speculative_config.get("decoding_type") or "").strip().lower()
    layers = _int_flag(speculative_config.get("num_nextn_predict_layers"), "num_nextn_predict_layers")
    if decoding == "mtp" and layers is not None:
        return DraftLen(units.check_draft_len(layers), "num_nextn_predict_layers (MTP)", chain=True)
    k = _int_flag(speculative_config.get("max_draft_len"), "max_draft_len")
    if k is None:
        raise UsageError("TensorRT-LLM speculative_config has no max_draft_len",
                         hint="set max_draft_len (MTP: num_nextn_predict_layers)")
    return DraftLen(units.check_draft_len(k), "max_draft_len", chain=True)


def atom_draft_len(num_speculative_tokens: Any) -> DraftLen:
    """``k = --num-speculative-tokens`` for ATOM (its default is 1 when absent)."""
    k = _int_flag(num_speculative_tokens, "--num-speculative-tokens")
    if k is None:
        return DraftLen(1, "num-speculative-tokens default (1)", chain=True)
    return DraftLen(units.check_draft_len(k), "num-speculative-tokens", chain=True)


def atom_spec_flags(method: str, k: int, *, draft_model: str | None = None) -> list[str]:
    """ATOM launch flags for draft length ``k``."""
    if method not in ("mtp", "eagle3", "dspark"):
        raise UsageError(f"unknown ATOM --method {method!r}", hint="one of mtp, eagle3, dspark")
    flags = ["--method", method, "--num-speculative-tokens", str(units.check_draft_len(k))]
    if draft_model:
        flags += ["--draft-model", draft_model]
    return flags


def synthetic_settings(engine: str, al: float, k: int, *, sglang_method: str = "match-expected",
                       sglang_token_mode: str = "real-draft-token") -> dict[str, Any]:
    """The exact synthetic-acceptance settings one engine needs for golden AL ``al`` at ``k``.

    This is the ``golden-al env --format json`` contract:

    * sglang: ``{"SGLANG_SIMULATE_ACC_LEN": "4.05", "SGLANG_SIMULATE_ACC_METHOD":
      "match-expected", "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token"}``
    * trtllm: ``{"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": "3.05"}`` (AL - 1)
    * vllm: ``{"rejection_sample_method": "synthetic", "synthetic_acceptance_length": 4.05}``
      (fields to merge into ``--speculative-config``)
    * atom: ``{"--spec-decode-acceptance-length": "4.05"}``
    * llamacpp: ``{"--spec-synth-len": "4.05"}`` (AL incl. the target token)
    """
    if engine == "llamacpp":  # golden_al/engines/llamacpp.py: {"--spec-synth-len": "4.05"}
        from golden_al.engines import get_profile

        return get_profile(engine).synthetic_settings(al, k)
    al = units.check_al(al, k)
    if engine == "sglang":
        if sglang_method not in SGLANG_METHODS:
            raise UsageError(f"unknown SGLang method {sglang_method!r}", hint=" or ".join(SGLANG_METHODS))
        if sglang_token_mode not in SGLANG_TOKEN_MODES:
            raise UsageError(f"unknown SGLang token mode {sglang_token_mode!r}", hint=" or ".join(SGLANG_TOKEN_MODES))
        return {
            SGLANG_ENV_LEN: format_value(al),
            SGLANG_ENV_METHOD: sglang_method,
            SGLANG_ENV_TOKEN_MODE: sglang_token_mode,
        }
    if engine == "trtllm":
        forced = units.trtllm_forced_from_al(al)
        if forced == 0.0:
            raise UsageError(
                "TensorRT-LLM cannot force AL 1.0: its value would be 0, which disables forcing",
            )
        return {TRTLLM_ENV_FORCE: format_value(forced)}
    if engine == "vllm":
        return {VLLM_METHOD_KEY: "synthetic", VLLM_LENGTH_KEY: float(format_value(al))}
    if engine == "atom":
        return {ATOM_LENGTH_FLAG: format_value(al)}
    raise UsageError(f"unknown engine {engine!r}", hint="one of " + ", ".join(ENGINES))
