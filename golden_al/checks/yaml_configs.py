"""Pins in YAML and JSON: srt-slurm recipes, InferenceX master configs, generic env maps.

* **srt-slurm recipes** (read by :mod:`golden_al.recipes.srt_slurm`, every variant srtctl runs): each pin in a
  role's environment, the recipe-wide environment, a role's speculative config or server flags is judged by the
  recipe's derivation (:func:`golden_al.recipes.derive.role_settings`), the one ``select`` writes.
* **Master configs** (InferenceX ``configs/*-master.yaml``): ``SYNTHETIC_ACCEPTANCE_LENGTH=AL`` in a point's
  ``additional-settings``, injected by ``runners/inject_synthetic_acceptance.py`` into the recipe its
  ``CONFIG_FILE=recipes/...`` names (``benchmarks/multi_node/srt-slurm-recipes/...``), which holds k.
* Anything else: a mapping key naming a knob (``SGLANG_SIMULATE_ACC_LEN: "2.49"``), ``KEY=VALUE`` list items,
  ``{name: KEY, value: V}`` env lists and ``speculative-config`` JSON strings or mappings; and the knobs of engines
  whose profile declares a ``command_line`` (llama.cpp) (:mod:`golden_al.checks.command_lines`).

This module adds what only ``check`` needs: line numbers (PyYAML's composer), and the pins themselves.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from golden_al.checks.command_lines import command_line_pins
from golden_al.errors import GoldenALError, UnreadableInputError
from golden_al.knobs.names import MASTER_LENGTH_KEY, env_pin_context
from golden_al.plugin.pins import AgenticInfo, DraftInfo, ModelName, Pin, ThinkingSignal
from golden_al.plugin.registry import engine_names, env_knobs, get_profile, load_hook
from golden_al.plugin.values import scalar_text
from golden_al.prompts.thinking import is_thinking_setting, thinking_from_setting
from golden_al.recipes.derive import (
    RecipeFacts,
    RoleSettings,
    agentic_from_path,
    agentic_from_scenario,
    recipe_facts,
    role_of,
    role_settings,
    walk,
)
from golden_al.recipes.srt_slurm import (
    INJECTOR_FRAMEWORKS,
    OVERRIDE_RE,
    WIDE_ENV,
    EnvBlock,
    MasterSetting,
    RecipeView,
    is_master,
    master_settings,
    read_recipe,
    recipe_formats,
    speculation,
)
from golden_al.safeio import load_json, load_yaml_documents, repeated_keys
from golden_al.safeio.inputs import Input, shown_path

__all__ = [
    "MasterRef",
    "YamlDoc",
    "YamlError",
    "clear_path_cache",
    "extract_json_pins",
    "extract_yaml_pins",
    "load_yaml_docs",
    "master_refs",
    "recipe_contexts",
    "recipe_path_candidates",
    "resolve_recipe_path",
    "shadowed_lines",
]

class YamlError(GoldenALError):
    """A YAML file that does not parse (with the 1-based line of the problem)."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


@dataclass
class YamlDoc:
    """One parsed document and the line of every mapping key / sequence item path."""

    data: Any
    _lines: dict[tuple[str, ...], int] | None = field(default=None, repr=False)
    _walked: list[tuple[tuple[str, ...], Any]] | None = field(default=None, repr=False, compare=False)
    #: PyYAML's node graph of the document (decoded keys and scalars with their marks), for the census
    node: Any = field(default=None, repr=False, compare=False)

    @property
    def lines(self) -> dict[tuple[str, ...], int]:
        """The line of every mapping key / sequence item path, indexed from :attr:`node` when first asked for
        (most documents of a check never are)."""
        if self._lines is None:
            self._lines = _index_lines(self.node, (), {}) if self.node is not None else {}
        return self._lines

    def walk(self) -> list[tuple[tuple[str, ...], Any]]:
        """:func:`_walk` of the document, computed once (every rule walks the same tree)."""
        if self._walked is None:
            self._walked = walk(self.data)
        return self._walked

    def line(self, path: tuple[str, ...], default: int = 1) -> int:
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return default


