"""The one reader of srt-slurm recipes and InferenceX master configs (plain PyYAML data or ruamel trees alike;
locations are key paths from the document root, which each caller turns into lines).

**srt-slurm recipes** (NVIDIA srt-slurm's ``srtctl`` schema; InferenceX 843c6254f
``benchmarks/multi_node/srt-slurm-recipes/**``), flat or as ``base:`` plus ``override_*``/``zip_override_*``
sections, one :class:`RecipeView` per variant srtctl runs::

    model: {path: deepseek-v4-pro}
    environment: {...}                  # recipe-wide: srtctl applies it after every role's own
    backend:
      type: sglang                      # or vllm, trtllm
      decode_environment: {...}         # prefill_, aggregated_ (agg_)
      sglang_config: {prefill: {...}, decode: {speculative-algorithm: EAGLE, ...}}   # vllm_config, trtllm_config

**Roles recipes** (schema 2, read by InferenceX's launch-time selector): ``roles: {prefill|decode|agg: {args, env,
engine}}``, each ``args`` read by its engine's recipe format (:attr:`~golden_al.plugin.profile.EngineProfile.recipe`)
like ``<engine>_config.<role>``; a role's engine is its ``engine`` (a name or ``{type: ...}``), else the recipe's
(``backend.type``, ``engine``, ``framework``, else the one engine whose keys its roles hold).

The generating role sets the golden AL: ``decode``, else ``aggregated``, else ``prefill``. **Master configs**
(InferenceX ``configs/*-master.yaml``): entries with ``framework`` and ``scenarios``, whose points carry
``additional-settings: ["KEY=VALUE", ...]`` (:func:`master_settings`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from golden_al.plugin import registry
from golden_al.plugin.pins import ModelName
from golden_al.plugin.profile import RecipeFormat, Record, Speculation
from golden_al.recipes.srtctl import expand_variants

__all__ = [
    "ENV_BLOCK_RE",
    "GENERATING_ROLES",
    "INJECTOR_FRAMEWORKS",
    "OVERRIDE_RE",
    "WIDE_ENV",
    "EnvBlock",
    "MasterSetting",
    "Recipe",
    "RecipeView",
    "RoleConfig",
    "canonical_role",
    "config_keys",
    "curve_rejection_method",
    "engine_named",
    "env_block_role",
    "is_master",
    "is_roles_recipe",
    "master_settings",
    "read_recipe",
    "recipe_document",
    "recipe_formats",
    "relevant_duplicates",
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
#: the recipe-wide environment block, which srtctl applies to every worker *after* the role's own environment
#: (NVIDIA/srt-slurm ``src/srtctl/cli/mixins/worker_stage.py`` at c88ef731: the backend's per-mode environment,
#: then ``runtime.environment``)
WIDE_ENV = "environment"
#: sections of the sweep format that srtctl merges into ``base``
OVERRIDE_RE = re.compile(r"^(zip_)?override_")


@lru_cache(maxsize=1)
def recipe_formats() -> dict[str, RecipeFormat]:
    """Engine -> its srt-slurm recipe format (:attr:`EngineProfile.recipe`), every registered engine that has one."""
    return {p.name: p.recipe for p in map(registry.get_profile, registry.engine_names()) if p.recipe is not None}


def config_keys() -> dict[str, str]:
    """Engine -> the backend key holding its per-role arguments (``sglang_config``)."""
    return {name: r.config_key for name, r in recipe_formats().items() if r.config_key is not None}


def engine_named(name: object) -> str | None:
    """The engine a recipe or a run names (``backend.type``, a role's ``engine``, InferenceX's ``framework``): an
    engine name, one of its ``backend_types`` or ``frameworks`` spellings (case-insensitive); None when unknown."""
    text = str(name).strip().lower()
    for engine in registry.engine_names():
        profile = registry.get_profile(engine)
        recipe = profile.recipe
        if text == engine or text in profile.frameworks or (recipe is not None and text in recipe.backend_types):
            return engine
    return None


def canonical_role(name: object) -> str | None:
    """``agg`` -> ``aggregated``; ``decode``/``prefill``/``aggregated`` as they are; else None."""
    return ROLE_ALIASES.get(str(name).strip().lower())


def env_block_role(key: object) -> str | None:
    """The canonical role of a ``<role>_environment`` key (``agg_environment`` -> ``aggregated``), else None."""
    m = ENV_BLOCK_RE.match(str(key))
    return canonical_role(m.group(1)) if m else None


def _engine_of(node: Any) -> str | None:
    """The engine a ``type`` string, or a mapping with ``type``, names."""
    value = node.get("type") if isinstance(node, Mapping) else node
    return engine_named(value) if isinstance(value, str) else None


def detect_engine(backend: Any) -> tuple[str | None, str]:
    """(engine, where it comes from): ``backend.type``, else the one ``<engine>_config`` present."""
    found = _engine_of(backend)
    if found is not None:
        return found, "backend.type"
    if isinstance(backend, Mapping):
        present = [e for e, key in config_keys().items() if key in backend]
        if len(present) == 1:
            return present[0], f"backend.{config_keys()[present[0]]}"
    return None, "undetermined"


def _roles_engine(data: Mapping[str, Any]) -> tuple[str | None, str]:
    """The engine of a schema-2 recipe: ``backend.type`` (or ``backend: sglang``), the recipe's ``engine``,
    ``framework``, else the one engine whose recipe format finds speculative keys in the roles' arguments."""
    detected, source = detect_engine(data.get("backend"))
    if detected is not None:
        return detected, source
    for key in ("engine", "framework"):
        if (found := _engine_of(data.get(key))) is not None:
            return found, key
    roles = data.get("roles")
    found_set = {name for name, r in recipe_formats().items() if isinstance(roles, Mapping)
                 for role in roles.values() if isinstance(role, Mapping) and isinstance(role.get("args"), Mapping)
                 and any(k in role["args"] for k in r.spec_keys)}
    if len(found_set) == 1:
        return found_set.pop(), "the roles' speculative keys"
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
    recipe = recipe_formats().get(engine or "")
    return recipe.read(args) if recipe is not None else None


