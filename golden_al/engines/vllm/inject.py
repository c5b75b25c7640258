"""``golden-al inject`` for vLLM: the synthetic fields written into every speculative config under
``vllm_config`` (JSON text or a mapping), the recipe format's ``config_writer`` hook."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from golden_al.plugin import InputFileError, RecipePlanner, UsageError, format_value

from . import (
    LENGTH_KEY,
    METHOD_KEY,
    RATES_KEY,
    RECIPE_CONFIG_KEY,
    RECIPE_SPEC_KEYS,
    SYNTHETIC_METHOD,
    draft_len,
)

__all__ = ["plan_config"]


def plan_config(p: RecipePlanner, golden: Callable[[int], float]) -> set[str]:
    """vLLM: the synthetic fields in every speculative-config under vllm_config.

    Each config gets the golden AL at its own ``num_speculative_tokens`` (each vLLM
    server validates ``synthetic_acceptance_length <= num_speculative_tokens + 1``); when
    every role uses the generating role's k, that is its value everywhere.
    """
    found = p.occurrences(lambda key, loc: key in RECIPE_SPEC_KEYS and RECIPE_CONFIG_KEY in loc[:-1])
    if not found:
        raise UsageError(f"{p.path}: no speculative-config under {RECIPE_CONFIG_KEY}; nothing to inject")
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
            k = draft_len(spec).k
        except UsageError as exc:
            raise UsageError(f"{p.path}:{line}: {p.where(loc)}: {exc.message}", hint=exc.hint) from None
        al = golden(k)
        al_text = format_value(al)
        if isinstance(value, str):
            _plan_vllm_json(p, parent, key, value, spec, loc, al, al_text)
        else:
            _plan_vllm_mapping(p, value, spec, loc, al_text)
    return {METHOD_KEY, LENGTH_KEY, RATES_KEY}


def _plan_vllm_json(p: RecipePlanner, parent: Any, key: str, raw: str, spec: dict[str, Any], loc: tuple[Any, ...],
                    al: float, al_text: str) -> None:
    new = dict(spec)
    changes: list[tuple[tuple[Any, ...], str | None, str, bool]] = []
    if RATES_KEY in new:
        changes.append(((*loc, RATES_KEY), json.dumps(new.pop(RATES_KEY)), "(removed)", True))
    if new.get(METHOD_KEY) != SYNTHETIC_METHOD:
        old = new.get(METHOD_KEY)
        new[METHOD_KEY] = SYNTHETIC_METHOD
        changes.append(((*loc, METHOD_KEY), None if old is None else str(old), SYNTHETIC_METHOD, False))
    old_len = new.get(LENGTH_KEY)
    if old_len is None or not p.equal(LENGTH_KEY, old_len, al_text):
        new[LENGTH_KEY] = float(al_text)
        changes.append(((*loc, LENGTH_KEY), None if old_len is None else str(old_len), al_text,
                        old_len is not None))
    if changes:
        p.rewrite_json(parent, key, loc, raw, new, changes)


def _plan_vllm_mapping(p: RecipePlanner, mapping: Any, spec: dict[str, Any], loc: tuple[Any, ...], al_text: str) -> None:
    own = dict(p.own_items(mapping))
    if RATES_KEY in own:
        raise UsageError(f"{p.path}: {p.where(loc)} sets {RATES_KEY}; remove it by hand "
                         f"(vLLM rejects it together with {LENGTH_KEY})")
    to_insert: list[tuple[str, str]] = []
    for var, want, conflict in ((METHOD_KEY, SYNTHETIC_METHOD, False),
                                (LENGTH_KEY, al_text, True)):
        if var in own:
            if not p.equal(var, own[var], want):
                p.replace_scalar(mapping, var, want, loc, own[var], conflict=conflict, typed=True)
        else:
            to_insert.append((var, want))
    if to_insert:
        p.insert_keys(mapping, to_insert, loc, typed=True,
                      after=[METHOD_KEY, LENGTH_KEY])
