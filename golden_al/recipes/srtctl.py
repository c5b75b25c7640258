"""srtctl's recipe semantics (srtctl is not on PyPI): the variants it runs and its ``--set``/``--unset``.

NVIDIA/srt-slurm ``src/srtctl/core/config.py`` at c88ef731 (``deep_merge``, ``expand_zip_override``,
``generate_override_configs``) and SemiAnalysisAI/srt-slurm ``src/srtctl/core/overrides.py`` at 32ef19f:

* a ``base:`` recipe runs every ``override_*`` section deep-merged into ``base`` (a ``null`` deletes, lists and
  scalars replace) and every element of every ``zip_override_*`` group (each list leaf a zip dimension, a length-1
  list broadcast, a list of lists a literal list), **not** the base; a selector names ``base``, a section,
  ``zip_override_y[i]`` or a glob;
* every ``--set PATH=VALUE`` then every ``--unset PATH`` goes into ``base``, each ``override_*`` section, and each
  zip group as a one-element list; a value is read as a YAML scalar or sequence, a mapping kept as its text.

Variants are counted before any is built; a recipe of more than :data:`MAX_VARIANTS` is refused.
"""

from __future__ import annotations

import copy
import fnmatch
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from golden_al.errors import UsageError
from golden_al.plugin.profile import Record

__all__ = [
    "MAX_VARIANTS",
    "Override",
    "Variant",
    "apply_overrides",
    "deep_merge",
    "expand_variants",
    "parse_override",
    "split_recipe_arg",
]

#: The most variants one recipe may expand to (srtctl users have tens).
MAX_VARIANTS = 256
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


def _list_lengths(node: Mapping[str, Any]) -> Iterator[int]:
    stack = [node]
    while stack:
        for value in stack.pop().values():
            if isinstance(value, list):
                yield len(value)
            elif isinstance(value, Mapping):
                stack.append(value)


def _zip_length(name: str, section: Mapping[str, Any]) -> int:
    """How many variants a zip group makes (counted, nothing expanded)."""
    sizes: set[int] = set()
    seen = False
    for n in _list_lengths(section):
        seen = True
        if n == 0:
            raise UsageError(f"{name} holds an empty list (srtctl cannot zip zero-length lists)")
        if n != 1:
            sizes.add(n)
    if not seen:
        raise UsageError(f"{name} holds no list to zip (srtctl refuses it)")
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


@dataclass(frozen=True, eq=False, repr=False)
class Variant(Record):
    """One config srtctl runs: its selector (None: a flat recipe) and the resolved data."""

    selector: str | None
    data: Mapping[str, Any]
    #: the override section (``override_x``/``zip_override_y``) whose values win over ``base``, if any
    section: str | None = None