def _index_lines(node: yaml.Node, path: tuple[str, ...], out: dict[tuple[str, ...], int],
                 depth: int = 0) -> dict[tuple[str, ...], int]:
    if depth > 200:
        return out
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = str(k.value) if isinstance(k, yaml.ScalarNode) else "?"
            p = (*path, key)
            out.setdefault(p, k.start_mark.line + 1)
            _index_lines(v, p, out, depth + 1)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            p = (*path, str(i))
            out.setdefault(p, item.start_mark.line + 1)
            _index_lines(item, p, out, depth + 1)
    return out


def load_yaml_docs(text: str) -> list[YamlDoc]:
    """Every document of a YAML text with key lines.

    Raises:
        YamlError: the text is not YAML (message and line of the problem).
    """
    from golden_al.recipes.srt_slurm import relevant_duplicates

    try:
        docs: list[YamlDoc] = []
        for data, node in load_yaml_documents(text):  # bounded: depth, alias budget, safe tags
            if node is None:
                continue
            for key, line in relevant_duplicates(repeated_keys(node)):  # last-wins hides the first
                raise YamlError(f"the key {key!r} appears twice in one mapping: PyYAML (srtctl) keeps the last "
                                "value, a reviewer reads the first, so neither is checked", line)
            docs.append(YamlDoc(data, node=node))
        return docs
    except UnreadableInputError as exc:
        raise YamlError(exc.problem, exc.line) from None
    except (RecursionError, ValueError, TypeError) as exc:
        raise YamlError(f"not valid YAML ({type(exc).__name__})", None) from None


# ------------------------------------------------------------------------ recipes


@dataclass(frozen=True)
class MasterRef:
    """A master-config entry that runs a recipe (its CONFIG_FILE)."""

    entry: str
    framework: str
    model: str | None
    model_prefix: str | None
    scenario: str
    agentic: AgenticInfo


def recipe_contexts(doc: YamlDoc, path: str, refs: list[MasterRef] | None = None) -> list[RecipeFacts]:
    """The facts of every view of a document: one for a plain recipe, one per variant srtctl runs of a ``base:``
    recipe (srt-slurm's sweep format); empty if not a recipe (:func:`golden_al.recipes.srt_slurm.read_recipe`)."""
    recipe = read_recipe(doc.data)
    if recipe is None:
        return []
    return [recipe_facts(view, path, lines=doc.lines, walked=doc.walk() if view.data is doc.data else None,
                         refs=refs or ()) for view in recipe.views()]


def _settle(pin: Pin, settings: RoleSettings) -> Pin:
    """``pin`` judged by the recipe's derivation (:func:`golden_al.recipes.derive.role_settings`): the settings
    ``select`` writes the golden point of, and the problems it refuses for."""
    pin.algorithm, pin.draft, pin.thinking = settings.algorithm, settings.draft, settings.thinking
    pin.models, pin.draft_model, pin.agentic = settings.models, settings.draft_model, settings.agentic
    pin.draft_sample_method = settings.draft_sample_method
    pin.rejection_sample_method = settings.rejection_sample_method
    pin.spec.update(settings.spec)
    pin.problems.extend(p for p in settings.problems if p not in pin.problems)
    return pin


