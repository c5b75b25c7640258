"""Refuse to measure while synthetic (forced) acceptance is active.

A server with injected acceptance reports the injected AL, not the draft's real
one, so a "measurement" of it would silently commit a made-up number. Each engine
has its own switch (names in each engine's profile, ``golden_al/engines/``):

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

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from golden_al.errors import SyntheticAcceptanceActiveError
from golden_al.plugin import registry
from golden_al.plugin.checks_ran import ran
from golden_al.plugin.profile import SyntheticKnob, reads_off

__all__ = [
    "check_engine_args",
    "check_launch_env",
    "check_server_info",
    "check_server_log",
    "check_speculative_config",
]

_HINT_ENV = "for the measurement run (a golden AL is measured, never injected)"


def _refuse(what: str, where: str, hint: str) -> SyntheticAcceptanceActiveError:
    return SyntheticAcceptanceActiveError(
        f"synthetic acceptance is active ({what}, {where}): the server would report the injected AL, "
        "not the draft's real acceptance; refusing to measure",
        hint=hint,
    )


def _knob_of(engine: str, knob: str) -> SyntheticKnob | None:
    """The profile's knob behind a census term (None: the harness's, or an unregistered engine's)."""
    if engine not in registry.engine_names():
        return None
    try:
        return registry.get_profile(engine).knob(knob)
    except KeyError:
        return None


def check_launch_env(env: Mapping[str, str], *, where: str = "launch environment") -> list[str]:
    """Raise when ``env`` turns synthetic acceptance on; return warnings for inert leftovers.

    Every variable is read by ``check``'s census (every registered engine's knobs and their
    environment forms, from the profiles), and a knob's value by that knob's own rule for what its
    engine reads as off (:meth:`~golden_al.plugin.profile.SyntheticKnob.off_in_env`: SGLang's length
    is off at or below 0, TensorRT-LLM's count only at 0, llama.cpp's ``LLAMA_ARG_*`` forms never when
    set). Checked for every engine, since a wrapper may forward the whole environment.
    """
    warnings: list[str] = []
    inert: list[str] = []
    for name, value in env.items():
        for occ in _census_sites(name, value, is_key=True):
            knob = _knob_of(occ.term.engine, occ.term.knob)
            off = knob.off_in_env(value) if knob is not None else reads_off(value)
            if occ.value_known and occ.term.role == "value" and off:
                inert.append(name)
                continue
            form = ""
            if knob is not None and knob.kind == "flag":
                form = f" (the env form of {registry.get_profile(occ.term.engine).display_name}'s {knob.name})"
            raise _refuse(f"{name}={value}", where, f"unset {name}{form} {_HINT_ENV}")
    leftovers = sorted(name for name in env if name in registry.companion_env_names())
    if inert or leftovers:
        warnings.append(f"{where} sets {', '.join(inert + leftovers)} but no active simulated length; "
                        "simulation is off")
    return warnings


def _checks(hook: str) -> list[Any]:
    """Every registered engine's ``hook`` (``forced_in_args``, ``forced_in_config``, ``forced_in_log_line``): each
    engine is asked, since a wrapper may forward another engine's settings."""
    return [check for name in registry.engine_names() if (check := getattr(registry.get_profile(name).check, hook))]


def _forced(checks: Sequence[Any], value: Any) -> tuple[str, str] | None:
    """What the first of ``checks`` finds in ``value``, as (what, hint), or None."""
    return next((found for check in checks if (found := check(value)) is not None), None)


def check_speculative_config(cfg: Mapping[str, Any], *, where: str = "the speculative config") -> None:
    """Raise when a speculative config asks for forced acceptance (an engine's ``forced_in_config``: vLLM's
    synthetic rejection sampler)."""
    found = _forced(_checks("forced_in_config"), cfg)
    if found is not None:
        raise _refuse(found[0], where, found[1])


def check_engine_args(args: Sequence[str], *, where: str = "server arguments") -> None:
    """Raise when a server's command-line arguments force acceptance, in any registered engine's form
    (a wrapper may forward another engine's arguments)."""
    found = _forced(_checks("forced_in_args"), args)
    if found is not None:
        raise _refuse(found[0], where, found[1])
    # every other registered engine's knob on the command line, as check's census reads it
    _census_refusal(shlex.join(args), None, is_key=False, where=where, hint="drop it for a measurement")


