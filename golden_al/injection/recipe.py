"""Read an srt-slurm recipe for ``inject``: engine, each role's speculative settings and draft length, by the
shared reader (:mod:`golden_al.recipes.srt_slurm`) and the derivation (:func:`golden_al.recipes.derive.role_settings`),
the text parsed with ruamel.yaml (comments and positions kept for the rewrite). The generating role (``decode``, else
``aggregated``, else ``prefill``) sets the golden AL of the recipe file.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from golden_al.errors import InputFileError, UsageError
from golden_al.golden.schema import load_yaml_roundtrip, node_line
from golden_al.plugin.pins import DraftInfo
from golden_al.recipes.derive import RoleSettings, recipe_facts, role_settings
from golden_al.recipes.srt_slurm import (
    Recipe,
    RecipeView,
    canonical_role,
    config_keys,
    read_recipe,
    relevant_duplicates,
)

__all__ = ["RecipeAnalysis", "RoleSpec", "analyze_recipe", "iter_own_items", "load_recipe"]

@dataclass(frozen=True)
class RoleSpec:
    """One worker role (``decode``, ``prefill``, ``aggregated``) as ``inject`` writes it: where its arguments sit, and
    the derivation's reading of them (:func:`golden_al.recipes.derive.role_settings`, its own k)."""

    role: str
    loc: tuple[Any, ...]  #: location of the role's arguments in the document
    settings: RoleSettings

    @property
    def draft_len(self) -> DraftInfo | None:
        """Its draft length, None when the role does not speculate."""
        return self.settings.draft if self.settings.draft.k is not None else None


@dataclass(frozen=True)
class RecipeAnalysis:
    """What a recipe says about speculative decoding."""

    path: Path
    engine: str | None
    engine_source: str
    #: ``()`` for a flat recipe, ``("base",)`` for the override format
    root: tuple[Any, ...]
    roles: tuple[RoleSpec, ...]
    #: the role whose draft length sets the golden AL (see module docstring), if any
    target: RoleSpec | None
    #: model names the recipe uses (``model.path``, ``served-model-name``, ``model-path``)
    model_names: tuple[str, ...]
    doc: Any = field(repr=False, compare=False)

    @property
    def k(self) -> int | None:
        return self.target.draft_len.k if self.target and self.target.draft_len else None


def iter_own_items(node: Any) -> Iterator[tuple[Any, Any]]:
    """A ruamel mapping's own items (merged ``<<`` keys excluded), in document order."""
    items = getattr(node, "non_merged_items", None)
    return iter(items() if callable(items) else node.items())


def duplicate_keys(text: str) -> list[tuple[str, int]]:
    """Every repeated key of a mapping, with the 1-based line of the repeat (PyYAML nodes)."""
    from golden_al.errors import UnreadableInputError
    from golden_al.safeio import load_yaml_documents, repeated_keys

    try:  # nodes only, from libyaml's composer where the depth bound allows (bounded like every load)
        docs = load_yaml_documents(text, construct=False)
    except UnreadableInputError:
        return []
    return repeated_keys(docs[0][1]) if docs else []


def load_recipe(text: str, *, path: str | Path = "<string>") -> Any:
    """Parse recipe text (ruamel round-trip); invalid YAML names the file and line.

    A key repeated in one mapping is tolerated (srtctl reads recipes with PyYAML, which
    keeps the last value) unless it is one golden-al reads or writes (speculative
    settings, environment blocks, model names): that is an :class:`InputFileError`.
    """
    dups = duplicate_keys(text)
    relevant = relevant_duplicates(dups)
    if relevant:
        key, line = relevant[0]
        raise InputFileError(f"duplicate key {key!r}: srtctl keeps the last value, which is easy to miss",
                             path=path, line=line, hint="delete one of them")
    doc = load_yaml_roundtrip(text, path=path, allow_duplicate_keys=bool(dups))
    if not isinstance(doc, Mapping):
        raise InputFileError(f"a recipe must be a YAML mapping, got {type(doc).__name__}", path=path, line=1)
    return doc


