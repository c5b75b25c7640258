"""The one derivation: from a recipe and a run to the golden point the run must simulate, or a refusal.

(recipe file, variant, role, run identity) -> :class:`Derivation`: engine, curve method, k, model, thinking mode,
golden point (its curve chosen by the selectors), or a refusal with its verdict and reason, and the inputs read.
``check`` judges pins against it, ``select`` and ``inject`` write it, the ``no-pins`` policy asks for it: a recipe
``select`` plans is what ``check`` calls a ``match``, and one it refuses is refused for ``check``'s reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Literal, Protocol

from golden_al.errors import AmbiguousCurveError, NoGoldenValueError, UsageError
from golden_al.plugin import registry
from golden_al.plugin.pins import AgenticInfo, DraftInfo, ModelName, ThinkingSignal
from golden_al.plugin.profile import PinContext, Record
from golden_al.plugin.spec import draft_from_settings
from golden_al.plugin.values import format_value, parse_number
from golden_al.prompts.thinking import (
    REQUEST,
    is_thinking_setting,
    resolve_thinking,
    thinking_from_setting,
    truth,
)
from golden_al.recipes.srt_slurm import (
    GENERATING_ROLES,
    RecipeView,
    canonical_role,
    curve_rejection_method,
    env_block_role,
    speculation,
)
from golden_al.safeio.inputs import Input

__all__ = [
    "Derivation",
    "Identity",
    "RecipeFacts",
    "RoleSettings",
    "Settings",
    "agentic_from_flag",
    "agentic_from_path",
    "agentic_from_scenario",
    "derive",
    "methods_of",
    "recipe_facts",
    "resolve_model",
    "review_written",
    "role_settings",
    "run_settings",
    "walk",
]

Mode = Literal["throughput", "eval-only"]


# ------------------------------------------------------------------------------ the run


@dataclass(frozen=True, eq=False, repr=False)
class Identity(Record):
    """Who the run is: what ``select`` takes from flags or the harness environment (never an AL).

    ``agentic`` None: the recipe's own signals decide; ``spec_decoding`` ``"none"`` turns speculative decoding off
    for the run (nothing to set). ``inputs``: the environment values it was read from.
    """

    model: str | None = None
    model_source: str = "--model"
    thinking: str | None = None  #: ``on``/``off`` or a level name
    thinking_source: str = "--thinking"
    #: how strongly :attr:`thinking` binds (:class:`~golden_al.prompts.thinking.ThinkingSignal`): 0, the harness's
    #: lookup setting, which a config's own thinking settings override; ``inject --thinking`` states it outright
    thinking_priority: int = 0
    framework: str | None = None
    framework_source: str = "the framework"
    agentic: bool | None = None
    spec_decoding: str | None = None
    mode: Mode = "throughput"
    inputs: tuple[Input, ...] = ()


_AGENTIC_DIRS = {"agentic", "agentx", "agentic-coding", "agentic_coding"}
_FIXED_DIRS = {"fixed_seq_len", "fixed-seq-len", "1k1k", "8k1k", "1k8k", "8k8k"}


def agentic_from_path(path: str | PurePath) -> AgenticInfo:
    """The directory a file lives in (InferenceX runners pick ``benchmarks/.../${SCENARIO_SUBDIR}``)."""
    parts = [p.lower() for p in PurePath(path).parts[:-1]]
    name = PurePath(path).name.lower()
    for p in reversed(parts):
        if p in _AGENTIC_DIRS or p.startswith("agentx"):
            return AgenticInfo(True, f"it lives under an '{p}' directory")
        if p in _FIXED_DIRS:
            return AgenticInfo(False, f"it lives under '{p}' (fixed-length throughput benchmarks)")
        if p == "speedbench":
            return AgenticInfo(False, "it is a SPEED-Bench golden-collection script (real acceptance is the point)")
    if "agentic" in name or "agentx" in name:
        return AgenticInfo(True, "its file name says agentic")
    return AgenticInfo(None, "neither its settings nor its directory say whether it is an agentic benchmark")


def agentic_from_scenario(scenario: str) -> AgenticInfo:
    """A master-config scenario name (``agentic-coding`` runs with ``IS_AGENTIC=1``)."""
    s = scenario.lower()
    if "agentic" in s or s.startswith("agentx"):
        return AgenticInfo(True, f"master-config scenario '{scenario}' (IS_AGENTIC=1)")
    if s in ("fixed-seq-len", "fixed_seq_len") or "seq-len" in s:
        return AgenticInfo(False, f"master-config scenario '{scenario}' is a fixed-sequence-length benchmark "
                                  "(IS_AGENTIC=0)")
    return AgenticInfo(None, f"master-config scenario '{scenario}' is not known to be agentic or not")


def agentic_from_flag(value: Any, where: str) -> AgenticInfo | None:
    """An ``IS_AGENTIC`` value (None: not a boolean)."""
    t = truth(value)
    return None if t is None else AgenticInfo(t, f"{where}IS_AGENTIC={value}")


# ------------------------------------------------------------------------- the settings


class Settings(Protocol):
    """What a reader gathered around one set of speculative settings (a :class:`RoleSettings`, a check ``Pin``)."""

    engine: str
    algorithm: str | None
    draft: DraftInfo
    thinking: list[ThinkingSignal]
    models: list[ModelName]
    draft_model: str | None
    draft_sample_method: str | None
    rejection_sample_method: str | None
    spec: dict[str, Any]


@dataclass
class RoleSettings:
    """One recipe role's speculative settings and what the recipe says around them (:func:`role_settings`)."""

    engine: str
    role: str | None  #: the role whose arguments were read
    algorithm: str | None
    draft: DraftInfo
    thinking: list[ThinkingSignal]
    models: list[ModelName]
    draft_model: str | None
    draft_sample_method: str | None
    rejection_sample_method: str | None
    spec: dict[str, Any]
    agentic: AgenticInfo
    #: (verdict, reason) the settings themselves cause: a setting that changes k at run time
    problems: list[tuple[str, str]] = field(default_factory=list)


