"""The golden curve file: one YAML file per model and draft method (``schema_version: 1``).

A golden curve maps (thinking mode, draft length ``k``) to the committed acceptance
length (AL) of one target model with one draft. Every setting that the maintainers'
legacy files keep in comments (dataset, sampling, source run) is a field here.
Example (abridged)::

    schema_version: 1
    model: deepseek-v4-pro             # the key lookups resolve to
    aliases: [deepseek-ai/DeepSeek-V4-Pro, dsv4]
    draft: {method: mtp, model: null, precision: null}
    engine: {name: vllm, version: null, image: null, hardware: B300}
    dataset: {name: SPEED-Bench, split: qualitative, category: coding, num_prompts: 80}
    thinking_on:
      sampling: {temperature: 1.0, chat_template_kwargs: {thinking: true}}
      output_len: 4096
      points:
        3: {al: 2.49}
        4: {al: 2.54, ci95: [2.50, 2.58], num_verify_steps: 120000,
            uncertainty: {method: studentized-cluster-bootstrap+logit-cr2-bm, clusters: 80, confidence: 0.95},
            num_accepted_drafts: 184800, per_position_accepted: [...]}
    provenance: {source_url: https://github.com/.../actions/runs/27180633016}

Rules (all enforced, unknown keys are errors): ``1 <= al <= k + 1``; ``ci95`` is
``[lo, hi]`` with ``1 <= lo <= al <= hi <= k + 1``; counts satisfy
``num_accepted_drafts <= k * num_verify_steps`` and reproduce ``al`` to the two
decimals the files carry (``distributions.units.al_from_counts``);
``per_position_accepted`` has ``k`` non-increasing entries summing to
``num_accepted_drafts``; at least one thinking mode has points; provenance names a
source URL, a measurement-record hash or a note.

Thinking modes: ``thinking_on``, ``thinking_off``, and named levels under ``levels:``
(e.g. ``levels: {reasoning_effort_high: {points: ...}}``) for models collected at
reasoning-effort levels; a level name is lower-case words joined by ``_``
(:data:`LEVEL_RE`), never ``thinking_on``/``thinking_off``. The legacy InferenceX
format holds only the two switch modes.

:func:`parse_curve` validates a loaded document and reports errors with the file,
the line, the key, the value seen and what is allowed; files are read by
:func:`golden_al.golden.store.read_curve_file`, the one reader of curve files.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import math
import re
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from distributions import units
from golden_al.errors import SchemaError, UsageError
from golden_al.plugin.values import selector_text
from golden_al.prompts.thinking import LEVEL_RE, THINKING_MODES, mode_key

__all__ = [
    "DRAFT_METHODS",
    "DRAFT_PRECISIONS",
    "SCHEMA_VERSION",
    "Dataset",
    "Draft",
    "Engine",
    "GoldenCurve",
    "Point",
    "PointUncertainty",
    "Provenance",
    "Sampling",
    "ThinkingMode",
    "parse_curve",
    "to_plain",
]

SCHEMA_VERSION = 1

#: Draft methods a curve may name (the speculative method the curve was measured with).
DRAFT_METHODS: tuple[str, ...] = (
    "mtp",          # the model's own multi-token-prediction head (vLLM mtp, SGLang NEXTN/EAGLE)
    "eagle",        # EAGLE-1/2 head
    "eagle3",       # EAGLE-3 head
    "dflash",       # block-diffusion draft (DFlash, DFlash2)
    "dspark",       # DSpark draft
    "ngram",        # prompt-lookup n-gram drafting
    "draft-model",  # an independent small draft model (vLLM draft_model, SGLang STANDALONE)
    "medusa",
    "pard",
    "uno",          # SGLang UNO: the target with a drafting LoRA (single model)
    "suffix",
)
#: Shipped precisions of a draft (lower case).
DRAFT_PRECISIONS: tuple[str, ...] = (
    "fp32", "bf16", "fp16", "fp8", "mxfp8", "fp4", "nvfp4", "mxfp4", "int8", "int4",
)


_KEY_RE = r"^[a-z0-9][a-z0-9._-]*$"
#: An engine name as entry points spell them (``sglang``, ``trtllm``, ``my-engine``).
_ENGINE_RE = r"^[a-z][a-z0-9_-]*$"
_VARIANT_RE = r"^[a-z0-9][a-z0-9._-]*$"
_SELECTOR_KEY_RE = r"^[a-z][a-z0-9_]*$"
#: Tolerance between a stored AL and the AL its counts give: the files round AL to
#: two decimals, so up to half a unit in the last place (plus float slack).
_COUNTS_AL_TOLERANCE = 0.005 + 1e-9


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Sampling(_Strict):
    """Request sampling used when the curve was measured (one thinking mode)."""

    temperature: float | None = Field(default=None, ge=0.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    top_k: int | None = Field(default=None, ge=-1)
    min_p: float | None = Field(default=None, ge=0.0, le=1.0)
    presence_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    frequency_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    repetition_penalty: float | None = Field(default=None, gt=0.0)
    chat_template_kwargs: dict[str, Any] | None = None


class PointUncertainty(_Strict):
    """What ``ci95`` rests on: ``{method, clusters, confidence}`` (optional; older curves lack it).

    ``clusters`` counts independent units (requests, or batches of counter windows): see
    :func:`distributions.uncertainty.al_interval`.
    """

    method: str
    clusters: int = Field(ge=0)
    confidence: float = Field(gt=0.0, lt=1.0)


class Point(_Strict):
    """The golden value at one draft length ``k`` (the key of ``points``)."""

    al: float
    ci95: tuple[float, float] | None = None
    uncertainty: PointUncertainty | None = None
    num_verify_steps: int | None = Field(default=None, ge=1)
    num_accepted_drafts: int | None = Field(default=None, ge=0)
    per_position_accepted: list[int] | None = None
    #: ``measured``: this k was measured; ``derived``: computed from other points (a fit).
    origin: Literal["measured", "derived"] = "measured"
    note: str | None = None

    @field_validator("ci95", mode="before")
    @classmethod
    def _ci_tuple(cls, v: Any) -> Any:
        return tuple(v) if isinstance(v, list) else v

    @field_validator("al")
    @classmethod
    def _finite(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError("AL must be a finite number")
        return v


def point_problems(k: int, p: Point) -> list[tuple[tuple[Any, ...], Any, str]]:
    """Range and consistency problems of point ``p`` at draft length ``k``.

    Returns ``(sub_location, value_seen, message)`` triples (empty when valid).
    """
    out: list[tuple[tuple[Any, ...], Any, str]] = []
    hi_al = k + 1
    if not (1.0 <= p.al <= hi_al):
        out.append((("al",), p.al, f"AL must be in [1, {hi_al}] for k={k} (AL counts the bonus token)"))
    if p.ci95 is not None:
        lo, hi = p.ci95
        if not (math.isfinite(lo) and math.isfinite(hi) and 1.0 <= lo <= hi <= hi_al):
            out.append((("ci95",), list(p.ci95), f"ci95 must be [lo, hi] with 1 <= lo <= hi <= {hi_al}"))
        elif not (lo <= p.al <= hi):
            out.append((("ci95",), list(p.ci95), f"ci95 must contain al={p.al:g}"))
    steps, acc = p.num_verify_steps, p.num_accepted_drafts
    if (steps is None) != (acc is None):
        missing = "num_accepted_drafts" if acc is None else "num_verify_steps"
        out.append(((missing,), None, "num_verify_steps and num_accepted_drafts go together"))
    elif steps is not None and acc is not None:
        if acc > k * steps:
            out.append((("num_accepted_drafts",), acc,
                        f"at most k * num_verify_steps = {k * steps} drafts can be accepted"))
        else:
            al_counts = units.al_from_counts(acc, steps)
            if abs(al_counts - p.al) > _COUNTS_AL_TOLERANCE:
                out.append((("al",), p.al,
                            f"counts give AL {al_counts:.4f} (1 + {acc}/{steps}); al must match to two decimals"))
    if p.per_position_accepted is not None:
        pos = p.per_position_accepted
        if len(pos) != k:
            out.append((("per_position_accepted",), pos, f"needs exactly k={k} entries (one per draft position)"))
        elif any(x < 0 for x in pos) or any(b > a for a, b in itertools.pairwise(pos)):
            out.append((("per_position_accepted",), pos,
                        "entries must be >= 0 and non-increasing (position j is accepted only after j-1)"))
        elif acc is not None and sum(pos) != acc:
            out.append((("per_position_accepted",), pos, f"entries must sum to num_accepted_drafts={acc}"))
        elif steps is not None and pos and pos[0] > steps:
            out.append((("per_position_accepted",), pos, f"position 1 cannot exceed num_verify_steps={steps}"))
    return out


class ThinkingMode(_Strict):
    """One thinking mode: its sampling, output length and the points per draft length."""

    sampling: Sampling | None = None
    output_len: int | None = Field(default=None, ge=1)
    points: dict[int, Point] = Field(min_length=1)

    @field_validator("points")
    @classmethod
    def _keys(cls, v: dict[int, Point]) -> dict[int, Point]:
        bad = [k for k in v if k < 1 or k > 64]
        if bad:
            raise PydanticCustomError(
                "golden_point",
                "draft length k must be an integer in [1, 64], got {value}",
                {"problems": [((k,), k, "draft length k must be an integer in [1, 64]") for k in bad],
                 "value": bad[0]},
            )
        return dict(sorted(v.items()))

    @model_validator(mode="after")
    def _ranges(self) -> ThinkingMode:
        problems = [(("points", k, *sub), value, msg)
                    for k, p in self.points.items() for sub, value, msg in point_problems(k, p)]
        if problems:
            loc, value, msg = problems[0]
            raise PydanticCustomError(
                "golden_point",
                "{where}: {msg} (seen {value})",
                {"problems": problems, "where": ".".join(map(str, loc)), "msg": msg, "value": repr(value)},
            )
        return self


class Draft(_Strict):
    """The draft: method, model id and shipped precision; what tells variants apart."""

    method: Literal[DRAFT_METHODS]  # type: ignore[valid-type]
    #: Draft checkpoint id (None for a head built into the target checkpoint, or not public).
    model: str | None = None
    precision: Literal[DRAFT_PRECISIONS] | None = None  # type: ignore[valid-type]
    #: Names one of several curves of one model and method (e.g. ``gqa``).
    variant: str | None = Field(default=None, pattern=_VARIANT_RE)
    #: vLLM ``draft_sample_method`` used while measuring.
    draft_sample_method: Literal["greedy", "probabilistic"] | None = None
    #: vLLM ``rejection_sample_method`` used while measuring (never ``synthetic``).
    rejection_sample_method: Literal["standard", "block", "fly"] | None = None
    #: Engine settings other than the default that change real AL, as the engine's profile names them
    #: (:attr:`golden_al.plugin.profile.CheckSupport.curve_selectors`): vLLM ``draft_lm_head_quantization``,
    #: ``dspark_draft_topk``, ``fly_*``; SGLang ``verification: block``, ``dspark_sps_table``. A recipe is
    #: served only by a curve whose selectors equal its own (none: the engine's defaults).
    selectors: dict[Annotated[str, StringConstraints(pattern=_SELECTOR_KEY_RE)],
                    Annotated[str, StringConstraints(min_length=1, max_length=200)]] | None = None

    @field_validator("selectors", mode="before")
    @classmethod
    def _selector_values(cls, v: Any) -> Any:
        if isinstance(v, Mapping):  # YAML writes ``dspark_draft_topk: 8``: the canonical text is "8"
            try:
                return {key: selector_text(value, str(key)) for key, value in v.items()} or None
            except UsageError as exc:
                raise ValueError(str(exc)) from None
        return v

    @field_validator("selectors")
    @classmethod
    def _sorted_selectors(cls, v: dict[str, str] | None) -> dict[str, str] | None:
        return dict(sorted(v.items())) if v else None


class Engine(_Strict):
    """The engine the curve was measured on."""

    #: Any well-formed engine name: a curve is data, and loads where the engine that measured it (a
    #: plugin, say) is not installed; only a command that needs that engine's profile refuses.
    name: str = Field(pattern=_ENGINE_RE)
    version: str | None = None
    image: str | None = None
    hardware: str | None = None


class Dataset(_Strict):
    """The prompts the curve was measured on."""

    name: str = Field(min_length=1)
    split: str | None = None
    category: str | None = None
    num_prompts: int | None = Field(default=None, ge=1)
    revision: str | None = None


class Provenance(_Strict):
    """Where the numbers come from."""

    source_url: str | None = Field(default=None, pattern=r"^https?://\S+$")
    record_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    tool: str | None = None
    date: _dt.date | None = None
    collector: str | None = None
    notes: str | None = None

    @field_validator("date", mode="before")
    @classmethod
    def _parse_date(cls, v: Any) -> Any:
        if isinstance(v, _dt.datetime):
            return v.date()
        if isinstance(v, str):
            try:
                return _dt.date.fromisoformat(v)
            except ValueError:
                raise ValueError(f"date must be YYYY-MM-DD, got {v!r}") from None
        return v

    @model_validator(mode="after")
    def _some_source(self) -> Provenance:
        if not (self.source_url or self.record_sha256 or self.notes):
            raise ValueError("provenance needs source_url, record_sha256 or notes")
        return self


class GoldenCurve(_Strict):
    """One golden curve file: a model, its draft, and AL per thinking mode and k."""

    schema_version: Literal[1]
    model: str = Field(pattern=_KEY_RE)
    aliases: list[str] = Field(default_factory=list)
    draft: Draft
    engine: Engine | None = None
    dataset: Dataset | None = None
    thinking_on: ThinkingMode | None = None
    thinking_off: ThinkingMode | None = None
    levels: dict[str, ThinkingMode] = Field(default_factory=dict)
    provenance: Provenance

    @field_validator("aliases")
    @classmethod
    def _aliases(cls, v: list[str]) -> list[str]:
        seen: set[str] = set()
        for a in v:
            if not a.strip() or a != a.strip():
                raise ValueError(f"alias {a!r} must be non-empty without surrounding spaces")
            if a.casefold() in seen:
                raise ValueError(f"alias {a!r} is listed twice (aliases match case-insensitively)")
            seen.add(a.casefold())
        return v

    @field_validator("levels")
    @classmethod
    def _level_names(cls, v: dict[str, ThinkingMode]) -> dict[str, ThinkingMode]:
        for name in v:
            if name in THINKING_MODES or not re.match(LEVEL_RE, name):
                raise ValueError(f"level name {name!r} must be lower-case words joined by '_' (e.g. "
                                 "reasoning_effort_high), and not thinking_on/thinking_off (top-level keys)")
        return v

    @model_validator(mode="after")
    def _some_mode(self) -> GoldenCurve:
        if self.thinking_on is None and self.thinking_off is None and not self.levels:
            raise ValueError("a curve needs thinking_on or thinking_off (or a named level under levels:) with points")
        return self

    def mode(self, thinking: str) -> ThinkingMode | None:
        """The block for ``thinking`` (``on``/``off``/``thinking_on``/``thinking_off``/a level name)."""
        key = mode_key(thinking)
        return getattr(self, key) if key in THINKING_MODES else self.levels.get(key)

    def modes(self) -> dict[str, ThinkingMode]:
        """The thinking modes present, ``{"thinking_on": ..., "reasoning_effort_high": ...}`` in file order."""
        out = {m: blk for m in THINKING_MODES if (blk := getattr(self, m)) is not None}
        out.update(self.levels)
        return out


# --------------------------------------------------------------------------- loading
def to_plain(node: Any) -> Any:
    """A ruamel round-trip tree as plain dict/list/str/int/float/bool/None/date."""
    if isinstance(node, Mapping):
        return {to_plain(k): to_plain(v) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [to_plain(v) for v in node]
    if isinstance(node, bool):
        return bool(node)
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    if isinstance(node, str):
        return str(node)
    return node


def node_line(doc: Any, loc: Sequence[Any], *, key_line: bool = False) -> int | None:
    """1-based line of the node at ``loc`` in a ruamel round-trip tree (best effort).

    Walks as deep as the document allows; a missing key gives its parent's line.
    ``key_line`` gives the line of the last key rather than of its value.
    """
    line: int | None = 1 if doc is not None else None
    node = doc
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        lc = getattr(node, "lc", None)
        if isinstance(node, Mapping) and part in node:
            if lc is not None:
                try:
                    pos = lc.key(part) if (key_line and last) else lc.value(part)
                    line = pos[0] + 1
                except (KeyError, TypeError, AttributeError):
                    pass
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            if lc is not None:
                try:
                    line = lc.item(part)[0] + 1
                except (KeyError, TypeError, AttributeError):
                    pass
            node = node[part]
        else:
            break
    return line


def _unwrap(annotation: Any) -> Any:
    """The BaseModel class inside ``X | None`` / ``dict[int, X]`` / ``list[X]``, else None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType) or origin is None:
        for a in get_args(annotation):
            m = _unwrap(a)
            if m is not None:
                return m
        return None
    if origin is dict:
        return _unwrap(get_args(annotation)[1])
    if origin is list:
        return _unwrap(get_args(annotation)[0])
    return None


