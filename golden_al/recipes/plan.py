"""The plan of a recipe: the golden AL each variant srtctl runs must launch with, as srtctl overrides.

Every variant (after the caller's ``--set``/``--unset``) gets the generating role's golden point by the derivation
``check`` judges pins with (:func:`golden_al.recipes.derive.derive`), written in the form each role's engine
declares (:attr:`~golden_al.plugin.profile.RecipeFormat.inject_into`) into the roles that simulate
(:attr:`~golden_al.plugin.profile.RecipeFormat.simulated_roles`); every synthetic setting elsewhere (another role,
the recipe-wide ``environment:``) is unset, and all of them in a run that does not simulate (eval-only, not agentic,
``SPEC_DECODING=none``, no role speculating), a rejection-method switch set back to the golden curve's method. Every
variant is planned before anything is returned; one refusal raises :class:`SelectionError` naming the variant, for
the reason ``check`` gives. ``select``, ``inject`` and ``check --policy no-pins`` all plan here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from golden_al.errors import GoldenALError, UsageError
from golden_al.plugin import registry
from golden_al.plugin.profile import EngineProfile, Record
from golden_al.plugin.values import format_value
from golden_al.recipes.derive import (
    Derivation,
    Identity,
    RecipeFacts,
    derive,
    recipe_facts,
    review_written,
    role_settings,
)
from golden_al.recipes.srt_slurm import (
    EnvBlock,
    RecipeView,
    RoleConfig,
    engine_named,
    recipe_formats,
    view_of,
)
from golden_al.recipes.srtctl import Override, Variant, apply_overrides, expand_variants

__all__ = ["SelectionError", "SelectionPlan", "VariantPlan", "plan_document"]


class SelectionError(UsageError):
    """A recipe (or one of its variants) for which no golden AL can be selected: exit 2."""


@dataclass(frozen=True, eq=False, repr=False)
class VariantPlan(Record):
    """What one config srtctl runs must be launched with."""

    selector: str | None  #: None (a flat recipe), ``base``, ``override_x`` or ``zip_override_y[2]``
    engine: str | None
    method: str | None  #: the golden curve's method
    k: int | None
    thinking: str | None
    al: float | None
    curve: str | None  #: the curve's name in the store
    overrides: tuple[Override, ...]
    mode: str  #: ``throughput``, ``eval-only``, or ``off`` (nothing to set, ``reason`` says why)
    role: str | None = None  #: the generating role whose k defines the AL
    model: str | None = None
    reason: str = ""  #: how each input was decided
    notes: tuple[str, ...] = ()
    derivation: Derivation | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract of ``select --format json`` (contract keys first)."""
        from golden_al.prompts.thinking import mode_key

        inputs = [i.to_dict() for i in self.derivation.inputs] if self.derivation is not None else []
        return {"selector": self.selector, "engine": self.engine, "method": self.method, "k": self.k,
                "thinking": None if self.thinking is None else mode_key(self.thinking), "al": self.al,
                "curve": self.curve, "overrides": [o.to_dict() for o in self.overrides], "mode": self.mode,
                "role": self.role, "model": self.model, "reason": self.reason, "notes": list(self.notes),
                "inputs": inputs}


@dataclass(frozen=True, eq=False, repr=False)
class SelectionPlan(Record):
    """Every variant of one recipe, planned (:func:`select_recipe`)."""

    recipe: str
    variants: tuple[VariantPlan, ...]
    provenance: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"recipe": self.recipe, "variants": [v.to_dict() for v in self.variants],
                "provenance": dict(self.provenance)}

    def common_overrides(self) -> tuple[Override, ...]:
        """The overrides when every variant needs the same ones (one srtctl command line for all).

        Raises:
            SelectionError: variants that need different overrides (name one with ``RECIPE:SELECTOR``).
        """
        first = self.variants[0].overrides if self.variants else ()
        differ = [v for v in self.variants if v.overrides != first]
        if differ:
            listing = ", ".join(f"{v.selector}: k={v.k} al={'-' if v.al is None else format_value(v.al)}"
                                for v in self.variants)
            raise SelectionError(f"{self.recipe}: its variants need different overrides ({listing}); one srtctl "
                                 "command line cannot carry them",
                                 hint=f"select one variant at a time: {self.recipe}:{differ[0].selector}")
        return first