def walk(obj: Any, path: tuple[str, ...] = (), max_depth: int = 60) -> list[tuple[tuple[str, ...], Any]]:
    """Every (key path, value) of plain data, parents first (children deeper than ``max_depth`` not visited)."""
    out: list[tuple[tuple[str, ...], Any]] = []
    stack: list[tuple[tuple[str, ...], Any, int]] = [(path, obj, 0)]
    while stack:
        p, v, depth = stack.pop()
        out.append((p, v))
        if depth > max_depth:
            continue
        kids = [((*p, str(k)), c) for k, c in v.items()] if isinstance(v, dict) else \
            [((*p, str(i)), c) for i, c in enumerate(v)] if isinstance(v, list) else []
        stack.extend((kp, c, depth + 1) for kp, c in reversed(kids))
    return out


def role_of(path: Sequence[str]) -> str | None:
    """The canonical worker role a key path belongs to (``decode``, ``prefill_environment``, ``agg``...)."""
    for part in path:
        p = part.lower()
        role = canonical_role(p) or env_block_role(p)
        if role is None and "_" in p:
            role = canonical_role(p.split("_", 1)[0])
        if role is None:
            role = next((r for r in GENERATING_ROLES if p == r[:3]), None)
        if role is not None:
            return role
    return None


@dataclass
class RecipeFacts:
    """What one resolved recipe view says beyond its roles: thinking signals (by role), model names, agentic or not,
    and the lines of its keys in the file."""

    path: str
    view: RecipeView
    thinking: list[tuple[str | None, ThinkingSignal]]
    models: list[ModelName]
    agentic: AgenticInfo
    lines: Mapping[tuple[str, ...], int] = field(default_factory=dict)

    def line(self, path: tuple[str, ...]) -> int:
        """Line of ``path`` (a key path from the view's root): in the override section first, then in the base."""
        for prefix in self.view.prefixes:
            if prefix + path in self.lines:
                return self.lines[prefix + path]
        for prefix in self.view.prefixes:
            full = prefix + path
            while len(full) > len(prefix):
                full = full[:-1]
                if full in self.lines:
                    return self.lines[full]
        return 1

    def loc_line(self, loc: tuple[str, ...]) -> int:
        """Line of a reader location (a key path from the document root, base-relative in a variant)."""
        root = self.view.prefixes[-1]
        return self.line(loc[len(root):] if loc[: len(root)] == root else loc)

    def thinking_for(self, role: str | None) -> list[ThinkingSignal]:
        own = [s for r, s in self.thinking if r == role or r is None]
        return own or [s for _, s in self.thinking]


