"""Pins of the knobs that an engine spells its own way in a shell script, one builder per form,
named by the engine's profile (:attr:`~golden_al.engines.profile.EngineProfile.script_pin`):
vLLM's ``--speculative-config`` JSON, llama.cpp's ``--spec-synth-*`` flags (or their
``LLAMA_ARG_*`` forms), ATOM's ``--spec-decode-acceptance-*`` flags. :mod:`golden_al.checks.scripts`
finds the occurrences and hands each to its engine's builder with what the path around it says
(:class:`PinSite`); environment-variable knobs and engines read off their command line need none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from golden_al.checks.bash import harden, has_unknown, show
from golden_al.checks.context import VLLM_KEYS
from golden_al.checks.findings import AgenticInfo, ModelName, Pin, ThinkingSignal
from golden_al.checks.spec import config_json, llamacpp_draft, settings_draft
from golden_al.engines import atom, llamacpp, vllm

__all__ = ["PinSite", "atom_pin", "clean", "llamacpp_pin", "value_of", "vllm_pin"]


@dataclass(frozen=True)
class PinSite:
    """One occurrence of a knob in a script, and what its path says around it."""

    knob: str
    line: int
    text: str  #: the value as written (shell words expanded where they could be)
    flags: Mapping[str, str]  #: the launch flags on this path (``--name``: value)
    env: Mapping[str, str]  #: the environment variables set on this path
    path: str
    models: list[ModelName]
    thinking: list[ThinkingSignal]
    agentic: AgenticInfo

    def pin(self, engine: str, knob: str, raw_value: str | None, unresolved: str | None) -> Pin:
        """A pin of ``engine`` here."""
        return Pin(file=self.path, line=self.line, engine=engine, knob=knob, raw_value=raw_value,
                   unresolved=unresolved, models=self.models, thinking=self.thinking, agentic=self.agentic)


def value_of(text: str | None) -> tuple[str | None, str | None]:
    """(value, why it is unresolved) of a value written in a script."""
    if text is None:
        return None, "no value"
    if has_unknown(text):
        return None, f"the value is {show(text)}, set outside this file"
    return harden(text).strip().strip("'\""), None


def clean(value: Any) -> str | None:
    """A model name or path as written, unquoted (None: none)."""
    if not isinstance(value, str) or not value.strip():
        return None
    return show(value).strip().strip("'\"")


def vllm_pin(site: PinSite) -> Pin:
    """vLLM: the synthetic keys of a ``--speculative-config`` JSON, k from its ``num_speculative_tokens``."""
    cfg = config_json(site.text)
    if cfg is None:
        return site.pin(vllm.PROFILE.name, vllm.FLAG_SPEC_CONFIG[2:], None,
                        f"cannot read a JSON object from {show(site.text)[:120]!r}")
    knob = next((k for k in VLLM_KEYS if k in cfg), vllm.METHOD_KEY)
    raw = cfg.get(knob)
    if isinstance(raw, list):
        value: str | None = "[" + ", ".join(show(str(x)) for x in raw) + "]"
        why = None if not any(has_unknown(str(x)) for x in raw) else "a rate is set outside this file"
        if why:
            value = None
    elif raw is None:
        value, why = None, f"no {vllm.LENGTH_KEY} or {vllm.RATES_KEY} in the config"
    else:
        value, why = value_of(str(raw))
    pin = site.pin(vllm.PROFILE.name, knob, value, why)
    pin.algorithm = show(str(cfg["method"])) if cfg.get("method") else None
    pin.draft = settings_draft(vllm.PROFILE.name, vllm.read_recipe_role({vllm.RECIPE_SPEC_KEYS[0]: cfg}),
                               f"the {vllm.FLAG_SPEC_CONFIG[2:]}")
    pin.draft_model = clean(cfg.get("model")) if isinstance(cfg.get("model"), str) else None
    dsm = cfg.get("draft_sample_method")
    pin.draft_sample_method = dsm if isinstance(dsm, str) else None
    pin.spec["config"] = cfg
    return pin


def llamacpp_pin(site: PinSite) -> Pin:
    """llama.cpp: a ``--spec-synth-*`` flag (an ``LLAMA_ARG_*`` form is read as its flag), k and the
    speculative type from llama-server's flags and environment."""
    value, why = value_of(site.text)
    knob = {v: f for f, v in llamacpp.SYNTH_FLAG_FORMS.items()}.get(site.knob, site.knob)
    pin = site.pin(llamacpp.PROFILE.name, knob, value, why)
    pin.draft, pin.algorithm = llamacpp_draft(site.flags, site.env, "the llama-server flags")
    pin.draft_model = clean(site.flags.get(llamacpp.FLAG_DRAFT_MODEL) or site.flags.get("--model-draft"))
    return pin


def atom_pin(site: PinSite) -> Pin:
    """ATOM: ``--spec-decode-acceptance-length`` / ``-rate``, k from its launch flags, and what its
    review reads (both flags set, ``--method`` given, the DSpark config, the decimals written)."""
    value, why = value_of(site.text)
    pin = site.pin(atom.PROFILE.name, site.knob, value, why)
    spec = atom.script_speculation(site.flags)
    pin.algorithm = show(spec.algorithm) if spec.algorithm else None
    pin.draft = settings_draft(atom.PROFILE.name, spec, atom.PROFILE.script_settings)
    pin.draft_model = clean(spec.draft_model)
    other = atom.RATE_FLAG if site.knob == atom.LENGTH_FLAG else atom.LENGTH_FLAG
    pin.spec["both"] = other in site.flags
    pin.spec["method_flag"] = atom.FLAG_METHOD in site.flags
    pin.spec["dspark_config"] = site.flags.get("--dspark-config")
    if value is not None:
        pin.spec["decimals"] = len(value.split(".", 1)[1]) if "." in value else 0
    return pin
