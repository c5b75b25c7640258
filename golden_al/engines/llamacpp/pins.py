"""llama.cpp's pin in a shell script: a ``--spec-synth-*`` flag (or its ``LLAMA_ARG_*`` form), with k and the speculative
type from llama-server's own reading of its flags (the profile's ``script_pin``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from golden_al import plugin

from . import (
    FLAG_DRAFT_MODEL,
    N_MAX_FORMS,
    N_MIN_FORMS,
    P_MIN_FORMS,
    PROFILE,
    SPEC_TYPE_FORMS,
    SYNTH_FLAG_FORMS,
    read_command_line,
)

__all__ = ['llamacpp_draft', 'llamacpp_pin']


def llamacpp_pin(site: plugin.PinSite) -> plugin.Pin:
    """llama.cpp: a ``--spec-synth-*`` flag (an ``LLAMA_ARG_*`` form is read as its flag), k and the
    speculative type from llama-server's flags and environment."""
    value, why = plugin.value_of(site.text)
    knob = {v: f for f, v in SYNTH_FLAG_FORMS.items()}.get(site.knob, site.knob)
    pin = site.pin(PROFILE.name, knob, value, why)
    pin.draft, pin.algorithm = llamacpp_draft(site.flags, site.env, "the llama-server flags")
    pin.draft_model = plugin.clean(site.flags.get(FLAG_DRAFT_MODEL) or site.flags.get("--model-draft"))
    return pin


def llamacpp_draft(flags: Mapping[str, Any], env: Mapping[str, Any], where: str) -> tuple[plugin.DraftInfo, str | None]:
    """llama.cpp: (draft info, speculative type) from llama-server's flags and environment, read
    by the engine itself (:func:`golden_al.engines.llamacpp.read_command_line`: the type, its
    method, ``k = --spec-draft-n-max`` with llama.cpp's clamps, fixed only with ``-n-min`` = k and
    ``-p-min`` 0)."""
    forms = [*N_MAX_FORMS, *N_MIN_FORMS, *P_MIN_FORMS, *SPEC_TYPE_FORMS]
    for name in forms:
        value = flags.get(name, env.get(name))
        if isinstance(value, str) and plugin.has_unknown(value):
            return plugin.DraftInfo(problem=f"{name} is {plugin.show(value)}, set outside this file"), None
    args = [x for name, v in flags.items() for x in (name, plugin.harden(str(v)))]
    reading = read_command_line(args, {k: plugin.harden(str(v)) for k, v in env.items()})
    if reading.draft is None:
        return plugin.DraftInfo(problem=f"{reading.draft_problem} ({where})"), reading.algorithm
    return plugin.DraftInfo(k=reading.draft.k, rule=f"llama.cpp {reading.draft.rule} in {where}"), reading.algorithm
