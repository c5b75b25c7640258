"""Read and write the InferenceX maintainers' legacy golden files, as they are.

SemiAnalysisAI/InferenceX keeps one YAML per model and method in
``golden_al_distribution/`` (HEAD 843c6254f), in two value shapes that their injector
(``runners/inject_synthetic_acceptance.py`` ``_lookup_al``) sniffs at read time:

* thinking matrix: ``{model: {thinking_on: {k: AL}, thinking_off: {k: AL}}}``;
* flat: ``{model: [{k: AL}, ...]}`` (a list of one-key mappings), or the plain
  ``{model: {k: AL}}`` mapping of the first ``benchmarks/speedbench-reference-al.yaml``
  (commit 1de285d3a). A flat block has no thinking mode: their lookup returns it for
  any ``THINKING_MODE``, so it is read into both modes (noted in the provenance).

Top-level keys starting with ``_`` are metadata (``_metadata: {draft-model: ID}`` on the
``minimax_spec_gqa`` branch). Values never come from comments. The header comment is
parsed, best effort, for provenance and settings (source run URL, dataset, sampling,
chat-template kwargs, draft model): see :func:`parse_legacy_header`. Method and variant
come from the file name (``<prefix>_<method>[_<variant>].yaml``, also with ``-``),
e.g. ``minimaxm3_eagle3_gqa.yaml`` -> prefix ``minimaxm3``, method ``eagle3``, variant
``gqa``; the prefix (InferenceX's ``MODEL_PREFIX``) becomes an alias.

:func:`write_legacy` writes a curve back in that shape (model -> thinking mode -> k ->
AL, two decimals as they write them, provenance in the header comment), readable by
``yaml.safe_load`` plus their lookup.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from golden_al.errors import SchemaError, UsageError
from golden_al.golden.schema import (
    DRAFT_METHODS,
    GoldenCurve,
    load_yaml_roundtrip,
    node_line,
    to_plain,
)
from golden_al.plugin.values import format_value
from golden_al.prompts.thinking import THINKING_MODES

__all__ = [
    "LegacyHeader",
    "flat_values",
    "is_legacy_document",
    "legacy_name_parts",
    "parse_legacy_header",
    "read_legacy_text",
    "write_legacy",
]

#: File-name tokens that name a draft method, and the method they mean.
_METHOD_TOKENS: dict[str, str] = {m: m for m in DRAFT_METHODS if "-" not in m}
_METHOD_TOKENS.update({"nextn": "mtp"})
#: Method spellings in header comments ("(MTP level)", "vLLM EAGLE3").
_HEADER_METHODS: dict[str, str] = {
    "mtp": "mtp", "eagle3": "eagle3", "eagle": "eagle", "dspark": "dspark", "dflash": "dflash",
    "nextn": "mtp", "ngram": "ngram",
}
_SAMPLING_ALIASES: dict[str, str] = {"temp": "temperature", "temperature": "temperature", "top_p": "top_p",
                                     "top_k": "top_k", "min_p": "min_p", "presence_penalty": "presence_penalty",
                                     "frequency_penalty": "frequency_penalty",
                                     "repetition_penalty": "repetition_penalty"}


@functools.lru_cache(maxsize=1)
def _engine_words() -> dict[str, str]:
    """Words a header comment names an engine by (``vllm``, ``TensorRT-LLM``, ``trt-llm``) -> the engine,
    from the registry: each engine's name, display name and :attr:`~golden_al.plugin.profile.EngineProfile.aliases`."""
    from golden_al.plugin import registry

    out: dict[str, str] = {}
    for name in registry.engine_names():
        profile = registry.get_profile(name)
        for word in (name, profile.display_name, *profile.aliases):
            out.setdefault(word.lower(), name)
    return out


