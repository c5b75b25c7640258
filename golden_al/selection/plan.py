"""``select``: the golden AL a launch recipe must run with, as srtctl overrides (launch-time selection).

A benchmark harness that forbids hard-coded synthetic values in its recipes (InferenceX's AGENTS.md)
asks at launch: "what should this recipe run with?". The answer comes only from the recipe's own
speculative settings and the run's identity, never from a value the caller passes:

1. every config srtctl runs (:func:`golden_al.configs.srtctl.expand_variants`), after the caller's own
   ``--set``/``--unset`` arguments;
2. each variant read by the reader ``check`` uses (:func:`golden_al.configs.srt_slurm.view_of`, both
   recipe schemas) and its context (thinking and agentic signals, model names,
   :func:`golden_al.checks.yaml_configs.recipe_context_of`);
3. k, the method, the draft, its sampler from the engine profile of the generating role (decode, else
   aggregated), the model and thinking mode resolved and the golden point looked up exactly as
   ``check`` does (:func:`golden_al.checks.resolution.golden_point`), so that the recipe with the overrides
   applied is a ``match`` for ``check``;
4. the overrides in the recipe's own schema, for every role with speculative settings, in the form
   the engine profile declares (:attr:`~golden_al.engines.profile.RecipeFormat.inject_into`: the worker
   environment, or the role's speculative config).

Every variant is planned before anything is returned: one refusal (a pin already in the recipe, a
caller ``--unset``/``--set`` that would undo an acceptance setting, no curve, mode or k, an AL outside
[1, k+1], contradictory identity) raises :class:`SelectionError` naming the variant.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from golden_al import engines
from golden_al.checks.findings import ModelName, ThinkingSignal
from golden_al.configs.srt_slurm import (
    FRAMEWORK_ENGINES,
    RecipeView,
    RoleConfig,
    curve_rejection_method,
    is_roles_recipe,
    view_of,
)
from golden_al.configs.srtctl import CallerOverride, Variant, apply_overrides, expand_variants
from golden_al.engines._values import format_value
from golden_al.engines.profile import EngineProfile
from golden_al.errors import GoldenALError, UsageError

__all__ = [
    "Identity",
    "Override",
    "SelectionError",
    "SelectionPlan",
    "VariantPlan",
    "plan_document",
    "resolve_golden",
    "select_recipe",
]

Mode = Literal["throughput", "eval-only"]


class SelectionError(UsageError):
    """A recipe (or one of its variants) for which no golden AL can be selected: exit 2."""


@dataclass(frozen=True)
class Identity:
    """Who the run is: what ``select`` takes from flags or the harness environment (never an AL).

    ``agentic`` None: the recipe's own signals decide, as in ``check``; ``spec_decoding`` ``"none"``
    turns speculative decoding off for the run (nothing to set).
    """

    model: str | None = None
    model_source: str = "--model"
    thinking: str | None = None  #: ``on``/``off`` or a level name
    thinking_source: str = "--thinking"
    framework: str | None = None
    agentic: bool | None = None
    spec_decoding: str | None = None
    mode: Mode = "throughput"


@dataclass(frozen=True)
class Override:
    """One srtctl override: ``--set PATH=VALUE`` or ``--unset PATH`` (``path`` in the recipe's own schema)."""

    op: Literal["set", "unset"]
    path: tuple[str, ...]
    value: Any = None

    @property
    def dotted(self) -> str:
        return ".".join(self.path)

    def srtctl_args(self) -> list[str]:
        """The two words srtctl takes: ``--set``, ``PATH=<compact JSON>`` (no spaces: safe in ``$(...)``)."""
        if self.op == "unset":
            return ["--unset", self.dotted]
        return ["--set", f"{self.dotted}={json.dumps(self.value, separators=(',', ':'))}"]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op, "path": self.dotted}
        if self.op == "set":
            out["value"] = self.value
        return out