def _role_specs(view: RecipeView, engine: str, doc: Any, path: Path) -> list[RoleSpec]:
    """Each role's reading by the derivation, its own draft length (a role that speculates with settings that do not
    fix k is refused, naming the line of the settings)."""
    facts = recipe_facts(view, str(path))
    out = []
    for rc in view.roles:
        spec = rc.spec if rc.spec is not None and rc.spec.engine == engine else None
        if spec is None or not canonical_role(rc.key) or (not spec.speculates and spec.problem is None):
            continue
        line = node_line(doc, [*rc.loc, spec.key] if spec.key is not None else list(rc.loc), key_line=spec.key is None)
        where = ".".join(map(str, (*rc.loc, spec.key) if spec.key is not None else rc.loc))
        if spec.problem is not None:
            raise InputFileError(f"{where} {spec.problem}", path=path, line=line)
        rs = role_settings(facts, engine, rc.role, own=True)
        if rs.draft.k is None:
            raise UsageError(f"{path}:{line}: {where}: {rs.draft.problem}")
        out.append(RoleSpec(rc.role, rc.loc, rs))
    return out


def analyze_recipe(text: str, *, path: str | Path = "<string>", engine: str | None = None,
                   doc: Any = None) -> RecipeAnalysis:
    """Engine, per-role speculative settings and the golden-AL role of a recipe, as the
    shared reader (:func:`golden_al.recipes.srt_slurm.read_recipe`) sees them.

    ``engine`` (``sglang``/``vllm``/``trtllm``) overrides detection; it must agree with
    ``backend.type`` when that is set.

    Raises:
        InputFileError: invalid YAML or a malformed ``speculative-config``.
        UsageError: flags that do not determine the draft length (e.g. SGLang EAGLE
            without ``speculative-num-steps``), an engine that contradicts the recipe,
            or override sections that change the draft length of the generating role.
    """
    p = Path(path)
    if doc is None:
        doc = load_recipe(text, path=p)
    recipe = read_recipe(doc)
    detected, source = (recipe.base.engine, recipe.base.engine_source) if recipe else (None, "undetermined")
    if engine is not None:
        if engine not in config_keys():
            raise UsageError(f"engine {engine!r} has no srt-slurm recipe format here",
                             hint="inject handles recipes of " + ", ".join(config_keys()))
        if detected is not None and detected != engine and source == "backend.type":
            raise UsageError(f"{p}: --engine {engine} but the recipe's backend.type is {detected}")
        recipe = read_recipe(doc, engine=engine)
        detected, source = engine, "--engine"
    root: tuple[Any, ...] = recipe.root if recipe else (("base",) if isinstance(doc.get("base"), Mapping) else ())
    roles = _role_specs(recipe.base, detected, doc, p) if recipe is not None and detected is not None else []
    view_target = recipe.base.target if recipe else None
    target = next((r for r in roles if view_target is not None and r.loc == view_target.loc), None)
    names = recipe.base.model_names if recipe else ()
    analysis = RecipeAnalysis(p, detected, source, root, tuple(roles), target, names, doc)
    if recipe is not None and root and target is not None:
        _check_overrides(analysis, recipe)
    return analysis


def _check_overrides(a: RecipeAnalysis, recipe: Recipe) -> None:
    """Refuse variants that change the generating role's draft length (each variant srtctl runs, read by the shared
    reader): one golden AL per recipe file cannot cover both."""
    assert a.target is not None
    assert a.target.draft_len is not None
    assert a.engine is not None
    for view in recipe.variants:
        k = next((r.settings.draft.k for r in _role_specs(view, a.engine, a.doc, a.path) if r.role == a.target.role),
                 None)
        if k != a.target.draft_len.k:
            section = view.prefixes[0][0]
            line = node_line(a.doc, [section], key_line=True)
            raise UsageError(f"{a.path}:{line}: {section} changes the {a.target.role} draft length (k={k} vs base "
                             f"k={a.target.draft_len.k}); one golden AL per recipe file cannot cover both",
                             hint="split the variants into separate recipes, or use golden-al select")
