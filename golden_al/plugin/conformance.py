"""The conformance kit: what every engine profile must satisfy, built-in or plugin.

The registry (:mod:`golden_al.engines`) runs :func:`profile_problems` on every plugin when it loads
them: a plugin with a problem is skipped with a warning naming it and the field, and only a command
that needs it refuses (exit 2). golden-al's own tests run the same kit on every built-in engine, and
a plugin's CI runs it on its own profile::

    from golden_al.plugin.conformance import profile_problems
    from my_engine import PROFILE
    assert profile_problems(PROFILE, entry_name="myengine") == []

Each problem is one line: ``field: what is wrong (value seen, what is expected)``.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, get_args, get_type_hints

from golden_al.plugin.profile import CAPABILITIES, GROUPS, EngineProfile, Lazy, SyntheticKnob

__all__ = ["RESERVED_NAMES", "hook_refs", "knob_spellings", "profile_problems"]

#: ``--engine`` names no plugin may take: the embedded reference engine's.
RESERVED_NAMES: tuple[str, ...] = ("reference",)
_NAME_RE = re.compile(r"^[a-z][a-z0-9_-]*$")
#: profile fields (``group.field``) that hold a hook (a callable, or ``lazy("module:function")`` imported on first use)
_HOOK_FIELDS = ("server.server_probe", "run_logs.run_evidence", "server.counter_reader", "server.reference_flavor",
                "check.script_pin", "server.response_records")
#: profile fields (``group.field``) that must be callables where set
_CALLABLE_FIELDS = ("check.synthetic_settings", "launch.spec_flags", "simulate.simulator_settings",
                    "simulate.simulate_report", "check.shell_value", "curve_method_of", "launch.server_args",
                    "check.shell_env", "server.per_request_probe", "server.response_steps_by_draft_len",
                    "launch.launch_method", "launch.launch_draft_len", "server.draft_len_from_server_info",
                    "check.review_pin", "check.pin_tolerance", "check.settings_draft_len",
                    "check.script_speculation", "check.curve_selectors", "check.env_draft_len",
                    "check.forced_in_args", "check.forced_in_config", "check.forced_in_log_line")

def _field(profile: EngineProfile, path: str) -> Any:
    """The value of ``group.field`` (or a top-level field) of ``profile``; None where the group is left out."""
    holder: Any = profile
    for part in path.split("."):
        holder = getattr(holder, part, None)
        if holder is None:
            return None
    return holder


_SELECTOR_RE = re.compile(r"^[a-z][a-z0-9_]*$")


def _literals(cls: type, *fields: str) -> dict[str, tuple[str, ...]]:
    """The values each ``Literal[...]`` field of a profile dataclass allows (read from its annotations)."""
    hints = get_type_hints(cls)
    return {f: tuple(get_args(hints[f])) for f in fields}


_KNOB_LITERALS = _literals(SyntheticKnob, "kind", "unit", "role")


def knob_spellings(profile: EngineProfile) -> dict[str, str]:
    """Every spelling of every synthetic knob the profile declares -> the knob's kind."""
    return {spelling: knob.kind for knob in profile.check.synthetic_knobs for spelling in knob.spellings()}


def hook_refs(profile: EngineProfile) -> dict[str, Any]:
    """``field -> hook`` of every hook the profile names (a callable, or ``lazy("module:function")``)."""
    refs = {f: _field(profile, f) for f in _HOOK_FIELDS if _field(profile, f)}
    refs.update({f"server.source_impls[{name!r}]": ref for name, ref in profile.server.source_impls.items()})
    refs.update({f"run_logs.importers[{name!r}]": ref for name, ref in profile.run_logs.importers.items()})
    refs.update({f"simulate.samplers[{name!r}]": ref for name, ref in profile.simulate.samplers.items()})
    if profile.recipe is not None and profile.recipe.config_writer is not None:
        refs["recipe.config_writer"] = profile.recipe.config_writer
    if profile.recipe is not None and profile.recipe.config_pin is not None:
        refs["recipe.config_pin"] = profile.recipe.config_pin
    if profile.run_logs.log_reader is not None:
        refs["run_logs.log_reader.parse"] = profile.run_logs.log_reader.parse
        if profile.run_logs.log_reader.server_args is not None:
            refs["run_logs.log_reader.server_args"] = profile.run_logs.log_reader.server_args
    if profile.launch.build is not None:
        refs.update({"launch.build.build": profile.launch.build.build, "launch.build.check": profile.launch.build.check})
    return refs