# ------------------------------------------------------------------------ the engines' overrides


def _env_spellings(profiles: Sequence[EngineProfile]) -> frozenset[str]:
    """Every environment spelling of the profiles' synthetic knobs (values and companions, legacy names too)."""
    return frozenset(s for p in profiles for k in p.check.synthetic_knobs if k.kind == "env" for s in k.spellings())


def _all_profiles() -> list[EngineProfile]:
    return [registry.get_profile(n) for n in registry.engine_names()]


def _env_block(view: RecipeView, role: RoleConfig) -> tuple[tuple[str, ...], EnvBlock | None]:
    """Where a role's environment lives (``roles.<r>.env`` or ``backend.<role>_environment``), and the block."""
    block = next((b for b in view.envs if b.role == role.role and not b.wide), None)
    if block is not None:
        return block.loc, block
    if role.loc[-1] == "args":  # a roles recipe: roles.<r>.args -> roles.<r>.env
        return (*role.loc[:-1], "env"), None
    return (*role.loc[:-3], "backend", f"{role.role}_environment"), None


def _config_value(original: Any, merged: Mapping[str, Any]) -> Any:
    """The speculative config written back in the form the recipe holds it (a JSON string or a mapping)."""
    return json.dumps(dict(merged), separators=(",", ":")) if isinstance(original, str) else dict(merged)


def _synthetic(roles: Sequence[RoleConfig], blocks: Sequence[EnvBlock], real: str | None = None) -> list[tuple[
        tuple[str, ...], Any, str]]:
    """Every synthetic-acceptance setting of ``roles`` and environment ``blocks``, as (path, the value that turns it
    off (None: unset it), where it is shown): any engine's environment variable; the role engine's server flag; its
    speculative config's synthetic keys (a switch set back to ``real``, else its engine's real value; values
    removed)."""
    spellings = _env_spellings(_all_profiles())
    out = [((*b.loc, str(k)), None, ".".join((*b.loc, str(k)))) for b in blocks for k in b.env or {}
           if str(k) in spellings]
    for rc in roles:
        knobs = registry.get_profile(rc.engine).check.synthetic_knobs if rc.engine else ()
        out += [((*rc.loc, k.name.lstrip("-")), None, ".".join((*rc.loc, k.name.lstrip("-")))) for k in knobs
                if k.kind == "flag" and k.name.lstrip("-") in rc.args]
        spec = rc.spec
        if spec is None or spec.key is None:
            continue
        settings, found = dict(spec.settings), []
        for knob in knobs:
            if knob.kind != "config-key" or knob.name not in settings:
                continue
            if knob.switch_value is None:
                del settings[knob.name]
                found.append(knob.name)
            elif str(settings[knob.name]) == knob.switch_value:
                settings[knob.name] = real or knob.real_value
                found.append(knob.name)
        if found:
            out.append(((*rc.loc, spec.key), _config_value(rc.args.get(spec.key), settings),
                        ", ".join(".".join((*rc.loc, spec.key, k)) for k in found)))
    return out


def _blocks(view: RecipeView, roles: Sequence[RoleConfig]) -> list[EnvBlock]:
    """The environment blocks of ``roles``."""
    names = {rc.role for rc in roles}
    return [b for b in view.envs if b.role in names and not b.wide]


def _restore(found: Sequence[tuple[tuple[str, ...], Any, str]]) -> list[Override]:
    """Overrides that take the synthetic settings ``found`` (:func:`_synthetic`) out."""
    out: list[Override] = []
    for p, v, _ in found:
        o = Override("unset", p) if v is None else Override("set", p, v)
        out += [] if o in out else [o]
    return out


def _curve_method(store: Any, golden: Derivation | None) -> str | None:
    """The real rejection method a switch goes back to: the one the golden point's curve was measured with (its
    ``draft.rejection_sample_method``: the AL a real run shows depends on it), None where the curve names none (the
    engine's default measured it) or there is no golden point."""
    point = golden.point if golden is not None else None
    curve = next((sc.curve for sc in store.curves if sc.name == point.curve), None) if point is not None else None
    return curve.draft.rejection_sample_method if curve is not None else None


