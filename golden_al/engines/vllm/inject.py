"""``golden-al inject`` for vLLM: the synthetic fields written into every speculative config under
``vllm_config`` (JSON text or a mapping), the recipe format's ``config_writer`` hook."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from golden_al.engines import vllm
from golden_al.errors import InputFileError, UsageError
from golden_al.injection.inject import Change, Planner, json_separators, values_equal
from golden_al.injection.recipe import RecipeAnalysis, iter_own_items
from golden_al.plugin.values import format_value
from golden_al.textedit import Edit, quote_style, requote, scalar_span

__all__ = ["plan_config"]


def plan_config(p: Planner, a: RecipeAnalysis, golden: Callable[[int], float]) -> set[str]:
    """vLLM: the synthetic fields in every speculative-config under vllm_config.

    Each config gets the golden AL at its own ``num_speculative_tokens`` (each vLLM
    server validates ``synthetic_acceptance_length <= num_speculative_tokens + 1``); when
    every role uses the generating role's k, that is its value everywhere.
    """
    found = p.occurrences(lambda key, loc: key in vllm.RECIPE_SPEC_KEYS and vllm.RECIPE_CONFIG_KEY in loc[:-1])
    if not found:
        raise UsageError(f"{a.path}: no speculative-config under {vllm.RECIPE_CONFIG_KEY}; nothing to inject")
    for parent, key, value, loc in found:
        line = p.value_pos(parent, key)[0] + 1
        if isinstance(value, str):
            try:
                spec = json.loads(value)
            except json.JSONDecodeError as exc:
                raise InputFileError(f"{p.where(loc)} is not valid JSON: {exc.msg}", path=p.path, line=line) from None
        elif isinstance(value, Mapping):
            spec = dict(value)
        else:
            raise InputFileError(f"{p.where(loc)} must be a JSON string or a mapping", path=p.path, line=line)
        if not isinstance(spec, dict):
            raise InputFileError(f"{p.where(loc)} must be a JSON object", path=p.path, line=line)
        try:
            k = vllm.draft_len(spec).k
        except UsageError as exc:
            raise UsageError(f"{a.path}:{line}: {p.where(loc)}: {exc.message}", hint=exc.hint) from None
        al = golden(k)
        al_text = format_value(al)
        if isinstance(value, str):
            _plan_vllm_json(p, parent, key, value, spec, loc, al, al_text)
        else:
            _plan_vllm_mapping(p, value, spec, loc, al_text)
    return {vllm.METHOD_KEY, vllm.LENGTH_KEY, vllm.RATES_KEY}


def _plan_vllm_json(p: Planner, parent: Any, key: str, raw: str, spec: dict[str, Any], loc: tuple[Any, ...],
                    al: float, al_text: str) -> None:
    new = dict(spec)
    line = p.value_pos(parent, key)[0] + 1
    changes: list[Change] = []
    if vllm.RATES_KEY in new:
        changes.append(Change(line, p.where((*loc, vllm.RATES_KEY)), json.dumps(new.pop(vllm.RATES_KEY)),
                              "(removed)", True))
    if new.get(vllm.METHOD_KEY) != vllm.SYNTHETIC_METHOD:
        old = new.get(vllm.METHOD_KEY)
        new[vllm.METHOD_KEY] = vllm.SYNTHETIC_METHOD
        changes.append(Change(line, p.where((*loc, vllm.METHOD_KEY)), None if old is None else str(old),
                              vllm.SYNTHETIC_METHOD, False))
    old_len = new.get(vllm.LENGTH_KEY)
    if old_len is None or not values_equal(vllm.LENGTH_KEY, old_len, al_text):
        new[vllm.LENGTH_KEY] = float(al_text)
        changes.append(Change(line, p.where((*loc, vllm.LENGTH_KEY)),
                              None if old_len is None else str(old_len), al_text, old_len is not None))
    if not changes:
        return
    item, sep = json_separators(raw)
    text = json.dumps(new, separators=(item, sep), ensure_ascii=False)
    vline, vcol = p.value_pos(parent, key)
    end = scalar_span(p.lines, vline, vcol, path=str(p.path), flow=bool(parent.fa.flow_style()))
    token = p.lines[vline][vcol:end]
    if quote_style(token) == "":
        raise InputFileError(f"{p.where(loc)}: a plain (unquoted) JSON value cannot be rewritten safely",
                             path=p.path, line=vline + 1, hint="quote it: speculative-config: '{...}'")
    p.edits.append(Edit(vline, vcol, vline, end, requote(token, text)))
    p.changes.extend(changes)


def _plan_vllm_mapping(p: Planner, mapping: Any, spec: dict[str, Any], loc: tuple[Any, ...], al_text: str) -> None:
    own = dict(iter_own_items(mapping))
    if vllm.RATES_KEY in own:
        raise UsageError(f"{p.path}: {p.where(loc)} sets {vllm.RATES_KEY}; remove it by hand "
                         f"(vLLM rejects it together with {vllm.LENGTH_KEY})")
    to_insert: list[tuple[str, str]] = []
    for var, want, conflict in ((vllm.METHOD_KEY, vllm.SYNTHETIC_METHOD, False),
                                (vllm.LENGTH_KEY, al_text, True)):
        if var in own:
            if not values_equal(var, own[var], want):
                p.replace_scalar(mapping, var, want, loc, own[var], conflict=conflict, typed=True)
        else:
            to_insert.append((var, want))
    if to_insert:
        p.insert_keys(mapping, to_insert, loc, typed=True,
                      after=[vllm.METHOD_KEY, vllm.LENGTH_KEY])