def _env_pins(ctx: RecipeFacts) -> list[Pin]:
    """The pins in the environment blocks of a view: each role's, and the recipe-wide block, which srtctl applies
    after the role's (a role's value it sets too is overridden, and said so). A pin in a role its engine does not
    simulate in (:func:`_not_read_there`) is ``unsafe-value``."""
    pins: list[Pin] = []
    envs: dict[tuple[str | None, bool], EnvBlock] = {}
    for block in ctx.view.envs:  # one block per role; a later key of the same role wins
        if isinstance(block.env, Mapping):
            envs[block.role, block.wide] = block
    wide = envs.get((None, True))
    for (role, _), block in envs.items():
        env = block.env
        assert env is not None
        for spelling, env_knob in env_knobs().items():
            if spelling not in env or (env_knob.legacy and env_knob.knob.name in env):
                continue
            raw = scalar_text(env[spelling])
            pin = _settle(Pin(file=ctx.path, line=ctx.loc_line((*block.loc, spelling)), engine=env_knob.engine,
                              knob=spelling, raw_value=raw,
                              unresolved=None if raw is not None else f"{spelling} has no scalar value"),
                          role_settings(ctx, env_knob.engine, role))
            pin.notes.append(f"{block.key} of an srt-slurm recipe" + (f" ({ctx.view.variant})" if ctx.view.variant else ""))
            pin.spec["role"] = role
            if block.wide:
                pin.notes.append("the recipe-wide environment: srtctl applies it to every worker after the role's own, "
                                 "so it is checked against the generating worker's draft length")
            elif wide is not None and spelling in (wide.env or {}):
                pin.notes.append(f"overridden by the recipe-wide {'.'.join(wide.loc)}.{spelling} (srtctl applies the "
                                 "recipe-wide environment after the role's)")
            elif role == "prefill":
                pin.notes.append("a prefill worker runs no verify steps: its value is checked against the decode "
                                 "worker's draft length")
            if not block.wide and (why := _not_read_there(ctx.view, role, env_knob.engine)) is not None:
                pin.problems.append(("unsafe-value", f"{spelling} in {'.'.join(block.loc)}: {why}, so nothing proves "
                                                     "what it does there (select unsets it)"))
            companions, spec = env_pin_context(env_knob, functools.partial(_env_value, env))
            pin.companions.update(companions)
            pin.spec.update(spec)
            pins.append(pin)
    return pins


def _not_read_there(view: RecipeView, role: str | None, engine: str) -> str | None:
    """Why worker ``role`` does not simulate ``engine``'s pin in its environment: another engine runs the role, or
    the engine simulates only in other roles (:attr:`~golden_al.plugin.profile.RecipeFormat.simulated_roles`); None:
    it may."""
    rc = view.role(role) if role is not None else None
    profile = get_profile(engine)
    if rc is not None and rc.engine is not None and rc.engine != engine:
        return f"the {role} role runs {get_profile(rc.engine).display_name}, not {profile.display_name}"
    fmt = profile.recipe
    if role is not None and fmt is not None and fmt.simulated_roles and role not in fmt.simulated_roles:
        return f"{profile.display_name} simulates only in the {'/'.join(fmt.simulated_roles)} role"
    return None


def _arg_pins(ctx: RecipeFacts) -> list[Pin]:
    """The pins in a role's arguments, for an engine that takes its synthetic settings as server flags there
    (:attr:`~golden_al.plugin.profile.RecipeFormat.inject_into` ``args``: ATOM's ``spec-decode-acceptance-length``);
    each is checked against its own role's draft length (the server validates its own value)."""
    pins: list[Pin] = []
    for rc in ctx.view.roles:
        fmt = recipe_formats().get(rc.engine or "")
        if fmt is None or fmt.inject_into != "args":
            continue
        assert rc.engine is not None
        for knob in get_profile(rc.engine).check.synthetic_knobs:
            key = knob.name.lstrip("-")
            found = next((k for k in dict.fromkeys((key, key.replace("-", "_"))) if k in rc.args), None)
            if knob.kind != "flag" or found is None:
                continue
            raw = scalar_text(rc.args[found])
            pin = _settle(Pin(file=ctx.path, line=ctx.loc_line((*rc.loc, found)), engine=rc.engine, knob=knob.name,
                              raw_value=raw, unresolved=None if raw is not None else f"{found} has no scalar value"),
                          role_settings(ctx, rc.engine, rc.role, own=True))
            pin.notes.append(f"{'.'.join(rc.loc)}.{found}, a server flag of the {rc.role} role")
            pins.append(pin)
    return pins


def _env_value(env: Mapping[str, Any], name: str) -> str | None:
    """The scalar text of ``name`` in an environment block (None: unset or not a scalar)."""
    return scalar_text(env[name]) if name in env else None


