"""vLLM's pin in a shell script: the synthetic keys of a ``--speculative-config`` JSON (the profile's ``script_pin``)."""

from __future__ import annotations

from golden_al.checks.bash import has_unknown, show
from golden_al.checks.context import VLLM_KEYS
from golden_al.checks.findings import Pin
from golden_al.checks.script_pins import PinSite, clean, value_of
from golden_al.checks.spec import config_json, settings_draft
from golden_al.engines import vllm

__all__ = ['vllm_pin']


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
