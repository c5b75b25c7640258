"""Draft length of a pin from the engine's own flags (thin wrappers over the engine profiles).

Each returns a :class:`~golden_al.checks.findings.DraftInfo`: ``k`` and the rule that
gave it, or ``problem`` saying why the files do not fix it (an absent flag, an
unexpanded shell variable, contradictory flags). TensorRT-LLM also reports whether
the config runs the two-model path (:func:`golden_al.engines.trtllm.two_model_path`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from golden_al.checks.bash import harden, has_unknown, show, unknown_names
from golden_al.checks.findings import DraftInfo
from golden_al.engines import atom, llamacpp, sglang, trtllm, vllm
from golden_al.errors import UsageError

__all__ = ["atom_draft", "llamacpp_draft", "sglang_draft", "sglang_draft_hidden", "trtllm_draft", "vllm_draft"]


def _unresolved(values: Mapping[str, Any]) -> str | None:
    for name, v in values.items():
        if isinstance(v, str) and has_unknown(v):
            names = ", ".join("$" + n for n in unknown_names(v)) or show(v)
            return f"{name} is {show(v)}, set outside this file ({names})"
    return None


def sglang_draft(algorithm: Any, flags: Mapping[str, Any], where: str) -> DraftInfo:
    """SGLang: EAGLE family ``speculative-num-steps``; DFLASH ``num-draft-tokens - 1``; DSPARK gamma."""
    if algorithm is None:
        return DraftInfo(problem=f"no {sglang.FLAG_ALGORITHM} in {where}")
    problem = _unresolved({sglang.FLAG_ALGORITHM: algorithm, **{f"--{k}": v for k, v in flags.items()}})
    if problem:
        return DraftInfo(problem=problem)
    try:
        d = sglang.draft_len_from_flags(str(algorithm), flags)
    except UsageError as exc:
        return DraftInfo(problem=f"{exc} ({where})")
    shown = {k: flags[k] for k in sglang.DRAFT_FLAGS if k in flags}
    detail = ", ".join(f"{k}={v}" for k, v in shown.items())
    return DraftInfo(k=d.k, rule=f"SGLang {str(algorithm).upper()} {d.rule} ({detail}) in {where}", chain=d.chain)


def sglang_draft_hidden(flags: Mapping[str, Any], where: str, hidden: str) -> DraftInfo:
    """SGLang k when no ``--speculative-algorithm`` can be read because ``hidden`` (words set at
    run time, e.g. ``$MODEL_MTP_FLAGS``) may hold it: the flags fix k only when every algorithm
    SGLang knows reads the same k from them (``--speculative-num-steps N`` with
    ``--speculative-num-draft-tokens N+1`` does)."""
    problem = _unresolved({f"--{k}": v for k, v in flags.items()})
    if problem:
        return DraftInfo(problem=problem)
    detail = ", ".join(f"{k}={flags[k]}" for k in sglang.DRAFT_FLAGS if k in flags)
    ks: dict[int, list[str]] = {}
    chain = True
    for algo in sglang.ALGORITHMS:
        try:
            d = sglang.draft_len_from_flags(algo, flags)
        except UsageError as exc:
            return DraftInfo(problem=f"no {sglang.FLAG_ALGORITHM} in {where} ({hidden} may set it), and with {algo} "
                                     f"the flags do not fix k: {exc}")
        ks.setdefault(d.k, []).append(algo)
        chain = chain and d.chain
    if len(ks) != 1:
        shown = "; ".join(f"k={k} for {', '.join(a)}" for k, a in sorted(ks.items()))
        return DraftInfo(problem=f"no {sglang.FLAG_ALGORITHM} in {where} ({hidden} may set it), and the flags give "
                                 f"different k by algorithm: {shown}")
    (k,) = ks
    return DraftInfo(k=k, rule=f"SGLang {detail} in {where}: every {sglang.FLAG_ALGORITHM} reads k={k} from these "
                               f"flags (the algorithm is in {hidden}, set at run time, assumed not to set them again)",
                     chain=chain)


def vllm_draft(config: Mapping[str, Any] | None, where: str) -> DraftInfo:
    """vLLM: ``num_speculative_tokens`` of the speculative config."""
    if config is None:
        return DraftInfo(problem=f"no {vllm.FLAG_SPEC_CONFIG[2:]} in {where}")
    n = config.get(vllm.K_KEY)
    if n is None:
        return DraftInfo(problem=f"{where} has no {vllm.K_KEY}")
    if isinstance(n, str) and has_unknown(n):
        return DraftInfo(problem=f"{vllm.K_KEY} is {show(n)}, set outside this file")
    try:
        d = vllm.draft_len({vllm.K_KEY: n})
    except (UsageError, ValueError) as exc:
        return DraftInfo(problem=f"{vllm.K_KEY}={n!r}: {exc}")
    return DraftInfo(k=d.k, rule=f"vLLM {vllm.K_KEY}={d.k} in {where}")


def trtllm_draft(spec: Mapping[str, Any] | None, where: str) -> DraftInfo:
    """TensorRT-LLM: ``speculative_config.max_draft_len`` and the one/two-model path."""
    if spec is None:
        return DraftInfo(problem=f"no {trtllm.SPEC_CONFIG_KEY} in {where}")
    problem = _unresolved(dict(spec))
    max_len = spec.get(trtllm.MAX_DRAFT_LEN)
    if problem and isinstance(max_len, str) and has_unknown(max_len):
        return DraftInfo(problem=problem)
    try:
        d = trtllm.draft_len(spec)
    except (UsageError, ValueError) as exc:
        return DraftInfo(problem=f"{exc} ({where})")
    two = trtllm.two_model_path(spec)
    path = "two-model" if two else ("one-model" if two is False else "unknown")
    return DraftInfo(k=d.k, rule=f"TensorRT-LLM {trtllm.MAX_DRAFT_LEN}={d.k} "
                                 f"({spec.get(trtllm.DECODING_TYPE, '?')}, {path} path) in {where}", two_model=two)


def atom_draft(num_speculative_tokens: Any, where: str, *, present: bool = True) -> DraftInfo:
    """ATOM: ``--num-speculative-tokens`` (1 when the flag is absent)."""
    if isinstance(num_speculative_tokens, str) and has_unknown(num_speculative_tokens):
        return DraftInfo(problem=f"{atom.FLAG_K} is {show(num_speculative_tokens)}, set outside this file")
    if not present and num_speculative_tokens is None:
        return DraftInfo(problem=f"no {atom.FLAG_K} in {where}")
    try:
        d = atom.draft_len(num_speculative_tokens)
    except (UsageError, ValueError) as exc:
        return DraftInfo(problem=f"{atom.FLAG_K}={num_speculative_tokens!r}: {exc}")
    return DraftInfo(k=d.k, rule=f"ATOM {d.rule}={d.k} in {where}")


def config_json(text: str) -> dict[str, Any] | None:
    """A JSON object out of an expanded shell text (unknown values read as null)."""
    from golden_al.checks.bash import UNKNOWN_MARK as _UNKNOWN_MARK
    from golden_al.checks.bash import harden

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
    from golden_al.checks.bash import UNKNOWN_MARK as _UNKNOWN_MARK

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


def llamacpp_draft(flags: Mapping[str, Any], env: Mapping[str, Any], where: str) -> tuple[DraftInfo, str | None]:
    """llama.cpp: (draft info, speculative type) from llama-server's flags and environment, read
    by the engine itself (:func:`golden_al.engines.llamacpp.read_command_line`: the type, its
    method, ``k = --spec-draft-n-max`` with llama.cpp's clamps, fixed only with ``-n-min`` = k and
    ``-p-min`` 0)."""
    forms = [*llamacpp.N_MAX_FORMS, *llamacpp.N_MIN_FORMS, *llamacpp.P_MIN_FORMS, *llamacpp.SPEC_TYPE_FORMS]
    for name in forms:
        value = flags.get(name, env.get(name))
        if isinstance(value, str) and has_unknown(value):
            return DraftInfo(problem=f"{name} is {show(value)}, set outside this file"), None
    args = [x for name, v in flags.items() for x in (name, harden(str(v)))]
    reading = llamacpp.read_command_line(args, {k: harden(str(v)) for k, v in env.items()})
    if reading.draft is None:
        return DraftInfo(problem=f"{reading.draft_problem} ({where})"), reading.algorithm
    return DraftInfo(k=reading.draft.k, rule=f"llama.cpp {reading.draft.rule} in {where}"), reading.algorithm