@functools.lru_cache(maxsize=1)
def _config_pin_readers() -> tuple[tuple[frozenset[str], Any], ...]:
    """Each engine whose knobs sit inside a speculative config: (its config keys, its ``recipe.config_pin``)."""
    out = []
    for name in engine_names():
        recipe = get_profile(name).recipe
        if recipe is not None and recipe.config_pin is not None:
            out.append((frozenset(recipe.spec_keys), load_hook(recipe.config_pin)))
    return tuple(out)


def _config_pin(key: Any, path: str, line: int, value: Any, models: list[ModelName], thinking_for: Any,
                agentic: AgenticInfo, role: str | None) -> Pin | None:
    """The pin an engine reads in a speculative config under ``key`` (vLLM's), or None."""
    for keys, read in _config_pin_readers():
        if key in keys:
            pin: Pin | None = read(path, line, value, models, thinking_for, agentic, role)
            return pin
    return None


@functools.lru_cache(maxsize=1)
def _config_keys() -> frozenset[str]:
    """Every key a config-held knob sits under (asked at each node of a walk: computed once)."""
    return frozenset(k for keys, _ in _config_pin_readers() for k in keys)


def _recipe_vllm_pins(ctx: RecipeFacts) -> list[Pin]:
    """The pins in the speculative config of every role of a recipe view (engines that keep their knobs there), each
    checked against its own role's settings (each server validates its own config)."""
    pins: list[Pin] = []
    for rc in ctx.view.roles:
        for p, v in walk(rc.args):
            if not p or p[-1] not in _config_keys():
                continue
            pin = _config_pin(p[-1], ctx.path, ctx.loc_line((*rc.loc, *p)), v, ctx.models, ctx.thinking_for,
                              ctx.agentic, rc.role)
            if pin is not None:
                if isinstance(v, dict):
                    pin.covers = tuple(ctx.loc_line((*rc.loc, *p, str(k))) for k in v)
                pins.append(_settle(pin, role_settings(ctx, pin.engine, rc.role, own=True)) if len(p) == 1 else pin)
    return pins


def _vllm_pins_in(ctx_path: str, doc: YamlDoc, data: Any, models: list[ModelName],
                  thinking_for: Any, agentic: AgenticInfo) -> list[Pin]:
    """The pins in every speculative config of a document that is not a recipe (engines that keep knobs there)."""
    pins: list[Pin] = []
    for p, v in (doc.walk() if data is doc.data else walk(data)):
        if not p or p[-1] not in _config_keys():
            continue
        pin = _config_pin(p[-1], ctx_path, doc.line(p), v, models, thinking_for, agentic, role_of(p))
        if pin is not None:
            if isinstance(v, dict):
                pin.covers = tuple(doc.line((*p, str(k))) for k in v)
            pins.append(pin)
    return pins


# ------------------------------------------------------------------ master configs


_SETTING = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*?)\s*$")


def _settings(point: MasterSetting, doc: YamlDoc) -> dict[str, tuple[str, int]]:
    """KEY -> (VALUE, line) of a master-config point's ``additional-settings``."""
    return {k: (v, doc.line(loc)) for k, (v, loc) in point.settings.items()}


def resolve_recipe_path(config_file: str, master_path: str, roots: list[Path]) -> Path | None:
    """``CONFIG_FILE=recipes/x/y.yaml`` -> ``<tree>/benchmarks/multi_node/srt-slurm-recipes/x/y.yaml``: the first
    of :func:`recipe_path_candidates` that is a file."""
    found = next((c for c in recipe_path_candidates(config_file, master_path, roots) if _is_file(c)), None)
    return Path(found) if found is not None else None


def recipe_path_candidates(config_file: str, master_path: str, roots: list[Path]) -> tuple[str, ...]:
    """Where a master config's ``CONFIG_FILE`` may lie, in the order looked at: under every folder from the
    master config's up, then from each checked root up. Answers are remembered until :func:`clear_path_cache`
    (``check_paths`` clears it at the start of every run): a master config names the same recipes many times."""
    rel = config_file.split(":", 1)[0].strip().strip("'\"")
    if not rel:
        return ()
    return _candidates(rel, os.path.dirname(_real(master_path)), tuple(map(str, roots)))


