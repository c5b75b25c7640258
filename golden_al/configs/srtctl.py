"""srtctl's override semantics, implemented here (srtctl is not on PyPI).

What a launcher does to a recipe before it runs, so that ``select`` plans exactly the configs that
will run (NVIDIA/srt-slurm ``src/srtctl/core/config.py`` at c88ef731: ``deep_merge``,
``expand_zip_override``, ``generate_override_configs``; ``docs/overrides.md``):

* a recipe with a ``base:`` key runs every ``override_*`` variant and every element of every
  ``zip_override_*`` group, **not** the base; ``R:base`` runs the base alone;
* ``override_x`` is deep-merged into ``base`` (mappings key by key, lists and scalars replaced, a
  ``null`` value deletes the key);
* ``zip_override_y`` expands to N variants ``zip_override_y[i]``: every list leaf is a zip dimension
  (a length-1 list broadcasts, other lengths must agree; a list of lists gives a literal list);
* a selector names ``base``, ``override_x``, ``zip_override_y`` (all its elements),
  ``zip_override_y[i]`` or a glob over the section names.

The caller's ``--set PATH=VALUE`` / ``--unset PATH`` arguments are applied to each resolved config:
every set first, then every unset (srtctl's order); a value is JSON where it parses as JSON, else the
text itself.
"""

from __future__ import annotations

import copy
import fnmatch
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from golden_al.errors import UsageError

__all__ = [
    "CallerOverride",
    "Variant",
    "apply_overrides",
    "deep_merge",
    "expand_variants",
    "parse_override",
    "split_recipe_arg",
]

_ZIP_INDEX = re.compile(r"^(zip_override_[\w.-]+)\[(\d+)\]$")


def deep_merge(base: Any, over: Any) -> Any:
    """srtctl's merge of an override into ``base``: mappings merged key by key, a ``None`` value
    deletes the key, anything else replaced; the inputs are not changed."""
    if not isinstance(base, Mapping) or not isinstance(over, Mapping):
        return copy.deepcopy(over)
    out = {k: copy.deepcopy(v) for k, v in base.items()}
    for key, value in over.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _list_lengths(node: Mapping[str, Any]) -> list[int]:
    out: list[int] = []
    for value in node.values():
        if isinstance(value, list):
            out.append(len(value))
        elif isinstance(value, Mapping):
            out.extend(_list_lengths(value))
    return out


def _zip_length(name: str, section: Mapping[str, Any]) -> int:
    lengths = _list_lengths(section)
    if not lengths:
        raise UsageError(f"{name} holds no list to zip (srtctl refuses it)")
    if 0 in lengths:
        raise UsageError(f"{name} holds an empty list (srtctl cannot zip zero-length lists)")
    sizes = {n for n in lengths if n != 1}
    if len(sizes) > 1:
        raise UsageError(f"{name}: list lengths {sorted(sizes)} disagree (srtctl zips lists of one length, "
                         "or of length 1 to broadcast)")
    return sizes.pop() if sizes else 1


