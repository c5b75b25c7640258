"""The one reader of srt-slurm recipes and InferenceX master configs.

``golden-al check`` (:mod:`golden_al.checks.yaml_configs`) and ``golden-al inject``
(:mod:`golden_al.injection`) both read recipes through :func:`read_recipe`, so they see
the same engine, worker roles, environment blocks, speculative settings, generating role
and curve inputs (draft model, ``draft_sample_method``); only what each does with them
differs (check compares, inject writes).

**srt-slurm recipes** (NVIDIA srt-slurm's ``srtctl`` schema, as used in
SemiAnalysisAI/InferenceX ``benchmarks/multi_node/srt-slurm-recipes/**`` at 843c6254f)::

    model: {path: deepseek-v4-pro, ...}
    backend:
      type: sglang                      # or vllm, trtllm
      prefill_environment: {...}        # aggregated_environment (or agg_) for one-role recipes
      decode_environment: {...}
      sglang_config:                    # vllm_config / trtllm_config
        prefill: {speculative-algorithm: EAGLE, speculative-num-steps: 3, ...}
        decode: {...}                   # or aggregated: / agg: {...}

or the sweep format: the same under ``base:`` plus ``override_*`` / ``zip_override_*``
sections that srtctl deep-merges into it, one :class:`RecipeView` per section.

**Schema 2** (InferenceX's "roles" recipes, read by its launch-time selector)::

    backend: {type: sglang}             # or framework: dynamo-sglang; else the engines' own keys tell
    roles:
      prefill: {args: {speculative-algorithm: EAGLE, ...}, env: {...}}
      decode:  {args: {...}, env: {...}}   # or agg: {...}

Each role's ``args`` are read by the engine's recipe format exactly like ``<engine>_config.<role>``,
and its ``env`` is that role's environment block.

The role that *generates* sets the golden AL of the recipe: ``decode``, else
``aggregated``, else ``prefill`` (InferenceX ``runners/synthetic_injectors/sglang.py``
writes the same value into every worker environment block; a prefill worker runs no
verify steps). Engine-specific keys come from the engine profiles (``golden_al/engines/``).

**Master configs** (InferenceX ``configs/*-master.yaml``): entries with ``framework``
(or ``image``) and ``scenarios: {<scenario>: [item, ...]}``, whose items (or their
``search-space`` lists) carry ``additional-settings: ["KEY=VALUE", ...]`` at the top or
under ``prefill`` / ``decode``: :func:`is_master`, :func:`master_settings`.

The reader works on plain data (PyYAML) and on ruamel.yaml round-trip trees alike (any
``Mapping``); locations are key paths from the document root, which each caller turns
into lines with its own loader's marks.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from golden_al import engines
from golden_al.configs.srtctl import deep_merge
from golden_al.engines.profile import RecipeFormat, Speculation

__all__ = [
    "BACKEND_TYPES",
    "CONFIG_KEYS",
    "ENV_BLOCK_RE",
    "FRAMEWORK_ENGINES",
    "GENERATING_ROLES",
    "INJECTOR_FRAMEWORKS",
    "OVERRIDE_RE",
    "ROLE_ALIASES",
    "SPEC_KEYS",
    "EnvBlock",
    "MasterSetting",
    "Recipe",
    "RecipeView",
    "RoleConfig",
    "Speculation",
    "canonical_role",
    "curve_rejection_method",
    "deep_merge",
    "detect_engine",
    "env_block_role",
    "is_master",
    "is_roles_recipe",
    "master_settings",
    "read_recipe",
    "speculation",
    "view_of",
]

#: every spelling of a worker role -> its canonical name (srtctl accepts ``agg`` for ``aggregated``)
ROLE_ALIASES: dict[str, str] = {"decode": "decode", "aggregated": "aggregated", "agg": "aggregated",
                                "prefill": "prefill"}
#: canonical roles in the order that decides which one sets the golden AL
GENERATING_ROLES: tuple[str, ...] = ("decode", "aggregated", "prefill")
#: ``<role>_environment`` keys of ``backend``: a worker role's environment
ENV_BLOCK_RE = re.compile(r"^(aggregated|agg|prefill|decode)_environment$")
#: engines with an srt-slurm recipe format (:attr:`EngineProfile.recipe`; ATOM has none), from the registry
_RECIPES: dict[str, RecipeFormat] = {p.name: p.recipe for p in map(engines.get_profile, engines.engine_names())
                                     if p.recipe is not None}
#: engine -> the backend key holding per-role engine arguments
CONFIG_KEYS: dict[str, str] = {name: r.config_key for name, r in _RECIPES.items()}
#: ``backend.type`` spellings -> engine
BACKEND_TYPES: dict[str, str] = {t: name for name, r in _RECIPES.items() for t in r.backend_types}
#: every key of a role's arguments that holds speculative settings, any engine's
SPEC_KEYS: frozenset[str] = frozenset(k for r in _RECIPES.values() for k in r.spec_keys)
#: sections of the sweep format that srtctl merges into ``base``
OVERRIDE_RE = re.compile(r"^(zip_)?override_")


def canonical_role(name: object) -> str | None:
    """``agg`` -> ``aggregated``; ``decode``/``prefill``/``aggregated`` as they are; else None."""
    return ROLE_ALIASES.get(str(name).strip().lower())


def env_block_role(key: object) -> str | None:
    """The canonical role of a ``<role>_environment`` key (``agg_environment`` -> ``aggregated``), else None."""
    m = ENV_BLOCK_RE.match(str(key))
    return canonical_role(m.group(1)) if m else None


def detect_engine(backend: Any) -> tuple[str | None, str]:
    """(engine, where it comes from): ``backend.type``, else the one ``<engine>_config`` present."""
    btype = backend.get("type") if isinstance(backend, Mapping) else backend
    if isinstance(btype, str) and btype.strip().lower() in BACKEND_TYPES:
        return BACKEND_TYPES[btype.strip().lower()], "backend.type"
    if isinstance(backend, Mapping):
        present = [e for e, key in CONFIG_KEYS.items() if key in backend]
        if len(present) == 1:
            return present[0], f"backend.{CONFIG_KEYS[present[0]]}"
    return None, "undetermined"


def _roles_engine(data: Mapping[str, Any]) -> tuple[str | None, str]:
    """The engine of a schema-2 recipe: ``backend.type`` (or ``backend: sglang``), ``framework``, else the one
    engine whose recipe format finds speculative keys in the roles' arguments."""
    detected, source = detect_engine(data.get("backend"))
    if detected is not None:
        return detected, source
    framework = data.get("framework")
    if isinstance(framework, str) and framework.strip().lower() in FRAMEWORK_ENGINES:
        return FRAMEWORK_ENGINES[framework.strip().lower()], "framework"
    roles = data.get("roles")
    found = {name for name, r in _RECIPES.items() if isinstance(roles, Mapping)
             for role in roles.values() if isinstance(role, Mapping) and isinstance(role.get("args"), Mapping)
             and any(k in role["args"] for k in r.spec_keys)}
    if len(found) == 1:
        return found.pop(), "the roles' speculative keys"
    return None, "undetermined"