@functools.lru_cache(maxsize=8192)
def _candidates(rel: str, master_dir: str, roots: tuple[str, ...]) -> tuple[str, ...]:
    tail = rel[len("recipes/"):] if rel.startswith("recipes/") else rel
    out: dict[str, None] = {}
    for start in (master_dir, *roots):
        base = start
        while True:
            out.update(dict.fromkeys((os.path.join(base, "benchmarks", "multi_node", "srt-slurm-recipes", tail),
                                      os.path.join(base, rel))))
            parent = os.path.dirname(base)
            if parent == base:
                break
            base = parent
    return tuple(out)


@functools.lru_cache(maxsize=8192)
def _is_file(path: str) -> bool:
    return os.path.isfile(path)


_real = functools.lru_cache(maxsize=8192)(os.path.realpath)  # links resolved, as at the run's start


def clear_path_cache() -> None:
    """Forget resolved ``CONFIG_FILE`` paths (the tree may have changed since the last run)."""
    _candidates.cache_clear()
    _is_file.cache_clear()
    _real.cache_clear()


def master_refs(doc: YamlDoc, path: str, roots: list[Path]) -> dict[Path, list[MasterRef]]:
    """Recipe file -> the master-config entries that run it (``CONFIG_FILE=``)."""
    out: dict[Path, list[MasterRef]] = {}
    data = doc.data
    if not is_master(data):
        return out
    for point in master_settings(data):
        if "CONFIG_FILE" not in point.settings:
            continue
        rp = resolve_recipe_path(point.settings["CONFIG_FILE"][0], path, roots)
        if rp is None:
            continue
        entry = point.data
        ref = MasterRef(point.entry, point.framework,
                        entry.get("model") if isinstance(entry.get("model"), str) else None,
                        entry.get("model-prefix") if isinstance(entry.get("model-prefix"), str) else None,
                        point.scenario, agentic_from_scenario(point.scenario))
        lst = out.setdefault(Path(_real(str(rp))), [])
        if ref not in lst:
            lst.append(ref)
    return out


def _master_pins(doc: YamlDoc, path: str, load_recipe: Any, roots: list[Path]) -> list[Pin]:
    pins: list[Pin] = []
    for point in master_settings(doc.data):
        if MASTER_LENGTH_KEY not in point.settings:
            continue
        engine = point.engine
        pins.append(_master_pin(doc, path, point.entry, dict(point.data), point.framework, engine, point.scenario,
                                agentic_from_scenario(point.scenario), _settings(point, doc), load_recipe, roots))
    return pins