def _benchmark_agentic(data: Mapping[str, Any], path: str) -> AgenticInfo:
    """The recipe's ``IS_AGENTIC`` (benchmark or recipe-wide environment), its benchmark, else its directory."""
    bench: dict[str, Any] = data["benchmark"] if isinstance(data.get("benchmark"), dict) else {}
    benv: dict[str, Any] = bench["env"] if isinstance(bench.get("env"), dict) else {}
    top_env: dict[str, Any] = data["environment"] if isinstance(data.get("environment"), dict) else {}
    for env in (benv, top_env):
        if "IS_AGENTIC" in env and (flag := agentic_from_flag(env["IS_AGENTIC"], "benchmark.env.")) is not None:
            return flag
    command, btype = str(bench.get("command", "")), str(bench.get("type", ""))
    if "agentic" in command.lower() or "agentic" in btype.lower():
        return AgenticInfo(True, f"its benchmark runs {command.split('/')[-1] or btype}")
    if btype in ("sa-bench", "sglang-bench", "vllm-bench", "gpqa", "mmlu", "throughput") or (
            "isl" in bench and "osl" in bench):
        return AgenticInfo(False, f"its benchmark is type '{btype}' with fixed ISL/OSL "
                                  f"({bench.get('isl', '?')}/{bench.get('osl', '?')})")
    return agentic_from_path(path)


def recipe_facts(view: RecipeView, path: str, *, lines: Mapping[tuple[str, ...], int] | None = None,
                 walked: list[tuple[tuple[str, ...], Any]] | None = None, refs: Sequence[Any] = ()) -> RecipeFacts:
    """The facts of one view (``walked``: :func:`walk` of ``view.data``, when the caller has it); ``refs``: the
    master-config entries that run the recipe (their model names and scenario are the recipe's too)."""
    thinking: list[tuple[str | None, ThinkingSignal]] = []
    for p, v in walked if walked is not None else walk(view.data):
        if p and is_thinking_setting(p[-1]):
            where = ".".join(p[:-1])
            thinking.extend((role_of(p[:-1]), s) for s in thinking_from_setting(p[-1], v, f"{where}." if where else ""))
    models = list(view.models)
    agentic = _benchmark_agentic(view.data, path)
    for ref in refs:
        for name, what in ((ref.model_prefix, "model-prefix"), (ref.model, "model")):
            if name and name not in [m.name for m in models]:
                models.append(ModelName(name, f"{what} of master-config entry '{ref.entry}', which runs this recipe"))
    if refs and agentic.agentic is None:
        kinds = {r.agentic.agentic for r in refs}
        if len(kinds) == 1 and None not in kinds:
            agentic = AgenticInfo(kinds.pop(), f"master-config entry '{refs[0].entry}' runs it in scenario "
                                               f"'{refs[0].scenario}'")
    return RecipeFacts(path, view, thinking, models, agentic, lines or {})


def _forms(name: str) -> set[str]:
    bare = name.lstrip("-")
    return {name, bare, bare.replace("-", "_"), bare.replace("_", "-")}


def _runtime_settings(data: Any) -> Iterator[tuple[str, Any, tuple[str, ...]]]:
    """Every (key, value, path) of plain data, JSON-object strings read too, and a flag in a list with its value."""
    for p, v in walk(data):
        if isinstance(v, str) and v.lstrip().startswith("{"):
            try:
                inner = json.loads(v)
            except ValueError:
                inner = None
            if isinstance(inner, dict):
                yield from ((k, val, (*p, *kp)) for kp, val in walk(inner) if kp for k in [kp[-1]])
        if p:
            yield p[-1], v, p
        if isinstance(v, list):
            for i, item in enumerate(v):
                if isinstance(item, str) and item.startswith("-"):
                    flag, eq, val = item.partition("=")
                    yield flag, (val if eq else (v[i + 1] if i + 1 < len(v) else True)), (*p, str(i))


