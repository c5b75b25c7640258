"""vLLM's pin in a shell script: the synthetic keys of a ``--speculative-config`` JSON (the profile's ``script_pin``)."""

from __future__ import annotations

import json
from typing import Any

from golden_al.checks.context import scalar_text
from golden_al.checks.findings import AgenticInfo, ModelName, Pin
from golden_al.checks.spec import config_json, settings_draft
from golden_al.checks.yaml_configs import json_obj
from golden_al.engines import vllm
from golden_al.plugin.pins import PinSite, clean, value_of
from golden_al.recipes.srt_slurm import curve_rejection_method
from golden_al.shell import has_unknown, show

__all__ = ["recipe_config_pin", "vllm_pin"]


def vllm_pin(site: PinSite) -> Pin:
    """vLLM: the synthetic keys of a ``--speculative-config`` JSON, k from its ``num_speculative_tokens``."""
    cfg = config_json(site.text)
    if cfg is None:
        return site.pin(vllm.PROFILE.name, vllm.FLAG_SPEC_CONFIG[2:], None,
                        f"cannot read a JSON object from {show(site.text)[:120]!r}")
    knob = next((k for k in vllm.CONFIG_VALUE_KEYS if k in cfg), vllm.METHOD_KEY)
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


def recipe_config_pin(path: str, line: int, value: Any, models: list[ModelName], thinking_for: Any, agentic: AgenticInfo,
              role: str | None) -> Pin | None:
    """vLLM's pin in a YAML speculative config (a recipe role's or any document's): the synthetic keys, k from its
    ``num_speculative_tokens``; None when the config asks for no synthetic acceptance (the profile's
    ``recipe.config_pin``)."""
    cfg = json_obj(value)
    if cfg is None or not (any(k in cfg for k in vllm.CONFIG_VALUE_KEYS) or cfg.get(vllm.METHOD_KEY) == vllm.SYNTHETIC_METHOD):
        return None
    info = settings_draft(vllm.PROFILE.name, vllm.read_recipe_role({vllm.RECIPE_SPEC_KEYS[0]: cfg}),
                          f"the {vllm.RECIPE_SPEC_KEYS[0]}")
    knob = next((k for k in vllm.CONFIG_VALUE_KEYS if k in cfg), vllm.METHOD_KEY)
    raw = cfg.get(knob) if knob in cfg else None
    pin = Pin(file=path, line=line, engine="vllm", knob=knob,
              raw_value=None if raw is None else (json.dumps(raw) if isinstance(raw, list) else scalar_text(raw)),
              unresolved=None if raw is not None else f"no {vllm.LENGTH_KEY} or {vllm.RATES_KEY}",
              algorithm=str(cfg["method"]) if cfg.get("method") else None, draft=info,
              thinking=thinking_for(role), models=list(models), draft_model=cfg.get("model"),
              draft_sample_method=cfg.get("draft_sample_method"), agentic=agentic,
              rejection_sample_method=curve_rejection_method(cfg.get(vllm.METHOD_KEY)))
    pin.spec["config"] = cfg
    pin.notes.append(f"{vllm.RECIPE_SPEC_KEYS[0]} of the {role} role" if role else vllm.RECIPE_SPEC_KEYS[0])
    pin.spec["role"] = role
    return pin