def _master_pin(doc: YamlDoc, path: str, entry_name: str, entry: dict[str, Any], framework: str, engine: str | None,
                scenario: str, agentic: AgenticInfo, settings: dict[str, tuple[str, int]], load_recipe: Any,
                roots: list[Path]) -> Pin:
    value, line = settings[MASTER_LENGTH_KEY]
    pin = Pin(file=path, line=line, engine=engine or "unknown", knob=MASTER_LENGTH_KEY,
              raw_value=value, agentic=agentic)
    pin.notes.append(f"master-config entry '{entry_name}' ({framework}), scenario '{scenario}'")
    enabled = settings.get("SYNTHETIC_ACCEPTANCE", ("", 0))[0].strip().strip("'\"").lower()
    if enabled != "true":
        pin.problems.append(("missing-companion",
                             "SYNTHETIC_ACCEPTANCE is not 'true' in this entry, so runners/inject_synthetic_acceptance.py "
                             "ignores SYNTHETIC_ACCEPTANCE_LENGTH"))
    if engine is None:
        pin.problems.append(("undetermined", f"framework '{framework}' is not a known engine"))
    elif framework not in INJECTOR_FRAMEWORKS:
        pin.problems.append(("undetermined", f"no synthetic-acceptance injector is registered for framework "
                                             f"'{framework}' (runners/synthetic_injectors), so the runner would stop"))
    for name in ("model", "model-prefix"):
        if isinstance(entry.get(name), str):
            pin.models.append(ModelName(entry[name], f"master-config {name}"))
    if "MODEL_PREFIX" in settings:
        pin.models.append(ModelName(settings["MODEL_PREFIX"][0], "additional-settings MODEL_PREFIX"))
    if "THINKING_MODE" in settings:
        pin.thinking.extend(thinking_from_setting("THINKING_MODE", settings["THINKING_MODE"][0], "additional-settings "))
    # the harness's injector adds the companions (SGLang METHOD/TOKEN_MODE, vLLM rejection_sample_method)
    harness = get_profile(engine).check.harness_pin if engine is not None else None
    if harness is not None:
        pin.spec.update(harness(value, None)[0])
    cf = settings.get("CONFIG_FILE")
    if cf is None:
        pin.draft = DraftInfo(problem="the entry names no CONFIG_FILE recipe, so the draft length is unknown")
        return pin
    recipe_path = resolve_recipe_path(cf[0], path, roots)
    if recipe_path is None:  # where it was looked for: creating (or restoring) any of them changes the verdict
        pin.inputs = tuple(Input("file", shown_path(Path(c)), None) for c in recipe_path_candidates(cf[0], path, roots))
        pin.draft = DraftInfo(problem=f"recipe {cf[0]} (CONFIG_FILE) was not found next to this tree")
        return pin
    ctx, read = load_recipe(recipe_path)
    pin.inputs = (read,)
    shown = shown_path(recipe_path)
    if isinstance(ctx, str):  # an error message
        pin.draft = DraftInfo(problem=f"recipe {shown}: {ctx}")
        return pin
    if ctx is None:
        pin.draft = DraftInfo(problem=f"recipe {shown} is not an srt-slurm recipe")
        return pin
    if engine and ctx.view.engine and ctx.view.engine != engine:
        pin.notes.append(f"recipe backend is {ctx.view.engine}")
    eng = engine or ctx.view.engine or "unknown"
    pin.engine = eng
    rs = role_settings(ctx, eng, None)
    draft = rs.draft
    draft.rule = f"{draft.rule} in {shown}" if draft.rule else draft.rule
    if draft.problem:
        draft.problem = f"{draft.problem} (recipe {shown})"
    pin.draft, pin.algorithm, pin.draft_model = draft, rs.algorithm, rs.draft_model
    pin.draft_sample_method, pin.rejection_sample_method = rs.draft_sample_method, rs.rejection_sample_method
    pin.spec.update(rs.spec)
    pin.problems.extend(rs.problems)
    rc = ctx.view.role_for("decode")
    decode = None
    if rc is not None:
        decode = rc.spec if rc.spec is not None and rc.spec.engine == eng else speculation(eng, rc.args)
    if harness is not None:
        pin.notes.extend(harness(value, decode)[1])
    pin.thinking = rs.thinking + pin.thinking
    pin.models = rs.models + pin.models
    nst = settings.get("NUM_SPEC_TOKENS")
    if nst and draft.k is not None and nst[0].strip() != str(draft.k):
        pin.notes.append(f"NUM_SPEC_TOKENS={nst[0]} differs from the recipe's draft length {draft.k}")
    if ctx.agentic.agentic is not None and ctx.agentic.agentic != agentic.agentic and agentic.agentic is not None:
        pin.notes.append(f"the recipe itself looks {'agentic' if ctx.agentic.agentic else 'non-agentic'} "
                         f"({ctx.agentic.reason})")
    pin.notes.append(f"draft length from recipe {shown}")
    return pin


# -------------------------------------------------------------------- generic walk