def runtime_problems(data: Any, engine: str) -> list[tuple[str, str]]:
    """``unsafe-value`` for every setting of ``engine`` in ``data`` that changes the draft length at run time
    (:attr:`~golden_al.plugin.profile.CheckSupport.runtime_draft_len`): a golden AL belongs to one fixed k."""
    try:
        settings = registry.get_profile(engine).check.runtime_draft_len
    except KeyError:
        return []
    forms = {form: s for s in settings for name in s.names for form in _forms(name)}
    out: list[tuple[str, str]] = []
    for key, value, p in _runtime_settings(data):
        setting = forms.get(key)
        if setting is None:
            continue
        on = True if not setting.flag_takes_value and value is True else setting.unsafe(value)
        if on is False:
            continue
        src = setting.source
        shown = key if isinstance(value, (dict, list, bool)) else f"{key}={value}"
        problem = (f"{shown} ({'.'.join(p)}) {setting.what}: the golden AL belongs to one fixed draft length "
                   f"({src.repo} {src.path} at {src.version})")
        if ("unsafe-value", problem) not in out:
            out.append(("unsafe-value", problem))
    return out


def role_settings(facts: RecipeFacts, engine: str, role: str | None, *, own: bool = False) -> RoleSettings:
    """The speculative settings a pin of ``engine`` in ``role`` is judged by, and the golden point ``select`` writes
    there: ``own`` (an engine that validates its own server's value: a speculative config, a launch flag) reads the
    role's own arguments; else the arguments of :meth:`RecipeView.role_for` (the generating role's for a prefill or
    recipe-wide pin: a prefill worker runs no verify steps)."""
    rc = facts.view.role(role) if own and role is not None else facts.view.role_for(role)
    used = rc.role if rc is not None else None
    where = f"{used} arguments" if used else "the recipe"
    if facts.view.variant:
        where += f" of {facts.view.variant}"
    spec = None
    if rc is not None:
        spec = rc.spec if rc.spec is not None and rc.spec.engine == engine else speculation(engine, rc.args)
    info = draft_from_settings(engine, spec, where)
    if used not in (role, None) and role is not None:
        info.rule += f" (the {used} worker's)"
    ok = spec is not None and spec.problem is None
    return RoleSettings(
        engine=engine, role=used, algorithm=spec.algorithm if ok and spec else None, draft=info,
        thinking=facts.thinking_for(used if used is not None else role), models=list(facts.models),
        draft_model=spec.draft_model if ok and spec else None,
        draft_sample_method=spec.draft_sample_method if ok and spec else None,
        rejection_sample_method=curve_rejection_method(spec.rejection_sample_method) if ok and spec else None,
        spec=dict(spec.review_spec) if ok and spec else {}, agentic=facts.agentic,
        problems=runtime_problems(facts.view.data, engine))


def run_settings(engine: str, k: int, rule: str, *, models: Sequence[ModelName] = (), thinking: str | None = None,
                 thinking_source: str = "", algorithm: str | None = None) -> RoleSettings:
    """The settings a run states about its server (a measurement record, an engine's logged start-up arguments):
    ``derive`` them with the curve method and selectors it states (``verify``, ``check-run``)."""
    signals = [ThinkingSignal(thinking, thinking_source, REQUEST)] if thinking is not None else []
    return RoleSettings(engine=engine, role=None, algorithm=algorithm, draft=DraftInfo(k=k, rule=rule),
                        thinking=signals, models=list(models), draft_model=None, draft_sample_method=None,
                        rejection_sample_method=None, spec={}, agentic=AgenticInfo(None, ""))


# ------------------------------------------------------------------------- the golden point


