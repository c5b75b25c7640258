"""vLLM's pin in a shell script: the synthetic keys of a ``--speculative-config`` JSON (the profile's ``script_pin``)."""

from __future__ import annotations

import json
from typing import Any

from golden_al import plugin

from . import (
    CONFIG_VALUE_KEYS,
    FLAG_SPEC_CONFIG,
    LENGTH_KEY,
    METHOD_KEY,
    PROFILE,
    RATES_KEY,
    RECIPE_SPEC_KEYS,
    SYNTHETIC_METHOD,
    read_recipe_role,
)

__all__ = ["recipe_config_pin", "vllm_pin"]


def vllm_pin(site: plugin.PinSite) -> plugin.Pin:
    """vLLM: the synthetic keys of a ``--speculative-config`` JSON, k from its ``num_speculative_tokens``."""
    cfg = plugin.config_json(site.text)
    if cfg is None:
        return site.pin(PROFILE.name, FLAG_SPEC_CONFIG[2:], None,
                        f"cannot read a JSON object from {plugin.show(site.text)[:120]!r}")
    knob = next((k for k in CONFIG_VALUE_KEYS if k in cfg), METHOD_KEY)
    raw = cfg.get(knob)
    if isinstance(raw, list):
        value: str | None = "[" + ", ".join(plugin.show(str(x)) for x in raw) + "]"
        why = None if not any(plugin.has_unknown(str(x)) for x in raw) else "a rate is set outside this file"
        if why:
            value = None
    elif raw is None:
        value, why = None, f"no {LENGTH_KEY} or {RATES_KEY} in the config"
    else:
        value, why = plugin.value_of(str(raw))
    pin = site.pin(PROFILE.name, knob, value, why)
    pin.algorithm = plugin.show(str(cfg["method"])) if cfg.get("method") else None
    pin.draft = plugin.settings_draft(PROFILE.name, read_recipe_role({RECIPE_SPEC_KEYS[0]: cfg}),
                                      f"the {FLAG_SPEC_CONFIG[2:]}")
    pin.draft_model = plugin.clean(cfg.get("model")) if isinstance(cfg.get("model"), str) else None
    dsm = cfg.get("draft_sample_method")
    pin.draft_sample_method = dsm if isinstance(dsm, str) else None
    pin.spec["config"] = cfg
    return pin


def recipe_config_pin(path: str, line: int, value: Any, models: list[plugin.ModelName], thinking_for: Any, agentic: plugin.AgenticInfo,
              role: str | None) -> plugin.Pin | None:
    """vLLM's pin in a YAML speculative config (a recipe role's or any document's): the synthetic keys, k from its
    ``num_speculative_tokens``; None when the config asks for no synthetic acceptance (the profile's
    ``recipe.config_pin``)."""
    cfg = plugin.json_object(value)[0]
    if cfg is None or not (any(k in cfg for k in CONFIG_VALUE_KEYS) or cfg.get(METHOD_KEY) == SYNTHETIC_METHOD):
        return None
    info = plugin.settings_draft(PROFILE.name, read_recipe_role({RECIPE_SPEC_KEYS[0]: cfg}),
                                 f"the {RECIPE_SPEC_KEYS[0]}")
    knob = next((k for k in CONFIG_VALUE_KEYS if k in cfg), METHOD_KEY)
    raw = cfg.get(knob) if knob in cfg else None
    pin = plugin.Pin(file=path, line=line, engine="vllm", knob=knob,
                     raw_value=None if raw is None else (json.dumps(raw) if isinstance(raw, list) else plugin.scalar_text(raw)),
                     unresolved=None if raw is not None else f"no {LENGTH_KEY} or {RATES_KEY}",
                     algorithm=str(cfg["method"]) if cfg.get("method") else None, draft=info,
                     thinking=thinking_for(role), models=list(models), draft_model=cfg.get("model"),
                     draft_sample_method=cfg.get("draft_sample_method"), agentic=agentic,
                     rejection_sample_method=_real_method(cfg.get(METHOD_KEY)))
    pin.spec["config"] = cfg
    pin.notes.append(f"{RECIPE_SPEC_KEYS[0]} of the {role} role" if role else RECIPE_SPEC_KEYS[0])
    pin.spec["role"] = role
    return pin


def _real_method(value: Any) -> str | None:
    """The draft's real rejection method, a curve input: ``rejection_sample_method`` unless it is the value that
    switches synthetic acceptance on (the injected method says nothing about the real draft)."""
    return None if value is None or value == SYNTHETIC_METHOD else str(value)