def _top_level_names(path: str) -> set[str] | None:
    """Names a Python source file defines at its top level (functions, classes, assignments, imports)."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"), filename=path)
    except (OSError, SyntaxError, ValueError):
        return None
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _resolve(hook: Any) -> str | None:
    """Why a hook does not resolve, or None: a string (hooks are callables or ``lazy("module:function")``), or a lazy
    hook whose module or name does not exist. A module not yet imported is read, not imported (a hook module may
    import the server layer, which loads the registry that is validating it)."""
    if isinstance(hook, str):
        return f"{hook!r} is a string: a hook is a callable, or lazy({hook!r}) (golden_al.plugin.profile.lazy)"
    if not isinstance(hook, Lazy):
        return None
    ref = hook.ref
    module, _, attr = ref.partition(":")
    if not module or not attr:
        return f"{ref!r} is not 'module:function'"
    if module in sys.modules:
        return None if hasattr(sys.modules[module], attr) else f"{ref!r}: {module} has no {attr}"
    try:
        spec = importlib.util.find_spec(module)
    except Exception as exc:  # a plugin's package can fail to import any way; the kit reports it, never raises
        return f"{ref!r}: finding {module} fails ({type(exc).__name__}: {exc})"
    if spec is None:
        return f"{ref!r}: there is no module {module}"
    names = _top_level_names(spec.origin) if spec.origin and spec.origin.endswith(".py") else None
    if names is None:
        return None  # compiled or namespace: the first use imports it
    if attr not in names and "__getattr__" not in names:
        return f"{ref!r}: {module} defines no {attr}"
    return None


def _knob_problems(profile: EngineProfile) -> Iterable[str]:
    for i, knob in enumerate(profile.check.synthetic_knobs):
        where = f"check.synthetic_knobs[{i}] ({knob.name})"
        for name, allowed in _KNOB_LITERALS.items():
            value = getattr(knob, name)
            if value not in allowed:
                yield f"{where}.{name}: {value!r} is not one of {', '.join(allowed)}"
        if knob.unit == "choice" and knob.role == "value" and not knob.choices:
            yield f"{where}.choices: a 'choice' knob lists its choices"


def _shared_spellings(profile: EngineProfile, others: Mapping[str, EngineProfile]) -> Iterable[str]:
    mine = knob_spellings(profile)
    for other_name, other in others.items():
        if other_name == profile.name:
            continue
        for spelling in sorted(set(mine) & set(knob_spellings(other))):
            yield (f"check.synthetic_knobs: {spelling!r} is already a knob of engine {other_name!r}; two engines cannot "
                   "share a spelling (check could not tell whose pin it is)")


def profile_problems(profile: Any, *, entry_name: str, others: Mapping[str, EngineProfile] | None = None,
                     builtin: bool = False, resolve_hooks: bool = True) -> list[str]:
    """Every way ``profile`` (registered as ``entry_name``) breaks the engine contract; [] when it conforms.

    ``others``: the engines already loaded (names and knob spellings may not repeat theirs). ``builtin``:
    golden-al's own engines may use what a plugin cannot yet (vLLM's config writer). ``resolve_hooks``: check that
    every hook resolves.
    """
    if not isinstance(profile, EngineProfile):
        return [f"PROFILE: a {type(profile).__name__}, not a golden_al.plugin.profile.EngineProfile"]
    out: list[str] = []
    if profile.name != entry_name:
        out.append(f"name: {profile.name!r}, but the entry point registers it as {entry_name!r}")
    if not _NAME_RE.match(profile.name):
        out.append(f"name: {profile.name!r} is not a lower-case engine name ([a-z][a-z0-9_-]*)")
    if not builtin and profile.name in RESERVED_NAMES:
        out.append(f"name: {profile.name!r} is reserved (golden-al's embedded engine)")
    if others and not builtin and profile.name in others:
        out.append(f"name: {profile.name!r} is already an engine (a plugin cannot replace it)")
    wrong = [f"{group}: a {type(getattr(profile, group)).__name__}, not a {cls.__name__}"
             for group, cls in GROUPS.items()
             if not isinstance(getattr(profile, group), cls) and not (group == "recipe" and profile.recipe is None)]
    if wrong:  # the rest of the kit reads inside the groups
        return out + wrong
    out.extend(_knob_problems(profile))
    if others:
        out.extend(_shared_spellings(profile, others))
    for name in profile.server.al_sources:
        if name not in profile.server.source_impls:
            out.append(f"server.al_sources: {name!r} has no implementation in server.source_impls")
    for name in profile.server.source_impls:
        if name not in profile.server.al_sources:
            out.append(f"server.source_impls: {name!r} is not one of server.al_sources")
    for f in _CALLABLE_FIELDS:
        value = _field(profile, f)
        if value is not None and not callable(value):
            out.append(f"{f}: a {type(value).__name__}, not a callable")
    for cap in CAPABILITIES:  # a capability group is filled as a whole, or not at all
        filled = cap.filled(profile)
        if filled and len(filled) < len(cap.fields):
            missing = [f for f in cap.fields if f not in filled]
            out.append(f"{cap.group}: sets {', '.join(filled)} but not {', '.join(missing)} (capability "
                       f"{cap.name!r}: a group is filled as a whole, or left out)")
    names = {m.name for m in profile.server.metrics}
    if profile.server.counter_marker and names and profile.server.counter_marker not in names:
        out.append(f"server.counter_marker: {profile.server.counter_marker!r} is not one of the profile's metrics "
                   f"({', '.join(sorted(names))})")
    for key in profile.check.selector_keys:
        if not _SELECTOR_RE.match(str(key)):
            out.append(f"check.selector_keys: {key!r} is not a curve selector name ([a-z][a-z0-9_]*)")
    if profile.check.curve_selectors is not None and not profile.check.selector_keys:
        out.append("check.selector_keys: empty, but check.curve_selectors is set (declare each selector it may return)")
    if profile.recipe is not None and profile.recipe.inject_into == "config" and profile.recipe.config_writer is None:
        out.append("recipe.inject_into: 'config' names no recipe.config_writer (the hook that writes the synthetic "
                   "settings into the engine's speculative config); inject into 'env', or name one")
    if resolve_hooks:
        for f, ref in hook_refs(profile).items():
            why = _resolve(ref)
            if why is not None:
                out.append(f"{f}: {why}")
    sampler = profile.simulate.default_sampler
    if sampler is not None and sampler not in profile.simulate.samplers:
        have = ", ".join(profile.simulate.samplers) or "none"
        out.append(f"simulate.default_sampler: {sampler!r} is not one of simulate.samplers ({have})")
    return out