def review_written(rs: RoleSettings, settings: Mapping[str, Any], k: int | None,
                   env: Mapping[str, Any] | None = None) -> list[str]:
    """The problems the engine's review finds in ``settings`` (its synthetic settings) once written for the role of
    ``rs`` at draft length ``k`` (``env``: the worker environment beside them): what ``check`` would say of the pin,
    so ``select`` and ``inject`` refuse to write it (TensorRT-LLM's two-model path and a fraction, say)."""
    profile = registry.get_profile(rs.engine)
    around = {**(env or {}), **settings}
    out: list[str] = []
    for knob in profile.check.synthetic_knobs:
        name = next((n for n in knob.spellings() if n in settings), None)
        if knob.role != "value" or name is None:
            continue
        spec = {**rs.spec, **{key: around.get(var) for var, key in profile.check.pin_env.items()}}
        if knob.kind == "config-key":
            spec["config"] = {**dict(spec.get("config") or {}), **settings}
        companions = {c.name: None if around.get(c.name) is None else str(around[c.name])
                      for c in profile.check.synthetic_knobs if c.role == "companion" and c.kind == "env"}
        raw = str(settings[name])
        ctx = PinContext(knob=name, raw=raw, value=parse_number(raw), k=k, algorithm=rs.algorithm, spec=spec,
                         companions=companions, two_model=rs.draft.two_model)
        out += [text for _, text in profile.review(ctx).problems if text not in out]
    return out


def methods_of(engine: str, algorithm: str | None) -> list[str]:
    """Every golden-curve method an engine's algorithm can mean (EAGLE/NEXTN: the model's own head, mtp or eagle3)."""
    from golden_al.golden.store import OWN_HEAD_METHODS, curve_method_for

    if not algorithm:
        return []
    if str(algorithm).strip().lower().replace("_", "-") in ("eagle", "nextn"):
        return list(OWN_HEAD_METHODS)
    try:
        return [curve_method_for(engine, algorithm)]
    except UsageError:
        return []


def _resolve_by_method(store: Any, name: str, methods: Sequence[str]) -> tuple[str, str] | None:
    """The one model ``name`` means among the curves of one of ``methods``, with that method."""
    hits = set()
    for method in dict.fromkeys(methods):
        try:
            key = store.resolve_model(name, method=method)
        except AmbiguousCurveError:
            return None
        if key:
            hits.add((key, method))
    return hits.pop() if len(hits) == 1 else None


def _resolve_names(models: Sequence[ModelName], store: Any, methods: Sequence[str]) -> tuple[
        str | None, str | None, str]:
    """(store key, display name, how) of the first of ``models`` that resolves (a glob: exactly one model)."""
    if not models:
        return None, None, "the config names no model"
    tried = []
    for m in models:
        if m.pattern:
            keys = store.models_matching(m.name)
            if len(keys) == 1:
                return keys[0], keys[0], f"model {m.name!r} ({m.source}) -> {keys[0]}"
            if keys:
                return None, m.name, f"ambiguous: {m.name!r} ({m.source}) fits {len(keys)} models: {', '.join(keys)}"
            tried.append(f"{m.name!r} ({m.source})")
            continue
        try:
            key = store.resolve_model(m.name)
        except AmbiguousCurveError as exc:
            scoped = _resolve_by_method(store, m.name, methods)
            if scoped is None:
                return None, m.name, f"ambiguous: {exc}"
            return scoped[0], scoped[0], f"model {m.name!r} ({m.source}) -> {scoped[0]} (among the {scoped[1]} curves)"
        if key:
            return key, key, f"model {m.name!r} ({m.source}) -> {key}"
        tried.append(f"{m.name!r} ({m.source})")
    return None, models[0].name, "no curve for " + ", ".join(tried)


def resolve_model(models: Sequence[ModelName], store: Any, methods: Sequence[str] = ()) -> tuple[
        str | None, str | None, str]:
    """(store key, display name, how). A name that fits models of several methods is resolved among the curves of
    the settings' own method (``methods``). A model the run names (:attr:`ModelName.run`) must resolve, and must be
    the model the config serves where the config's names resolve: else (None, name, why)."""
    if store is None:
        return None, models[0].name if models else None, "no golden store"
    run = [m for m in models if m.run]
    key, shown, how = _resolve_names([m for m in models if not m.run], store, methods)
    if not run:
        return key, shown, how
    run_key, run_shown, run_how = _resolve_names(run, store, methods)
    if run_key is not None and key is not None and run_key != key:
        return None, run_shown, (f"conflicting models: the run's {run_how}, but the config serves {key} ({how}); "
                                 "a golden value of another model than the one served is not this run's")
    return run_key, run_shown, run_how


