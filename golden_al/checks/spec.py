"""Draft length of a pin from the engine's own flags (thin wrappers over :mod:`golden_al.engine_spec`).

Each returns a :class:`~golden_al.checks.findings.DraftInfo`: ``k`` and the rule that
gave it, or ``problem`` saying why the files do not fix it (an absent flag, an
unexpanded shell variable, contradictory flags). TensorRT-LLM also reports whether
the config runs the two-model path (``DraftTarget``/``NGram``, or Eagle3 with
``eagle3_one_model: false``), where ``int()`` of a fractional forced value fails and
forcing silently turns off (``tensorrt_llm/_torch/speculative/interface.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from golden_al import engine_spec
from golden_al.checks.findings import DraftInfo
from golden_al.checks.shell import has_unknown, show, unknown_names
from golden_al.errors import UsageError

__all__ = ["atom_draft", "sglang_draft", "trtllm_draft", "vllm_draft"]


def _unresolved(values: Mapping[str, Any]) -> str | None:
    for name, v in values.items():
        if isinstance(v, str) and has_unknown(v):
            names = ", ".join("$" + n for n in unknown_names(v)) or show(v)
            return f"{name} is {show(v)}, set outside this file ({names})"
    return None


def sglang_draft(algorithm: Any, flags: Mapping[str, Any], where: str) -> DraftInfo:
    """SGLang: EAGLE family ``speculative-num-steps``; DFLASH ``num-draft-tokens - 1``; DSPARK gamma."""
    if algorithm is None:
        return DraftInfo(problem=f"no --speculative-algorithm in {where}")
    problem = _unresolved({"--speculative-algorithm": algorithm, **{f"--{k}": v for k, v in flags.items()}})
    if problem:
        return DraftInfo(problem=problem)
    try:
        d = engine_spec.sglang_draft_len(
            str(algorithm),
            num_steps=flags.get("speculative-num-steps"),
            eagle_topk=flags.get("speculative-eagle-topk"),
            num_draft_tokens=flags.get("speculative-num-draft-tokens"),
            dflash_block_size=flags.get("speculative-dflash-block-size"),
            dspark_block_size=flags.get("speculative-dspark-block-size"),
        )
    except UsageError as exc:
        return DraftInfo(problem=f"{exc} ({where})")
    shown = {k: flags[k] for k in ("speculative-num-steps", "speculative-eagle-topk", "speculative-num-draft-tokens",
                                   "speculative-dflash-block-size", "speculative-dspark-block-size") if k in flags}
    detail = ", ".join(f"{k}={v}" for k, v in shown.items())
    return DraftInfo(k=d.k, rule=f"SGLang {str(algorithm).upper()} {d.rule} ({detail}) in {where}", chain=d.chain)


def vllm_draft(config: Mapping[str, Any] | None, where: str) -> DraftInfo:
    """vLLM: ``num_speculative_tokens`` of the speculative config."""
    if config is None:
        return DraftInfo(problem=f"no speculative-config in {where}")
    n = config.get("num_speculative_tokens")
    if n is None:
        return DraftInfo(problem=f"{where} has no num_speculative_tokens")
    if isinstance(n, str) and has_unknown(n):
        return DraftInfo(problem=f"num_speculative_tokens is {show(n)}, set outside this file")
    try:
        d = engine_spec.vllm_draft_len({"num_speculative_tokens": n})
    except (UsageError, ValueError) as exc:
        return DraftInfo(problem=f"num_speculative_tokens={n!r}: {exc}")
    return DraftInfo(k=d.k, rule=f"vLLM num_speculative_tokens={d.k} in {where}")


def trtllm_draft(spec: Mapping[str, Any] | None, where: str) -> DraftInfo:
    """TensorRT-LLM: ``speculative_config.max_draft_len`` and the one/two-model path."""
    if spec is None:
        return DraftInfo(problem=f"no speculative_config in {where}")
    problem = _unresolved(dict(spec))
    if problem and isinstance(spec.get("max_draft_len"), str) and has_unknown(spec["max_draft_len"]):
        return DraftInfo(problem=problem)
    try:
        d = engine_spec.trtllm_draft_len(spec)
    except (UsageError, ValueError) as exc:
        return DraftInfo(problem=f"{exc} ({where})")
    dtype = str(spec.get("decoding_type", "")).lower().replace("_", "").replace("-", "")
    one_model = spec.get("eagle3_one_model", spec.get("mtp_eagle_one_model"))
    two: bool | None
    if dtype in ("drafttarget", "ngram", "draftmodel"):
        two = True
    elif one_model is not None:
        two = str(one_model).strip().lower() in ("false", "0", "no")
    elif dtype in ("mtp", "eagle3", "eagle", "dflash", "dspark", "pard"):
        two = False  # one-model is the default for these
    else:
        two = None
    path = "two-model" if two else ("one-model" if two is False else "unknown")
    return DraftInfo(k=d.k, rule=f"TensorRT-LLM max_draft_len={d.k} ({spec.get('decoding_type', '?')}, {path} path) "
                                 f"in {where}", two_model=two)


def atom_draft(num_speculative_tokens: Any, where: str, *, present: bool = True) -> DraftInfo:
    """ATOM: ``--num-speculative-tokens`` (1 when the flag is absent)."""
    if isinstance(num_speculative_tokens, str) and has_unknown(num_speculative_tokens):
        return DraftInfo(problem=f"--num-speculative-tokens is {show(num_speculative_tokens)}, set outside this file")
    if not present and num_speculative_tokens is None:
        return DraftInfo(problem=f"no --num-speculative-tokens in {where}")
    try:
        d = engine_spec.atom_draft_len(num_speculative_tokens)
    except (UsageError, ValueError) as exc:
        return DraftInfo(problem=f"--num-speculative-tokens={num_speculative_tokens!r}: {exc}")
    return DraftInfo(k=d.k, rule=f"ATOM {d.rule}={d.k} in {where}")


def config_json(text: str) -> dict[str, Any] | None:
    """A JSON object out of an expanded shell text (unknown values read as null)."""
    from golden_al.checks.shell import _UNKNOWN_MARK, harden

    start = text.find("{")
    while start >= 0:
        depth = 0
        in_str = False
        esc = False
        end = None
        for i in range(start, len(text)):
            c = text[i]
            if in_str:
                if esc:
                    esc = False
                elif c == "\\":
                    esc = True
                elif c == '"':
                    in_str = False
                continue
            if c == '"':
                in_str = True
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    end = i + 1
                    break
        if end is None:
            return None
        chunk = harden(text[start:end])
        # unknown values outside strings become null; inside strings they stay as $NAME text
        out: list[str] = []
        in_str = False
        esc = False
        i = 0
        while i < len(chunk):
            c = chunk[i]
            if c == _UNKNOWN_MARK and not in_str:
                j = chunk.find(_UNKNOWN_MARK, i + 1)
                out.append("null")
                i = len(chunk) if j < 0 else j + 1
                continue
            if in_str:
                if esc:
                    esc = False
                elif c == "\\":
                    esc = True
                elif c == '"':
                    in_str = False
            elif c == '"':
                in_str = True
            out.append(c)
            i += 1
        try:
            obj = json.loads(show("".join(out)))
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            # keep the knowledge that a value was unknown
            for key, value in list(obj.items()):
                if value is None:
                    m = _find_unknown_value(chunk, key)
                    if m:
                        obj[key] = m
            return obj
        start = text.find("{", start + 1)
    return None


def _find_unknown_value(chunk: str, key: str) -> str | None:
    from golden_al.checks.shell import _UNKNOWN_MARK

    k = chunk.find(f'"{key}"')
    if k < 0:
        return None
    a = chunk.find(_UNKNOWN_MARK, k)
    if a < 0:
        return None
    b = chunk.find(_UNKNOWN_MARK, a + 1)
    if b < 0:
        return None
    colon = chunk.find(":", k)
    if colon < 0 or colon > a or chunk[colon + 1:a].strip():
        return None
    return chunk[a:b + 1]