def _golden_of(view: RecipeView, facts: RecipeFacts, store: Any, identity: Identity) -> Derivation | None:
    """The golden point of the generating role, where it can be derived (a run that does not simulate needs it only
    for the rejection method its real acceptance is restored to)."""
    target = view.target
    if target is None or target.engine is None or recipe_formats().get(target.engine) is None:
        return None
    settings = role_settings(facts, target.engine, target.role)
    return None if settings.problems else derive(settings, store, identity=identity, what="recipe")


def _simulates(rc: RoleConfig, engine: str) -> bool:
    """Whether role ``rc`` simulates the golden AL of an ``engine`` recipe: it speculates, ``engine`` runs it, and the
    engine's recipe format lets that role simulate (:attr:`RecipeFormat.simulated_roles`, empty: every role)."""
    fmt = recipe_formats().get(engine)
    return (fmt is not None and rc.engine == engine and rc.spec is not None and rc.spec.speculates
            and (not fmt.simulated_roles or rc.role in fmt.simulated_roles))


def _write(view: RecipeView, rc: RoleConfig, facts: RecipeFacts, golden: Derivation, *,
           review: bool = True) -> tuple[list[Override], str | None]:
    """(overrides, problem): the synthetic settings of the golden point in role ``rc``, in its engine's form; an engine
    whose server validates its own value (a config, a flag) gets the golden AL at the role's own k. ``review``: refuse
    a value the engine's review flags (:func:`~golden_al.recipes.derive.review_written`)."""
    assert rc.engine is not None
    profile = registry.get_profile(rc.engine)
    fmt = profile.recipe
    assert fmt is not None
    assert golden.k is not None
    assert golden.al is not None
    k, al = golden.k, golden.al
    rs = role_settings(facts, rc.engine, rc.role, own=fmt.inject_into != "env")  # what check judges the pin by
    try:
        if fmt.inject_into != "env" and rs.draft.k is not None and rs.draft.k != k:
            k, al = rs.draft.k, golden.al_at(rs.draft.k)
        settings = registry.synthetic_settings(rc.engine, al, k)
    except GoldenALError as exc:
        return [], f"the {rc.role} role drafts k={k}: {exc.message}"
    env_loc, block = _env_block(view, rc)
    problems = review_written(rs, settings, k, block.env if block is not None else None) if review else []
    if problems:
        return [], "; ".join(problems)
    if fmt.inject_into == "config":
        key = (rc.spec.key if rc.spec else None) or fmt.spec_keys[0]
        stale = {k.name for k in profile.check.synthetic_knobs if k.kind == "config-key"} - set(settings)
        merged = {k: v for k, v in (rc.spec.settings if rc.spec else {}).items() if k not in stale} | settings
        return [Override("set", (*rc.loc, key), _config_value(rc.args.get(key), merged))], None
    if fmt.inject_into == "args":
        return [Override("set", (*rc.loc, name.lstrip("-")), float(value)) for name, value in settings.items()], None
    return [Override("set", (*env_loc, name), value) for name, value in settings.items()], None


# ---------------------------------------------------------------------------------- planning


def _caller_conflicts(caller: Sequence[Override], ours: Sequence[Override]) -> list[str]:
    """Caller overrides that would erase or replace an acceptance setting we set (srtctl applies every
    ``--unset`` after every ``--set``, so a caller unset of a parent path erases ours)."""
    problems = []
    for c in caller:
        hit = [o.dotted for o in ours if o.op == "set" and (c.path == o.path[: len(c.path)]
                                                             or (c.op == "set" and o.path == c.path[: len(o.path)]))]
        if hit:
            verb = "erase" if c.op == "unset" else "replace"
            problems.append(f"the caller's --{c.op} {c.dotted} would {verb} {', '.join(hit)}"
                            + ("" if c.op == "unset" else " (a caller never sets the AL)"))
    return problems


