"""Engines: one folder per serving engine (``<name>/``: its ``PROFILE`` (:mod:`.profile`) in ``__init__.py`` and
the modules its profile names as hooks), plus the offline reference engine on transformers (``offline_reference/``).

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

__all__ = ["ENTRY_POINT_GROUP", "REFERENCE_ENGINE", "REGISTRY", "EnvKnob", "SkippedPlugin", "companion_env_names",
           "engine_names", "env_knobs", "get_profile", "load_hook", "load_samplers", "profile_or_usage",
           "skipped_plugins", "synthetic_settings"]

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


@dataclass(frozen=True)
class SkippedPlugin:
    """A plugin engine that was not loaded, and why (each problem names the profile field)."""

    name: str  #: its entry-point name
    where: str  #: ``module:attribute``
    package: str | None  #: the distribution that declares the entry point
    problems: tuple[str, ...]

    def sentence(self) -> str:
        """One line for a warning or an error."""
        pkg = f" (package {self.package})" if self.package else ""
        return f"plugin engine {self.name!r} at {self.where}{pkg} was not loaded: " + "; ".join(self.problems)


def _package(ep: Any) -> str | None:
    """The distribution that declares entry point ``ep`` (None where the metadata does not say)."""
    dist = getattr(ep, "dist", None)
    return str(dist.name) if dist is not None else None


def _discover() -> tuple[dict[str, str], dict[str, str | None], list[SkippedPlugin]]:
    """``--engine`` name -> ``module:attribute`` from the ``golden_al.engines`` entry points, the package
    declaring each plugin, and the plugins refused on their name alone.

    The built-in engines come first, in their registration order; third-party engines follow,
    sorted by name. A plugin may not take a built-in engine's name, nor the reference engine's: it is
    skipped with a warning, so an installed package can never silently replace what ``check`` gates on.
    """
    from importlib import metadata

    eps = list(metadata.entry_points(group=ENTRY_POINT_GROUP))
    packages = {ep.name: _package(ep) for ep in eps}
    registry = dict(_BUILTIN)  # a built-in name always resolves inside golden_al.engines
    refused = []
    for ep in sorted(eps, key=lambda e: e.name):
        if ep.name in _BUILTIN and ep.value != _BUILTIN[ep.name]:
            refused.append(SkippedPlugin(ep.name, ep.value, packages[ep.name],
                                         (f"name: {ep.name!r} is a built-in engine (a plugin cannot replace it)",)))
        elif ep.name == REFERENCE_ENGINE:
            refused.append(SkippedPlugin(ep.name, ep.value, packages[ep.name],
                                         (f"name: {ep.name!r} is reserved (golden-al's embedded engine)",)))
        elif ep.name not in _BUILTIN:
            registry[ep.name] = ep.value
    return registry, packages, refused


#: ``--engine`` name -> ``module:attribute`` of its ``PROFILE``, discovered from entry points (plugins are
#: validated on first use: :func:`skipped_plugins` lists those that failed and are not engines).
REGISTRY: dict[str, str]
REGISTRY, _PACKAGES, _REFUSED = _discover()
_VALIDATING = False


def _import_profile(name: str) -> Any:
    module_name, _, attribute = REGISTRY[name].partition(":")
    return getattr(importlib.import_module(module_name), attribute or "PROFILE")


@lru_cache(maxsize=1)
def _plugins() -> tuple[tuple[str, ...], dict[str, SkippedPlugin]]:
    """The plugins that pass the conformance kit (:mod:`.conformance`), and the others with their problems.

    Plugins are checked one by one in registration order against the built-ins and the plugins already
    accepted (a knob spelling may belong to one engine only); importing a plugin may fail any way, and
    that too skips it, named, instead of taking every command down.
    """
    global _VALIDATING
    from golden_al.engines.conformance import profile_problems

    accepted: dict[str, EngineProfile] = {}
    skipped = {s.name: s for s in _REFUSED}
    plugins = [n for n in REGISTRY if n not in _BUILTIN]
    if plugins:
        accepted = {n: get_profile(n) for n in _BUILTIN}
    for name in plugins:
        _VALIDATING = True  # a plugin that asks for the engines while it loads sees the built-ins only
        try:
            profile = _import_profile(name)
        except Exception as exc:  # a broken package: named and skipped, never a crash of every command
            problems: list[str] = [f"import: {type(exc).__name__}: {exc}"]
        else:
            problems = profile_problems(profile, entry_name=name, others=accepted)
        finally:
            _VALIDATING = False
        if problems:
            skipped[name] = SkippedPlugin(name, REGISTRY[name], _PACKAGES.get(name), tuple(problems))
        else:
            accepted[name] = profile
    return tuple(n for n in REGISTRY if n not in skipped), skipped


def skipped_plugins() -> tuple[SkippedPlugin, ...]:
    """Plugin engines that were found but not loaded (the CLI warns about each)."""
    return tuple(_plugins()[1].values())


def engine_names() -> tuple[str, ...]:
    """Every serving engine: the built-ins and the plugins that conform, in registration order."""
    if (len(REGISTRY) == len(_BUILTIN) and not _REFUSED) or _VALIDATING:
        return tuple(_BUILTIN)
    return _plugins()[0]


def get_profile(name: str) -> EngineProfile:
    """The profile of engine ``name``.

    Raises:
        KeyError: ``name`` is not registered, or is a plugin that was skipped (the message says why; the
            CLI turns it into a usage error).
    """
    if name not in _BUILTIN:
        skipped = _plugins()[1].get(name)
        if skipped is not None:
            raise KeyError(skipped.sentence())
    profile: EngineProfile = _import_profile(name)
    if profile.name != name:
        raise KeyError(f"engine {name!r} is registered at {REGISTRY[name]}, whose profile is named {profile.name!r}")
    return profile


def load_hook(hook: Any) -> Any:
    """The object a profile hook stands for: a :func:`~golden_al.engines.profile.lazy` hook imported now, any other
    hook (a callable, a source object) as it is.

    Raises:
        TypeError: the hook is a string (profiles name hooks as callables or ``lazy("module:function")``).
        ImportError / AttributeError: a lazy hook's module or name does not exist.
    """
    from golden_al.engines.profile import Lazy

    if isinstance(hook, Lazy):
        return hook.resolve()
    if isinstance(hook, str):
        raise TypeError(f"a profile hook is a callable or lazy('module:function'), got the string {hook!r}")
    return hook


def load_samplers(name: str) -> None:
    """Import engine ``name``'s module if it is registered, so that the samplers it registers with
    :func:`simulators.base.register` (a plugin engine's own, say) are there before one is asked for."""
    if name in engine_names():
        get_profile(name)


def profile_or_usage(name: str, *, among: tuple[str, ...] | None = None) -> EngineProfile:
    """:func:`get_profile`, raising :class:`~golden_al.errors.UsageError` with a "did you mean".

    ``among`` restricts the engines accepted (e.g. those with synthetic settings).
    """
    import difflib

    from golden_al.errors import UsageError

    names = among if among is not None else engine_names()
    skipped = next((s for s in skipped_plugins() if s.name == name), None)
    if skipped is not None:
        raise UsageError(skipped.sentence(), hint=f"fix or reinstall {skipped.package or 'the plugin package'}; "
                         "golden_al.engines.conformance.profile_problems lists the same problems")
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