@dataclass(frozen=True)
class VariantPlan:
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

    def to_dict(self) -> dict[str, Any]:
        """The JSON contract of ``select --format json`` (contract keys first)."""
        return {"selector": self.selector, "engine": self.engine, "method": self.method, "k": self.k,
                "thinking": None if self.thinking is None else _thinking_key(self.thinking), "al": self.al,
                "curve": self.curve, "overrides": [o.to_dict() for o in self.overrides], "mode": self.mode,
                "role": self.role, "model": self.model, "reason": self.reason, "notes": list(self.notes)}


@dataclass(frozen=True)
class SelectionPlan:
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
            listing = ", ".join(f"{v.selector}: k={v.k} al={_fmt(v.al)}" for v in self.variants)
            raise SelectionError(f"{self.recipe}: its variants need different overrides ({listing}); one srtctl "
                                 "command line cannot carry them",
                                 hint=f"select one variant at a time: {self.recipe}:{differ[0].selector}")
        return first


def _fmt(al: float | None) -> str:
    return "-" if al is None else format_value(al)


def _thinking_key(mode: str) -> str:
    return f"thinking_{mode}" if mode in ("on", "off") else mode


# ------------------------------------------------------------------------ the engine's overrides


def _env_path(view: RecipeView, role: RoleConfig, roles_schema: bool) -> tuple[str, ...]:
    """Where a role's environment lives: ``roles.<r>.env`` or ``backend.<role>_environment``."""
    if roles_schema:
        return ("roles", role.key, "env")
    block = next((b for b in view.envs if b.role == role.role), None)
    key = block.key if block is not None else f"{role.role}_environment"
    return ("backend", key)


def _config_value(original: Any, merged: Mapping[str, Any]) -> Any:
    """The speculative config written back in the form the recipe holds it (a JSON string or a mapping)."""
    return json.dumps(dict(merged), separators=(",", ":")) if isinstance(original, str) else dict(merged)


def _env_spellings(profiles: Sequence[EngineProfile]) -> frozenset[str]:
    """Every environment spelling of the profiles' synthetic knobs (values and companions, legacy names too)."""
    return frozenset(s for p in profiles for k in p.check.synthetic_knobs if k.kind == "env" for s in k.spellings())


def _pins_in(view: RecipeView) -> list[str]:
    """Every synthetic-acceptance setting the resolved config already holds (any engine's knob), by path."""
    found: list[str] = []
    spellings = _env_spellings([engines.get_profile(n) for n in engines.engine_names()])
    for block in view.envs:
        for key in block.env or {}:
            if str(key) in spellings:
                found.append(".".join((*block.loc, str(key))))
    for role in view.roles:
        spec = role.spec
        if spec is None or spec.key is None:
            continue
        profile = engines.get_profile(spec.engine)
        for knob in profile.check.synthetic_knobs:
            if knob.kind != "config-key" or knob.name not in spec.settings:
                continue
            if knob.switch_value is not None and str(spec.settings[knob.name]) != knob.switch_value:
                continue
            found.append(".".join((*role.loc, spec.key, knob.name)))
    return found


