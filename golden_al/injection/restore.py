"""``inject --restore-real``: remove every synthetic-acceptance setting from a YAML config (eval runs).

The eval-only inverse of :mod:`golden_al.injection.inject` (InferenceX's open pull requests
#2634/#2547 need it for ``EVAL_ONLY`` runs, which must measure with real acceptance). No model or
curve is involved: every occurrence the census of ``check`` finds (:mod:`golden_al.knobs.census`:
every engine's knob names, from the engine profiles) is taken out:

* an environment or argument key that is a knob (SGLang ``SGLANG_SIMULATE_ACC_*``, TensorRT-LLM
  ``TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS``, ATOM ``spec-decode-acceptance-*``, llama.cpp
  ``LLAMA_ARG_SPEC_SYNTH_*``, the InferenceX master config's ``SYNTHETIC_ACCEPTANCE_LENGTH``, any
  registered engine's) is deleted with its line(s), companions included;
* a switch is set back to its engine's real value instead (vLLM ``rejection_sample_method:
  synthetic`` -> ``standard``, vLLM's default in ``vllm/config/speculative.py``; ``real_values``
  chooses another, e.g. ``block``), and the values it switched on are deleted (vLLM
  ``synthetic_acceptance_length``/``_rates``), also inside a ``speculative-config`` JSON string;
* list items ``KEY=VALUE``, ``{name: KEY, value: ...}`` and command-line flags (``--spec-synth-len``
  and its value) are deleted.

Comments and layout elsewhere stay byte for byte; running it again changes nothing. A knob the
rewrite cannot take out without editing inside a string (a ``sh -c`` script) is an error naming the
line: nothing is written. The result is checked with the census: no setting may remain.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from golden_al.errors import InputFileError, UsageError
from golden_al.injection.inject import Rewrite, locked_recipe, write_if_unchanged
from golden_al.textedit import YamlEdit, json_separators

__all__ = ["Removal", "RestoreResult", "restore_file", "restore_text"]


@dataclass(frozen=True)
class Removal:
    """One setting taken out (or switched back to real acceptance)."""

    line: int  #: 1-based line in the original text
    name: str
    old: str | None
    new: str | None  #: the real value a switch is set to; None: deleted


@dataclass(frozen=True)
class RestoreResult(Rewrite):
    """The planned (or written) restoration of one file."""

    path: Path
    removals: tuple[Removal, ...]
    old_text: str
    new_text: str
    written: bool = False


@dataclass(frozen=True)
class _Knob:
    engine: str
    switch_value: str | None  #: a switch: set back to a real value instead of deleted
    real_value: str | None
    takes_value: bool  #: a flag followed by its value on the command line


@lru_cache(maxsize=1)
def _vocabulary() -> dict[str, _Knob]:
    """Every spelling of every synthetic setting of every registered engine (values, companions and
    switches) and the harness's; from the engine profiles, as the census reads them."""
    from golden_al.knobs.census import HARNESS, HARNESS_KNOB, _flag_spellings, _key_spellings
    from golden_al.plugin.registry import engine_names, get_profile

    out: dict[str, _Knob] = {HARNESS_KNOB: _Knob(HARNESS, None, None, True),
                             "SYNTHETIC_ACCEPTANCE": _Knob(HARNESS, None, None, True)}
    for engine in engine_names():
        for knob in get_profile(engine).check.synthetic_knobs:
            entry = _Knob(engine, knob.switch_value, knob.real_value, True)
            for name in knob.spellings():
                forms = (_flag_spellings(name) if knob.kind == "flag" and name.startswith("-")
                         else _key_spellings(name) if knob.kind == "config-key" else [name])
                for form in forms:
                    out.setdefault(form, entry)
    return out


@dataclass
class _Plan:
    edit: YamlEdit
    real_values: Mapping[str, str]
    removals: list[Removal] = field(default_factory=list)


