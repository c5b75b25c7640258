"""Read an srt-slurm recipe: engine, speculative settings per worker role, draft length.

srt-slurm recipes (NVIDIA/srt-slurm, as used in SemiAnalysisAI/InferenceX
``benchmarks/multi_node/srt-slurm-recipes/**`` at 843c6254f) look like::

    model: {path: deepseek-v4-pro, ...}
    backend:
      type: sglang                      # or vllm, trtllm
      prefill_environment: {...}        # aggregated_environment for one-role recipes
      decode_environment: {...}
      sglang_config:                    # vllm_config / trtllm_config
        prefill: {speculative-algorithm: EAGLE, speculative-num-steps: 3, ...}
        decode: {...}                   # or aggregated: {...}

or, in the override format, the same under ``base:`` plus ``override_*`` /
``zip_override_*`` sections that srtctl deep-merges into it.

The draft length ``k`` follows each engine's profile (``golden_al/engines/``: SGLang's
``speculative-*`` keys, vLLM's ``num_speculative_tokens`` in the ``speculative-config``
JSON, TensorRT-LLM's ``speculative_config.max_draft_len``). The
role that *generates* sets the golden AL for the whole recipe: ``decode``, else
``aggregated``/``agg``, else ``prefill`` (InferenceX
``infx/srt_slurm/synthetic_acceptance.py``: "Prefill may have a different MTP depth;
generation defines the AL target").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from golden_al.engines import sglang, trtllm, vllm
from golden_al.engines.profile import DraftLen
from golden_al.errors import InputFileError, UsageError
from golden_al.golden.schema import load_yaml_roundtrip, node_line

__all__ = [
    "CONFIG_KEYS",
    "ENV_BLOCK_RE",
    "GENERATING_ROLES",
    "ROLE_ALIASES",
    "RecipeAnalysis",
    "RoleSpec",
    "analyze_recipe",
    "canonical_role",
    "env_block_role",
    "iter_own_items",
    "load_recipe",
]

#: ``<role>_environment`` keys whose mapping is a worker role's environment.
ENV_BLOCK_RE = re.compile(r"^(aggregated|agg|prefill|decode)_environment$")
#: engine -> the backend key holding per-role engine arguments
CONFIG_KEYS: dict[str, str] = {"sglang": "sglang_config", "vllm": "vllm_config", "trtllm": "trtllm_config"}
#: roles in the order that decides which one sets the golden AL
GENERATING_ROLES: tuple[str, ...] = ("decode", "aggregated", "agg", "prefill")
_ROLES = frozenset(GENERATING_ROLES)
#: every spelling of a worker role -> its canonical name (srtctl accepts ``agg`` for ``aggregated``)
ROLE_ALIASES: dict[str, str] = {"decode": "decode", "aggregated": "aggregated", "agg": "aggregated",
                                "prefill": "prefill"}


def canonical_role(name: object) -> str | None:
    """``agg`` -> ``aggregated``; ``decode``/``prefill``/``aggregated`` as they are; else None."""
    return ROLE_ALIASES.get(str(name).strip().lower())


def env_block_role(key: object) -> str | None:
    """The canonical role of a ``<role>_environment`` key (``agg_environment`` -> ``aggregated``), else None."""
    m = ENV_BLOCK_RE.match(str(key))
    return canonical_role(m.group(1)) if m else None
_OVERRIDE_RE = re.compile(r"^(zip_)?override_")
_BACKEND_TYPES = {"sglang": "sglang", "vllm": "vllm", "trtllm": "trtllm", "trt": "trtllm", "tensorrt-llm": "trtllm"}
_SGLANG_SPEC_KEYS = sglang.SPEC_FLAGS
_VLLM_SPEC_KEYS = (vllm.FLAG_SPEC_CONFIG[2:], vllm.SPEC_CONFIG_KEY)


@dataclass(frozen=True)
class RoleSpec:
    """Speculative settings of one worker role (``decode``, ``prefill``, ``aggregated``)."""

    role: str
    engine: str
    #: the engine's own spelling: SGLang algorithm (upper case), vLLM method, TRT decoding_type
    algorithm: str | None
    draft_len: DraftLen | None
    draft_model: str | None
    draft_sample_method: str | None
    rejection_sample_method: str | None
    #: location of the role's config mapping in the document, and its 1-based line
    loc: tuple[Any, ...]
    line: int | None
    #: TensorRT-LLM: True when the two-model path reads the forced count as an integer
    trtllm_two_model: bool = False


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


#: Keys whose duplication would make golden-al read a recipe differently from srtctl
#: (PyYAML keeps the last of duplicate keys, ruamel the first).
_RELEVANT_KEYS = re.compile(
    r"^(speculative[-_].*|(aggregated|agg|prefill|decode)(_environment)?|backend|type|model|path|"
    r"(sglang|vllm|trtllm)_config|served[-_]model[-_]name|model[-_]path|"
    + "|".join(f"{re.escape(prefix)}.*" for prefix in sglang.ENV_PREFIXES)
    + f"|{re.escape(trtllm.ENV_FORCE)}|base|(zip_)?override_.*)$"
)


def duplicate_keys(text: str) -> list[tuple[str, int]]:
    """Every repeated key of a mapping, with the 1-based line of the repeat (PyYAML nodes)."""
    import yaml

    from golden_al.errors import UnreadableInputError
    from golden_al.safeio import compose_yaml

    try:
        root = compose_yaml(text)
    except UnreadableInputError:
        return []
    out: list[tuple[str, int]] = []
    seen_nodes: set[int] = set()
    stack = [root] if root is not None else []
    while stack:
        node = stack.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys: set[str] = set()
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value != "<<":
                    if k.value in keys:
                        out.append((k.value, k.start_mark.line + 1))
                    keys.add(k.value)
                stack.append(v)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return sorted(out, key=lambda kv: kv[1])


def load_recipe(text: str, *, path: str | Path = "<string>") -> Any:
    """Parse recipe text (ruamel round-trip); invalid YAML names the file and line.

    A key repeated in one mapping is tolerated (srtctl reads recipes with PyYAML, which
    keeps the last value) unless it is one golden-al reads or writes (speculative
    settings, environment blocks, model names): that is an :class:`InputFileError`.
    """
    dups = duplicate_keys(text)
    relevant = [(k, line) for k, line in dups if _RELEVANT_KEYS.match(k)]
    if relevant:
        key, line = relevant[0]
        raise InputFileError(f"duplicate key {key!r}: srtctl keeps the last value, which is easy to miss",
                             path=path, line=line, hint="delete one of them")
    doc = load_yaml_roundtrip(text, path=path, allow_duplicate_keys=bool(dups))
    if not isinstance(doc, Mapping):
        raise InputFileError(f"a recipe must be a YAML mapping, got {type(doc).__name__}", path=path, line=1)
    return doc


def _get(node: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def _spec_json(value: Any, where: str, path: Path, line: int | None) -> Mapping[str, Any]:
    if isinstance(value, str):
        try:
            loaded = json.loads(value)
        except json.JSONDecodeError as exc:
            raise InputFileError(f"{where} is not valid JSON: {exc.msg} (column {exc.colno})",
                                 path=path, line=line) from None
        if not isinstance(loaded, dict):
            raise InputFileError(f"{where} must be a JSON object", path=path, line=line)
        return loaded
    if isinstance(value, Mapping):
        return value
    raise InputFileError(f"{where} must be a JSON string or a mapping, got {value!r}", path=path, line=line)


def _norm_keys(cfg: Mapping[str, Any]) -> dict[str, Any]:
    return {str(k).replace("_", "-"): v for k, v in cfg.items()}


def _role_spec(engine: str, role: str, cfg: Mapping[str, Any], loc: tuple[Any, ...], doc: Any,
               path: Path) -> RoleSpec:
    line = node_line(doc, list(loc), key_line=True)
    where = f"{'.'.join(map(str, loc))}"

    def fail(exc: UsageError) -> UsageError:
        return UsageError(f"{path}:{line}: {where}: {exc.message}", hint=exc.hint)

    if engine == "sglang":
        c = _norm_keys(cfg)
        algo = c.get(sglang.SPEC_FLAGS[0], c.get(sglang.SPEC_FLAGS[1]))
        if not algo:
            return RoleSpec(role, engine, None, None, None, None, None, loc, line)
        try:
            name = sglang.normalize_algorithm(str(algo))
            dl = sglang.draft_len_from_flags(name, c)
        except UsageError as exc:
            raise fail(exc) from None
        return RoleSpec(role, engine, name, dl, c.get(sglang.FLAG_DRAFT_MODEL[2:]), None, None, loc, line)
    if engine == "vllm":
        key = next((k for k in _VLLM_SPEC_KEYS if k in cfg), None)
        if key is None:
            return RoleSpec(role, engine, None, None, None, None, None, loc, line)
        spec_line = node_line(doc, [*loc, key])
        spec = _spec_json(cfg[key], f"{where}.{key}", path, spec_line)
        try:
            dl = vllm.draft_len(dict(spec))
        except UsageError as exc:
            raise UsageError(f"{path}:{spec_line}: {where}.{key}: {exc.message}", hint=exc.hint) from None
        return RoleSpec(role, engine, str(spec.get("method") or "") or None, dl, spec.get("model"),
                        spec.get("draft_sample_method"), spec.get(vllm.METHOD_KEY), loc, line)
    # trtllm
    trt = cfg.get(trtllm.SPEC_CONFIG_KEY)
    if not isinstance(trt, Mapping) or not trt:
        return RoleSpec(role, engine, None, None, None, None, None, loc, line)
    spec = trt
    try:
        dl = trtllm.draft_len(spec)
    except UsageError as exc:
        raise fail(exc) from None
    decoding = str(spec.get(trtllm.DECODING_TYPE) or "") or None
    two_model = trtllm.two_model_path(spec) is True
    return RoleSpec(role, engine, decoding, dl, next((spec[k] for k in trtllm.DRAFT_MODEL_KEYS if spec.get(k)), None),
                    None, None, loc, line, trtllm_two_model=two_model)


def _detect_engine(backend: Any) -> tuple[str | None, str]:
    btype = backend.get("type") if isinstance(backend, Mapping) else backend
    if isinstance(btype, str) and btype.strip().lower() in _BACKEND_TYPES:
        return _BACKEND_TYPES[btype.strip().lower()], "backend.type"
    if isinstance(backend, Mapping):
        present = [e for e, key in CONFIG_KEYS.items() if key in backend]
        if len(present) == 1:
            return present[0], f"backend.{CONFIG_KEYS[present[0]]}"
    return None, "undetermined"


def _model_names(root_node: Any) -> tuple[str, ...]:
    names: list[str] = []
    path = _get(root_node, "model", "path")
    if isinstance(path, str):
        names.append(path)
    backend = _get(root_node, "backend")
    if isinstance(backend, Mapping):
        for key in CONFIG_KEYS.values():
            roles = backend.get(key)
            if not isinstance(roles, Mapping):
                continue
            for cfg in roles.values():
                if isinstance(cfg, Mapping):
                    for k in ("served-model-name", "served_model_name", "model-path", "model_path", "model"):
                        v = cfg.get(k)
                        if isinstance(v, str):
                            names.append(v)
    return tuple(dict.fromkeys(names))


def analyze_recipe(text: str, *, path: str | Path = "<string>", engine: str | None = None,
                   doc: Any = None) -> RecipeAnalysis:
    """Engine, per-role speculative settings and the golden-AL role of a recipe.

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
    root: tuple[Any, ...] = ("base",) if isinstance(doc.get("base"), Mapping) else ()
    root_node = doc["base"] if root else doc
    backend = root_node.get("backend")
    detected, source = _detect_engine(backend)
    if engine is not None:
        if engine not in CONFIG_KEYS:
            raise UsageError(f"engine {engine!r} has no srt-slurm recipe format here",
                             hint="inject handles sglang, vllm and trtllm recipes")
        if detected is not None and detected != engine and source == "backend.type":
            raise UsageError(f"{p}: --engine {engine} but the recipe's backend.type is {detected}")
        detected, source = engine, "--engine"
    roles: list[RoleSpec] = []
    if detected is not None and isinstance(backend, Mapping):
        cfg_key = CONFIG_KEYS[detected]
        role_map = backend.get(cfg_key)
        if isinstance(role_map, Mapping):
            for role, cfg in iter_own_items(role_map):
                if role in _ROLES and isinstance(cfg, Mapping):
                    roles.append(_role_spec(detected, str(role), cfg, (*root, "backend", cfg_key, role), doc, p))
    spec_roles = {r.role: r for r in roles if r.draft_len is not None}
    target = next((spec_roles[r] for r in GENERATING_ROLES if r in spec_roles), None)
    analysis = RecipeAnalysis(p, detected, source, root, tuple(roles), target, _model_names(root_node), doc)
    if root and target is not None:
        _check_overrides(analysis)
    return analysis


