"""Refuse to measure while synthetic (forced) acceptance is active.

A server with injected acceptance reports the injected AL, not the draft's real
one, so a "measurement" of it would silently commit a made-up number. Each engine
has its own switch (engine-facts.md; names in :mod:`golden_al.engine_spec`):

* SGLang: ``SGLANG_SIMULATE_ACC_LEN`` (0.5.23 ``python/sglang/srt/environ.py``;
  a value <= 0 is off) or the legacy un-prefixed ``SIMULATE_ACC_LEN``, read from
  the server's environment at import;
* vLLM: ``"rejection_sample_method": "synthetic"`` or a
  ``synthetic_acceptance_length``/``synthetic_acceptance_rates`` key inside
  ``--speculative-config`` (0.33.0 ``vllm/config/speculative.py``); the server
  echoes its non-default args in its log (``non-default args: {...}``);
* TensorRT-LLM: ``TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS`` (non-zero is on);
* ATOM: ``--spec-decode-acceptance-length`` / ``--spec-decode-acceptance-rate``
  (HEAD ffdf3bb5d ``atom/model_engine/arg_utils.py``); it logs "Forced
  speculative acceptance ON".
* llama.cpp: ``--spec-synth-len`` / ``--spec-synth-rates`` or their environment forms
  ``LLAMA_ARG_SPEC_SYNTH_LEN`` / ``_RATES`` (commit 0c1e570 ``common/arg.cpp``; any value
  is on), and it logs "synthetic speculative acceptance is enabled for benchmarking"
  (``common/speculative.cpp``). Names in :mod:`golden_al.engines.llamacpp`.

Every check raises :class:`~golden_al.errors.SyntheticAcceptanceActiveError`
naming what it found and where.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from golden_al import engine_spec as es
from golden_al.engines import llamacpp
from golden_al.errors import SyntheticAcceptanceActiveError

__all__ = [
    "check_engine_args",
    "check_launch_env",
    "check_server_info",
    "check_server_log",
    "check_vllm_speculative_config",
    "find_speculative_config",
]

_SGLANG_LEN_VARS = (es.SGLANG_ENV_LEN, es.SGLANG_LEGACY_ENV_LEN)
_HINT_ENV = "for the measurement run (a golden AL is measured, never injected)"


def _refuse(what: str, where: str, hint: str) -> SyntheticAcceptanceActiveError:
    return SyntheticAcceptanceActiveError(
        f"synthetic acceptance is active ({what}, {where}): the server would report the injected AL, "
        "not the draft's real acceptance; refusing to measure",
        hint=hint,
    )


def _float_or_none(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _sglang_len_active(value: Any) -> bool:
    """SGLang turns simulation off for values <= 0 (spec_utils.py); garbage counts as on."""
    f = _float_or_none(value)
    return f is None or f > 0


def check_launch_env(env: Mapping[str, str], *, where: str = "launch environment") -> list[str]:
    """Raise when ``env`` turns synthetic acceptance on; return warnings for inert leftovers.

    Checked for every engine, since a wrapper may forward the whole environment.
    """
    warnings: list[str] = []
    for name in _SGLANG_LEN_VARS:
        if name in env and _sglang_len_active(env[name]):
            raise _refuse(f"{name}={env[name]}", where, f"unset {name} {_HINT_ENV}")
    if es.TRTLLM_ENV_FORCE in env:
        f = _float_or_none(env[es.TRTLLM_ENV_FORCE])
        if f is None or f != 0.0:
            raise _refuse(f"{es.TRTLLM_ENV_FORCE}={env[es.TRTLLM_ENV_FORCE]}", where,
                          f"unset {es.TRTLLM_ENV_FORCE} {_HINT_ENV}")
    for flag, name in llamacpp.SYNTH_FLAG_FORMS.items():
        if name in env:
            raise _refuse(f"{name}={env[name]}", where, f"unset {name} (the env form of llama.cpp's {flag}) {_HINT_ENV}")
    leftovers = sorted(k for k in env if k.startswith(("SGLANG_SIMULATE_", "SIMULATE_ACC_")) and k not in _SGLANG_LEN_VARS)
    inert = [k for k in _SGLANG_LEN_VARS if k in env]
    if leftovers or inert:
        warnings.append(
            f"{where} sets {', '.join(inert + leftovers)} but no active simulated length; simulation is off"
        )
    return warnings


def check_vllm_speculative_config(cfg: Mapping[str, Any], *, where: str = "--speculative-config") -> None:
    """Raise when a vLLM speculative config asks for the synthetic rejection sampler."""
    method = cfg.get(es.VLLM_METHOD_KEY)
    if isinstance(method, str) and method.strip().lower() == "synthetic":
        raise _refuse(f'"{es.VLLM_METHOD_KEY}": "synthetic"', where,
                      f'drop {es.VLLM_METHOD_KEY} (or set it to "standard") for a measurement')
    for key in (es.VLLM_LENGTH_KEY, es.VLLM_RATES_KEY):
        if cfg.get(key) is not None:
            raise _refuse(f'"{key}": {cfg[key]!r}', where, f"drop {key} for a measurement")


def find_speculative_config(args: Sequence[str]) -> dict[str, Any] | None:
    """The JSON of ``--speculative-config`` in an argument list (either ``--x v`` or ``--x=v``)."""
    names = ("--speculative-config", "--speculative_config", "-sc")
    for i, arg in enumerate(args):
        value: str | None = None
        for name in names:
            if arg == name and i + 1 < len(args):
                value = args[i + 1]
            elif arg.startswith(name + "="):
                value = arg.split("=", 1)[1]
        if value is not None:
            try:
                loaded = json.loads(value)
            except json.JSONDecodeError:
                return None
            return loaded if isinstance(loaded, dict) else None
    return None


def check_engine_args(engine: str, args: Sequence[str], *, where: str = "server arguments") -> None:
    """Raise when the engine's own command-line arguments force acceptance."""
    if engine == "vllm":
        cfg = find_speculative_config(args)
        if cfg is not None:
            check_vllm_speculative_config(cfg, where=where)
    for flag in (es.ATOM_LENGTH_FLAG, es.ATOM_RATE_FLAG, *llamacpp.SYNTH_FLAG_FORMS):
        for i, arg in enumerate(args):
            if arg == flag or arg.startswith(flag + "="):
                value = arg.split("=", 1)[1] if "=" in arg else (args[i + 1] if i + 1 < len(args) else "")
                raise _refuse(f"{flag} {value}", where, f"drop {flag} for a measurement")