def restore_text(text: str, *, path: str | Path = "<string>",
                 real_values: Mapping[str, str] | None = None) -> RestoreResult:
    """The text with every synthetic-acceptance setting taken out (module docstring).

    ``real_values``: switch name -> the real value to set (default: each engine's own, vLLM ``standard``).

    Raises:
        InputFileError: the text is not YAML, or a knob cannot be removed in place (inside a string),
            or a setting remains after the rewrite (file and line).
    """
    import yaml

    from golden_al import safeio
    from golden_al.errors import UnreadableInputError

    p = Path(path)
    try:
        docs = safeio.load_yaml_documents(text, path=p, construct=False)
    except UnreadableInputError as exc:
        raise InputFileError(exc.problem, path=p, line=exc.line) from None
    plan = _Plan(YamlEdit(text, p), dict(real_values or {}))
    for _, node in docs:
        if node is not None:
            _walk(plan, node, yaml)
    new_text = plan.edit.result()
    _verify(new_text, p)
    return RestoreResult(p, tuple(sorted(plan.removals, key=lambda r: r.line)), text, new_text)


def _walk(plan: _Plan, root: Any, yaml: Any) -> None:
    vocab = _vocabulary()
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        flow = bool(getattr(node, "flow_style", False))
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                name = k.value if isinstance(k, yaml.ScalarNode) and isinstance(k.value, str) else ""
                knob = vocab.get(name)
                if knob is None:
                    if isinstance(v, yaml.ScalarNode) and isinstance(v.value, str) and _json_with_knob(v.value):
                        _rewrite_json(plan, v)
                    else:
                        stack.append(v)
                    continue
                if knob.switch_value is not None:
                    if isinstance(v, yaml.ScalarNode) and str(v.value).strip().lower() == knob.switch_value:
                        real = plan.real_values.get(name, knob.real_value)
                        if real is None:
                            plan.edit.delete(k.start_mark, v, flow=flow)
                            plan.removals.append(Removal(k.start_mark.line + 1, name, v.value, None))
                        else:
                            plan.edit.replace(v, real)
                            plan.removals.append(Removal(k.start_mark.line + 1, name, v.value, real))
                    continue
                plan.edit.delete(k.start_mark, v, flow=flow)
                plan.removals.append(Removal(k.start_mark.line + 1, str(name),
                                             v.value if isinstance(v, yaml.ScalarNode) else None, None))
        elif isinstance(node, yaml.SequenceNode):
            _sequence(plan, node, vocab, yaml, flow)
        elif isinstance(node, yaml.ScalarNode) and isinstance(node.value, str):
            _refuse_in_string(plan, node)


def _sequence(plan: _Plan, node: Any, vocab: Mapping[str, _Knob], yaml: Any, flow: bool) -> None:
    items = node.value
    skip = -1
    for i, item in enumerate(items):
        if i == skip:
            continue
        if isinstance(item, yaml.ScalarNode) and isinstance(item.value, str):
            text = item.value
            name, eq, _ = text.partition("=")
            knob = vocab.get(name.strip()) or vocab.get(text.strip())
            if knob is not None and (eq or text.strip().startswith("-")):
                plan.edit.delete(item.start_mark, item, flow=flow, item=True)
                plan.removals.append(Removal(item.start_mark.line + 1, name.strip(), text, None))
                if not eq and knob.takes_value and i + 1 < len(items):  # "--flag", "value"
                    nxt = items[i + 1]
                    plan.edit.delete(nxt.start_mark, nxt, flow=flow, item=True)
                    skip = i + 1
                continue
            _refuse_in_string(plan, item)
            continue
        if isinstance(item, yaml.MappingNode):
            pairs = {k.value: v for k, v in item.value if isinstance(k, yaml.ScalarNode)}
            ref = pairs.get("name")
            if isinstance(ref, yaml.ScalarNode) and ref.value in vocab:  # Kubernetes {name, value}
                plan.edit.delete(item.start_mark, item, flow=flow, item=True)
                value = pairs.get("value")
                plan.removals.append(Removal(item.start_mark.line + 1, ref.value,
                                             value.value if isinstance(value, yaml.ScalarNode) else None, None))
                continue
        _walk(plan, item, yaml)