def _check_overrides(a: RecipeAnalysis) -> None:
    """Refuse override sections that change the generating role's draft length."""
    assert a.target is not None
    assert a.engine is not None
    cfg_key = CONFIG_KEYS[a.engine]
    base_cfg = _get(a.doc, *a.target.loc)
    for name, section in iter_own_items(a.doc):
        if not _OVERRIDE_RE.match(str(name)) or not isinstance(section, Mapping):
            continue
        over = _get(section, "backend", cfg_key, a.target.role)
        if not isinstance(over, Mapping):
            continue
        touched = [k for k in over if str(k).replace("_", "-") in _SGLANG_SPEC_KEYS or k in _VLLM_SPEC_KEYS]
        if not touched:
            continue
        line = node_line(a.doc, [name, "backend", cfg_key, a.target.role, touched[0]], key_line=True)
        if any(isinstance(over[k], list) for k in touched):
            raise UsageError(f"{a.path}:{line}: {name} zips speculative settings of {a.target.role}; "
                             "one golden AL per recipe file cannot cover them",
                             hint="split the variants into separate recipes")
        merged = {**dict(base_cfg), **{k: over[k] for k in touched}}
        spec = _role_spec(a.engine, a.target.role, merged, a.target.loc, a.doc, a.path)
        if spec.draft_len is None or a.target.draft_len is None or spec.draft_len.k != a.target.draft_len.k:
            raise UsageError(
                f"{a.path}:{line}: {name} changes the {a.target.role} draft length "
                f"(k={spec.draft_len.k if spec.draft_len else None} vs base k={a.target.draft_len.k if a.target.draft_len else None}); "
                "one golden AL per recipe file cannot cover both",
                hint="split the variants into separate recipes",
            )