def _variant_view(variant: Variant, identity: Identity, refuse: Callable[..., SelectionError]) -> RecipeView:
    """The resolved variant as ``check`` reads it, its engine agreeing with the run's framework."""
    wanted = None
    if identity.framework is not None:
        wanted = engine_named(identity.framework)
        if wanted is None:
            known = sorted({f for p in _all_profiles() for f in p.frameworks})
            raise refuse(f"framework {identity.framework!r} is not one golden-al knows", hint="one of " + ", ".join(known))
    view = view_of(variant.data, variant=variant.selector)
    if view is None:
        raise refuse("not an srt-slurm recipe (no backend.<engine>_config roles and no schema-2 roles)")
    if wanted is not None and view.engine not in (None, wanted):
        raise refuse(f"{identity.framework_source} says {wanted} but the recipe's {view.engine_source} says {view.engine}",
                     hint="run it with the framework the recipe was written for")
    if wanted is not None and view.engine is None:
        view = view_of(variant.data, variant=variant.selector, engine=wanted)
        assert view is not None
    if view.engine is None:
        raise refuse(f"which engine runs it is undetermined ({view.engine_source})",
                     hint="set backend.type in the recipe, or pass --framework")
    return view


def _off(variant: Variant, engine: str | None, mode: str, reason: str, overrides: Sequence[Override] = (),
         role: str | None = None) -> VariantPlan:
    return VariantPlan(variant.selector, engine, None, None, None, None, None, tuple(overrides), mode, role,
                       reason=reason)


def _plan_variant(variant: Variant, path: str, identity: Identity, store: Any, caller_pins: Sequence[str],
                  caller: Sequence[Override], *, allow_pins: bool = False, lines: Mapping[Any, int] | None = None,
                  refs: Sequence[Any] = ()) -> VariantPlan:
    """One variant's plan (see the module docstring). Raises SelectionError naming the variant.

    ``allow_pins``: plan as if the recipe's own pins were gone (``check --policy no-pins`` asks whether the
    recipe is selectable once its pins, reported on their own, are removed)."""
    name = variant.selector or "the recipe"

    def refuse(problem: str, hint: str | None = None) -> SelectionError:
        return SelectionError(f"{path} [{name}]: {problem}", hint=hint)

    view = _variant_view(variant, identity, refuse)
    unknown = next((rc for rc in view.roles if rc.engine_source.startswith("unknown engine")), None)
    if unknown is not None:
        raise refuse(f"the {unknown.role} role runs an {unknown.engine_source}", hint="golden-al engines lists the "
                     "engines it knows; an engine plugin adds one")
    target = view.target
    facts = recipe_facts(view, path, lines=lines, refs=refs)

    def restored(mode: str, reason: str) -> VariantPlan:  # InferenceX's selector too: no stale pin left in force
        found = _synthetic(view.roles, view.envs)
        if any(value is not None for _, value, _ in found):  # a switch: back to the golden curve's method
            found = _synthetic(view.roles, view.envs, _curve_method(store, _golden_of(view, facts, store, identity)))
        return _off(variant, view.engine, mode, reason, _restore(found), target.role if target else None)

    if identity.spec_decoding is not None and identity.spec_decoding.strip().lower() == "none":
        return restored("off", "SPEC_DECODING=none: the run does not speculate")
    if identity.mode == "eval-only":
        return restored("eval-only", "eval-only: real acceptance restored (every synthetic setting removed)")
    if caller_pins:
        raise refuse(f"the caller's overrides set synthetic acceptance at {', '.join(caller_pins)}",
                     hint="a caller never sets the AL: drop that --set, the value comes from the golden curve")
    agentic = identity.agentic if identity.agentic is not None else facts.agentic.agentic
    if agentic is False:
        why = "IS_AGENTIC says" if identity.agentic is not None else facts.agentic.reason
        return restored("off", f"not an agentic benchmark ({why}): real acceptance, nothing to simulate")
    if target is None:
        if identity.spec_decoding:
            raise refuse(f"SPEC_DECODING={identity.spec_decoding} but no role of the recipe speculates")
        return restored("off", "no role of the recipe speculates")
    if target.engine is None or recipe_formats().get(target.engine) is None:
        raise refuse(f"the {target.role} role's engine ({target.engine_source}) has no srt-slurm recipe format in "
                     "golden-al", hint="golden-al engines lists the engines and their capabilities")
    simulating = [rc for rc in view.roles if _simulates(rc, target.engine)]
    if not simulating:  # e.g. TileRT in an aggregated role: only its decode role simulates
        fmt = recipe_formats()[target.engine]
        raise refuse(f"the {target.role} role speculates, but {registry.get_profile(target.engine).display_name} "
                     f"simulates only in the {'/'.join(fmt.simulated_roles)} role: no role would get the golden AL")
    pinned = [shown for *_, shown in _synthetic(simulating, _blocks(view, simulating))]
    if pinned and not allow_pins:
        raise refuse(f"the recipe already pins synthetic acceptance at {', '.join(pinned)}",
                     hint="remove the pin: the golden AL is selected at launch, never written into a recipe")
    settings = role_settings(facts, target.engine, target.role)
    if settings.problems:
        raise refuse(settings.problems[0][1])
    golden = derive(settings, store, identity=identity, what="recipe")
    if golden.point is None:
        raise refuse(golden.reason, hint="pass --model (or MODEL_PREFIX) with a curve's model or alias"
                     if golden.reason.startswith("no curve for") else None)
    elsewhere = [b for b in view.envs if b not in _blocks(view, simulating)]  # the recipe-wide one too
    overrides = _restore(_synthetic([rc for rc in view.roles if rc not in simulating], elsewhere,
                                    _curve_method(store, golden)))
    problems: list[str] = []
    for rc in simulating:
        written, problem = _write(view, rc, facts, golden)
        overrides += written
        problems += [problem] if problem else []
    problems += _caller_conflicts(caller, overrides)
    if problems:
        raise refuse("; ".join(problems))
    point = golden.point
    return VariantPlan(variant.selector, target.engine, point.method, golden.k, golden.thinking, point.al, point.curve,
                       tuple(overrides), "throughput", target.role, point.model, golden.reason, derivation=golden)