def _throughput_overrides(view: RecipeView, profile: EngineProfile, al: float, k: int, roles_schema: bool,
                          al_at: Callable[[int], float]) -> tuple[list[Override], list[str]]:
    """(overrides, problems) that make every speculating role of ``view`` simulate the golden AL.

    Environment-form engines get the generating role's value in every speculating role's environment (a
    prefill worker runs no verify steps; ``check`` reads its pin against the generating role's k). A
    config-form engine (each server validates its own config) gets the golden AL at each role's own k
    (``al_at``), as ``check`` reads each config.
    """
    assert profile.recipe is not None
    rule = profile.check.settings_draft_len
    out: list[Override] = []
    problems: list[str] = []
    for role in view.roles:
        spec = role.spec
        if spec is None or not spec.speculates or spec.engine != profile.name:
            continue
        try:
            dl = rule(spec) if rule is not None else None
        except (UsageError, ValueError) as exc:
            problems.append(f"the {role.role} role's draft length: {exc}")
            continue
        role_k, role_al = k, al
        if profile.recipe.inject_into == "config" and dl is not None and dl.k != k:
            try:
                role_k, role_al = dl.k, al_at(dl.k)
            except GoldenALError as exc:
                problems.append(f"the {role.role} role drafts k={dl.k}: {exc.message}")
                continue
        try:
            settings = engines.synthetic_settings(profile.name, role_al, role_k)
        except GoldenALError as exc:
            problems.append(f"the {role.role} role: {exc.message}")
            continue
        if profile.recipe is not None and profile.recipe.injection_problem is not None:
            trouble = profile.recipe.injection_problem(settings, dl is not None and dl.two_model is True)
            if trouble is not None:
                problems.append(f"the {role.role} role: {trouble[0]} (hint: {trouble[1]})")
                continue
        if profile.recipe.inject_into == "config":
            key = spec.key or profile.recipe.spec_keys[0]
            merged = {**dict(spec.settings), **settings}
            out.append(Override("set", (*role.loc, key), _config_value(role.args.get(key), merged)))
        else:
            env = _env_path(view, role, roles_schema)
            out.extend(Override("set", (*env, name), value) for name, value in settings.items())
    return out, problems


def _eval_only_overrides(view: RecipeView, profile: EngineProfile, real_method: str | None) -> list[Override]:
    """Overrides that restore real acceptance: every synthetic variable unset where present, and a
    speculative config's switch set back to the real method (the curve's, else the engine's default)."""
    out: list[Override] = []
    names = _env_spellings([profile])
    for block in view.envs:
        out.extend(Override("unset", (*block.loc, str(key))) for key in block.env or {} if str(key) in names)
    for role in view.roles:
        spec = role.spec
        if spec is None or spec.key is None or spec.engine != profile.name:
            continue
        settings = dict(spec.settings)
        changed = False
        for knob in profile.check.synthetic_knobs:
            if knob.kind != "config-key" or knob.name not in settings:
                continue
            if knob.switch_value is not None:
                real = real_method or knob.real_value
                if real is not None and str(settings[knob.name]) == knob.switch_value:
                    settings[knob.name] = real
                    changed = True
            else:
                del settings[knob.name]
                changed = True
        if changed:
            out.append(Override("set", (*role.loc, spec.key), _config_value(role.args.get(spec.key), settings)))
    return out


# ---------------------------------------------------------------------------------- planning


def _caller_conflicts(caller: Sequence[CallerOverride], ours: Sequence[Override]) -> list[str]:
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


@dataclass(frozen=True)
class _Golden:
    """The golden point a target role's settings select, and how each input was decided."""

    k: int
    thinking: str
    point: Any
    reason: str
    al_at: Callable[[int], float]  #: the golden AL of the same curve at another k


def _variant_view(variant: Variant, data: Mapping[str, Any], identity: Identity,
                  refuse: Callable[..., SelectionError]) -> RecipeView:
    """The resolved variant read as ``check`` reads it, its engine agreeing with the run's framework."""
    framework_engine = None
    if identity.framework is not None:
        framework_engine = FRAMEWORK_ENGINES.get(identity.framework.strip().lower())
        if framework_engine is None:
            raise refuse(f"framework {identity.framework!r} is not one golden-al knows",
                         hint="one of " + ", ".join(sorted(FRAMEWORK_ENGINES)))
    view = view_of(data, variant=variant.selector)
    if view is None:
        raise refuse("not an srt-slurm recipe (no backend.<engine>_config roles and no schema-2 roles)")
    if framework_engine is not None and view.engine not in (None, framework_engine):
        raise refuse(f"the framework says {framework_engine} but the recipe's {view.engine_source} says "
                     f"{view.engine}", hint="run it with the framework the recipe was written for")
    if framework_engine is not None and view.engine is None:
        view = view_of(data, variant=variant.selector, engine=framework_engine)
        assert view is not None
    if view.engine is None:
        raise refuse(f"which engine runs it is undetermined ({view.engine_source})",
                     hint="set backend.type in the recipe, or pass --framework")
    if engines.get_profile(view.engine).recipe is None:
        raise refuse(f"{engines.get_profile(view.engine).display_name} has no srt-slurm recipe format")
    return view