def _json_with_knob(text: str) -> bool:
    """A JSON object whose keys (after their escapes) include a knob."""
    s = text.strip()
    if not s.startswith("{"):
        return False
    try:
        obj = json.loads(s)
    except (json.JSONDecodeError, RecursionError):
        return False
    return isinstance(obj, dict) and any(key in _vocabulary() for key in obj)


def _rewrite_json(plan: _Plan, node: Any) -> None:
    """A JSON object in a string (vLLM ``speculative-config``): delete its synthetic keys, switch it back."""
    try:
        obj = json.loads(node.value)
    except json.JSONDecodeError:
        _refuse_in_string(plan, node)
        return
    if not isinstance(obj, dict):
        _refuse_in_string(plan, node)
        return
    vocab = _vocabulary()
    new: dict[str, Any] = {}
    changed = False
    for key, value in obj.items():
        knob = vocab.get(key)
        if knob is None or (knob.switch_value is not None and str(value).strip().lower() != knob.switch_value):
            new[key] = value  # not a knob, or a switch already at a real value
            continue
        changed = True
        if knob.switch_value is not None:
            real = plan.real_values.get(key, knob.real_value)
            if real is not None:
                new[key] = real
            plan.removals.append(Removal(node.start_mark.line + 1, key, str(value), real))
        else:
            plan.removals.append(Removal(node.start_mark.line + 1, key, json.dumps(value), None))
    if not changed:
        return
    item, sep = json_separators(node.value)
    plan.edit.replace(node, json.dumps(new, separators=(item, sep), ensure_ascii=False))


def _refuse_in_string(plan: _Plan, node: Any) -> None:
    """A knob inside a longer string (a script, a command line): not removable in place."""
    from golden_al.knobs.census import _Sink, _string_census

    sink = _Sink()
    _string_census(node.value, line=node.start_mark.line + 1, end_line=node.end_mark.line + 1, context="YAML string",
                   sink=sink, key_line=None, depth=0)
    hits = [o for o in sink.result() if o.term.role in ("value", "switch")]
    if hits:
        raise InputFileError(f"{hits[0].term.spelling} is set inside a string (a script or command line): "
                             "golden-al does not edit inside strings", path=plan.edit.path, line=hits[0].line,
                             hint="remove it by hand, or keep the setting as its own key or list item")


def _verify(text: str, path: Path) -> None:
    """The census finds no synthetic setting left (or the rewrite would be wrong: nothing is written)."""
    from golden_al import safeio
    from golden_al.knobs.census import census_data, iter_pin_sites

    for _, node in safeio.load_yaml_documents(text, path=path, construct=False):
        left = list(iter_pin_sites(census_data(node))) if node is not None else []
        if left:
            o = left[0]
            raise InputFileError(f"{o.term.spelling} is still set after removing the synthetic settings "
                                 f"({o.context}): nothing was written", path=path, line=o.line,
                                 hint="remove it by hand")


def restore_file(path: str | Path, *, real_values: Mapping[str, str] | None = None,
                 dry_run: bool = False) -> RestoreResult:
    """Rewrite ``path`` in place without synthetic acceptance (atomically; idempotent).

    Raises:
        UsageError: not a YAML file.
        InputFileError: see :func:`restore_text`.
    """
    from golden_al import safeio

    p = Path(path)
    if p.suffix.lower() not in (".yaml", ".yml"):
        raise UsageError(f"{p}: --restore-real rewrites YAML recipes and configs",
                         hint="for a shell script, remove the exports and flags by hand; 'golden-al check' "
                              "then finds none")
    with locked_recipe(p, purpose="inject --restore-real", dry_run=dry_run):
        text = safeio.read_text(p, max_bytes=safeio.DEFAULT_MAX_BYTES)  # edits are linear: check's byte cap
        result = restore_text(text, path=p, real_values=real_values)
        if result.changed and not dry_run:
            write_if_unchanged(p, text, result.new_text)
            result = RestoreResult(result.path, result.removals, result.old_text, result.new_text, written=True)
    return result
