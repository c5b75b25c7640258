"""Shared vocabulary of the static check: knob names, thinking settings, agentic paths.

The knobs (names in each engine's profile, ``golden_al/engines/``): SGLang ``SGLANG_SIMULATE_ACC_LEN`` (+ legacy
``SIMULATE_ACC_LEN``) with ``SGLANG_SIMULATE_ACC_METHOD`` /
``SGLANG_SIMULATE_ACC_TOKEN_MODE``; vLLM ``rejection_sample_method: synthetic`` with
``synthetic_acceptance_length`` or ``synthetic_acceptance_rates`` inside
``--speculative-config`` (older vLLM: ``synthetic_acceptance_rate``); TensorRT-LLM
``TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS`` (AL - 1); ATOM
``--spec-decode-acceptance-length`` / ``--spec-decode-acceptance-rate``.

**Agentic or not** (the rule, from what InferenceX's files really say):

1. A path condition or setting ``IS_AGENTIC`` (``1``/``true`` agentic, ``0``/``false``
   not): ``.github/workflows/benchmark-tmpl.yml`` sets ``IS_AGENTIC=1`` exactly for the
   ``agentic-coding`` scenario, and ``benchmarks/multi_node/amd_utils/server_sglang.sh``
   branches on it.
2. A master-config entry's scenario: ``agentic-coding`` (or any scenario named
   ``agentic*``) is agentic; ``fixed-seq-len`` is not (the workflow maps the scenario
   type to ``SCENARIO_SUBDIR`` ``agentic/`` or ``fixed_seq_len/``).
3. An srt-slurm recipe's ``benchmark`` section: a command running ``agentic_srt.sh`` (or
   any ``agentic`` script) is agentic; ``type: sa-bench`` (fixed ISL/OSL) is not.
4. The file's directory: ``agentic``/``agentx`` components are agentic (the runners pick
   ``benchmarks/single_node/${SCENARIO_SUBDIR}``); ``fixed_seq_len``, ``1k1k``,
   ``8k1k``, ``1k8k`` are fixed-length throughput; ``speedbench`` holds the golden
   collection scripts (real acceptance by definition).
5. Otherwise the finding says it could not tell and does not flag it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from pathlib import PurePath
from typing import Any

from golden_al.checks.findings import AgenticInfo, ThinkingSignal
from golden_al.engines import EnvKnob, engine_names, env_knobs, get_profile
from golden_al.engines._values import parse_number  # re-exported: the one number reader of the checks

__all__ = [
    "CONFIG_KEYS",
    "CONFIG_KNOBS",
    "FLAG_KNOBS",
    "MASTER_LENGTH_KEY",
    "EnvKnob",
    "agentic_from_flag",
    "agentic_from_path",
    "agentic_from_scenario",
    "env_knobs",
    "env_pin_context",
    "parse_number",
    "scalar_text",
    "thinking_from_kwargs",
    "thinking_from_setting",
]



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


def scalar_text(v: Any) -> str | None:
    """A config scalar as text (``true``/``false`` for booleans); None for a mapping, list or null."""
    if v is None or isinstance(v, (dict, list)):
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def env_pin_context(env_knob: EnvKnob, lookup: Callable[[str], str | None]
                    ) -> tuple[dict[str, str | None], dict[str, Any]]:
    """(companions, spec) of an environment pin, from the variables set beside it (``lookup``: a
    variable's value there, None when unset): the engine's companion variables (their legacy spellings
    too, when set, beside a legacy pin) and the variables its review reads
    (:attr:`~golden_al.engines.profile.CheckSupport.pin_env`)."""
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


_TRUE = {"1", "true", "yes", "on", "enabled", "enable"}
_FALSE = {"0", "false", "no", "off", "disabled", "disable"}


def _truth(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return bool(value)
    if isinstance(value, str):
        v = value.strip().strip("'\"").lower()
        if v in _TRUE:
            return True
        if v in _FALSE:
            return False
    return None


#: chat_template_kwargs keys that switch thinking (Qwen3/GLM ``enable_thinking``,
#: DeepSeek/Kimi ``thinking``, MiniMax ``thinking_mode``).
_KWARG_KEYS = ("enable_thinking", "thinking", "thinking_mode")


def thinking_from_kwargs(value: Any, source: str, priority: int) -> list[ThinkingSignal]:
    """Signals from a chat_template_kwargs object (dict or JSON text)."""
    obj = value
    if isinstance(value, str):
        try:
            obj = json.loads(value)
        except json.JSONDecodeError:
            return []
    if not isinstance(obj, dict):
        return []
    out: list[ThinkingSignal] = []
    for key in _KWARG_KEYS:
        if key in obj:
            t = _truth(obj[key])
            if t is not None:
                out.append(ThinkingSignal("on" if t else "off", f"{source} {key}={obj[key]!r}".replace("'", '"'),
                                          priority))
    level = _effort_level(obj.get(_EFFORT_KEY))
    if level is not None and not any(s.mode == "off" for s in out):
        # one object, one mode: {"thinking": true, "reasoning_effort": "high"} is reasoning_effort_high
        said = "; ".join([s.source for s in out] + [f"{source} {_EFFORT_KEY}={obj[_EFFORT_KEY]!r}".replace("'", '"')])
        out = [ThinkingSignal(level, said, priority)]
    return out


#: The request/chat-template key of a named reasoning level (gpt-oss harmony template, DeepSeek-V4,
#: the OpenAI chat API's ``reasoning_effort`` request field).
_EFFORT_KEY = "reasoning_effort"


def _effort_level(value: Any) -> str | None:
    """``"high"`` -> ``reasoning_effort_high`` (None for anything that is not one plain word)."""
    if not isinstance(value, str):
        return None
    word = value.strip().strip("'\"").lower()
    return f"{_EFFORT_KEY}_{word}" if re.fullmatch(r"[a-z0-9]+", word) else None


#: Settings (env variables, flags, recipe keys) that set a default thinking mode.
_SETTINGS: dict[str, int] = {
    "SGLANG_DEFAULT_THINKING": 2,
    "SGLANG_ENABLE_THINKING": 2,
    "DYN_DEFAULT_THINKING_MODE": 3,
    "dyn-default-thinking-mode": 3,
    "--dyn-default-thinking-mode": 3,
    "THINKING_MODE": 0,
}
_KWARG_SETTINGS: dict[str, int] = {
    "default-chat-template-kwargs": 3,
    "--default-chat-template-kwargs": 3,
    "default_chat_template_kwargs": 3,
    "chat-template-kwargs": 4,
    "--chat-template-kwargs": 4,
    "chat_template_kwargs": 4,
}


#: Settings that name a reasoning level directly (a request field, like per-request kwargs).
_EFFORT_SETTINGS: dict[str, int] = {"reasoning_effort": 4, "reasoning-effort": 4, "--reasoning-effort": 4,
                                    "REASONING_EFFORT": 4}


_CHAT_TEMPLATE_NAMES = ("--chat-template", "chat-template", "chat_template")


def is_thinking_setting(name: str) -> bool:
    """Whether :func:`thinking_from_setting` can find a signal in a setting of this name
    (a cheap test before building the setting's location text)."""
    return (name in _KWARG_SETTINGS or name in _EFFORT_SETTINGS or name in _SETTINGS
            or name == "AIPERF_EXTRA_INPUTS" or name in _CHAT_TEMPLATE_NAMES)


def thinking_from_setting(name: str, value: Any, where: str) -> list[ThinkingSignal]:
    """Signals from one named setting (empty when the name is not a thinking setting)."""
    if name in _KWARG_SETTINGS:
        return thinking_from_kwargs(value, f"{where}{name}", _KWARG_SETTINGS[name])
    if name in _EFFORT_SETTINGS:
        level = _effort_level(value)
        return [ThinkingSignal(level, f"{where}{name}={value}", _EFFORT_SETTINGS[name])] if level else []
    if name in _SETTINGS:
        if name == "THINKING_MODE":
            v = str(value).strip().lower()
            if v in ("thinking_on", "on"):
                return [ThinkingSignal("on", f"{where}THINKING_MODE={value}", 0)]
            if v in ("thinking_off", "off"):
                return [ThinkingSignal("off", f"{where}THINKING_MODE={value}", 0)]
            return []
        t = _truth(value)
        if t is None:
            return []
        return [ThinkingSignal("on" if t else "off", f"{where}{name}={value}", _SETTINGS[name])]
    if name == "AIPERF_EXTRA_INPUTS" and isinstance(value, str):
        out: list[ThinkingSignal] = []
        for item in re.split(r"[\s,]+", value):
            key, _, val = item.partition(":")
            if key in _KWARG_KEYS:
                t = _truth(val)
                if t is not None:
                    out.append(ThinkingSignal("on" if t else "off", f"{where}AIPERF_EXTRA_INPUTS {item}", 4))
        return out
    if name in _CHAT_TEMPLATE_NAMES and isinstance(value, str):
        base = PurePath(value.replace("\\", "/")).name.lower()
        if base.endswith((".jinja", ".jinja2", ".j2")):
            if re.search(r"(^|[_-])(no[_-]?think(ing)?|non[_-]?thinking|nothink)([_.-]|$)", base):
                return [ThinkingSignal("off", f"{where}{name} {PurePath(value).name}", 1)]
            if re.search(r"(^|[_-])think(ing)?([_.-]|$)", base):
                return [ThinkingSignal("on", f"{where}{name} {PurePath(value).name}", 1)]
    return []


_AGENTIC_DIRS = {"agentic", "agentx", "agentic-coding", "agentic_coding"}
_FIXED_DIRS = {"fixed_seq_len", "fixed-seq-len", "1k1k", "8k1k", "1k8k", "8k8k"}


def agentic_from_path(path: str | PurePath) -> AgenticInfo:
    """Rule 4: the directory a file lives in."""
    parts = [p.lower() for p in PurePath(path).parts[:-1]]
    name = PurePath(path).name.lower()
    for p in reversed(parts):
        if p in _AGENTIC_DIRS or p.startswith("agentx"):
            return AgenticInfo(True, f"it lives under an '{p}' directory")
        if p in _FIXED_DIRS:
            return AgenticInfo(False, f"it lives under '{p}' (fixed-length throughput benchmarks)")
        if p == "speedbench":
            return AgenticInfo(False, "it is a SPEED-Bench golden-collection script (real acceptance is the point)")
    if "agentic" in name or "agentx" in name:
        return AgenticInfo(True, "its file name says agentic")
    return AgenticInfo(None, "neither its settings nor its directory say whether it is an agentic benchmark")


def agentic_from_scenario(scenario: str) -> AgenticInfo:
    """Rule 2: a master-config scenario name."""
    s = scenario.lower()
    if s.startswith("agentic") or "agentic" in s or s.startswith("agentx"):
        return AgenticInfo(True, f"master-config scenario '{scenario}' (IS_AGENTIC=1)")
    if s in ("fixed-seq-len", "fixed_seq_len") or "seq-len" in s:
        return AgenticInfo(False, f"master-config scenario '{scenario}' is a fixed-sequence-length benchmark "
                                  "(IS_AGENTIC=0)")
    return AgenticInfo(None, f"master-config scenario '{scenario}' is not known to be agentic or not")


def agentic_from_flag(value: Any, where: str) -> AgenticInfo | None:
    """Rule 1: an ``IS_AGENTIC`` value."""
    t = _truth(value)
    if t is None:
        return None
    return AgenticInfo(t, f"{where}IS_AGENTIC={value}")


def first(items: Iterable[Any]) -> Any:
    """The first item, or None."""
    for item in items:
        return item
    return None