def _generic_pins(doc: YamlDoc, path: str, skip_paths: set[tuple[str, ...]]) -> list[Pin]:
    """Knobs outside any recipe / master structure (env maps, KEY=VALUE lists, env lists)."""
    pins: list[Pin] = []
    agentic = agentic_from_path(path)
    thinking: list[ThinkingSignal] = []
    for p, v in doc.walk():
        if p and is_thinking_setting(p[-1]):
            thinking.extend(thinking_from_setting(p[-1], v, ""))
    for p, v in doc.walk():
        if any(p[: len(s)] == s for s in skip_paths):
            continue
        if isinstance(v, dict):
            # env map or {name: X, value: Y}
            items: list[tuple[str, Any, tuple[str, ...]]] = []
            if isinstance(v.get("name"), str) and "value" in v:
                items.append((v["name"], v["value"], p))
            for key, val in v.items():
                if key in env_knobs():
                    items.append((str(key), val, (*p, str(key))))
            for name, val, lp in items:
                ek = env_knobs().get(name)
                if ek is None or (ek.legacy and ek.knob.name in v):
                    continue
                pins.append(_bare_env_pin(doc, path, name, scalar_text(val), doc.line(lp), v, thinking, agentic))
        elif isinstance(v, str) and p and p[-1].isdigit() and (m := _SETTING.match(v)) and m.group(1) in env_knobs():
            siblings = {}
            parent = _get(doc.data, p[:-1])
            if isinstance(parent, list):
                for s in parent:
                    if isinstance(s, str) and (mm := _SETTING.match(s)):
                        siblings[mm.group(1)] = mm.group(2)
            pins.append(_bare_env_pin(doc, path, m.group(1), m.group(2), doc.line(p), siblings, thinking, agentic))
    return pins


def _get(data: Any, path: tuple[str, ...]) -> Any:
    node = data
    for part in path:
        if isinstance(node, dict):
            node = node.get(part, node.get(int(part)) if part.isdigit() else None)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _bare_env_pin(doc: YamlDoc, path: str, name: str, raw: str | None, line: int, scope: dict[str, Any],
                  thinking: list[ThinkingSignal], agentic: AgenticInfo) -> Pin:
    env_knob = env_knobs()[name]
    pin = Pin(file=path, line=line, engine=env_knob.engine, knob=name, raw_value=raw,
              unresolved=None if raw is not None else "no scalar value", thinking=list(thinking), agentic=agentic)
    pin.draft = DraftInfo(problem="no engine arguments next to this setting say the draft length")
    companions, spec = env_pin_context(env_knob, functools.partial(_env_value, scope))
    pin.companions.update(companions)
    pin.spec.update(spec)
    pin.notes.append("an environment setting outside a recognised recipe")
    return pin


def extract_yaml_pins(text: str, path: str, *, load_recipe: Any, roots: list[Path],
                      refs: list[MasterRef] | None = None, docs: list[YamlDoc] | None = None) -> list[Pin]:
    """Every pin in one YAML text.

    Raises:
        YamlError: the text is not valid YAML.
    """
    pins: list[Pin] = []
    for doc in docs if docs is not None else load_yaml_docs(text):
        if doc.data is None:
            continue
        if is_master(doc.data):
            pins.extend(_master_pins(doc, path, load_recipe, roots))
            continue
        ctxs = recipe_contexts(doc, path, refs)
        skip: set[tuple[str, ...]] = set()
        if ctxs:
            seen: set[tuple[Any, ...]] = set()
            for ctx in ctxs:
                for pin in _env_pins(ctx) + _recipe_vllm_pins(ctx) + _arg_pins(ctx):
                    key = (pin.line, pin.knob, pin.raw_value, pin.draft.k, pin.draft.problem, pin.algorithm)
                    if key not in seen:
                        seen.add(key)
                        pins.append(pin)
            skip |= {("backend",), ("base",), ("roles",), (WIDE_ENV,)} | {(str(k),) for k in doc.data
                                                                          if OVERRIDE_RE.match(str(k))}
        else:
            thinking: list[ThinkingSignal] = []
            for p, v in doc.walk():
                if p and is_thinking_setting(p[-1]):
                    thinking.extend(thinking_from_setting(p[-1], v, ""))
            pins.extend(_vllm_pins_in(path, doc, doc.data, [], lambda _r, t=thinking: list(t),
                                      agentic_from_path(path)))
        pins.extend(_generic_pins(doc, path, skip | {p for p, _ in doc.walk()
                                                     if p and p[-1] in _config_keys()}))
        pins.extend(command_line_pins(doc.walk, doc.line, path))  # engines' profile.check.command_line
    return pins


