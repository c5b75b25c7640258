"""Is ``golden-al check`` over the InferenceX tree at least as fast after a change as before it?

Side by side in one run: the CLI (``python -m golden_al check . --golden-dir
golden_al_distribution --format json``, a fresh subprocess, imports included) from two source
trees, the ``--base`` commit of this repository (extracted with ``git archive``) and the working
tree, alternating run by run so both see the same machine load. Reports medians and the ratio
after / before, and that both give the same findings. Writes ``bench_before_after.json``.

    flock /tmp/golden-al-heavy.lock python experiments/inferencex-check/bench_before_after.py --base bf08caa
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from golden_al.provenance import atomic_write_text, collect, now_iso

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
from run_check import extract  # noqa: E402


def _run(src: Path, tree: Path) -> tuple[float, list[dict[str, object]]]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "golden_al", "check", ".", "--golden-dir", "golden_al_distribution",
                          "--format", "json"], cwd=tree, env=env, capture_output=True, text=True, check=False)
    dt = time.perf_counter() - t0
    doc = json.loads(out.stdout)
    findings = doc["findings"] if isinstance(doc, dict) else doc
    return dt, findings


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror/SemiAnalysisAI+InferenceX/repo"))
    ap.add_argument("--commit", default="843c6254f")
    ap.add_argument("--base", required=True, help="the commit of this repository to compare against")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", type=Path, default=HERE / "bench_before_after.json")
    ap.add_argument("--changed-findings", action="store_true",
                    help="the change is meant to change findings: record the difference instead of failing")
    args = ap.parse_args(argv)
    started = now_iso()
    load_before = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="infx-bench-"))
    try:
        tree, base_src = tmp / "tree", tmp / "base"
        tree.mkdir()
        base_src.mkdir()
        sha = extract(args.mirror, args.commit, tree)
        base_sha = subprocess.run(["git", "rev-parse", args.base], cwd=ROOT, capture_output=True, text=True,
                                  check=True).stdout.strip()
        archive = subprocess.run(["git", "archive", base_sha], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base_src)], input=archive, check=True)
        times: dict[str, list[float]] = {"before": [], "after": []}
        found: dict[str, list[dict[str, object]]] = {}
        for _ in range(args.repeats):
            for label, src in (("before", base_src), ("after", ROOT)):
                dt, findings = _run(src, tree)
                times[label].append(dt)
                found[label] = findings
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    key = lambda f: json.dumps(f, sort_keys=True)  # noqa: E731
    same = sorted(map(key, found["before"])) == sorted(map(key, found["after"]))
    before_keys = {(f["file"], f["line"], f["verdict"]) for f in found["before"]}
    after_keys = {(f["file"], f["line"], f["verdict"]) for f in found["after"]}
    doc = {
        "provenance": collect(started=started, argv=[sys.argv[0], *(argv or sys.argv[1:])]),
        "inferencex_commit": sha,
        "base_commit": base_sha,
        "repeats": args.repeats,
        "seconds": {k: [round(x, 4) for x in v] for k, v in times.items()},
        "median_s": {k: round(v, 4) for k, v in med.items()},
        "ratio_after_over_before": round(med["after"] / med["before"], 4),
        "max_s": {k: round(max(v), 4) for k, v in times.items()},
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "same_findings": same,
        "findings": {"before": len(found["before"]), "after": len(found["after"])},
        "only_before": sorted(map(list, before_keys - after_keys)),
        "only_after": sorted(map(list, after_keys - before_keys)),
    }
    atomic_write_text(args.out, json.dumps(doc, indent=2) + "\n")
    print(f"check over InferenceX {sha[:9]}: before {med['before']:.3f}s, after {med['after']:.3f}s (median of "
          f"{args.repeats}); after/before = {doc['ratio_after_over_before']}; same findings: {same}; "
          f"load average {doc['load_average_before']} -> {doc['load_average_after']}")
    return 0 if same or args.changed_findings else 1


if __name__ == "__main__":
    raise SystemExit(main())