def _refuse_pins(variant: Variant, view: RecipeView, caller: Sequence[CallerOverride],
                 refuse: Callable[..., SelectionError]) -> None:
    """Refuse a pin in the resolved config: the caller's (a caller never sets the AL) or the recipe's own."""
    pinned = _pins_in(view)
    if caller:
        original = view_of(variant.data, variant=variant.selector, engine=view.engine)
        own = set(_pins_in(original)) if original is not None else set()
        added = [p for p in pinned if p not in own]
        if added:
            raise refuse(f"the caller's overrides set synthetic acceptance at {', '.join(added)}",
                         hint="a caller never sets the AL: drop that --set, the value comes from the golden curve")
    if pinned:
        raise refuse(f"the recipe already pins synthetic acceptance at {', '.join(pinned)}",
                     hint="remove the pin: the golden AL is selected at launch, never written into a recipe")


def resolve_golden(*, engine: str, algorithm: str | None, k: int, rule: str, signals: Sequence[ThinkingSignal],
                   models: Sequence[ModelName], draft_model: str | None, draft_sample_method: str | None,
                   rejection_sample_method: str | None, identity: Identity, store: Any,
                   spec: Mapping[str, Any], what: str = "recipe") -> _Golden:
    """The golden point of one set of speculative settings (a recipe's generating role, a script's launch command):
    thinking mode, model and curve resolved exactly as ``check`` resolves a pin's, the run's identity added to what
    the ``what`` says.

    Raises:
        SelectionError: the thinking mode, the model or the point cannot be told (the bare reason), or the value is
            one the engine refuses at this k.
    """
    from golden_al.checks.resolution import (
        curve_method,
        golden_point,
        methods_of,
        resolve_model,
        resolve_thinking,
    )

    signals = list(signals)
    if identity.thinking is not None:
        signals.append(ThinkingSignal(identity.thinking, identity.thinking_source, 0))
    thinking, thinking_how = resolve_thinking(signals)
    if thinking is None:
        raise SelectionError(f"thinking mode: {thinking_how}")
    if identity.thinking is not None and thinking != identity.thinking:
        raise SelectionError(f"{identity.thinking_source} says thinking {identity.thinking}, but the {what} runs "
                             f"thinking {thinking} ({thinking_how})",
                             hint=f"fix the {what}'s thinking setting or the run's identity")
    models = [ModelName(identity.model, identity.model_source)] if identity.model else list(models)
    model_key, _shown, model_how = resolve_model(models, store, methods_of(engine, algorithm))
    if model_key is None:
        raise SelectionError(f"model: {model_how}",
                             hint="pass --model (or MODEL_PREFIX) with a curve's model or alias")
    inputs: dict[str, Any] = dict(draft_model=draft_model, draft_sample_method=draft_sample_method,
                                  rejection_sample_method=curve_rejection_method(rejection_sample_method),
                                  engine=engine, spec=spec)
    try:
        method = curve_method(store, engine, algorithm, model_key)
        point = golden_point(store, model=model_key, thinking=thinking, k=k, method=method, **inputs)
        if point.method:
            engines.get_profile(engine).check_k(point.method, k)
    except GoldenALError as exc:
        raise SelectionError(exc.message, hint=exc.hint) from None
    if not 1.0 <= point.al <= k + 1:
        raise SelectionError(f"golden AL {format_value(point.al)} at k={k} is outside [1, {k + 1}]")

    def al_at(role_k: int) -> float:
        return float(golden_point(store, model=model_key, thinking=thinking, k=role_k, method=method, **inputs).al)

    reason = (f"k={k} from {rule}; {model_how}; thinking {thinking} ({thinking_how}); "
              f"golden {point.model} {point.thinking} k={k} = {format_value(point.al)} [{point.curve}]")
    return _Golden(k, thinking, point, reason, al_at)


