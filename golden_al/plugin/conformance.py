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
import dataclasses
import functools
import importlib
import importlib.util
import inspect
import re
import sys
from collections import abc
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

from golden_al.plugin import hooks
from golden_al.plugin.hooks import HookSpec
from golden_al.plugin.profile import CAPABILITIES, GROUPS, EngineProfile, Lazy, SyntheticKnob

__all__ = ["RESERVED_NAMES", "hook_fields", "hook_refs", "knob_spellings", "profile_problems"]

#: ``--engine`` names no plugin may take: the embedded reference engine's.
RESERVED_NAMES: tuple[str, ...] = ("reference",)
_NAME_RE = re.compile(r"^[a-z][a-z0-9_-]*$")
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
    hints = get_type_hints(cls, localns={"hooks": hooks})
    return {f: tuple(get_args(hints[f])) for f in fields}


_KNOB_LITERALS = _literals(SyntheticKnob, "kind", "unit", "role")


def knob_spellings(profile: EngineProfile) -> dict[str, str]:
    """Every spelling of every synthetic knob the profile declares -> the knob's kind."""
    return {spelling: knob.kind for knob in profile.check.synthetic_knobs for spelling in knob.spellings()}


def _hook_spec(annotation: Any) -> tuple[type | None, bool]:
    """The hook protocol a field's type names (:class:`~golden_al.plugin.hooks.HookSpec`), and whether the field is a
    mapping of such hooks; ``(None, False)`` for any other type."""
    if get_origin(annotation) in (Union, UnionType):
        found = [_hook_spec(a) for a in get_args(annotation) if a is not type(None)]
        return found[0] if len(found) == 1 else (None, False)
    if get_origin(annotation) is abc.Mapping:
        return _hook_spec(get_args(annotation)[1])[0], True
    return (annotation, False) if HookSpec in getattr(annotation, "__mro__", ()) else (None, False)


def _nested(annotation: Any) -> type | None:
    """The profile dataclass a field holds (a capability group, a log reader, a build), or None."""
    if get_origin(annotation) in (Union, UnionType):
        found = [a for a in get_args(annotation) if a is not type(None)]
        annotation = found[0] if len(found) == 1 else None
    is_group = isinstance(annotation, type) and dataclasses.is_dataclass(annotation)
    return annotation if is_group and annotation.__module__ == EngineProfile.__module__ else None


@functools.cache
def hook_fields(cls: type = EngineProfile, prefix: str = "") -> tuple[tuple[str, type, bool], ...]:
    """``(path, protocol, is a mapping)`` of every field of a profile typed with a hook protocol (the groups and the
    dataclasses inside them walked): the one list of hooks, read from :mod:`golden_al.plugin.hooks`' types."""
    out: list[tuple[str, type, bool]] = []
    for name, annotation in get_type_hints(cls, localns={"hooks": hooks}).items():
        spec, many = _hook_spec(annotation)
        if spec is not None:
            out.append((prefix + name, spec, many))
        elif (inner := _nested(annotation)) is not None:
            out.extend(hook_fields(inner, f"{prefix}{name}."))
    return tuple(out)


def hook_refs(profile: EngineProfile) -> dict[str, tuple[Any, type]]:
    """``field -> (hook, protocol)`` of every hook the profile sets (a callable, or ``lazy("module:function")``)."""
    refs: dict[str, tuple[Any, type]] = {}
    for path, spec, many in hook_fields():
        value = _field(profile, path)
        if many:
            refs.update({f"{path}[{key!r}]": (hook, spec) for key, hook in (value or {}).items()})
        elif value is not None:
            refs[path] = (value, spec)
    return refs


#: ``(name, kind, has a default)`` of a callable's parameters, ``self`` left out.
Params = list[tuple[str, Any, bool]]