@dataclass(frozen=True, eq=False, repr=False)
class Derivation(Record):
    """The golden point of one set of speculative settings for one run, or why there is none."""

    k: int | None
    thinking: str | None
    thinking_how: str
    model_shown: str | None
    model_how: str
    point: Any  #: a :class:`~golden_al.golden.store.GoldenPoint`, None when refused
    #: ``golden`` when there is a point, else the refusal's verdict (``undetermined``, ``no-golden``,
    #: ``wrong-method``, ``unsafe-value``)
    verdict: str
    reason: str  #: how each input was decided, or why there is no point
    inputs: tuple[Input, ...] = ()
    at: Callable[[int], Any] | None = field(default=None, repr=False, compare=False)

    @property
    def al(self) -> float | None:
        return None if self.point is None else float(self.point.al)

    def al_at(self, k: int) -> float:
        """The golden AL of the same curve, model and mode at another draft length (a role with its own k).

        Raises:
            NoGoldenValueError: no point at ``k``.
        """
        assert self.at is not None
        return float(self.at(k).al)

    def require(self, where: str) -> Any:
        """The golden point, or the refusal raised (``where``: the file or run it is about).

        Raises:
            NoGoldenValueError: no curve, method or point (``no-golden``, ``wrong-method``). UsageError: the rest.
        """
        if self.point is None:
            raise (NoGoldenValueError if self.verdict in ("no-golden", "wrong-method") else UsageError)(
                f"{where}: {self.reason}")
        return self.point


def _thinking(settings: Settings, identity: Identity | None, what: str) -> tuple[str | None, str, str | None]:
    """(mode, how, refusal): the run's thinking mode, and why it cannot be told or contradicts the run's identity."""
    signals = list(settings.thinking)
    if identity is not None and identity.thinking is not None:
        signals.append(ThinkingSignal(identity.thinking, identity.thinking_source, identity.thinking_priority))
    thinking, how = resolve_thinking(signals)
    if thinking is None:
        return None, how, f"thinking mode: {how}"
    if identity is None or identity.thinking is None or thinking == identity.thinking:
        return thinking, how, None
    top = max(s.priority for s in signals)
    if top < REQUEST:  # a deployment default (Dynamo's DYN_DEFAULT_THINKING_MODE): a request's controls override it
        return thinking, how, (f"{identity.thinking_source} says thinking {identity.thinking}, but {how} makes thinking "
                               f"{thinking} the deployment's default, so the run may run thinking {thinking} (a "
                               "request's own thinking controls override that default, and nothing says the "
                               "benchmark sends them)")
    return thinking, how, (f"{identity.thinking_source} says thinking {identity.thinking}, but the {what} runs "
                           f"thinking {thinking} ({how})")


def _point(settings: Settings, store: Any, model: str, thinking: str, k: int, stated: tuple[str | None, Any]) -> \
        tuple[Any, Any]:
    """(point, refusal (verdict, reason) or None) of the curve these settings select (``stated``: the curve method
    and selectors a run states, each None where the settings decide)."""
    engine = settings.engine
    method, selectors = stated
    try:
        if method is None and settings.algorithm:
            method = store.method_for(engine, settings.algorithm, model)
    except UsageError as exc:
        return None, ("undetermined", f"draft method: {exc}")
    try:
        if selectors is None:
            selectors = registry.get_profile(engine).selectors(settings.spec, k)
    except UsageError as exc:
        return None, ("undetermined", f"curve selectors: {exc.message}")
    try:
        point = store.lookup(model, thinking, k, method=method, draft_model=settings.draft_model,
                             draft_sample_method=settings.draft_sample_method,
                             rejection_sample_method=settings.rejection_sample_method, selectors=selectors)
    except AmbiguousCurveError as exc:
        return None, ("undetermined", str(exc) if "disagree" in str(exc) else _ambiguous(store, model, method,
                                                                                                   thinking, k))
    except NoGoldenValueError as exc:
        others = sorted({sc.method for sc in store.curves_for(model)} - {method}) if method else []
        if others and not store.curves_for(model, method):
            runs = f"{engine} {settings.algorithm} runs" if settings.algorithm else f"the {engine} server ran"
            return None, ("wrong-method", f"{runs} draft method {method!r}, but the "
                                  f"golden curves of {model} are of method {', '.join(map(repr, others))} only ("
                                  + "; ".join(sc.label() for sc in store.curves_for(model))
                                  + "): a value from another method's curve is not this draft's AL")
        return None, ("no-golden", str(exc))
    except UsageError as exc:
        return None, ("undetermined", str(exc))
    try:
        if point.method and engine in registry.engine_names():  # golden-al's own reference engine has no limits
            registry.get_profile(engine).check_k(point.method, k)
    except UsageError as exc:
        return None, ("unsafe-value", exc.message)
    if not 1.0 <= point.al <= k + 1:
        return None, ("unsafe-value", f"golden AL {format_value(point.al)} at k={k} is outside [1, {k + 1}]")
    return point, None


