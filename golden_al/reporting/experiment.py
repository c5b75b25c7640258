"""Result files of the research experiments: ``results.json`` (results + provenance) and a re-run check.

Every experiment in ``experiments/<slug>/`` writes its numbers with :func:`write_results`:
``{"results": ..., "provenance": ...}``. Re-running the experiment's command with
``--check`` recomputes the results and compares them with the committed file
(:func:`compare_results`): the ``results`` section must be equal (floats to a relative
tolerance of 1e-9, so a different BLAS summation order is not a failure); provenance
(times, host) is expected to differ and is ignored.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from golden_al.provenance import atomic_write_text, collect

__all__ = [
    "check_or_publish",
    "compare_results",
    "load_results",
    "plain",
    "replace_section",
    "write_json",
    "write_results",
]


def plain(obj: Any) -> Any:
    """``obj`` with numpy scalars/arrays, tuples and int keys turned into plain JSON types."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a core dependency
        np = None  # type: ignore[assignment]
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if np is not None and isinstance(obj, np.ndarray):
        return [plain(v) for v in obj.tolist()]
    if np is not None and isinstance(obj, np.generic):
        return obj.item()
    return obj


def write_json(path: str | Path, doc: Any) -> Path:
    """Indented JSON, atomically."""
    return atomic_write_text(path, json.dumps(plain(doc), indent=2) + "\n")


def write_results(path: str | Path, results: Any, *, provenance: dict[str, Any] | None = None,
                  extra: dict[str, Any] | None = None) -> Path:
    """``{"results": results, **extra, "provenance": ...}`` to ``path``."""
    doc = {"results": plain(results), **(extra or {}), "provenance": provenance or collect()}
    return write_json(path, doc)


def load_results(path: str | Path) -> Any:
    """The ``results`` section of a committed ``results.json``."""
    return json.loads(Path(path).read_text(encoding="utf-8"))["results"]


def compare_results(committed: Any, fresh: Any, *, rel: float = 1e-9, where: str = "results") -> list[str]:
    """Every difference between two results trees (empty when they agree)."""
    committed, fresh = plain(committed), plain(fresh)
    out: list[str] = []
    if isinstance(committed, dict) and isinstance(fresh, dict):
        for k in sorted(set(committed) | set(fresh)):
            if k not in committed or k not in fresh:
                out.append(f"{where}.{k}: present in only one of committed/fresh")
            else:
                out += compare_results(committed[k], fresh[k], rel=rel, where=f"{where}.{k}")
        return out
    if isinstance(committed, list) and isinstance(fresh, list):
        if len(committed) != len(fresh):
            return [f"{where}: length {len(committed)} committed vs {len(fresh)} fresh"]
        for i, (a, b) in enumerate(zip(committed, fresh, strict=True)):
            out += compare_results(a, b, rel=rel, where=f"{where}[{i}]")
        return out
    if isinstance(committed, float) or isinstance(fresh, float):
        if isinstance(committed, (int, float)) and isinstance(fresh, (int, float)) and not isinstance(committed, bool):
            if math.isclose(committed, fresh, rel_tol=rel, abs_tol=1e-12):
                return []
        return [f"{where}: {committed!r} committed vs {fresh!r} fresh"]
    return [] if committed == fresh else [f"{where}: {committed!r} committed vs {fresh!r} fresh"]


def replace_section(path: str | Path, name: str, text: str) -> bool:
    """Replace the text between ``<!-- BEGIN name -->`` and ``<!-- END name -->`` in a README.

    Returns True when the file changed. The markers must exist (an experiment's README
    keeps its results table between them, so the script that computes the numbers also
    writes the table the reader sees).
    """
    p = Path(path)
    src = p.read_text(encoding="utf-8")
    begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
    i, j = src.find(begin), src.find(end)
    if i < 0 or j < i:
        raise ValueError(f"{p}: markers {begin} ... {end} not found")
    new = src[: i + len(begin)] + "\n" + text.rstrip("\n") + "\n" + src[j:]
    if new == src:
        return False
    atomic_write_text(p, new)
    return True


def check_or_publish(here: str | Path, results: Any, *, check: bool, table: Callable[[Any], str],
                     plot: Callable[[Any], object], show: int | None = 20) -> tuple[int, str]:
    """The end of every experiment script: ``--check``, or write the results, table and plots.

    Returns ``(exit code, text to print)``. With ``check``: compare ``results`` with the
    committed ``here/results.json``; the text is the first ``show`` differences (all when
    None) and a verdict line, and the code 1 when they differ. Otherwise write
    ``results.json`` (with provenance), ``results.md``, the README's ``results`` section
    and the plots; the text is the table and the code 0.
    """
    d = Path(here)
    if check:
        diffs = compare_results(load_results(d / "results.json"), results)
        verdict = "reproduced exactly" if not diffs else f"{len(diffs)} difference(s)"
        return (1 if diffs else 0), "\n".join([*diffs[:show], verdict])
    md = table(results).rstrip("\n")
    write_results(d / "results.json", results, provenance=collect())
    atomic_write_text(d / "results.md", md + "\n")
    replace_section(d / "README.md", "results", md)
    plot(results)
    return 0, md
