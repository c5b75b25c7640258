"""Engines: one module per serving engine, each exporting ``PROFILE`` (:mod:`.profile`),
plus the offline reference engine on transformers (``offline_reference/``).

Engines are plugins. Each registers under the entry-point group ``golden_al.engines``
(``name = "package.module:PROFILE"``); the built-in five register the same way in
golden-al's own ``pyproject.toml``, and a third-party package adds a sixth by declaring one
entry point, with no change here (``docs/adding-an-engine.md``). :data:`REGISTRY` maps
each ``--engine`` name to where its profile lives; profiles are imported on first use so
that ``env``, ``check`` and ``simulate`` stay fast to start.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from golden_al.engines.profile import EngineProfile, SyntheticKnob

__all__ = ["ENTRY_POINT_GROUP", "REFERENCE_ENGINE", "REGISTRY", "EnvKnob", "companion_env_names", "engine_names",
           "env_knobs", "get_profile", "load_hook", "load_samplers", "profile_or_usage", "synthetic_settings"]

#: The ``--engine`` name of the embedded offline reference engine (``offline_reference/``): it measures
#: in-process, so it has no serving profile and is not in :data:`REGISTRY`.
REFERENCE_ENGINE = "reference"

#: The entry-point group engines register under.
ENTRY_POINT_GROUP = "golden_al.engines"

#: The built-in engines, exactly as ``pyproject.toml`` registers them. A built-in name always
#: resolves here (installed or run from a source tree without metadata); entry points add the others.
_BUILTIN: dict[str, str] = {
    "sglang": "golden_al.engines.sglang:PROFILE",
    "vllm": "golden_al.engines.vllm:PROFILE",
    "trtllm": "golden_al.engines.trtllm:PROFILE",
    "atom": "golden_al.engines.atom:PROFILE",
    "llamacpp": "golden_al.engines.llamacpp:PROFILE",
}


def _discover() -> dict[str, str]:
    """``--engine`` name -> ``module:attribute`` from the ``golden_al.engines`` entry points.

    The built-in engines come first, in their registration order; third-party engines follow,
    sorted by name. A plugin may not take a built-in engine's name (it is skipped: the built-in
    wins, so an installed package can never silently replace what ``check`` gates on).
    """
    from importlib import metadata

    found = {ep.name: ep.value for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}
    registry = dict(_BUILTIN)  # a built-in name always resolves inside golden_al.engines
    registry.update({name: found[name] for name in sorted(found) if name not in _BUILTIN})
    return registry


#: ``--engine`` name -> ``module:attribute`` of its ``PROFILE``, discovered from entry points.
REGISTRY: dict[str, str] = _discover()


def engine_names() -> tuple[str, ...]:
    """Every registered serving engine, in registration order."""
    return tuple(REGISTRY)


def get_profile(name: str) -> EngineProfile:
    """The profile of engine ``name``.

    Raises:
        KeyError: ``name`` is not registered (the CLI turns this into a usage error with a
            "did you mean").
    """
    where = REGISTRY[name]
    module_name, _, attribute = where.partition(":")
    profile: EngineProfile = getattr(importlib.import_module(module_name), attribute or "PROFILE")
    if profile.name != name:
        raise KeyError(f"engine {name!r} is registered at {where}, whose profile is named {profile.name!r}")
    return profile


def load_hook(ref: str) -> Any:
    """The callable a profile names as ``"module:function"`` (a server probe, a log reader, an AL
    source), imported on use so that the profile itself stays pure data and fast to import.

    Raises:
        ValueError: ``ref`` is not ``"module:function"``.
        ImportError / AttributeError: the module or the function does not exist.
    """
    module, _, func = ref.partition(":")
    if not module or not func:
        raise ValueError(f"a profile hook is 'module:function', got {ref!r}")
    return getattr(importlib.import_module(module), func)


def load_samplers(name: str) -> None:
    """Import engine ``name``'s module if it is registered, so that the samplers it registers with
    :func:`simulators.base.register` (a plugin engine's own, say) are there before one is asked for."""
    if name in REGISTRY:
        get_profile(name)


def profile_or_usage(name: str, *, among: tuple[str, ...] | None = None) -> EngineProfile:
    """:func:`get_profile`, raising :class:`~golden_al.errors.UsageError` with a "did you mean".

    ``among`` restricts the engines accepted (e.g. those with synthetic settings).
    """
    import difflib

    from golden_al.errors import UsageError

    names = among if among is not None else engine_names()
    if name not in names:
        close = difflib.get_close_matches(str(name), list(names), n=1, cutoff=0.5)
        hint = (f"did you mean {close[0]!r}? " if close else "") + "one of " + ", ".join(names)
        raise UsageError(f"unknown engine {name!r}", hint=hint)
    return get_profile(name)


def synthetic_settings(engine: str, al: float, k: int, **options: Any) -> dict[str, Any]:
    """The exact synthetic-acceptance settings ``engine`` needs for golden AL ``al`` at ``k``.

    This is the ``golden-al env --format json`` contract (each engine module's
    ``synthetic_settings`` documents its shape):

    * sglang: ``{"SGLANG_SIMULATE_ACC_LEN": "4.05", "SGLANG_SIMULATE_ACC_METHOD":
      "match-expected", "SGLANG_SIMULATE_ACC_TOKEN_MODE": "real-draft-token"}``
    * trtllm: ``{"TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS": "3.05"}`` (AL - 1)
    * vllm: ``{"rejection_sample_method": "synthetic", "synthetic_acceptance_length": 4.05}``
      (fields to merge into ``--speculative-config``)
    * atom: ``{"--spec-decode-acceptance-length": "4.05"}``
    * llamacpp: ``{"--spec-synth-len": "4.05"}`` (AL incl. the target token)

    Raises:
        UsageError: an unknown engine, or a value the engine cannot take.
    """
    settings: dict[str, Any] = profile_or_usage(engine).synthetic_settings(al, k, **options)
    return settings


@dataclass(frozen=True)
class EnvKnob:
    """One spelling of an engine's synthetic knob that is an environment variable."""

    engine: str
    knob: SyntheticKnob
    spelling: str  #: the knob's name or one of its legacy aliases

    @property
    def legacy(self) -> bool:
        """Whether this is an older spelling (the current one wins where both are set)."""
        return self.spelling != self.knob.name


@lru_cache(maxsize=1)
def env_knobs() -> dict[str, EnvKnob]:
    """Every spelling of every registered engine's environment-variable synthetic knob (its pinned
    value, not a companion), from the engine profiles. An engine that reads its own knobs off its
    command line (:attr:`~golden_al.engines.profile.EngineProfile.command_line`) is left to that reader,
    which sees the launch line that fixes k."""
    out: dict[str, EnvKnob] = {}
    for name in engine_names():
        profile = get_profile(name)
        if profile.command_line is not None:
            continue
        for knob in profile.synthetic_knobs:
            if knob.kind == "env" and knob.role == "value":
                for spelling in (knob.name, *knob.aliases):
                    out[spelling] = EnvKnob(name, knob, spelling)
    return out


@lru_cache(maxsize=1)
def companion_env_names() -> frozenset[str]:
    """Every spelling of every registered engine's companion environment variables (a method, a mode
    that an environment knob needs beside it)."""
    return frozenset(spelling for name in engine_names() for knob in get_profile(name).synthetic_knobs
                     if knob.kind == "env" and knob.role == "companion" for spelling in (knob.name, *knob.aliases))