def _sections(doc: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The ``override_*`` and ``zip_override_*`` section names, each sorted (srtctl's order)."""
    overrides = sorted(str(k) for k, v in doc.items() if str(k).startswith("override_") and isinstance(v, Mapping))
    zips = sorted(str(k) for k, v in doc.items() if str(k).startswith("zip_override_") and isinstance(v, Mapping))
    return overrides, zips


def _selected(doc: Mapping[str, Any], selector: str | None) -> list[tuple[str, int | None]]:
    """(section, zip index or None for all) of every section ``selector`` runs, checked but not expanded.

    Raises:
        UsageError: a selector that names nothing (the message lists what exists).
    """
    overrides, zips = _sections(doc)
    available = ", ".join([*overrides, *(f"{z}[i]" for z in zips)]) or "(none)"
    if selector is None:
        return [(key, None) for key in [*overrides, *zips]]
    m = _ZIP_INDEX.match(selector)
    if m:
        key, index = m.group(1), int(m.group(2))
        if key not in zips:
            raise UsageError(f"no zip group {key!r} in the recipe", hint=f"available: {available}")
        n = _zip_length(key, doc[key])
        if index >= n:
            raise UsageError(f"{selector}: {key} has {n} variants (0-{n - 1})")
        return [(key, index)]
    if any(ch in selector for ch in "*?["):
        matched = [k for k in sorted([*overrides, *zips]) if fnmatch.fnmatchcase(k, selector)]
        if not matched:
            raise UsageError(f"no variant matches {selector!r}", hint=f"available: {available}")
        return [(key, None) for key in matched]
    if selector in overrides or selector in zips:
        return [(selector, None)]
    raise UsageError(f"no variant {selector!r} in the recipe", hint=f"available: base, {available}")


def expand_variants(doc: Mapping[str, Any], selector: str | None = None, *,
                    limit: int = MAX_VARIANTS) -> list[Variant]:
    """Every config srtctl runs for ``doc`` and ``selector``, in srtctl's order (overrides, then zip
    groups, each sorted by name). The variants are counted first: none is made when there are more than
    ``limit``.

    Raises:
        UsageError: a selector that names nothing (the message lists what exists), a malformed zip group,
            a selector on a recipe without ``base:``, or more variants than ``limit``.
    """
    if not isinstance(doc.get("base"), Mapping):
        if selector not in (None, "base"):
            raise UsageError(f"selector {selector!r} needs a recipe with base: and override sections; this one is flat")
        return [Variant(None, doc)]
    base = doc["base"]
    if selector == "base":
        return [Variant("base", base)]
    chosen = _selected(doc, selector)
    total = sum(1 if i is not None or key.startswith("override_") else _zip_length(key, doc[key])
                for key, i in chosen)
    if total > limit:
        raise UsageError(f"the recipe expands to {total} variants, more than golden-al plans ({limit})",
                         hint="select a part of it (RECIPE:override_x, RECIPE:zip_override_y[i]) or split it")
    out: list[Variant] = []
    for key, index in chosen:
        if key.startswith("override_"):
            out.append(Variant(key, deep_merge(base, doc[key]), key))
            continue
        indices = [index] if index is not None else range(_zip_length(key, doc[key]))
        out.extend(Variant(f"{key}[{i}]", deep_merge(base, _zip_slice(doc[key], i)), key) for i in indices)
    return out or [Variant("base", base)]


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


#: Characters that a shell splits or expands in the unquoted output of ``$(...)`` (IFS and glob characters).
_SHELL_UNSAFE = {" ": "\\x20", "\t": "\\t", "\n": "\\n", "*": "\\x2a", "?": "\\x3f", "[": "\\x5b"}
_SAFE_KEY = re.compile(r"^[A-Za-z0-9_@%+,:/^~-]+$")


@dataclass(frozen=True, eq=False, repr=False)
class Override(Record):
    """One srtctl override: ``--set PATH=VALUE`` or ``--unset PATH`` (``path`` in the recipe's own schema)."""

    op: Literal["set", "unset"]
    path: tuple[str, ...]
    value: Any = None

    @property
    def dotted(self) -> str:
        return ".".join(self.path)

    def srtctl_args(self) -> list[str]:
        """The two words srtctl takes, safe as the unquoted output of ``$(...)``: no word has whitespace or a glob
        character, and srtctl reads the value back exactly (a string or a mapping as a YAML double-quoted string,
        whose ``\\x20`` escapes srtctl's YAML reader decodes; a number or boolean as itself).

        Raises:
            UsageError: a path key that srtctl's path syntax or the shell would read differently.
        """
        bad = next((k for k in self.path if not _SAFE_KEY.match(k)), None)
        if bad is not None:
            raise UsageError(f"{self.dotted}: the key {bad!r} cannot be passed to srtctl in one shell word",
                             hint="rename the key, or apply the override with --apply")
        if self.op == "unset":
            return ["--unset", self.dotted]
        value = self.value
        if isinstance(value, Mapping):  # srtctl keeps a mapping as its literal text: pass that text as a string
            value = json.dumps(value, separators=(",", ":"))
        if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
            text = json.dumps(value)
        elif isinstance(value, str):
            text = json.dumps(value, ensure_ascii=True, separators=(",", ":"))
            text = "".join(_SHELL_UNSAFE.get(ch, ch) for ch in text)
        else:
            raise UsageError(f"{self.dotted}: a {type(value).__name__} value cannot be passed to srtctl in one word",
                             hint="apply the override with --apply")
        return ["--set", f"{self.dotted}={text}"]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op, "path": self.dotted}
        if self.op == "set":
            out["value"] = self.value
        return out


def _read_value(raw: str) -> Any:
    """A ``--set`` value as srtctl reads it: a YAML scalar or sequence; a mapping stays its literal text."""
    import yaml

    if raw == "":
        return ""
    try:
        parsed = yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw
    return raw if isinstance(parsed, dict) else parsed


def parse_override(op: str, text: str) -> Override:
    """``--set a.b=1`` / ``--unset a.b`` as srtctl reads them (:func:`_read_value`).

    Raises:
        UsageError: an empty path, or ``--set`` without ``=``.
    """
    if op == "set":
        path, sep, raw = text.partition("=")
        if not sep:
            raise UsageError(f"--set {text!r} has no '='", hint="--set PATH=VALUE, e.g. --set roles.decode.env.X=1")
        value: Any = _read_value(raw)
    else:
        path, value = text, None
    parts = tuple(p for p in path.strip().split("."))
    if not parts or any(not p for p in parts):
        raise UsageError(f"--{op} {text!r}: the path must be dotted keys, e.g. roles.decode.env.KEY")
    return Override("set" if op == "set" else "unset", parts, value)


def _apply_one(node: dict[str, Any], o: Override) -> None:
    for i, key in enumerate(o.path[:-1]):
        nxt = node.get(key)
        if nxt is None and o.op == "set":
            nxt = node[key] = {}
        if not isinstance(nxt, dict):
            if o.op == "unset" and nxt is None:
                return
            raise UsageError(f"--{o.op} {o.dotted}: {'.'.join(o.path[: i + 1])} is not a mapping")
        node = nxt
    if o.op == "set":
        node[o.path[-1]] = copy.deepcopy(o.value)
    else:
        node.pop(o.path[-1], None)


def apply_overrides(doc: Mapping[str, Any], overrides: Sequence[Override]) -> dict[str, Any]:
    """``doc`` with every set applied, then every unset (srtctl's order); ``doc`` is not changed. On a recipe with
    ``base:`` each goes into ``base`` and every ``override_*`` section, and into every ``zip_override_*`` section as
    a one-element list (it broadcasts to every zipped variant), so no variant shadows it.

    Raises:
        UsageError: a path that runs through a value that is not a mapping.
    """
    out = copy.deepcopy(dict(doc))
    ordered = [o for o in overrides if o.op == "set"] + [o for o in overrides if o.op == "unset"]
    if not isinstance(out.get("base"), dict):
        for o in ordered:
            _apply_one(out, o)
        return out
    for o in ordered:
        _apply_one(out["base"], o)
        for key, section in out.items():
            if isinstance(section, dict) and str(key).startswith("override_"):
                _apply_one(section, o)
            elif isinstance(section, dict) and str(key).startswith("zip_override_"):
                _apply_one(section, o if o.op == "unset" else Override("set", o.path, [o.value]))
    return out