def _walk(obj: Any, path: str = "") -> Iterable[tuple[str, str, Any]]:
    if isinstance(obj, Mapping):
        for key, value in obj.items():
            sub = f"{path}.{key}" if path else str(key)
            yield sub, str(key), value
            yield from _walk(value, sub)
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from _walk(value, f"{path}[{i}]")


def _census_sites(text_or_key: str, value: Any, *, is_key: bool) -> list[Any]:
    """The pin sites ``check``'s census finds in one key (with its value) or one string."""
    from golden_al.knobs.census import _key, _Sink, _string_census, iter_pin_sites

    sink = _Sink()
    if is_key:
        _key(text_or_key, value, line=1, end_line=1, context="key", sink=sink, key_line=None)
    else:
        _string_census(text_or_key, line=1, end_line=1, context="string", sink=sink, key_line=None, depth=0)
    return list(iter_pin_sites(sink.result()))


def _census_refusal(text_or_key: str, value: Any, *, is_key: bool, where: str, hint: str) -> None:
    """The census of ``check`` (every registered engine's knob, as its consumer decodes it) over one key
    or string a server reports: any setting that is not provably off refuses the measurement."""
    for occ in _census_sites(text_or_key, value, is_key=is_key):
        if occ.value_known and occ.term.role == "value" and reads_off(occ.value):
            continue
        shown = f"{occ.term.spelling}={occ.value}" if occ.value_known else occ.term.spelling
        raise _refuse(shown, where, hint)


def check_server_info(engine: str, info: Mapping[str, Any], *, where: str = "/server_info") -> None:
    """Raise when a server's self-description reports forced acceptance.

    Reads every key and every string of the JSON with ``check``'s census (the knobs of every
    registered engine, from the engine profiles): settings as fields (``SGLANG_SIMULATE_ACC_LEN``,
    vLLM ``rejection_sample_method``/``synthetic_acceptance_*``, ATOM
    ``spec_decode_acceptance_length``), and inside strings: ``KEY=VALUE`` environment lists, launch
    command lines (``--spec-synth-len 3``), printed or JSON configs. A value that no engine reads as on
    (empty, null, a number <= 0) is not a refusal.
    """
    hint = "restart the server without forced acceptance (a golden AL is measured, never injected)"
    for path, key, value in _walk(info):
        at = f"{where} field {path}"
        _census_refusal(key, value, is_key=True, where=at,
                        hint=hint)
        if isinstance(value, str):
            _census_refusal(value, None, is_key=False, where=at, hint=hint)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, str):
                    _census_refusal(item, None, is_key=False, where=f"{at}[{i}]", hint=hint)
    if isinstance(info, list):  # a list at the top (no key)
        for item in info:
            if isinstance(item, str):
                _census_refusal(item, None, is_key=False, where=where, hint=hint)
    ran("synthetic-off")


def _census_hint() -> re.Pattern[str]:
    """Any knob spelling anywhere in a line (a cheap superset: the census then decides)."""
    from golden_al.knobs.census import _substring_rx

    return _substring_rx()


def check_server_log(engine: str, text: str, *, where: str = "server log") -> None:
    """Raise when a server's own log shows forced acceptance: a line any registered engine's
    ``forced_in_log_line`` reads as on (vLLM's ``non-default args: {...}`` start-up line, ATOM's "Forced
    speculative acceptance ON", llama.cpp's synthetic warning), or a knob ``check``'s census finds set."""
    checks = _checks("forced_in_log_line")  # once per log, not per line
    for lineno, line in enumerate(text.splitlines(), start=1):
        found = _forced(checks, line)
        if found is not None:
            raise _refuse(found[0], f"{where} line {lineno}", found[1])
        if _census_hint().search(line):  # any engine's knob in the line, as a setting (census of check)
            _census_refusal(line, None, is_key=False, where=f"{where} line {lineno}",
                            hint="restart the server without forced acceptance")
    ran("synthetic-off")