def _select_golden(ctx: Any, view: RecipeView, target: RoleConfig, identity: Identity, store: Any,
                   refuse: Callable[..., SelectionError]) -> _Golden:
    """The golden point of the generating role (:func:`resolve_golden` on its settings)."""
    from golden_al.checks.yaml_configs import draft_for_role

    engine = view.engine
    assert engine is not None
    assert target.spec is not None
    info, algorithm, draft_model, extra = draft_for_role(ctx, engine, target.role)
    if info.k is None:
        raise refuse(f"the draft length is unknown: {info.problem}")
    spec = target.spec
    try:
        return resolve_golden(engine=engine, algorithm=algorithm, k=info.k, rule=info.rule,
                              signals=ctx.thinking_for(target.role), models=ctx.models, draft_model=draft_model,
                              draft_sample_method=spec.draft_sample_method,
                              rejection_sample_method=spec.rejection_sample_method, identity=identity, store=store,
                              spec=extra)
    except SelectionError as exc:
        raise refuse(exc.message, exc.hint) from None


def _plan_variant(variant: Variant, doc: Any, path: str, identity: Identity, store: Any,
                  caller: Sequence[CallerOverride], *, allow_pins: bool = False) -> VariantPlan:
    """One variant's plan (see the module docstring). Raises SelectionError naming the variant.

    ``allow_pins``: plan as if the recipe's own pins were gone (``check --policy no-pins`` asks whether the
    recipe is selectable once its pins, reported on their own, are removed)."""
    from golden_al.checks.yaml_configs import recipe_context_of

    name = variant.selector or "the recipe"

    def refuse(problem: str, hint: str | None = None) -> SelectionError:
        return SelectionError(f"{path} [{name}]: {problem}", hint=hint)

    data = apply_overrides(variant.data, caller) if caller else variant.data
    view = _variant_view(variant, data, identity, refuse)
    engine = view.engine
    profile = engines.get_profile(str(engine))
    off: dict[str, Any] = dict(selector=variant.selector, engine=engine, method=None, k=None, thinking=None, al=None,
                               curve=None, overrides=())
    if identity.spec_decoding is not None and identity.spec_decoding.strip().lower() == "none":
        return VariantPlan(**off, mode="off", reason="SPEC_DECODING=none: the run does not speculate")
    target = view.target
    if identity.mode == "eval-only":
        real = None
        if target is not None and target.spec is not None:
            real = curve_rejection_method(target.spec.rejection_sample_method)
        return VariantPlan(**{**off, "overrides": tuple(_eval_only_overrides(view, profile, real))},
                           mode="eval-only", role=target.role if target else None,
                           reason="eval-only: real acceptance restored (every synthetic setting removed)")
    if not allow_pins:
        _refuse_pins(variant, view, caller, refuse)
    ctx = recipe_context_of(view, doc, path)
    agentic = identity.agentic if identity.agentic is not None else ctx.agentic.agentic
    if agentic is False:
        why = "IS_AGENTIC says" if identity.agentic is not None else ctx.agentic.reason
        return VariantPlan(**off, mode="off", reason=f"not an agentic benchmark ({why}): real acceptance, "
                                                      "nothing to simulate")
    if target is None:
        if identity.spec_decoding:
            raise refuse(f"SPEC_DECODING={identity.spec_decoding} but no role of the recipe speculates")
        return VariantPlan(**off, mode="off", reason="no role of the recipe runs speculative decoding")
    golden = _select_golden(ctx, view, target, identity, store, refuse)
    overrides, problems = _throughput_overrides(view, profile, golden.point.al, golden.k, is_roles_recipe(data),
                                                golden.al_at)
    problems += _caller_conflicts(caller, overrides)
    if problems:
        raise refuse("; ".join(problems))
    point = golden.point
    return VariantPlan(selector=variant.selector, engine=engine, method=point.method, k=golden.k,
                       thinking=golden.thinking, al=point.al, curve=point.curve, overrides=tuple(overrides),
                       mode="throughput", role=target.role, model=point.model, reason=golden.reason)


