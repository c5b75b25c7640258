"""``golden-al inject --restore-real`` over every InferenceX recipe and config that pins synthetic acceptance.

Extracts one commit of the InferenceX mirror into a temporary directory, runs the restoration on
every YAML file under ``benchmarks/`` and ``.github/configs``/``configs`` in which ``check``'s census
finds a setting, then runs ``check`` on the rewritten tree: the census must find no setting left in
any rewritten file, and a second restoration must change nothing (idempotence). Writes
``restore_counts.json``.

    python experiments/inferencex-check/run_restore.py --mirror /work/.mirror/SemiAnalysisAI+InferenceX/repo
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import sys
import tempfile
from pathlib import Path

from golden_al import safeio
from golden_al.checks.static import check_paths
from golden_al.errors import GoldenALError
from golden_al.golden import load_store
from golden_al.injection.restore import restore_file
from golden_al.knobs.census import census_data, iter_pin_sites, may_hold_knob
from golden_al.provenance import atomic_write_text, collect, now_iso

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run_check import extract  # noqa: E402


def _pins(path: Path) -> int:
    text = path.read_text(errors="replace")
    if not may_hold_knob(text):
        return 0
    try:
        docs = safeio.load_yaml_documents(text, construct=False)
    except GoldenALError:
        return 0
    return sum(1 for _, node in docs if node is not None for _ in iter_pin_sites(census_data(node)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror/SemiAnalysisAI+InferenceX/repo"))
    ap.add_argument("--commit", default="843c6254f")
    ap.add_argument("--out", type=Path, default=HERE / "restore_counts.json")
    args = ap.parse_args(argv)
    started = now_iso()
    tmp = Path(tempfile.mkdtemp(prefix="infx-restore-"))
    try:
        sha = extract(args.mirror, args.commit, tmp)
        targets = [p for p in sorted(tmp.rglob("*.y*ml")) if p.suffix in (".yaml", ".yml")
                   and "golden_al_distribution" not in p.parts and _pins(p)]
        removed: collections.Counter[str] = collections.Counter()
        refused: dict[str, str] = {}
        rewritten = []
        for p in targets:
            rel = str(p.relative_to(tmp))
            try:
                result = restore_file(p)
            except GoldenALError as exc:
                refused[rel] = str(exc)
                continue
            rewritten.append(rel)
            removed.update(r.name for r in result.removals)
            if restore_file(p).changed:
                raise SystemExit(f"{rel}: a second --restore-real changed the file again")
        left = {rel: _pins(tmp / rel) for rel in rewritten if _pins(tmp / rel)}
        report = check_paths([tmp / rel for rel in rewritten], store=load_store(tmp / "golden_al_distribution"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    doc = {
        "provenance": collect(started=started, argv=[sys.argv[0], *(argv or sys.argv[1:])]),
        "inferencex_commit": sha,
        "files_with_settings": len(targets),
        "rewritten": len(rewritten),
        "refused": refused,
        "settings_removed_or_switched": dict(sorted(removed.items())),
        "settings_left_after": left,
        "check_after": {"findings": len(report.findings), "occurrences": report.occurrences},
    }
    atomic_write_text(args.out, json.dumps(doc, indent=2) + "\n")
    print(f"InferenceX {sha[:9]}: {len(targets)} YAML files pin synthetic acceptance; {len(rewritten)} restored, "
          f"{len(refused)} refused; settings removed: {sum(removed.values())}; left after: {len(left)}; check "
          f"after: {len(report.findings)} findings")
    return 0 if not left and not report.findings else 1


if __name__ == "__main__":
    raise SystemExit(main())