def is_roles_recipe(data: Any) -> bool:
    """Whether ``data`` is a schema-2 recipe: a ``roles`` mapping of worker roles holding ``args``/``env``."""
    roles = data.get("roles") if isinstance(data, Mapping) else None
    return isinstance(roles, Mapping) and any(
        canonical_role(k) and isinstance(v, Mapping) and ("args" in v or "env" in v) for k, v in roles.items())


# ------------------------------------------------------------------ speculative settings


def speculation(engine: str | None, args: Mapping[str, Any]) -> Speculation | None:
    """The speculative settings of one role's engine arguments, as the engine's recipe format reads
    them (None: no speculative key, or an engine without a recipe format; see
    :attr:`Speculation.speculates` for whether they start speculative decoding)."""
    recipe = _RECIPES.get(engine or "")
    return recipe.read(args) if recipe is not None else None


def curve_rejection_method(value: Any) -> str | None:
    """The rejection method that chooses a golden curve: vLLM's ``rejection_sample_method``
    unless it is the value that switches synthetic acceptance on (an engine knob's ``switch_value``: the
    injected method says nothing about the real draft)."""
    from golden_al.engines import engine_names, get_profile

    switches = {k.switch_value for name in engine_names() for k in get_profile(name).check.synthetic_knobs
                if k.switch_value is not None}
    return None if value is None or value in switches else str(value)