def curve_rejection_method(value: Any) -> str | None:
    """The rejection method that chooses a golden curve: vLLM's ``rejection_sample_method``
    unless it is the value that switches synthetic acceptance on (an engine knob's ``switch_value``: the
    injected method says nothing about the real draft)."""
    switches = {k.switch_value for name in registry.engine_names()
                for k in registry.get_profile(name).check.synthetic_knobs if k.switch_value is not None}
    return None if value is None or value in switches else str(value)


# ---------------------------------------------------------------------------- recipes


@dataclass(frozen=True, eq=False, repr=False)
class RoleConfig(Record):
    """One worker role's engine arguments (``backend.<engine>_config.<role>``, or ``roles.<role>.args``)."""

    role: str  #: canonical role (decode, aggregated, prefill), else the key as written
    key: str  #: the role key as written (``agg``)
    loc: tuple[str, ...]  #: key path from the document root
    args: Mapping[str, Any]
    spec: Speculation | None  #: None when the role does not speculate
    #: the engine that runs the role: a roles recipe's ``roles.<r>.engine`` (a name or a mapping with ``type``), else
    #: the recipe's; None when golden-al does not know it
    engine: str | None = None
    engine_source: str = ""


@dataclass(frozen=True, eq=False, repr=False)
class EnvBlock(Record):
    """One environment block: ``<role>_environment`` (or ``roles.<r>.env``), another key of ``backend`` ending in
    ``environment`` (backend-wide, ``role`` None), or the recipe-wide :data:`WIDE_ENV` (``wide``)."""

    role: str | None
    key: str
    loc: tuple[str, ...]
    env: Mapping[str, Any] | None  #: None for an empty (null) block

    @property
    def wide(self) -> bool:
        """Whether this is the recipe-wide block, applied after every role's own (srtctl's precedence)."""
        return self.loc[-1:] == (WIDE_ENV,) and self.key == WIDE_ENV


@dataclass(frozen=True, eq=False, repr=False)
class RecipeView(Record):
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
    models: tuple[ModelName, ...]

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
        order = list(dict.fromkeys(([] if role in (None, "prefill") else [role]) + list(GENERATING_ROLES)))
        for name in order:
            r = self.role(name)
            if r is not None and r.spec is not None:
                return r
        for name in order:
            r = self.role(name)
            if r is not None and r.args:
                return r
        return None


@dataclass(frozen=True, eq=False, repr=False)
class Recipe(Record):
    """An srt-slurm recipe: its base view and one view per variant srtctl runs."""

    #: ``()`` for a flat recipe, ``("base",)`` for the sweep format
    root: tuple[str, ...]
    base: RecipeView
    #: one per variant srtctl runs (:func:`~golden_al.recipes.srtctl.expand_variants`)
    variants: tuple[RecipeView, ...]
    #: the override sections as written: (name, section)
    overrides: tuple[tuple[str, Mapping[str, Any]], ...]

    @property
    def engine(self) -> str | None:
        return self.base.engine

    def views(self) -> tuple[RecipeView, ...]:
        """What srtctl runs: every variant, or the base when there is none."""
        return self.variants or (self.base,)


