"""Convert the InferenceX legacy golden files into our schema (the shipped curves).

Values are taken exactly as committed upstream (read by :func:`golden_al.golden.read_curve_file`,
comments ignored); the header comments supply the source run URL, dataset and
sampling; a metadata file supplies what the legacy files do not say (aliases
collected from InferenceX configs and recipes, draft model ids, variants, the
upstream commit and date). Reproducible command (see
README.md beside this script)::

    python experiments/import-inferencex-curves/import_legacy.py \\
        tests/fixtures/inferencex/golden_al_distribution \\
        --metadata experiments/import-inferencex-curves/metadata.yaml \\
        --out golden_al/golden/curves

``--check`` writes nothing and exits 1 when a converted file differs from the one on disk.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from golden_al.errors import GoldenALError, SchemaError
from golden_al.golden.schema import GoldenCurve, load_yaml_roundtrip, parse_curve, to_plain
from golden_al.golden.store import read_curve_file
from golden_al.golden.writer import dump_curve, save_curve
from golden_al.provenance import tool_version

__all__ = ["convert_file", "load_metadata", "main"]

_META_KEYS = {"aliases", "draft", "engine", "dataset", "upstream", "notes"}


def load_metadata(path: str | Path) -> dict[str, Any]:
    """The metadata file: ``_source: {repo, ref}``, ``_defaults: {...}`` and one entry per stem."""
    p = Path(path)
    from golden_al import safeio

    doc = load_yaml_roundtrip(safeio.read_text(p, max_bytes=safeio.ROUNDTRIP_MAX_BYTES), path=p)
    data = to_plain(doc)
    if not isinstance(data, Mapping):
        raise SchemaError("metadata must be a mapping {stem: {...}}", path=p, line=1)
    for stem, entry in data.items():
        if str(stem).startswith("_"):
            continue
        if not isinstance(entry, Mapping):
            raise SchemaError(f"{stem}: expected a mapping", path=p)
        unknown = set(entry) - _META_KEYS
        if unknown:
            raise SchemaError(f"{stem}: unknown keys {sorted(unknown)} (allowed: {sorted(_META_KEYS)})", path=p)
    return dict(data)


def _merge(base: Mapping[str, Any] | None, over: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if base is None and not over:
        return None
    out = dict(base or {})
    out.update({k: v for k, v in (over or {}).items()})
    return out


def convert_file(path: str | Path, metadata: Mapping[str, Any]) -> GoldenCurve:
    """One legacy file (one model) as a curve in our schema, with its metadata merged."""
    p = Path(path)
    curves = read_curve_file(p)
    if len(curves) != 1 or curves[0].format != "inferencex-legacy":
        raise SchemaError(f"expected one model per file in InferenceX's shape, found {len(curves)} "
                          f"{curves[0].format} curve(s)", path=p)
    legacy = curves[0].curve
    entry = metadata.get(p.stem)
    if entry is None:
        raise SchemaError(f"no metadata entry for {p.stem!r}", path=p,
                          hint="add aliases, draft and upstream for it to the metadata file")
    source = metadata.get("_source", {})
    defaults = metadata.get("_defaults", {})
    data = legacy.model_dump(exclude_none=True)
    aliases = [*entry.get("aliases", []), *legacy.aliases]
    data["aliases"] = [a for a in dict.fromkeys(aliases) if a.casefold() != legacy.model.casefold()]
    data["draft"] = _merge(data["draft"], entry.get("draft"))
    data["engine"] = _merge(_merge(data.get("engine"), defaults.get("engine")), entry.get("engine"))
    data["dataset"] = _merge(_merge(data.get("dataset"), defaults.get("dataset")), entry.get("dataset"))
    upstream = entry.get("upstream", {})
    notes = [
        f"Imported from {source.get('repo', 'SemiAnalysisAI/InferenceX')} golden_al_distribution/{p.name} "
        f"at {source.get('ref', '?')} (file last changed in {upstream.get('commit', '?')}); "
        "values exactly as committed there (two decimals, no counts).",
    ]
    if entry.get("notes"):
        notes.append(str(entry["notes"]).strip())
    prov = data["provenance"]
    legacy_notes = [n for n in str(prov.get("notes", "")).split("; ")
                    if n and not n.startswith("read from InferenceX legacy file")]
    prov["notes"] = " ".join(notes + legacy_notes)
    prov["tool"] = f"golden-al {tool_version()} (experiments/import-inferencex-curves/import_legacy.py)"
    if upstream.get("date"):
        prov["date"] = upstream["date"]
    return parse_curve(data, path=p)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="import_legacy.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", help="directory holding the legacy *.yaml files")
    parser.add_argument("--metadata", required=True, help="metadata YAML (aliases, drafts, upstream)")
    parser.add_argument("--out", required=True, help="output directory (our schema, one file per curve)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if any output would change")
    args = parser.parse_args(argv)
    try:
        meta = load_metadata(args.metadata)
        files = sorted(Path(args.source).glob("*.yaml"))
        if not files:
            raise SchemaError("no *.yaml files", path=args.source)
        out = Path(args.out)
        stale = []
        for f in files:
            curve = convert_file(f, meta)
            target = out / f.name
            if args.check:
                if not target.is_file() or target.read_text(encoding="utf-8") != dump_curve(curve):
                    stale.append(target.name)
                continue
            out.mkdir(parents=True, exist_ok=True)
            save_curve(curve, target)
            sys.stderr.write(f"wrote {target} ({curve.model}, {curve.draft.method}"
                             f"{', ' + curve.draft.variant if curve.draft.variant else ''})\n")
        if stale:
            sys.stderr.write(f"out of date: {', '.join(stale)}\n")
            return 1
        sys.stdout.write(f"{len(files)} curves {'checked' if args.check else 'converted'}\n")
        return 0
    except GoldenALError as err:
        sys.stderr.write(f"import_legacy: error: {err}\n")
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