def _caller_pins(doc: Mapping[str, Any], caller: Sequence[Override], selector: str | None) -> list[str]:
    """The synthetic-acceptance settings the caller's overrides add to the variants' roles (a caller never sets the
    AL): every pin in the overridden variants that the recipe itself does not hold."""
    if not any(o.op == "set" for o in caller):
        return []
    found: list[str] = []
    for before, after in zip(expand_variants(doc, selector), expand_variants(apply_overrides(doc, caller), selector),
                             strict=True):
        old, new = view_of(before.data), view_of(after.data)
        own = {shown for *_, shown in _synthetic(old.roles, old.envs)} if old is not None else set()
        found += [shown for *_, shown in (_synthetic(new.roles, new.envs) if new is not None else []) if shown not in own]
    return list(dict.fromkeys(found))


def plan_document(data: Mapping[str, Any], *, path: str, selector: str | None, identity: Identity, store: Any,
                  caller: Sequence[Override] = (), allow_pins: bool = False, lines: Mapping[Any, int] | None = None,
                  refs: Sequence[Any] = ()) -> tuple[VariantPlan, ...]:
    """Every variant of a parsed recipe, planned; the first refusal of any variant is raised (naming how many
    more were refused). ``allow_pins``: as :func:`_plan_variant`; ``refs``: the master-config entries that run it."""
    pins = _caller_pins(data, caller, selector)
    resolved = apply_overrides(data, caller) if caller else data
    plans = []
    problems: list[SelectionError] = []
    for variant in expand_variants(resolved, selector):
        try:
            plans.append(_plan_variant(variant, path, identity, store, pins, caller, allow_pins=allow_pins,
                                       lines=lines, refs=refs))
        except SelectionError as exc:
            problems.append(exc)
    if problems:
        first = problems[0]
        more = f" (and {len(problems) - 1} more variant(s) refused)" if len(problems) > 1 else ""
        raise SelectionError(first.message + more, hint=first.hint)
    return tuple(plans)