def _walk(obj: Any, path: str = "") -> Iterable[tuple[str, str, Any]]:
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            sub = f"{path}.{key}" if path else str(key)
            yield sub, str(key), value
            yield from _walk(value, sub)
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from _walk(value, f"{path}[{i}]")


def check_server_info(engine: str, info: Mapping[str, Any], *, where: str = "/server_info") -> None:
    """Raise when a server's self-description reports forced acceptance.

    Scans every key of the JSON: SGLang simulate settings (``SGLANG_SIMULATE_ACC_LEN``
    or a ``simulate_acc_len`` field, e.g. echoed env or server args of forks), vLLM
    ``rejection_sample_method``/``synthetic_acceptance_*`` (``/server_info`` in dev
    mode), ATOM ``spec_decode_acceptance_length``/``_rate``, and the TensorRT-LLM
    variable.
    """
    for path, key, value in _walk(info):
        low = key.lower()
        if low in ("sglang_simulate_acc_len", "simulate_acc_len") and value is not None and _sglang_len_active(value):
            raise _refuse(f"{key}={value}", f"{where} field {path}", f"restart the server without {key}")
        if low == es.VLLM_METHOD_KEY and isinstance(value, str) and value.lower() == "synthetic":
            raise _refuse(f'{key}="synthetic"', f"{where} field {path}", "restart vLLM without the synthetic sampler")
        if low in (es.VLLM_LENGTH_KEY, es.VLLM_RATES_KEY, "spec_decode_acceptance_length",
                   "spec_decode_acceptance_rate") and value not in (None, [], ""):
            raise _refuse(f"{key}={value}", f"{where} field {path}", "restart the server without forced acceptance")
        if key == es.TRTLLM_ENV_FORCE and _float_or_none(value) not in (0.0,):
            raise _refuse(f"{key}={value}", f"{where} field {path}", f"restart without {key}")
        if isinstance(value, str) and low in ("vllm_config", "speculative_config") and "synthetic" in value:
            if re.search(r"rejection_sample_method['\"]?\s*[:=]\s*['\"]synthetic", value):
                raise _refuse("rejection_sample_method synthetic", f"{where} field {path}",
                              "restart vLLM without the synthetic sampler")


_VLLM_ARGS_LINE = re.compile(r"non-default args: (\{.*\})\s*$")
_VLLM_SPEC_REPR = re.compile(r"rejection_sample_method\s*=\s*'synthetic'")
_ATOM_FORCED = re.compile(r"Forced speculative acceptance ON")
_LLAMACPP_SYNTH = re.compile(f"{llamacpp.LOG_SYNTH_WARNING}|{llamacpp.LOG_SYNTH_INFO}")


def check_server_log(engine: str, text: str, *, where: str = "server log") -> None:
    """Raise when a server's own log shows forced acceptance.

    vLLM echoes ``non-default args: {...}`` (a Python dict repr) at startup, which
    holds ``speculative_config``; ATOM logs "Forced speculative acceptance ON".
    """
    for lineno, line in enumerate(text.splitlines(), start=1):
        m = _VLLM_ARGS_LINE.search(line)
        if m:
            try:
                args = ast.literal_eval(m.group(1))
            except (ValueError, SyntaxError):
                args = None
            if isinstance(args, dict) and isinstance(args.get("speculative_config"), Mapping):
                check_vllm_speculative_config(args["speculative_config"], where=f"{where} line {lineno}")
        if _VLLM_SPEC_REPR.search(line):
            raise _refuse("rejection_sample_method='synthetic'", f"{where} line {lineno}",
                          "restart vLLM without the synthetic sampler")
        if _ATOM_FORCED.search(line):
            raise _refuse("ATOM forced acceptance", f"{where} line {lineno}",
                          f"restart ATOM without {es.ATOM_LENGTH_FLAG}/{es.ATOM_RATE_FLAG}")
        if _LLAMACPP_SYNTH.search(line):
            raise _refuse("llama.cpp synthetic acceptance", f"{where} line {lineno}",
                          f"restart llama-server without {llamacpp.FLAG_SYNTH_LEN}/{llamacpp.FLAG_SYNTH_RATES} "
                          f"(and without {llamacpp.ENV_SYNTH_LEN}/{llamacpp.ENV_SYNTH_RATES})")