def _params_of(obj: Any) -> Params | None:
    """The parameters of a hook object (a class: its constructor's); None where they cannot be read."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [(p.name, p.kind, p.default is not p.empty) for p in sig.parameters.values()]


def _params_in_node(node: ast.AST | None) -> Params | None:
    """The parameters a function's source declares (a class: its own ``__init__``'s, ``self`` left out); None where
    the source does not say (an assignment, an inherited constructor)."""
    drop = 0
    if isinstance(node, ast.ClassDef):
        node, drop = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None), 1
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    a = node.args
    positional = [*a.posonlyargs, *a.args][drop:]
    first_default = len(positional) - len(a.defaults)
    out: Params = [(p.arg, inspect.Parameter.POSITIONAL_OR_KEYWORD, i >= first_default)
                   for i, p in enumerate(positional)]
    out += [(p.arg, inspect.Parameter.VAR_POSITIONAL, True) for p in [a.vararg] if p is not None]
    out += [(p.arg, inspect.Parameter.KEYWORD_ONLY, d is not None) for p, d in zip(a.kwonlyargs, a.kw_defaults,
                                                                                  strict=True)]
    out += [(p.arg, inspect.Parameter.VAR_KEYWORD, True) for p in [a.kwarg] if p is not None]
    return out


def _signature_problems(params: Params, spec: type) -> list[str]:
    """How a hook's parameters break its protocol's ``__call__``: a positional argument it cannot take, a keyword
    the protocol passes that it does not accept, or a parameter it requires that golden-al never passes."""
    call = spec.__dict__.get("__call__")
    if not inspect.isfunction(call):  # declared as a Callable attribute: engine-specific options, not checked
        return []
    kinds = inspect.Parameter
    wanted = (_params_of(call) or [])[1:]
    spec_positional = [n for n, k, _ in wanted if k in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)]
    spec_keywords = [n for n, k, _ in wanted if k == kinds.KEYWORD_ONLY]
    positional = [n for n, k, _ in params if k in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)]
    accepts = {n for n, k, _ in params if k in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY)}
    has = {k for _, k, _ in params}
    out = []
    if len(positional) < len(spec_positional) and kinds.VAR_POSITIONAL not in has:
        out.append(f"takes {len(positional)} positional argument(s), the protocol passes {len(spec_positional)} "
                   f"({', '.join(spec_positional)})")
    out += [f"does not accept the keyword {n!r}" for n in spec_keywords
            if n not in accepts and kinds.VAR_KEYWORD not in has]
    passed = set(positional[:len(spec_positional)]) | set(spec_keywords)
    out += [f"requires {n!r}, which the protocol never passes" for n, k, default in params
            if not default and k in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY, kinds.POSITIONAL_ONLY)
            and n not in passed]
    return [f"{w} ({spec.__name__}: golden_al.plugin.hooks)" for w in out]


def _lazy_hook(ref: str) -> tuple[str | None, Params | None]:
    """Why a lazy hook does not resolve (no such module, or no such name in it), else None, with the parameters of
    what it names where they can be read. A module not yet imported is read from its source, not imported (a hook
    module may import the server layer, which loads the registry that is validating it)."""
    module, _, attr = ref.partition(":")
    if not module or not attr:
        return f"{ref!r} is not 'module:function'", None
    if module in sys.modules:
        if not hasattr(sys.modules[module], attr):
            return f"{ref!r}: {module} has no {attr}", None
        return None, _params_of(getattr(sys.modules[module], attr))
    try:
        spec = importlib.util.find_spec(module)
    except Exception as exc:  # a plugin's package can fail to import any way; the kit reports it, never raises
        return f"{ref!r}: finding {module} fails ({type(exc).__name__}: {exc})", None
    if spec is None:
        return f"{ref!r}: there is no module {module}", None
    try:
        tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))  # type: ignore[arg-type]
    except (OSError, SyntaxError, ValueError, TypeError):
        return None, None  # compiled or namespace: the first use imports it
    names: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            names.update((n.id, node) for n in (node.targets if isinstance(node, ast.Assign) else [node.target])
                         if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(((a.asname or a.name).split(".")[0], node) for a in node.names)
    if attr not in names and "__getattr__" not in names:
        return f"{ref!r}: {module} defines no {attr}", None
    return None, _params_in_node(names.get(attr))


def _hook_problems(profile: EngineProfile, resolve: bool) -> Iterable[str]:
    """Each hook against its protocol (:mod:`golden_al.plugin.hooks`): a callable or a lazy import that resolves
    (``resolve``), whose parameters fit the protocol's."""
    for f, (hook, spec) in hook_refs(profile).items():
        why, params = None, None
        if isinstance(hook, str):
            why = f"{hook!r} is a string: a hook is a callable, or lazy({hook!r}) (golden_al.plugin.profile.lazy)"
        elif isinstance(hook, Lazy):
            why, params = _lazy_hook(hook.ref) if resolve else (None, None)
        elif callable(hook):
            params = _params_of(hook)
        elif "__call__" in vars(spec) or "__call__" in vars(spec).get("__annotations__", {}):
            why = f"a {type(hook).__name__}, not a callable"
        if why is not None:
            yield f"{f}: {why}"
        elif params is not None:
            yield from (f"{f}: {problem}" for problem in _signature_problems(params, spec))


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
    golden-al's own engines (their names are reserved, not taken). ``resolve_hooks``: check that
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
    if profile.recipe is not None and profile.recipe.inject_into == "config" and not profile.recipe.spec_keys:
        out.append("recipe.inject_into: 'config' names no recipe.spec_keys (the key of the speculative config select "
                   "and inject write the synthetic settings into); inject into 'env', or name it")
    out.extend(_hook_problems(profile, resolve_hooks))
    sampler = profile.simulate.default_sampler
    if sampler is not None and sampler not in profile.simulate.samplers:
        have = ", ".join(profile.simulate.samplers) or "none"
        out.append(f"simulate.default_sampler: {sampler!r} is not one of simulate.samplers ({have})")
    return out