def _allowed_keys(loc: Sequence[Any]) -> list[str]:
    """The keys allowed in the mapping that holds ``loc[-1]``."""
    model: Any = GoldenCurve
    parts = list(loc[:-1])
    i = 0
    while i < len(parts):
        part = parts[i]
        field = model.model_fields.get(part) if isinstance(part, str) else None
        if field is None:
            return []
        ann = field.annotation
        inner = _unwrap(ann)
        if inner is None:
            return []
        model = inner
        if get_origin(ann) is dict or any(get_origin(a) is dict for a in get_args(ann)):
            i += 1  # skip the dict key (e.g. the k of points)
        i += 1
    return list(model.model_fields)


def _describe(loc: Sequence[Any]) -> str:
    return ".".join(str(p) for p in loc if p not in ("[key]",)) or "<document>"


def _errors_from_validation(exc: ValidationError) -> list[tuple[tuple[Any, ...], Any, str, bool]]:
    """(loc, value, message, is_key_error) for every problem of a ValidationError."""
    out: list[tuple[tuple[Any, ...], Any, str, bool]] = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        ctx = err.get("ctx") or {}
        if err["type"] == "golden_point" and "problems" in ctx:
            for sub, value, msg in ctx["problems"]:
                out.append((loc + tuple(sub), value, msg, False))
            continue
        if err["type"] == "extra_forbidden":
            allowed = _allowed_keys(loc)
            hint = f"allowed keys: {', '.join(allowed)}" if allowed else "no such key"
            out.append((loc, loc[-1] if loc else None, f"unknown key ({hint})", True))
            continue
        msg = err["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        if err["type"] == "missing":
            out.append((loc, None, "required key is missing", True))
            continue
        out.append((loc, err.get("input"), msg, False))
    return out


def parse_curve(data: Any, *, path: str | Path = "<string>", doc: Any = None) -> GoldenCurve:
    """Validate a loaded document as a :class:`GoldenCurve`.

    ``data`` is the plain tree (see :func:`to_plain`); ``doc`` the ruamel round-trip
    tree it came from, used for line numbers.

    Raises:
        SchemaError: naming the file, the line, the key, the value seen and what is
            allowed, for every problem found (joined with ``; ``).
    """
    if not isinstance(data, Mapping):
        raise SchemaError(f"a golden curve must be a mapping, got {type(data).__name__}", path=path, line=1)
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise SchemaError(
            f"schema_version: unsupported value {version!r} (this golden-al reads schema_version {SCHEMA_VERSION})",
            path=path, line=node_line(doc, ["schema_version"]) if doc is not None else 1,
            hint="upgrade golden-al, or fix the file",
        )
    try:
        return GoldenCurve.model_validate(data)
    except ValidationError as exc:
        problems = _errors_from_validation(exc)
        problems.sort(key=lambda p: node_line(doc, p[0], key_line=p[3]) or 0)
        first_line = node_line(doc, problems[0][0], key_line=problems[0][3]) if doc is not None else None
        parts = []
        for i, (loc, value, msg, is_key) in enumerate(problems):
            line = node_line(doc, loc, key_line=is_key) if doc is not None else None
            where = f"line {line}: " if line is not None and i > 0 else ""
            seen = "" if is_key or value is None else f" (seen {value!r})"
            parts.append(f"{where}{_describe(loc)}: {msg}{seen}")
        raise SchemaError("; ".join(parts), path=path, line=first_line) from None


def load_yaml_roundtrip(text: str, *, path: str | Path = "<string>", allow_duplicate_keys: bool = False) -> Any:
    """Parse YAML text with ruamel (round-trip, for line numbers); errors name file and line.

    Duplicate keys are an error unless ``allow_duplicate_keys`` (then ruamel keeps the
    *first* value, where PyYAML keeps the last).
    """
    from golden_al import safeio
    from golden_al.errors import UnreadableInputError

    try:
        return safeio.load_yaml_roundtrip(text, path=path, allow_duplicate_keys=allow_duplicate_keys)
    except UnreadableInputError as exc:
        if exc.reason == "parse-error":
            raise SchemaError(exc.problem, path=path, line=exc.line, hint=exc.hint) from None
        raise
