"""The golden curve store: our schema, the InferenceX legacy shape, lookups.

Public API (what ``env``, ``inject``, ``check``, ``check-run``, ``fit`` and ``commit`` use):

* :func:`load_store` -> :class:`GoldenStore` (``.curves``, ``.models()``,
  ``.resolve_model(name)``, ``.curve(model, method, variant, ...)``,
  ``.lookup(model, thinking, k, ...) -> GoldenPoint``, ``.method_for(engine, algorithm, model)``);
* :func:`curve_method_for` (engine algorithm spelling -> curve method);
* the schema models :class:`GoldenCurve` (``Draft``, ``Engine``, ``Dataset``,
  ``ThinkingMode``, ``Sampling``, ``Point``, ``Provenance``), :func:`parse_curve`;
* :func:`read_curve_file`: the one reader of a curve file (ours or the legacy shape, converted); :func:`read_al_table`
  also reads plain ``K=AL`` lines and ``{K: AL}`` mappings (``draft-lengths --curve-file``);
* :func:`save_curve` / :func:`dump_curve` (our schema, atomic, stable key order);
* :func:`read_legacy_text`, :func:`write_legacy` (InferenceX shape).
"""

from __future__ import annotations

from golden_al.golden.legacy import read_legacy_text, write_legacy
from golden_al.golden.schema import (
    DRAFT_METHODS,
    SCHEMA_VERSION,
    Dataset,
    Draft,
    Engine,
    GoldenCurve,
    Point,
    Provenance,
    Sampling,
    ThinkingMode,
    parse_curve,
)
from golden_al.golden.store import (
    SHIPPED_CURVES_DIR,
    GoldenPoint,
    GoldenStore,
    StoredCurve,
    curve_method_for,
    format_k_list,
    load_store,
    parse_al_pairs,
    read_al_table,
    read_curve_file,
)
from golden_al.golden.writer import dump_curve, save_curve

__all__ = [
    "DRAFT_METHODS",
    "SCHEMA_VERSION",
    "SHIPPED_CURVES_DIR",
    "Dataset",
    "Draft",
    "Engine",
    "GoldenCurve",
    "GoldenPoint",
    "GoldenStore",
    "Point",
    "Provenance",
    "Sampling",
    "StoredCurve",
    "ThinkingMode",
    "curve_method_for",
    "dump_curve",
    "format_k_list",
    "load_store",
    "parse_al_pairs",
    "parse_curve",
    "read_al_table",
    "read_curve_file",
    "read_legacy_text",
    "save_curve",
    "write_legacy",
]