def shadowed_lines(docs: list[YamlDoc]) -> set[int]:
    """Lines of ``base:`` keys of an srt-slurm sweep recipe that every ``override_*`` section replaces
    (:func:`~golden_al.recipes.srt_slurm.deep_merge`): srtctl runs only the variants when there are
    any, so such a value never reaches an engine."""
    out: set[int] = set()
    for doc in docs:
        recipe = read_recipe(doc.data)
        if recipe is None or not recipe.overrides or not isinstance(doc.data.get("base"), Mapping):
            continue
        for p, _ in walk(doc.data["base"]):
            if p and all(_replaces(over, p) for _, over in recipe.overrides) and ("base", *p) in doc.lines:
                out.add(doc.lines[("base", *p)])
    return out


def _replaces(over: Any, path: tuple[str, ...]) -> bool:
    """Whether merging ``over`` replaces the value at ``path`` (a key on the way holds a non-mapping)."""
    node = over
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
        if not isinstance(node, Mapping):
            return True
    return True


def extract_json_pins(text: str, path: str) -> list[Pin]:
    """Pins in a JSON document (submission files): the same rules as for generic YAML.

    Raises:
        YamlError: the text is not valid JSON.
    """
    try:
        data = load_json(text)
    except UnreadableInputError as exc:
        raise YamlError(exc.problem, exc.line) from None
    walked = walk(data)
    doc = YamlDoc(data, _json_lines(text, walked), walked)
    thinking: list[ThinkingSignal] = []
    for p, v in doc.walk():
        if p and is_thinking_setting(p[-1]):
            thinking.extend(thinking_from_setting(p[-1], v, ""))
    pins = _vllm_pins_in(path, doc, data, [], lambda _r: list(thinking), agentic_from_path(path))
    pins += _generic_pins(doc, path, {p for p, _ in doc.walk() if p and p[-1] in _config_keys()})
    pins += command_line_pins(doc.walk, doc.line, path)  # engines' profile.check.command_line
    for p, v in doc.walk():  # model names of a submission
        if p and p[-1] in ("model", "served_model_name", "model_path", "served-model-name") and isinstance(v, str):
            for pin in pins:
                pin.models.append(ModelName(v, ".".join(p)))
    return pins


def _json_lines(text: str, walked: list[tuple[tuple[str, ...], Any]]) -> dict[tuple[str, ...], int]:
    """Line of each key path, found by searching the key text in order (linear: a key not
    found after the previous one is searched from the start once, then remembered), and of
    each scalar list item (an args array), searched just after the previous match."""
    import bisect

    newlines = [m.start() for m in re.finditer("\n", text)]
    first: dict[str, int] = {}
    lines: dict[tuple[str, ...], int] = {}
    pos = 0
    for p, v in walked:
        if not p or (p[-1].isdigit() and isinstance(v, (dict, list))):
            continue
        if p[-1].isdigit():  # items follow each other: a bounded window keeps this linear
            item = json.dumps(v, ensure_ascii=False)
            k = text.find(item, pos, pos + len(item) + 1024)
            if k >= 0:
                lines[p], pos = bisect.bisect_left(newlines, k) + 1, k + len(item)
            continue
        needle = json.dumps(p[-1])
        if first.get(needle) == -1:
            continue  # written differently (escapes): never found
        k = text.find(needle, pos)
        if k < 0:
            if needle not in first:
                first[needle] = text.find(needle)
            k = first[needle]
        if k >= 0:
            lines[p] = bisect.bisect_left(newlines, k) + 1
            pos = k
    return lines