# ---------------------------------------------------------------------------- recipes


@dataclass(frozen=True)
class RoleConfig:
    """One worker role's engine arguments (``backend.<engine>_config.<role>``)."""

    role: str  #: canonical role (decode, aggregated, prefill), else the key as written
    key: str  #: the role key as written (``agg``)
    loc: tuple[str, ...]  #: key path from the document root
    args: Mapping[str, Any]
    spec: Speculation | None  #: None when the role does not speculate


@dataclass(frozen=True)
class EnvBlock:
    """One environment block of ``backend``: ``<role>_environment``, or another key ending in
    ``environment`` (a backend-wide block, ``role`` None)."""

    role: str | None
    key: str
    loc: tuple[str, ...]
    env: Mapping[str, Any] | None  #: None for an empty (null) block


@dataclass(frozen=True)
class RecipeView:
    """A recipe as srtctl runs it: the flat recipe, ``base``, or ``base`` with one override
    section merged in."""

    engine: str | None
    engine_source: str
    #: where keys of this view are written, most specific first: ``((),)`` for a flat
    #: recipe, ``(("base",),)``, or ``((section,), ("base",))`` for a variant
    prefixes: tuple[tuple[str, ...], ...]
    variant: str | None
    data: Mapping[str, Any] = field(repr=False)
    roles: tuple[RoleConfig, ...]
    envs: tuple[EnvBlock, ...]
    model_names: tuple[str, ...]

    def role(self, name: str) -> RoleConfig | None:
        """The arguments of canonical role ``name``, if the recipe has them."""
        return next((r for r in self.roles if r.role == name), None)

    @property
    def target(self) -> RoleConfig | None:
        """The generating role that speculates: decode, else aggregated, else prefill."""
        for name in GENERATING_ROLES:
            r = self.role(name)
            if r is not None and r.spec is not None and r.spec.speculates:
                return r
        return None

    def role_for(self, role: str | None) -> RoleConfig | None:
        """The arguments a pin in ``role``'s environment is checked against: its own role's
        if they speculate (a prefill pin excepted: a prefill worker runs no verify steps),
        else the generating role's, else the first role with any arguments."""
        order = ([] if role in (None, "prefill") else [role]) + list(GENERATING_ROLES)
        order = list(dict.fromkeys(order))
        for name in order:
            r = self.role(name)
            if r is not None and r.spec is not None:
                return r
        for name in order:
            r = self.role(name)
            if r is not None and r.args:
                return r
        return None


@dataclass(frozen=True)
class Recipe:
    """An srt-slurm recipe: its base view and one view per override section."""

    #: ``()`` for a flat recipe, ``("base",)`` for the sweep format
    root: tuple[str, ...]
    base: RecipeView
    #: one per ``override_*`` / ``zip_override_*`` section, merged into ``base`` (document order)
    variants: tuple[RecipeView, ...]
    #: the override sections as written: (name, section)
    overrides: tuple[tuple[str, Mapping[str, Any]], ...]

    @property
    def engine(self) -> str | None:
        return self.base.engine

    def views(self) -> tuple[RecipeView, ...]:
        """What srtctl runs: every variant, or the base when there is none."""
        return self.variants or (self.base,)