def _models(root: Mapping[str, Any], roles: tuple[RoleConfig, ...]) -> tuple[ModelName, ...]:
    """The names the recipe gives its model, most specific first: each role's served name, the identity's repo,
    ``model.path``, the benchmark's environment."""
    out: dict[str, ModelName] = {}

    def add(value: Any, source: str) -> None:
        if isinstance(value, str) and value.strip() and value.strip() not in out:
            out[value.strip()] = ModelName(value.strip(), source)

    for name in GENERATING_ROLES:
        rc = next((r for r in roles if r.role == name), None)
        args = rc.args if rc is not None else {}
        add(args.get("served-model-name") or args.get("served_model_name"), f"{name} served-model-name")
    ident = root.get("identity")
    if isinstance(ident, Mapping) and isinstance(ident.get("model"), Mapping):
        add(ident["model"].get("repo"), "identity.model.repo")
    model = root.get("model")
    add(model.get("path") if isinstance(model, Mapping) else model, "model.path" if isinstance(model, Mapping)
        else "model")
    for rc in roles:
        for key in ("model-path", "model_path", "model"):
            add(rc.args.get(key), f"{rc.role} {key}")
    bench = root.get("benchmark")
    benv = bench.get("env") if isinstance(bench, Mapping) else None
    if isinstance(benv, Mapping):
        for key in ("SERVED_MODEL_NAME", "MODEL", "MODEL_PREFIX"):
            add(benv.get(key), f"benchmark.env.{key}")
    return tuple(out.values())


def _wide_env(data: Mapping[str, Any], prefix: tuple[str, ...]) -> list[EnvBlock]:
    env = data.get(WIDE_ENV)
    return [EnvBlock(None, WIDE_ENV, (*prefix, WIDE_ENV), env)] if (env is None and WIDE_ENV in data) or \
        isinstance(env, Mapping) else []


def _role_engine(node: Mapping[str, Any], data: Mapping[str, Any], default: str | None,
                 source: str) -> tuple[str | None, str]:
    """A role's engine: its own ``engine`` (a name or a mapping with ``type``), else the recipe's ``engine``, else
    ``default`` (SemiAnalysisAI/InferenceX ``infx/srt_slurm/synthetic_acceptance.py``, the version with TileRT)."""
    for where, value in (("engine", node.get("engine")), ("the recipe's engine", data.get("engine"))):
        if value is not None:
            found = _engine_of(value)
            name = value.get("type") if isinstance(value, Mapping) else value
            return found, where if found is not None else f"unknown engine {name!r} ({where})"
    return default, source


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
        own, own_source = _role_engine(node, data, detected, source)
        if isinstance(args, Mapping):
            roles.append(RoleConfig(role, str(key), (*loc0, str(key), "args"), args, speculation(own, args), own,
                                    own_source))
        env = node.get("env")
        if env is None or isinstance(env, Mapping):
            envs.append(EnvBlock(role, "env", (*loc0, str(key), "env"), env))
    envs += _wide_env(data, prefixes[-1])
    return RecipeView(detected, source, prefixes, variant, data, tuple(roles), tuple(envs),
                      _models(data, tuple(roles)))


def view_of(data: Mapping[str, Any], *, variant: str | None = None,
            prefixes: tuple[tuple[str, ...], ...] = ((),), engine: str | None = None) -> RecipeView | None:
    """The view of one resolved config (a flat recipe, or a variant srtctl has merged), either schema;
    None when ``data`` is not a recipe."""
    if is_roles_recipe(data):
        return _roles_view(data, prefixes, variant, engine)
    if not isinstance(data.get("backend"), Mapping):
        return None
    backend = data["backend"]
    detected, source = (engine, "--engine") if engine is not None else detect_engine(backend)
    roles: list[RoleConfig] = []
    envs: list[EnvBlock] = []
    loc0 = (*prefixes[-1], "backend")
    cfg_key = config_keys().get(detected or "")
    role_map = backend.get(cfg_key) if cfg_key else None
    if isinstance(role_map, Mapping):
        for key, args in role_map.items():
            role = canonical_role(key) or str(key)
            if isinstance(args, Mapping) and all(r.role != role for r in roles):
                roles.append(RoleConfig(role, str(key), (*loc0, str(cfg_key), str(key)), args,
                                        speculation(detected, args), detected, source))
    for key, value in backend.items():
        skey = str(key)
        if skey.endswith("environment") and (value is None or isinstance(value, Mapping)):
            envs.append(EnvBlock(env_block_role(skey), skey, (*loc0, skey), value))
    envs += _wide_env(data, prefixes[-1])
    return RecipeView(detected, source, prefixes, variant, data, tuple(roles), tuple(envs),
                      _models(data, tuple(roles)))


