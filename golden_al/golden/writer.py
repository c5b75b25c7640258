"""Write golden curves in our schema: stable key order, atomic.

Keys follow the schema's declaration order (``schema_version``, ``model``, ``aliases``,
``draft``, ``engine``, ``dataset``, ``thinking_on``, ``thinking_off``, ``levels``, ``provenance``);
points are sorted by k; unset (None) fields are left out; short numeric lists
(``ci95``, ``per_position_accepted``), ``aliases`` and ``chat_template_kwargs`` are
written in flow style. The same curve always gives the same bytes, so a ``commit``
diff shows only what changed.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from golden_al.golden.schema import GoldenCurve, parse_curve
from golden_al.safeio import atomic_write_text

__all__ = ["dump_curve", "save_curve"]

_FLOW_KEYS = {"ci95", "per_position_accepted", "aliases", "chat_template_kwargs", "uncertainty"}


def _to_node(value: Any, key: str | None = None, *, flow: bool = False) -> Any:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(value, dict):
        m = CommentedMap()
        for k, v in value.items():
            if v is None:
                continue
            # each point of ``points`` is one flow mapping on one line: ``3: {al: 2.49}``
            m[k] = _to_node(v, k if isinstance(k, str) else None, flow=key == "points")
        if key in _FLOW_KEYS or flow:
            m.fa.set_flow_style()
        return m
    if isinstance(value, (list, tuple)):
        s = CommentedSeq([_to_node(v) for v in value])
        if key in _FLOW_KEYS:
            s.fa.set_flow_style()
        return s
    return value


def dump_curve(curve: GoldenCurve) -> str:
    """The YAML text of ``curve`` in our schema (see the module docstring)."""
    from ruamel.yaml import YAML

    data = curve.model_dump(mode="json", exclude_none=True)
    if not data.get("levels"):
        data.pop("levels", None)
    blocks = [data[m] for m in ("thinking_on", "thinking_off") if m in data] + list(data.get("levels", {}).values())
    for blk in blocks:
        # model_dump(mode="json") turns int keys of points into strings; restore ints.
        blk["points"] = {int(k): v for k, v in sorted(blk["points"].items(), key=lambda kv: int(kv[0]))}
        # Defaults that say nothing are left out for readability.
        for p in blk["points"].values():
            if p.get("origin") == "measured":
                del p["origin"]
    yaml = YAML(typ="rt")
    yaml.default_flow_style = False
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    buf = io.StringIO()
    yaml.dump(_to_node(data), buf)
    return buf.getvalue()


def save_curve(curve: GoldenCurve, path: str | Path, *, force: bool = False) -> Path:
    """Write ``curve`` to ``path`` atomically in our schema; returns the path
    (:func:`golden_al.safeio.atomic_write_bytes`: mode and symlinks kept; a read-only
    file is replaced only with ``force``).

    The text is re-validated before writing, so a file that this function writes
    always loads back to an equal curve.
    """
    text = dump_curve(curve)
    from golden_al.golden.schema import load_yaml_roundtrip, to_plain

    doc = load_yaml_roundtrip(text, path=path)
    back = parse_curve(to_plain(doc), path=path, doc=doc)
    if back != curve:  # pragma: no cover - a writer bug, not a user error
        raise AssertionError(f"golden curve writer is not faithful for {path}")
    return atomic_write_text(path, text, force=force)