def plan_document(data: Mapping[str, Any], doc: Any, *, path: str, selector: str | None, identity: Identity,
                  store: Any, caller: Sequence[CallerOverride] = (), allow_pins: bool = False) -> tuple[VariantPlan, ...]:
    """Every variant of a parsed recipe, planned; the first refusal of any variant is raised (naming how many
    more were refused). ``allow_pins``: as :func:`_plan_variant`."""
    plans = []
    problems: list[SelectionError] = []
    for variant in expand_variants(data, selector):
        try:
            plans.append(_plan_variant(variant, doc, path, identity, store, caller, allow_pins=allow_pins))
        except SelectionError as exc:
            problems.append(exc)
    if problems:
        first = problems[0]
        more = f" (and {len(problems) - 1} more variant(s) refused)" if len(problems) > 1 else ""
        raise SelectionError(first.message + more, hint=first.hint)
    return tuple(plans)


def select_recipe(path: str | Path, *, selector: str | None = None, identity: Identity | None = None,
                  store: Any = None, golden_dir: str | Path | None = None,
                  caller: Sequence[CallerOverride] = ()) -> SelectionPlan:
    """The launch overrides of every variant of the recipe at ``path`` (the Python form of ``golden-al select``).

    ``store``: a loaded :class:`~golden_al.golden.store.GoldenStore` (else ``golden_dir``, else the shipped
    curves). Raises :class:`SelectionError` (or another exit-2 error) when any variant cannot be selected.
    """
    from golden_al import __version__, safeio
    from golden_al.checks.yaml_configs import YamlError, load_yaml_docs
    from golden_al.errors import InputFileError
    from golden_al.golden import load_store

    identity = identity or Identity()
    p = Path(path)
    text = safeio.read_text(p)
    if store is None:
        store = load_store(golden_dir)
    provenance = {"golden_al_version": __version__, "golden_dir": str(store.root) if store.root else None,
                  "selector": selector, "mode": identity.mode,
                  "caller_overrides": [{"op": c.op, "path": c.dotted, **({"value": c.value} if c.op == "set" else {})}
                                       for c in caller]}
    from golden_al.selection.scripts import is_script, plan_script

    if is_script(p, text):
        if selector is not None or caller:
            raise SelectionError(f"{p}: a launch script has no variants or srtctl overrides (selector {selector!r}, "
                                 f"{len(caller)} caller override(s))", hint="pass the script alone")
        return SelectionPlan(str(p), (plan_script(p, text, identity, store),), {**provenance, "kind": "script"})
    try:
        docs = load_yaml_docs(text)
    except YamlError as exc:
        raise InputFileError(f"not valid YAML: {exc}", path=p, line=exc.line) from None
    if len(docs) != 1 or not isinstance(docs[0].data, Mapping):
        raise InputFileError("a recipe is one YAML mapping", path=p, line=1)
    from golden_al.injection.recipe import load_recipe

    load_recipe(text, path=p)  # refuses duplicate keys that srtctl would read differently
    plans = plan_document(docs[0].data, docs[0], path=str(p), selector=selector, identity=identity, store=store,
                          caller=caller)
    return SelectionPlan(str(p), plans, {**provenance, "kind": "recipe"})
