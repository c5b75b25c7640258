"""Is ``check``'s shell-script reading at least as fast after a change as before it?

Side by side in one run: a fresh interpreter per measurement, from two source trees (the
``--base`` commit of this repository, extracted with ``git archive``, and the working tree),
alternating run by run so both see the same machine load. Each measurement reads every
InferenceX shell script that names a synthetic-acceptance knob (the ones ``check`` parses and
walks) with ``golden_al.knobs.scripts.extract_shell_pins`` and reports the best of three
passes (imports and the first pass excluded). Writes ``bench_shell.json`` with medians and the
ratio after / before.

    flock /tmp/golden-al-heavy.lock python experiments/inferencex-check/bench_shell.py --base 85e649c
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
from pathlib import Path

from golden_al.provenance import atomic_write_text, collect, now_iso

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
from run_check import extract  # noqa: E402

_CHILD = """
import pathlib, sys, time
from golden_al.knobs.names import has_keyword
from golden_al.knobs.scripts import extract_shell_pins
files = [(str(p), p.read_text(errors="replace")) for p in sorted(pathlib.Path(sys.argv[1]).rglob("*"))
         if p.suffix in (".sh", ".bash", ".slurm") and p.is_file()]
files = [(p, t) for p, t in files if has_keyword(t)]
pins = 0
for p, t in files:
    try:
        pins += len(extract_shell_pins(t, p)[0])
    except Exception:
        pass
best = float("inf")
for _ in range(3):
    t0 = time.perf_counter()
    for p, t in files:
        try:
            extract_shell_pins(t, p)
        except Exception:
            pass
    best = min(best, time.perf_counter() - t0)
print(len(files), pins, best)
"""


def _run(src: Path, tree: Path) -> tuple[int, int, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(tree)], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    return int(out[0]), int(out[1]), float(out[2])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror/SemiAnalysisAI+InferenceX/repo"))
    ap.add_argument("--commit", default="843c6254f")
    ap.add_argument("--base", required=True, help="the commit of this repository to compare against")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=HERE / "bench_shell.json")
    args = ap.parse_args(argv)
    started = now_iso()
    tmp = Path(tempfile.mkdtemp(prefix="infx-bench-shell-"))
    times: dict[str, list[float]] = {"before": [], "after": []}
    counts: dict[str, tuple[int, int]] = {}
    try:
        tree, base_src = tmp / "tree", tmp / "base"
        tree.mkdir()
        base_src.mkdir()
        sha = extract(args.mirror, args.commit, tree)
        base_sha = subprocess.run(["git", "rev-parse", args.base], cwd=ROOT, capture_output=True, text=True,
                                  check=True).stdout.strip()
        archive = subprocess.run(["git", "archive", base_sha], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(base_src)], input=archive, check=True)
        for _ in range(args.repeats):
            for label, src in (("before", base_src), ("after", ROOT)):
                files, pins, seconds = _run(src, tree)
                times[label].append(seconds)
                counts[label] = (files, pins)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    doc = {
        "provenance": collect(started=started, argv=[sys.argv[0], *(argv or sys.argv[1:])]),
        "inferencex_commit": sha,
        "base_commit": base_sha,
        "repeats": args.repeats,
        "scripts_and_pins": counts,
        "seconds": {k: [round(x, 4) for x in v] for k, v in times.items()},
        "median_s": {k: round(v, 4) for k, v in med.items()},
        "ratio_after_over_before": round(med["after"] / med["before"], 4),
    }
    atomic_write_text(args.out, json.dumps(doc, indent=2) + "\n")
    print(f"shell scripts of InferenceX {sha[:9]} ({counts['after'][0]} read): before {med['before']:.3f}s, "
          f"after {med['after']:.3f}s (median of {args.repeats}); after/before = {doc['ratio_after_over_before']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