@dataclass
class LegacyHeader:
    """What the header comment of a legacy file says (every field optional)."""

    source_url: str | None = None
    dataset_name: str | None = None
    category: str | None = None
    output_len: int | None = None
    #: sampling shared by both modes (``dataset:`` line)
    sampling: dict[str, Any] = field(default_factory=dict)
    #: per-mode sampling and chat_template_kwargs (``thinking_on ...`` lines)
    mode_sampling: dict[str, dict[str, Any]] = field(default_factory=dict)
    method: str | None = None
    engine: str | None = None
    hardware: str | None = None
    measured_on: str | None = None
    draft_model: str | None = None
    draft_sample_method: str | None = None
    rejection_sample_method: str | None = None
    collector: str | None = None
    #: header lines no rule understood, verbatim
    unparsed: list[str] = field(default_factory=list)


def _number(text: str) -> int | float | None:
    try:
        f = float(text)
    except ValueError:
        return None
    return int(f) if re.fullmatch(r"[+-]?\d+", text.strip()) else f


def _kv_pairs(text: str) -> dict[str, str]:
    """``a: 1 | b=2 | c 3`` -> {a: 1, b: 2, c: 3} for simple scalar pairs."""
    out: dict[str, str] = {}
    for m in re.finditer(r"([A-Za-z_][A-Za-z0-9_\-]*)\s*(?:=|:|\s)\s*([A-Za-z0-9_.+\-/]+)", text):
        out.setdefault(m.group(1).lower(), m.group(2))
    return out


