"""The engine registry: each ``--engine`` name -> where its profile lives (:data:`ENGINES`), and the lookups every
command uses (:func:`get_profile`, :func:`engine_names`, :func:`load_hook`, :func:`get_sampler`, ...).

Engines are plugins (``golden_al/engines/<name>/``, or a package of their own). Each registers under the entry-point
group ``golden_al.engines`` (``name = "package.module:PROFILE"``); a third-party package adds one by declaring one
entry point, with no change here (``docs/adding-an-engine.md``). :data:`ENGINES` (a
:class:`simulators.registry.Registry`) imports profiles on first use so that ``env``, ``check`` and ``simulate``
stay fast to start."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from golden_al.plugin.profile import Record
from simulators.registry import Registry, Skipped

if TYPE_CHECKING:
    from golden_al.plugin.profile import EngineProfile, SyntheticKnob
    from simulators.base import EngineSampler

__all__ = ["ENGINES", "ENTRY_POINT_GROUP", "REFERENCE_ENGINE", "REGISTRY", "EnvKnob", "SkippedPlugin", "companion_env_names",
           "engine_names", "env_knobs", "get_profile", "get_sampler", "load_hook", "profile_or_usage", "samplers",
           "skipped_plugins", "synthetic_settings"]

#: The ``--engine`` name of the embedded offline reference engine (:mod:`golden_al.reference`): it measures
#: in-process, so it has no serving profile and is not in :data:`REGISTRY`.
REFERENCE_ENGINE = "reference"

#: The entry-point group engines register under.
ENTRY_POINT_GROUP = "golden_al.engines"

#: The package whose folders are the built-in engines (``golden_al/engines/<name>/``).
BUILTIN_PACKAGE = "golden_al.engines"


def _builtin() -> dict[str, str]:
    """The built-in engines: each folder of ``golden_al/engines/`` with an ``__init__.py`` is one, named by the
    folder, its profile the folder's ``PROFILE``, in the folders' name order. The folders are the one list of
    built-ins (no table here, in ``pyproject.toml`` or elsewhere repeats them), so an engine folder added on a
    branch is found from its source tree without reinstalling; entry points add the plugins."""
    from pathlib import Path

    home = Path(__file__).resolve().parents[1] / BUILTIN_PACKAGE.rpartition(".")[2]
    return {p.name: f"{BUILTIN_PACKAGE}.{p.name}:PROFILE" for p in sorted(home.iterdir())
            if p.name.isidentifier() and not p.name.startswith("_") and (p / "__init__.py").is_file()}


#: A plugin engine that was not loaded, and why (each problem names the profile field).
SkippedPlugin = Skipped


def _validate(name: str, profile: Any, accepted: Mapping[str, Any]) -> list[str]:
    """The conformance kit (:mod:`.conformance`) on a plugin's profile, against the engines already accepted (a
    knob spelling may belong to one engine only)."""
    from golden_al.plugin.conformance import profile_problems

    return profile_problems(profile, entry_name=name, others=accepted)


def _explain(exc: BaseException) -> str | None:
    """A plugin profile written for the flat shape (before capability groups): which group the field moved to."""
    import re

    from golden_al.plugin.profile import group_of

    found = re.search(r"EngineProfile\.__init__\(\) got an unexpected keyword argument '(\w+)'", str(exc))
    home = group_of(found.group(1)) if found else None
    if found is None or home is None:
        return None
    return f"{found.group(1)} now sits in its capability group: {home}; see docs/adding-an-engine.md"


#: The engine registry (:class:`simulators.registry.Registry`): built-ins first (:func:`_builtin`), then the plugins of the ``golden_al.engines`` entry points sorted by name. A plugin
#: may not take a built-in engine's name, nor the reference engine's; plugins are validated by the conformance kit
#: when first needed, and one that fails is skipped, named (:func:`skipped_plugins`).
ENGINES: Registry[str, EngineProfile] = Registry(
    "plugin engine", builtin=_builtin(), reserved={REFERENCE_ENGINE: "golden-al's embedded engine"},
    group=ENTRY_POINT_GROUP, validate=_validate, explain=_explain, default_attribute="PROFILE")
#: ``--engine`` name -> ``module:attribute`` of its ``PROFILE`` (:attr:`ENGINES.entries <Registry.entries>`).
REGISTRY: dict[str, Any] = ENGINES.entries


def skipped_plugins() -> tuple[SkippedPlugin, ...]:
    """Plugin engines that were found but not loaded (the CLI warns about each)."""
    return ENGINES.skipped()


def engine_names() -> tuple[str, ...]:
    """Every serving engine: the built-ins and the plugins that conform, in registration order."""
    return ENGINES.names()


def get_profile(name: str) -> EngineProfile:
    """The profile of engine ``name``.

    Raises:
        KeyError: ``name`` is not registered, or is a plugin that was skipped (the message says why; the
            CLI turns it into a usage error).
    """
    profile = ENGINES.get(name)
    if profile.name != name:
        raise KeyError(f"engine {name!r} is registered at {ENGINES.where(name)}, whose profile is named "
                       f"{profile.name!r}")
    return profile


def load_hook(hook: Any) -> Any:
    """The object a profile hook stands for: a :func:`~golden_al.plugin.profile.lazy` hook imported now, any other
    hook (a callable, a source object) as it is.

    Raises:
        TypeError: the hook is a string (profiles name hooks as callables or ``lazy("module:function")``).
        ImportError / AttributeError: a lazy hook's module or name does not exist.
    """
    from golden_al.plugin.profile import Lazy

    if isinstance(hook, Lazy):
        return hook.resolve()
    if isinstance(hook, str):
        raise TypeError(f"a profile hook is a callable or lazy('module:function'), got the string {hook!r}")
    return hook


def samplers() -> dict[str, tuple[str, ...]]:
    """Each engine's sampler methods (:attr:`~golden_al.plugin.profile.SimulateSupport.samplers`), in registration
    order: ``{"sglang": ("match-expected", "multinomial"), ...}``; an engine without samplers is left out."""
    out: dict[str, tuple[str, ...]] = {}
    for name in engine_names():
        methods = tuple(sorted(get_profile(name).simulate.samplers))
        if methods:
            out[name] = methods
    return out


def get_sampler(engine: str, method: str, **options: Any) -> EngineSampler:
    """Engine ``engine``'s sampler ``method`` (the class its profile names, imported now), built with ``options``.

    Raises:
        UnknownSamplerError: naming what was asked, the closest match and what exists.
    """
    import difflib

    from simulators.base import UnknownSamplerError

    def did_you_mean(word: str, options: list[str]) -> str:
        close = difflib.get_close_matches(word.lower(), options, n=1, cutoff=0.5)
        return f"; did you mean {close[0]!r}?" if close else ""

    table = samplers()
    if engine not in table:
        raise UnknownSamplerError(f"unknown engine {engine!r}{did_you_mean(engine, list(table))} "
                                  f"(allowed: {', '.join(table)})")
    if method not in table[engine]:
        raise UnknownSamplerError(f"engine {engine!r} has no method {method!r}{did_you_mean(method, list(table[engine]))} "
                                  f"(allowed for {engine}: {', '.join(table[engine])})")
    sampler: EngineSampler = load_hook(get_profile(engine).simulate.samplers[method])(**options)
    return sampler


def profile_or_usage(name: str, *, among: tuple[str, ...] | None = None) -> EngineProfile:
    """:func:`get_profile`, raising :class:`~golden_al.errors.UsageError` with a "did you mean".

    ``among`` restricts the engines accepted (e.g. those with synthetic settings).
    """
    from golden_al.errors import UsageError

    names = among if among is not None else engine_names()
    skipped = ENGINES.skipped_entry(name)  # never a built-in: a plugin cannot take its name
    if skipped is not None:
        raise UsageError(skipped.sentence(), hint=f"fix or reinstall {skipped.package or 'the plugin package'}; "
                         "golden_al.plugin.conformance.profile_problems lists the same problems")
    if name not in names:
        import difflib

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
    settings: dict[str, Any] = profile_or_usage(engine).check.synthetic_settings(al, k, **options)
    return settings


@dataclass(frozen=True, eq=False, repr=False)
class EnvKnob(Record):
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
    command line (:attr:`~golden_al.plugin.profile.CheckSupport.command_line`) is left to that reader,
    which sees the launch line that fixes k."""
    out: dict[str, EnvKnob] = {}
    for name in engine_names():
        profile = get_profile(name)
        if profile.check.command_line is not None:
            continue
        for knob in profile.check.synthetic_knobs:
            if knob.kind == "env" and knob.role == "value":
                for spelling in (knob.name, *knob.aliases):
                    out[spelling] = EnvKnob(name, knob, spelling)
    return out


@lru_cache(maxsize=1)
def companion_env_names() -> frozenset[str]:
    """Every spelling of every registered engine's companion environment variables (a method, a mode
    that an environment knob needs beside it)."""
    return frozenset(spelling for name in engine_names() for knob in get_profile(name).check.synthetic_knobs
                     if knob.kind == "env" and knob.role == "companion" for spelling in (knob.name, *knob.aliases))