def read_recipe(data: Any, *, engine: str | None = None) -> Recipe | None:
    """The srt-slurm recipe in ``data`` (a parsed document), or None if it is not one: its base and every variant
    srtctl runs (:func:`~golden_al.recipes.srtctl.expand_variants`, bounded by its cap).

    ``engine`` replaces the detected engine (``inject --engine``).

    Raises:
        UsageError: variant sections srtctl refuses, or more variants than the cap.
    """
    if not isinstance(data, Mapping):
        return None
    flat = view_of(data, engine=engine)
    if flat is not None:
        return Recipe((), flat, (), ())
    base = data.get("base")
    base_view = view_of(base, prefixes=(("base",),), engine=engine) if isinstance(base, Mapping) else None
    if base_view is None:
        return None
    overrides = tuple((str(k), v) for k, v in data.items() if OVERRIDE_RE.match(str(k)) and isinstance(v, Mapping))
    if not overrides:
        return Recipe(("base",), base_view, (), ())
    variants = []
    for v in expand_variants(data):
        view = view_of(v.data, variant=v.selector, prefixes=((str(v.section),), ("base",)), engine=engine)
        if view is not None:
            variants.append(view)
    return Recipe(("base",), base_view, tuple(variants), overrides)


@lru_cache(maxsize=1)
def _duplicate_rule() -> re.Pattern[str]:
    return re.compile(r"^(speculative[-_].*|(aggregated|agg|prefill|decode)(_environment)?|backend|type|model|path|"
                      r"engine|served[-_]model[-_]name|model[-_]path|base|roles|args|env|environment|(zip_)?override_.*|"
                      + "|".join(re.escape(k) for k in sorted({*config_keys().values(),
                                                               *(k for r in recipe_formats().values()
                                                                 for k in r.spec_keys), *registry.env_knobs()}))
                      + ")$")


def relevant_duplicates(repeated: Sequence[tuple[str, int]]) -> list[tuple[str, int]]:
    """The repeated keys golden-al reads or writes in a recipe (speculative settings, roles, environment blocks,
    model names, every engine's knobs): srtctl (PyYAML) keeps the last value, ruamel and a reviewer the first. One
    rule for check, select and inject: another key repeated (InferenceX's minimax-m3 recipes repeat
    ``VLLM_MINIMAX_M3_MSA_DECODE_BACKEND``) is read by none of them and left as srtctl reads it."""
    rule = _duplicate_rule()
    return [(k, line) for k, line in repeated if rule.match(k)]


def recipe_document(text: str, path: Any) -> tuple[Mapping[str, Any], Any]:
    """(data, composed node) of a recipe's one YAML mapping (``select`` plans the data, ``inject`` edits the text at
    the node's marks).

    Raises:
        InputFileError: not valid YAML, not one mapping, or a repeated key golden-al reads or writes (srtctl, PyYAML,
            keeps the last value; a reviewer reads the first).
    """
    from golden_al import safeio
    from golden_al.errors import InputFileError

    try:
        docs = safeio.load_yaml_documents(text)
    except InputFileError as exc:
        raise InputFileError(exc.problem, path=path, line=exc.line) from None
    if len(docs) != 1 or not isinstance(docs[0][0], Mapping):
        raise InputFileError("a recipe is one YAML mapping", path=path, line=1)
    dups = relevant_duplicates(safeio.repeated_keys(docs[0][1]))
    if dups:
        raise InputFileError(f"duplicate key {dups[0][0]!r}: srtctl keeps the last value, which is easy to miss",
                             path=path, line=dups[0][1], hint="delete one of them")
    return docs[0]


# ----------------------------------------------------------------------- master configs


def is_master(data: Any) -> bool:
    """Whether ``data`` is an InferenceX master config (entries with ``scenarios``)."""
    if not isinstance(data, Mapping):
        return False
    return any(isinstance(v, Mapping) and isinstance(v.get("scenarios"), Mapping) and ("framework" in v or "image" in v)
               for v in data.values())


_SETTING = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*?)\s*$")
#: master-config ``framework`` -> engine (InferenceX ``configs/*-master.yaml`` at 843c6254f)
FRAMEWORK_ENGINES: dict[str, str] = {f: p.name for p in map(registry.get_profile, registry.engine_names())
                                     for f in p.frameworks}
#: frameworks whose synthetic-acceptance injector InferenceX registers (``runners/synthetic_injectors/__init__.py``)
INJECTOR_FRAMEWORKS: tuple[str, ...] = ("dynamo-sglang", "dynamo-vllm")


@dataclass(frozen=True, eq=False, repr=False)
class MasterSetting(Record):
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