def _ambiguous(store: Any, model: str, method: str | None, thinking: str, k: int) -> str:
    values = []
    for sc in store.curves_for(model, method):
        try:
            values.append(f"{sc.name}={format_value(store.lookup(model, thinking, k, method=method, variant=sc.name).al)}")
        except (NoGoldenValueError, UsageError):
            continue
    return ("several golden curves fit and nothing in the config tells them apart (draft model, "
            "draft_sample_method): " + ", ".join(values or ["none has this (mode, k)"]))


def derive(settings: Settings, store: Any, *, identity: Identity | None = None, store_problem: str | None = None,
           what: str = "config", method: str | None = None, selectors: Mapping[str, str] | None = None) -> Derivation:
    """The golden point of ``settings`` for the run ``identity`` (None: what the config says), or the refusal.
    ``method`` and ``selectors``: the curve method and selectors a run states about its server (a record's), used
    instead of the ones the settings' algorithm and the engine's rule give.

    Refusals, in this order: an unknown k; no store; a model that does not resolve, or that the run names differently from the config; a thinking mode that
    cannot be told or contradicts the run's; a curve method, curve or point that does not exist; a k the engine
    refuses; a golden value outside [1, k+1].
    """
    models = list(settings.models)
    if identity is not None and identity.model:
        models.append(ModelName(identity.model, identity.model_source, run=True))
    thinking, thinking_how, thinking_problem = _thinking(settings, identity, what)
    model, shown, model_how = resolve_model(models, store, [method] if method else
                                            methods_of(settings.engine, settings.algorithm))
    k = settings.draft.k
    inputs = [*getattr(settings, "inputs", ()), *(identity.inputs if identity is not None else ())]

    def done(verdict: str, reason: str, point: Any = None, at: Callable[[int], Any] | None = None) -> Derivation:
        if store is not None:  # the curves of its model (every one can change the answer), the store's listing
            inputs.extend(store.inputs(model))
        return Derivation(k, thinking, thinking_how, shown, model_how, point, verdict, reason,
                          tuple(dict.fromkeys(inputs)), at)

    if k is None:
        return done("undetermined", f"the draft length is unknown: {settings.draft.problem}")
    if store is None:
        return done("no-golden", store_problem or "no golden store")
    if model is None:
        return done("undetermined" if not models or model_how.startswith(("ambiguous", "conflicting")) else
                    "no-golden", model_how if models else "the config names no model the golden store could resolve")
    if thinking_problem is not None:
        return done("undetermined", thinking_problem)
    assert thinking is not None
    point, refusal = _point(settings, store, model, thinking, k, (method, selectors))
    if refusal is not None:
        return done(refusal[0], refusal[1])

    def at(role_k: int) -> Any:
        found, why = _point(settings, store, model, thinking, role_k, (method, selectors))
        if why is not None:
            raise NoGoldenValueError(why[1])
        return found

    reason = (f"k={k} from {settings.draft.rule}; {model_how}; thinking {thinking} ({thinking_how}); "
              f"golden {point.model} {point.thinking} k={k} = {format_value(point.al)} [{point.curve}]")
    return done("golden", reason, point, at)