def _model_names(root: Mapping[str, Any], roles: tuple[RoleConfig, ...]) -> tuple[str, ...]:
    names: list[str] = []

    def add(v: Any) -> None:
        if isinstance(v, str) and v.strip():
            names.append(v.strip())

    model = root.get("model")
    if isinstance(model, Mapping):
        add(model.get("path"))
    else:
        add(model)
    for r in roles:
        for k in ("served-model-name", "served_model_name", "model-path", "model_path", "model"):
            add(r.args.get(k))
    ident = root.get("identity")
    if isinstance(ident, Mapping) and isinstance(ident.get("model"), Mapping):
        add(ident["model"].get("repo"))
    return tuple(dict.fromkeys(names))


def _roles_view(data: Mapping[str, Any], prefixes: tuple[tuple[str, ...], ...], variant: str | None,
                engine: str | None) -> RecipeView:
    detected, source = (engine, "--engine") if engine is not None else _roles_engine(data)
    roles: list[RoleConfig] = []
    envs: list[EnvBlock] = []
    loc0 = (*prefixes[-1], "roles")
    for key, node in data["roles"].items():
        role = canonical_role(key)
        if role is None or not isinstance(node, Mapping) or any(r.role == role for r in roles):
            continue
        args = node.get("args")
        if isinstance(args, Mapping):
            roles.append(RoleConfig(role, str(key), (*loc0, str(key), "args"), args, speculation(detected, args)))
        env = node.get("env")
        if env is None or isinstance(env, Mapping):
            envs.append(EnvBlock(role, "env", (*loc0, str(key), "env"), env))
    return RecipeView(detected, source, prefixes, variant, data, tuple(roles), tuple(envs),
                      _model_names(data, tuple(roles)))


def view_of(data: Mapping[str, Any], *, variant: str | None = None,
            prefixes: tuple[tuple[str, ...], ...] = ((),), engine: str | None = None) -> RecipeView | None:
    """The view of one resolved config (a flat recipe, or a variant srtctl has merged), either schema;
    None when ``data`` is not a recipe."""
    if is_roles_recipe(data):
        return _roles_view(data, prefixes, variant, engine)
    if isinstance(data.get("backend"), Mapping):
        return _view(data, prefixes, variant, engine)
    return None


def _view(data: Mapping[str, Any], prefixes: tuple[tuple[str, ...], ...], variant: str | None,
          engine: str | None) -> RecipeView:
    if is_roles_recipe(data):
        return _roles_view(data, prefixes, variant, engine)
    backend = data.get("backend")
    detected, source = detect_engine(backend)
    if engine is not None:
        detected, source = engine, "--engine"
    roles: list[RoleConfig] = []
    envs: list[EnvBlock] = []
    loc0 = (*prefixes[-1], "backend")
    if isinstance(backend, Mapping):
        cfg_key = CONFIG_KEYS.get(detected or "")
        role_map = backend.get(cfg_key) if cfg_key else None
        if isinstance(role_map, Mapping):
            for key, args in role_map.items():
                role = canonical_role(key) or str(key)
                if isinstance(args, Mapping) and all(r.role != role for r in roles):
                    roles.append(RoleConfig(role, str(key), (*loc0, str(cfg_key), str(key)), args,
                                            speculation(detected, args)))
        for key, value in backend.items():
            skey = str(key)
            if not skey.endswith("environment") or not (value is None or isinstance(value, Mapping)):
                continue
            envs.append(EnvBlock(env_block_role(skey), skey, (*loc0, skey), value))
    return RecipeView(detected, source, prefixes, variant, data, tuple(roles), tuple(envs),
                      _model_names(data, tuple(roles)))