def _sampling_from(pairs: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs.items():
        name = _SAMPLING_ALIASES.get(key)
        num = _number(value)
        if name is not None and num is not None:
            out[name] = int(num) if name == "top_k" else float(num)
    return out


def parse_legacy_header(text: str) -> LegacyHeader:
    """Parse the leading comment block of a legacy file. Never raises.

    Recognised lines (as the InferenceX collectors write them):
    ``Source GitHub Actions run: URL``; ``dataset: coding | temperature: 1.0 | top_p: 0.95 |
    top_k: 40 | output_len: 4096``; ``thinking_on chat_template_kwargs: {...}``;
    ``thinking_on: temperature=1.0, chat_template_kwargs: {...}``;
    ``thinking_on : temp 0.6 top_p 0.95 top_k 20 presence_penalty 0.0 | chat_template_kwargs:
    {...}``; ``speculative-config: method=dspark | draft_sample_method=probabilistic``;
    ``Measured on MODEL (B300, vLLM DSpark, draft: ORG/DRAFT), ...``; ``Draft model: ID``;
    ``Auto-generated by PATH (...)``; ``key = num_speculative_tokens (MTP level); ...``.
    Anything else is kept verbatim in ``unparsed``.
    """
    h = LegacyHeader()
    for raw in text.splitlines():
        stripped = raw.strip()
        if not stripped:
            continue
        if not stripped.startswith("#"):
            break
        line = stripped.lstrip("#").strip()
        if not line:
            continue
        try:
            if not _parse_header_line(line, h):
                h.unparsed.append(line)
        except (ValueError, TypeError):  # a malformed line is kept, never fatal
            h.unparsed.append(line)
    return h


def _parse_header_line(line: str, h: LegacyHeader) -> bool:
    m = re.match(r"^Source\b[^:]*:\s*(https?://\S+)", line)
    if m:
        h.source_url = m.group(1)
        return True
    m = re.match(r"^Acceptance Length \(AL\) reference values measured with ([A-Za-z][\w-]*)", line)
    if m:
        name = m.group(1)
        h.dataset_name = "SPEED-Bench" if name.lower().replace("-", "") == "speedbench" else name
        return True
    m = re.match(r"^dataset:\s*(.*)$", line)
    if m:
        parts = [p.strip() for p in m.group(1).split("|")]
        h.category = parts[0] or None
        pairs = _kv_pairs(" | ".join(parts[1:]))
        h.sampling.update(_sampling_from(pairs))
        if "output_len" in pairs and _number(pairs["output_len"]) is not None:
            h.output_len = int(float(pairs["output_len"]))
        if "thinking" in pairs:
            h.unparsed.append(f"thinking: {pairs['thinking']}")
        return True
    m = re.match(r"^(thinking_on|thinking_off)\b\s*:?\s*(.*)$", line)
    if m:
        mode, rest = m.group(1), m.group(2)
        entry = h.mode_sampling.setdefault(mode, {})
        km = re.search(r"chat_template_kwargs:\s*(\{.*\})\s*$", rest)
        if km:
            entry["chat_template_kwargs"] = json.loads(km.group(1))
            rest = rest[: km.start()]
        sampling = _sampling_from(_kv_pairs(rest))
        entry.update(sampling)
        return bool(km or sampling)
    m = re.match(r"^speculative-config:\s*(.*)$", line)
    if m:
        pairs = dict(re.findall(r"([a-z_]+)=([A-Za-z0-9_.-]+)", m.group(1)))
        if "method" in pairs:
            h.method = _HEADER_METHODS.get(pairs["method"].lower(), h.method)
        h.draft_sample_method = pairs.get("draft_sample_method", h.draft_sample_method)
        h.rejection_sample_method = pairs.get("rejection_sample_method", h.rejection_sample_method)
        return bool(pairs)
    m = re.match(r"^Measured on (\S+) \(([^)]*)\)", line)
    if m:
        h.measured_on = m.group(1)
        for part in (p.strip() for p in m.group(2).split(",")):
            dm = re.match(r"^draft:\s*(\S+)$", part)
            if dm:
                h.draft_model = dm.group(1)
                continue
            words = part.split()
            if words and words[0].lower() in _engine_words():
                h.engine = _engine_words()[words[0].lower()]
                if len(words) > 1:
                    h.method = h.method or _HEADER_METHODS.get(words[1].lower())
            elif h.hardware is None and part:
                h.hardware = part
        return True
    m = re.match(r"^Draft model:\s*(\S+)$", line)
    if m:
        h.draft_model = m.group(1)
        return True
    m = re.match(r"^Auto-generated by (\S+)", line)
    if m:
        h.collector = m.group(1)
        return True
    m = re.match(r"^key = num_speculative_tokens \(([\w-]+) level\)", line)
    if m:
        h.method = h.method or _HEADER_METHODS.get(m.group(1).lower())
        return True
    return False


def legacy_name_parts(stem: str) -> tuple[str, str | None, str | None]:
    """``minimaxm3_eagle3_gqa`` -> ``("minimaxm3", "eagle3", "gqa")``.

    The method is the first ``_``/``-``-separated token that names one
    (``mtp``, ``eagle3``, ``dspark``, ...); before it is the InferenceX model prefix,
    after it the variant. Without a method token: ``(stem, None, None)``.
    """
    for hyphenated in sorted((m for m in DRAFT_METHODS if "-" in m), key=len, reverse=True):
        found = re.search(rf"[_-]({re.escape(hyphenated)})(?=$|[_-])", stem, re.IGNORECASE)
        if found:
            rest = stem[found.end() + 1:]
            return stem[: found.start()], hyphenated, (rest.lower() or None)
    tokens = re.split(r"([_-])", stem)
    words = tokens[0::2]
    for i, w in enumerate(words):
        method = _METHOD_TOKENS.get(w.lower())
        if method is None or i == 0:
            continue
        prefix = "".join(tokens[: 2 * i - 1])
        rest = "".join(tokens[2 * i + 2:]) if 2 * i + 2 < len(tokens) else ""
        return prefix, method, (rest.lower() or None)
    return stem, None, None


def is_legacy_document(data: Any) -> bool:
    """True when ``data`` (plain) is a mapping without ``schema_version`` (their shape)."""
    return isinstance(data, Mapping) and "schema_version" not in data


def flat_values(block: Any, path: Path, loc: Sequence[Any] = (), doc: Any = None, model: str = "") -> dict[int, float]:
    """``{k: AL}`` from a flat list or a ``{k: AL}`` mapping, validating each entry (``loc``: where the block sits
    in ``doc``, for line numbers)."""
    items: list[tuple[Any, Any, list[Any]]] = []
    if isinstance(block, list):
        for i, item in enumerate(block):
            if not isinstance(item, Mapping) or len(item) != 1:
                raise SchemaError(
                    f"{model}: flat list item {i + 1} must be a one-key mapping {{k: AL}}, got {item!r}",
                    path=path, line=node_line(doc, [*loc, i]),
                )
            (k, v), = item.items()
            items.append((k, v, [*loc, i, k]))
    else:
        items = [(k, v, [*loc, k]) for k, v in block.items()]
    out: dict[int, float] = {}
    for k, v, vloc in items:
        line = node_line(doc, vloc)
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise SchemaError(
                f"{'.'.join(map(str, vloc))}: draft length key must be an integer >= 1 (seen {k!r})",
                path=path, line=node_line(doc, vloc, key_line=True),
                hint="key = num_speculative_tokens",
            )
        if v is None:
            continue  # no value assigned at this k (their lookup finds nothing either)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise SchemaError(f"{'.'.join(map(str, vloc))}: AL must be a number (seen {v!r})", path=path, line=line)
        if not (1.0 <= float(v) <= k + 1):
            raise SchemaError(
                f"{'.'.join(map(str, vloc))}: AL must be in [1, {k + 1}] for k={k} (seen {v!r})",
                path=path, line=line,
            )
        if k in out:
            raise SchemaError(f"{'.'.join(map(str, vloc))}: k={k} is given twice", path=path, line=line)
        out[k] = float(v)
    return dict(sorted(out.items()))


def read_legacy_text(text: str, *, path: str | Path = "<string>", doc: Any = None, data: Any = None) -> list[GoldenCurve]:
    """Curves (one per model key) of a legacy file's text (``data``: its plain data where read already, then
    ``doc`` gives line numbers where given). See the module docstring.

    Raises:
        SchemaError: a value that is not a number in ``[1, k+1]``, a key that is not a
            draft length, an unknown thinking mode, or a shape that is neither form.
    """
    p = Path(path)
    if data is None:
        doc = load_yaml_roundtrip(text, path=p)
        data = to_plain(doc)
    if not isinstance(data, Mapping) or not data:
        raise SchemaError("a legacy golden file must be a non-empty mapping {model: ...}", path=p, line=1)
    header = parse_legacy_header(text)
    raw_meta = data.get("_metadata")
    meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
    prefix, name_method, variant = legacy_name_parts(p.stem)
    method = name_method or header.method
    if method is None:
        raise SchemaError(
            "cannot tell the draft method: the file name has no method token and the header names none",
            path=p, line=1, hint="name the file <prefix>_<method>.yaml (e.g. dsv4_mtp.yaml)",
        )
    curves: list[GoldenCurve] = []
    for model, block in data.items():
        if str(model).startswith("_"):
            continue
        loc: list[Any] = [model]
        modes: dict[str, dict[int, float]] = {}
        flat = False
        if isinstance(block, list) or (isinstance(block, Mapping) and block
                                       and not any(str(k).startswith("thinking") for k in block)):
            modes = {m: flat_values(block, p, loc, doc, str(model)) for m in THINKING_MODES}
            flat = True
        elif isinstance(block, Mapping) and block:
            for mode, mblock in block.items():
                if mode not in THINKING_MODES:
                    raise SchemaError(
                        f"{model}: unknown thinking mode {mode!r} (allowed: thinking_on, thinking_off)",
                        path=p, line=node_line(doc, [*loc, mode], key_line=True),
                    )
                if not isinstance(mblock, (Mapping, list)):
                    raise SchemaError(f"{model}.{mode}: expected {{k: AL}}, got {mblock!r}",
                                      path=p, line=node_line(doc, [*loc, mode]))
                modes[mode] = flat_values(mblock, p, [*loc, mode], doc, str(model))
        else:
            raise SchemaError(
                f"{model}: expected {{thinking_on: {{k: AL}}, thinking_off: {{k: AL}}}} or a flat [{{k: AL}}, ...], "
                f"got {block!r}", path=p, line=node_line(doc, loc),
            )
        curves.append(_curve_from_legacy(str(model), modes, flat, header, meta, prefix, method, variant, p))
    if not curves:
        raise SchemaError("no model key in legacy golden file", path=p, line=1)
    return curves


def _curve_from_legacy(model: str, modes: Mapping[str, Mapping[int, float]], flat: bool, h: LegacyHeader,
                       meta: Mapping[str, Any], prefix: str, method: str, variant: str | None,
                       path: Path) -> GoldenCurve:
    key = model.lower()
    aliases = [a for a in dict.fromkeys([model, prefix]) if a.casefold() != key]
    notes = [f"read from InferenceX legacy file {path.name}"]
    if flat:
        notes.append("flat shape without thinking modes: InferenceX applies it to any THINKING_MODE, "
                     "so it is read into both modes")
    notes += h.unparsed
    out_modes: dict[str, Any] = {}
    for mode, values in modes.items():
        if not values:
            continue
        sampling = {**h.sampling, **h.mode_sampling.get(mode, {})}
        out_modes[mode] = {
            "sampling": sampling or None,
            "output_len": h.output_len,
            "points": {k: {"al": v} for k, v in values.items()},
        }
    draft_model = meta.get("draft-model") or meta.get("draft_model") or h.draft_model
    data: dict[str, Any] = {
        "schema_version": 1,
        "model": key if re.fullmatch(r"[a-z0-9][a-z0-9._-]*", key) else re.sub(r"[^a-z0-9._-]+", "-", key),
        "aliases": aliases,
        "draft": {
            "method": method,
            "model": draft_model,
            "variant": variant,
            "draft_sample_method": h.draft_sample_method,
            "rejection_sample_method": h.rejection_sample_method,
        },
        "engine": {"name": h.engine, "hardware": h.hardware} if h.engine else None,
        "dataset": _dataset(h),
        **out_modes,
        "provenance": {"source_url": h.source_url, "collector": h.collector, "notes": "; ".join(notes)},
    }
    from golden_al.golden.schema import parse_curve

    return parse_curve(data, path=path)


#: SPEED-Bench qualitative categories (nvidia/SPEED-Bench dataset card, ``qualitative`` split): a category from this set means
#: the qualitative split.
_SPEED_BENCH_QUALITATIVE = {"coding", "humanities", "math", "multilingual", "qa", "rag", "reasoning",
                            "roleplay", "stem", "summarization", "writing"}


def _dataset(h: LegacyHeader) -> dict[str, Any] | None:
    if not (h.dataset_name or h.category):
        return None
    name = h.dataset_name or "SPEED-Bench"
    split = "qualitative" if name == "SPEED-Bench" and h.category in _SPEED_BENCH_QUALITATIVE else None
    return {"name": name, "split": split, "category": h.category}


# ---------------------------------------------------------------------------- write
def _al_text(al: float) -> str:
    """Two decimals as the maintainers write them; more only if the value needs them."""
    two = f"{al:.2f}"
    return two if abs(float(two) - al) < 1e-12 else format_value(al)


def _num(v: Any) -> str:
    """A header number as the collectors print it (``1.0``, ``0.95``, ``40``)."""
    return repr(v) if isinstance(v, float) else str(v)


def _sampling_text(s: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={_num(v)}" for k, v in s.items())


def write_legacy(curve: GoldenCurve) -> str:
    """The curve in the maintainers' shape: ``model -> thinking_on/off -> k -> AL``.

    Provenance and settings go in the header comment (first line: the source run URL,
    as their review checklist asks). ``yaml.safe_load`` of the result gives
    ``{model: {thinking_on: {k: float}, ...}}`` with int keys, so their
    ``_lookup_al`` (thinking-matrix branch) finds every value. Nothing else is written
    at top level (their newest reader requires exactly one key).

    Raises:
        UsageError: the curve has named thinking levels (``levels:``), which the legacy
            shape (``thinking_on``/``thinking_off`` only, read by InferenceX's
            ``THINKING_MODE``) cannot express; nothing is written.
    """
    if curve.levels:
        raise UsageError(
            f"{curve.model}: the InferenceX legacy format holds only thinking_on and thinking_off, but this curve "
            f"also has the named level(s) {', '.join(curve.levels)}",
            hint="commit without --export, or export a copy of the curve without its levels",
        )
    prov = curve.provenance
    lines: list[str] = []
    if prov.source_url:
        label = "Source GitHub Actions run" if "/actions/runs/" in prov.source_url else "Source"
        lines.append(f"# {label}: {prov.source_url}")
    if prov.record_sha256:
        lines.append(f"# Measurement record sha256: {prov.record_sha256}")
    ds = curve.dataset
    if ds is not None:
        lines.append(f"# Acceptance Length (AL) reference values measured with {ds.name}.")
    modes = curve.modes()
    samplings = {m: (blk.sampling.model_dump(exclude_none=True) if blk.sampling else {}) for m, blk in modes.items()}
    shared: dict[str, Any] = {}
    if samplings:
        first = next(iter(samplings.values()))
        shared = {k: v for k, v in first.items() if k != "chat_template_kwargs"
                  and all(s.get(k) == v for s in samplings.values())}
    out_lens = {blk.output_len for blk in modes.values()}
    parts = [ds.category] if ds is not None and ds.category else []
    parts += [f"{k}: {_num(v)}" for k, v in shared.items()]
    if len(out_lens) == 1 and None not in out_lens:
        parts.append(f"output_len: {out_lens.pop()}")
    if parts:
        lines.append("# dataset: " + " | ".join(str(p) for p in parts))
    for m, s in samplings.items():
        own = {k: v for k, v in s.items() if k not in shared and k != "chat_template_kwargs"}
        text = _sampling_text(own)
        if "chat_template_kwargs" in s:
            kw = json.dumps(s["chat_template_kwargs"])
            text = f"{text}, chat_template_kwargs: {kw}" if text else f"chat_template_kwargs: {kw}"
        if text:
            lines.append(f"# {m}: {text}")
    d = curve.draft
    spec = [f"draft_sample_method={d.draft_sample_method}"] if d.draft_sample_method else []
    spec += [f"rejection_sample_method={d.rejection_sample_method}"] if d.rejection_sample_method else []
    if spec:
        lines.append("# speculative-config: " + " | ".join(spec))
    inside = [x for x in (curve.engine.hardware if curve.engine else None,
                          f"{curve.engine.name} {d.method}" if curve.engine else d.method) if x]
    if d.model:
        inside.append(f"draft: {d.model}")
    lines.append(f"# Measured on {curve.model} ({', '.join(inside)}), per num_speculative_tokens.")
    if d.precision:
        lines.append(f"# Draft precision: {d.precision}")
    if prov.notes:
        lines += [f"# {n}" for n in prov.notes.splitlines() if n.strip()]
    lines.append("# Written by golden-al from its golden store (golden-al curves show).")
    lines.append("#")
    lines.append(f"# key = num_speculative_tokens ({d.method.upper()} level); value = golden AL")
    lines.append(f"{curve.model}:")
    for m, blk in modes.items():
        lines.append(f"  {m}:")
        lines += [f"    {k}: {_al_text(p.al)}" for k, p in blk.points.items()]
    return "\n".join(lines) + "\n"
