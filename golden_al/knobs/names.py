"""Shared vocabulary of the static check: knob names and their values.

The knobs (names in each engine's profile, ``golden_al/engines/``): SGLang ``SGLANG_SIMULATE_ACC_LEN`` (+ legacy
``SIMULATE_ACC_LEN``) with ``SGLANG_SIMULATE_ACC_METHOD`` /
``SGLANG_SIMULATE_ACC_TOKEN_MODE``; vLLM ``rejection_sample_method: synthetic`` with
``synthetic_acceptance_length`` or ``synthetic_acceptance_rates`` inside
``--speculative-config`` (older vLLM: ``synthetic_acceptance_rate``); TensorRT-LLM
``TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS`` (AL - 1); ATOM
``--spec-decode-acceptance-length`` / ``--spec-decode-acceptance-rate``.

Thinking signals live with thinking mode (:mod:`golden_al.prompts.thinking`); whether a config is an agentic
benchmark with the recipes floor (:func:`golden_al.recipes.derive.agentic_from_path`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from golden_al.plugin.registry import EnvKnob, engine_names, get_profile

__all__ = ["CONFIG_KEYS", "CONFIG_KNOBS", "FLAG_KNOBS", "MASTER_LENGTH_KEY", "env_pin_context"]


def _value_knobs(kind: str) -> dict[str, str]:
    """Every registered engine's value knobs of ``kind`` (each spelling, in the profile's order) -> the engine."""
    out: dict[str, str] = {}
    for name in engine_names():
        for knob in get_profile(name).check.synthetic_knobs:
            if knob.kind == kind and knob.role == "value":
                for spelling in (knob.name, *knob.aliases):
                    out.setdefault(spelling, name)
    return out


#: Knobs written as a key of a speculative config (vLLM's ``synthetic_acceptance_length``...) -> their engine.
CONFIG_KNOBS: dict[str, str] = _value_knobs("config-key")
#: Knobs written as a launch flag (ATOM's ``--spec-decode-acceptance-length``, llama.cpp's ``--spec-synth-len``).
FLAG_KNOBS: dict[str, str] = _value_knobs("flag")
#: The config keys, in the order a config's knob is chosen by (length before rates).
CONFIG_KEYS: tuple[str, ...] = tuple(CONFIG_KNOBS)
#: The master-config setting that holds the golden AL itself.
MASTER_LENGTH_KEY = "SYNTHETIC_ACCEPTANCE_LENGTH"


def env_pin_context(env_knob: EnvKnob, lookup: Callable[[str], str | None]
                    ) -> tuple[dict[str, str | None], dict[str, Any]]:
    """(companions, spec) of an environment pin, from the variables set beside it (``lookup``: a
    variable's value there, None when unset): the engine's companion variables (their legacy spellings
    too, when set, beside a legacy pin) and the variables its review reads
    (:attr:`~golden_al.plugin.profile.CheckSupport.pin_env`)."""
    profile = get_profile(env_knob.engine)
    companions: dict[str, str | None] = {}
    for comp in profile.check.synthetic_knobs:
        if comp.kind != "env" or comp.role != "companion":
            continue
        companions[comp.name] = lookup(comp.name)
        if env_knob.legacy:
            for alias in comp.aliases:
                value = lookup(alias)
                if value is not None:
                    companions[alias] = value
    spec = {key: lookup(var) for var, key in profile.check.pin_env.items()}
    return companions, spec

