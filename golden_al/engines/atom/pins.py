"""ATOM's pin in a shell script: ``--spec-decode-acceptance-length`` / ``-rate`` (the profile's ``script_pin``)."""

from __future__ import annotations

from golden_al import plugin

from . import FLAG_METHOD, LENGTH_FLAG, PROFILE, RATE_FLAG, script_speculation

__all__ = ['atom_pin']


def atom_pin(site: plugin.PinSite) -> plugin.Pin:
    """ATOM: ``--spec-decode-acceptance-length`` / ``-rate``, k from its launch flags, and what its
    review reads (both flags set, ``--method`` given, the DSpark config, the decimals written)."""
    value, why = plugin.value_of(site.text)
    pin = site.pin(PROFILE.name, site.knob, value, why)
    spec = script_speculation(site.flags)
    pin.algorithm = plugin.show(spec.algorithm) if spec.algorithm else None
    pin.draft = plugin.settings_draft(PROFILE.name, spec, PROFILE.check.script_settings)
    pin.draft_model = plugin.clean(spec.draft_model)
    other = RATE_FLAG if site.knob == LENGTH_FLAG else LENGTH_FLAG
    pin.spec["both"] = other in site.flags
    pin.spec["method_flag"] = FLAG_METHOD in site.flags
    pin.spec["dspark_config"] = site.flags.get("--dspark-config")
    if value is not None:
        pin.spec["decimals"] = len(value.split(".", 1)[1]) if "." in value else 0
    return pin