def read_recipe(data: Any, *, engine: str | None = None) -> Recipe | None:
    """The srt-slurm recipe in ``data`` (a parsed document), or None if it is not one.

    ``engine`` replaces the detected engine (``inject --engine``).
    """
    if not isinstance(data, Mapping):
        return None
    if isinstance(data.get("backend"), Mapping) or is_roles_recipe(data):
        return Recipe((), _view(data, ((),), None, engine), (), ())
    base = data.get("base")
    if not isinstance(base, Mapping) or not (isinstance(base.get("backend"), Mapping) or is_roles_recipe(base)):
        return None
    overrides = tuple((str(k), v) for k, v in data.items() if OVERRIDE_RE.match(str(k)) and isinstance(v, Mapping))
    base_view = _view(base, (("base",),), None, engine)
    variants = tuple(_view(deep_merge(base, over), ((name,), ("base",)), name, engine) for name, over in overrides)
    return Recipe(("base",), base_view, variants, overrides)


# ----------------------------------------------------------------------- master configs


def is_master(data: Any) -> bool:
    """Whether ``data`` is an InferenceX master config (entries with ``scenarios``)."""
    if not isinstance(data, Mapping):
        return False
    return any(isinstance(v, Mapping) and isinstance(v.get("scenarios"), Mapping) and ("framework" in v or "image" in v)
               for v in data.values())


_SETTING = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*?)\s*$")
#: master-config ``framework`` -> engine (InferenceX ``configs/*-master.yaml`` at 843c6254f)
FRAMEWORK_ENGINES: dict[str, str] = {f: p.name for p in map(engines.get_profile, engines.engine_names())
                                     for f in p.frameworks}
#: frameworks whose synthetic-acceptance injector InferenceX registers (``runners/synthetic_injectors/__init__.py``)
INJECTOR_FRAMEWORKS: tuple[str, ...] = ("dynamo-sglang", "dynamo-vllm")


@dataclass(frozen=True)
class MasterSetting:
    """One search-space point of a master-config entry and its ``additional-settings``."""

    entry: str
    data: Mapping[str, Any] = field(repr=False)  #: the entry
    framework: str
    scenario: str
    #: key path of the point from the document root
    loc: tuple[str, ...]
    #: KEY -> (VALUE, key path of its list item); the first setting of a key wins
    settings: dict[str, tuple[str, tuple[str, ...]]]

    @property
    def engine(self) -> str | None:
        """The engine the entry's ``framework`` runs (None when unknown)."""
        return FRAMEWORK_ENGINES.get(self.framework.lower())


def point_settings(point: Any, loc: tuple[str, ...]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """``KEY=VALUE`` items of a point's ``additional-settings`` (top, then prefill, decode)."""
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    if not isinstance(point, Mapping):
        return out
    for sub in ("", "prefill", "decode"):
        node = point.get(sub) if sub else point
        sp = (*loc, sub) if sub else loc
        if not isinstance(node, Mapping):
            continue
        items = node.get("additional-settings")
        if not isinstance(items, list):
            continue
        for i, s in enumerate(items):
            if isinstance(s, str) and (m := _SETTING.match(s)):
                out.setdefault(m.group(1), (m.group(2), (*sp, "additional-settings", str(i))))
    return out


def master_settings(data: Any) -> Iterator[MasterSetting]:
    """Every search-space point of every entry of a master config, in document order."""
    if not isinstance(data, Mapping):
        return
    for entry_name, entry in data.items():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("scenarios"), Mapping):
            continue
        framework = str(entry.get("framework", ""))
        for scenario, items in entry["scenarios"].items():
            if not isinstance(items, list):
                continue
            for i, item in enumerate(items):
                if not isinstance(item, Mapping):
                    continue
                space = item.get("search-space")
                points: list[tuple[Any, tuple[str, ...]]]
                base = (str(entry_name), "scenarios", str(scenario), str(i))
                if isinstance(space, list):
                    points = [(p, (*base, "search-space", str(j))) for j, p in enumerate(space)]
                else:
                    points = [(item, base)]
                for point, loc in points:
                    yield MasterSetting(str(entry_name), entry, framework, str(scenario), loc,
                                        point_settings(point, loc))
