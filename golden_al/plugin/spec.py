"""Draft length of a pin from the engine's own settings, by the engine's rule (its profile's
:attr:`~golden_al.plugin.profile.CheckSupport.settings_draft_len`).

Each returns a :class:`~golden_al.checks.findings.DraftInfo`: ``k`` and the rule that
gave it, or ``problem`` saying why the files do not fix it (an absent flag, an
unexpanded shell variable, contradictory flags), and whether the engine runs the draft as
a separate model (TensorRT-LLM's two-model path).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from golden_al.errors import UsageError
from golden_al.plugin.pins import DraftInfo
from golden_al.plugin.profile import Speculation
from golden_al.plugin.registry import get_profile

__all__ = ["config_json", "draft_from_settings", "settings_draft", "settings_draft_any_algorithm"]


def _unresolved(values: Mapping[str, Any]) -> str | None:
    from golden_al.shell import has_unknown, show, unknown_names  # a shell reader's marks: off select's path

    for name, v in values.items():
        if isinstance(v, str) and has_unknown(v):
            names = ", ".join("$" + n for n in unknown_names(v)) or show(v)
            return f"{name} is {show(v)}, set outside this file ({names})"
    return None


def draft_from_settings(engine: str, spec: Speculation | None, where: str,
                        unresolved: Callable[[Mapping[str, Any]], str | None] | None = None) -> DraftInfo:
    """k from the speculative settings a reader found (None: none), by the engine's rule
    (:attr:`~golden_al.plugin.profile.CheckSupport.settings_draft_len`); ``unresolved``: why a value k rests on
    cannot be read (a shell reader's variable set outside the file), or None."""
    try:
        profile = get_profile(engine)
    except KeyError:
        return DraftInfo(problem=f"the engine is unknown ({engine}), so nothing in {where} fixes k")
    if profile.check.settings_draft_len is None:
        return DraftInfo(problem=f"{profile.display_name} settings in {where} do not fix the draft length")
    problem = unresolved(spec.draft_inputs) if spec is not None and unresolved is not None else None
    if problem:
        return DraftInfo(problem=problem)
    try:
        d = profile.check.settings_draft_len(spec)
    except (UsageError, ValueError) as exc:
        return DraftInfo(problem=f"{exc} ({where})")
    return DraftInfo(k=d.k, rule=f"{d.described or d.rule} in {where}", chain=d.chain, two_model=d.two_model)


def settings_draft(engine: str, spec: Speculation | None, where: str) -> DraftInfo:
    """:func:`draft_from_settings` of a shell file's settings: a value k rests on that is set outside the file (a
    variable the reader could not expand) leaves the draft length unknown."""
    return draft_from_settings(engine, spec, where, unresolved=_unresolved)


def settings_draft_any_algorithm(engine: str, spec: Speculation, where: str, hidden: str) -> DraftInfo:
    """k when no algorithm can be read because ``hidden`` (words set at run time, e.g.
    ``$MODEL_MTP_FLAGS``) may hold it: the settings fix k only when every algorithm of the engine
    reads the same k from them (SGLang's ``--speculative-num-steps N`` with
    ``--speculative-num-draft-tokens N+1`` does)."""
    profile = get_profile(engine)
    problem = _unresolved(spec.draft_inputs)
    if problem:
        return DraftInfo(problem=problem)
    assert profile.check.settings_draft_len is not None
    assert profile.check.algorithm_flag is not None
    flag = profile.check.algorithm_flag
    detail = ", ".join(f"{k.removeprefix('--')}={v}" for k, v in spec.draft_inputs.items() if v is not None)
    ks: dict[int, list[str]] = {}
    chain = True
    for algo in profile.algorithms:
        try:
            d = profile.check.settings_draft_len(replace(spec, algorithm=algo))
        except (UsageError, ValueError) as exc:
            return DraftInfo(problem=f"no {flag} in {where} ({hidden} may set it), and with {algo.upper()} "
                                     f"the flags do not fix k: {exc}")
        ks.setdefault(d.k, []).append(algo.upper())
        chain = chain and d.chain
    if len(ks) != 1:
        shown = "; ".join(f"k={k} for {', '.join(a)}" for k, a in sorted(ks.items()))
        return DraftInfo(problem=f"no {flag} in {where} ({hidden} may set it), and the flags give "
                                 f"different k by algorithm: {shown}")
    (k,) = ks
    return DraftInfo(k=k, rule=f"{profile.display_name} {detail} in {where}: every {flag} reads k={k} from these "
                               f"flags (the algorithm is in {hidden}, set at run time, assumed not to set them again)",
                     chain=chain)


def config_json(text: str) -> dict[str, Any] | None:
    """The first JSON object in an expanded shell text: a value set outside the file reads as null outside a string
    (and as its ``$NAME`` text inside one), and such a null keeps the unknown text it stood for."""
    from golden_al.shell import UNKNOWN_MARK, harden, show

    start = text.find("{")
    while start >= 0:
        chunk = harden(text[start:])
        plain = show(_unknown_as_null(chunk, UNKNOWN_MARK))
        try:
            obj = json.JSONDecoder().raw_decode(plain)[0]
        except json.JSONDecodeError as exc:
            if exc.pos >= len(plain):  # never closed: nothing further in the text is a whole object
                return None
            obj = None
        if isinstance(obj, dict):
            for key, value in list(obj.items()):
                if value is None and (found := _find_unknown_value(chunk, key)):
                    obj[key] = found
            return obj
        start = text.find("{", start + 1)
    return None


def _unknown_as_null(chunk: str, mark: str) -> str:
    """``chunk`` with each unknown part (between two ``mark``) outside a JSON string written ``null``."""
    out: list[str] = []
    in_str = esc = False
    i = 0
    while i < len(chunk):
        c = chunk[i]
        if c == mark and not in_str:
            j = chunk.find(mark, i + 1)
            out.append("null")
            i = len(chunk) if j < 0 else j + 1
            continue
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        out.append(c)
        i += 1
    return "".join(out)


def _find_unknown_value(chunk: str, key: str) -> str | None:
    from golden_al.shell import UNKNOWN_MARK as _UNKNOWN_MARK

    k = chunk.find(f'"{key}"')
    if k < 0:
        return None
    a = chunk.find(_UNKNOWN_MARK, k)
    if a < 0:
        return None
    b = chunk.find(_UNKNOWN_MARK, a + 1)
    if b < 0:
        return None
    colon = chunk.find(":", k)
    if colon < 0 or colon > a or chunk[colon + 1:a].strip():
        return None
    return chunk[a:b + 1]