def _zip_slice(node: Mapping[str, Any], index: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in node.items():
        if isinstance(value, list):
            out[key] = value[0 if len(value) == 1 else index]
        elif isinstance(value, Mapping):
            out[key] = _zip_slice(value, index)
        else:
            out[key] = value
    return out


@dataclass(frozen=True)
class Variant:
    """One config srtctl runs: its selector (None: a flat recipe), the resolved data, and the section
    keys of the document its values come from (most specific first)."""

    selector: str | None
    data: Mapping[str, Any]
    #: the override section (``override_x``/``zip_override_y``) whose values win over ``base``, if any
    section: str | None = None
    #: the element of a zip group
    index: int | None = None


def _expand_zip(key: str, section: Mapping[str, Any], base: Mapping[str, Any]) -> list[Variant]:
    n = _zip_length(key, section)
    return [Variant(f"{key}[{i}]", deep_merge(base, _zip_slice(section, i)), key, i) for i in range(n)]


def expand_variants(doc: Mapping[str, Any], selector: str | None = None) -> list[Variant]:
    """Every config srtctl runs for ``doc`` and ``selector``, in srtctl's order (overrides, then zip
    groups, each sorted by name).

    Raises:
        UsageError: a selector that names nothing (the message lists what exists), a malformed zip group,
            or a selector on a recipe without ``base:``.
    """
    if not isinstance(doc.get("base"), Mapping):
        if selector not in (None, "base"):
            raise UsageError(f"selector {selector!r} needs a recipe with base: and override sections; this one is flat")
        return [Variant(None, doc)]
    base = doc["base"]
    overrides = sorted(str(k) for k, v in doc.items() if str(k).startswith("override_") and isinstance(v, Mapping))
    zips = sorted(str(k) for k, v in doc.items() if str(k).startswith("zip_override_") and isinstance(v, Mapping))
    available = ", ".join([*overrides, *(f"{z}[i]" for z in zips)]) or "(none)"

    def one(key: str) -> list[Variant]:
        if key in zips:
            return _expand_zip(key, doc[key], base)
        return [Variant(key, deep_merge(base, doc[key]), key)]

    if selector is None:
        out = [v for key in [*overrides, *zips] for v in one(key)]
        return out or [Variant("base", base)]
    if selector == "base":
        return [Variant("base", base)]
    m = _ZIP_INDEX.match(selector)
    if m:
        key, index = m.group(1), int(m.group(2))
        if key not in zips:
            raise UsageError(f"no zip group {key!r} in the recipe", hint=f"available: {available}")
        group = _expand_zip(key, doc[key], base)
        if index >= len(group):
            raise UsageError(f"{selector}: {key} has {len(group)} variants (0-{len(group) - 1})")
        return [group[index]]
    if any(ch in selector for ch in "*?["):
        matched = [k for k in sorted([*overrides, *zips]) if fnmatch.fnmatchcase(k, selector)]
        if not matched:
            raise UsageError(f"no variant matches {selector!r}", hint=f"available: {available}")
        return [v for key in matched for v in one(key)]
    if selector in overrides or selector in zips:
        return one(selector)
    raise UsageError(f"no variant {selector!r} in the recipe", hint=f"available: base, {available}")


def split_recipe_arg(arg: str) -> tuple[str, str | None]:
    """``recipe.yaml:override_x`` -> (``recipe.yaml``, ``override_x``); a path without a selector as is.

    Only a suffix after the last ``:`` that looks like a selector (``base``, ``override_*``,
    ``zip_override_*``, or a glob) is split off, so a path with a colon in it stays whole.
    """
    head, sep, tail = arg.rpartition(":")
    if sep and head and (tail == "base" or tail.startswith(("override_", "zip_override_"))
                         or any(ch in tail for ch in "*?")) and "/" not in tail:
        return head, tail
    return arg, None


@dataclass(frozen=True)
class CallerOverride:
    """One ``--set PATH=VALUE`` or ``--unset PATH`` of the caller."""

    op: str  #: ``set`` or ``unset``
    path: tuple[str, ...]
    value: Any = None

    @property
    def dotted(self) -> str:
        return ".".join(self.path)


def parse_override(op: str, text: str) -> CallerOverride:
    """``--set a.b=1`` / ``--unset a.b`` as srtctl reads them (a value is JSON where it parses, else text).

    Raises:
        UsageError: an empty path, or ``--set`` without ``=``.
    """
    if op == "set":
        path, sep, raw = text.partition("=")
        if not sep:
            raise UsageError(f"--set {text!r} has no '='", hint="--set PATH=VALUE, e.g. --set roles.decode.env.X=1")
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
    else:
        path, value = text, None
    parts = tuple(p for p in path.strip().split("."))
    if not parts or any(not p for p in parts):
        raise UsageError(f"--{op} {text!r}: the path must be dotted keys, e.g. roles.decode.env.KEY")
    return CallerOverride(op, parts, value)


def apply_overrides(data: Mapping[str, Any], overrides: Sequence[CallerOverride]) -> dict[str, Any]:
    """``data`` with every set applied, then every unset (srtctl's order); ``data`` is not changed.

    Raises:
        UsageError: a path that runs through a value that is not a mapping.
    """
    out = copy.deepcopy(dict(data))
    for o in [o for o in overrides if o.op == "set"] + [o for o in overrides if o.op == "unset"]:
        node: Any = out
        for i, key in enumerate(o.path[:-1]):
            nxt = node.get(key) if isinstance(node, dict) else None
            if nxt is None and o.op == "set":
                nxt = node[key] = {}
            if not isinstance(nxt, dict):
                if o.op == "unset" and nxt is None:
                    break
                raise UsageError(f"--{o.op} {o.dotted}: {'.'.join(o.path[: i + 1])} is not a mapping")
            node = nxt
        else:
            if o.op == "set":
                node[o.path[-1]] = copy.deepcopy(o.value)
            else:
                node.pop(o.path[-1], None)
    return out
