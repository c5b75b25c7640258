"""CPU seconds of ``golden-al check`` over an InferenceX checkout: the previous release and this tree, side by side.

Each run is a fresh ``python -m golden_al check . --golden-dir golden_al_distribution --format json`` subprocess
(imports, store load and the census's worker processes included: CPU is user + system time of the process and
every descendant, from ``getrusage(RUSAGE_CHILDREN)``), alternating base and this tree run by run so both see the
same machine. This tree is also timed with ``--policy no-pins`` (which plans every recipe with ``select``).
Writes ``bench_cpu.json`` (medians, ratios, every sample, provenance).

    git clone https://github.com/SemiAnalysisAI/InferenceX /tmp/InferenceX && git -C /tmp/InferenceX checkout 843c6254f
    python experiments/inferencex-check/bench_cpu.py --tree /tmp/InferenceX --base 9b54f3e --repeats 7
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from golden_al.provenance import atomic_write_text, collect, now_iso

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _run(src: Path, tree: Path, *extra: str) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, findings) of one CLI run with ``src`` first on the import path."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "golden_al", "check", ".", "--golden-dir", "golden_al_distribution",
                          "--format", "json", *extra], cwd=tree, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, len(json.loads(out.stdout))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, required=True, help="an InferenceX checkout")
    ap.add_argument("--base", required=True, help="the commit of this repository to compare against")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", type=Path, default=HERE / "bench_cpu.json")
    args = ap.parse_args(argv)
    started = now_iso()
    samples: dict[str, list[tuple[float, float, int]]] = {"base": [], "this": [], "this_no_pins": []}
    with tempfile.TemporaryDirectory(prefix="bench-cpu-") as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        archive = subprocess.Popen(["git", "-C", str(ROOT), "archive", args.base], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(base)], stdin=archive.stdout, check=True)
        archive.wait()
        tree = args.tree.resolve()
        _run(base, tree)  # warm the file cache once for both
        for _ in range(args.repeats):
            samples["base"].append(_run(base, tree))
            samples["this"].append(_run(ROOT, tree))
            samples["this_no_pins"].append(_run(ROOT, tree, "--policy", "no-pins"))
    med = {k: {"cpu_s": round(statistics.median(s[0] for s in v), 3),
               "wall_s": round(statistics.median(s[1] for s in v), 3), "findings": v[0][2]}
           for k, v in samples.items()}
    result = {
        "question": "CPU seconds of check over InferenceX: previous release vs this tree (default and no-pins)",
        "tree": str(args.tree), "base": args.base, "repeats": args.repeats, "medians": med,
        "ratio_cpu_this_over_base": round(med["this"]["cpu_s"] / med["base"]["cpu_s"], 3),
        "ratio_cpu_no_pins_over_base": round(med["this_no_pins"]["cpu_s"] / med["base"]["cpu_s"], 3),
        "samples": {k: [[round(c, 3), round(w, 3), n] for c, w, n in v] for k, v in samples.items()},
        "load_average": os.getloadavg(), "provenance": collect(started=started),
    }
    atomic_write_text(args.out, json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("medians", "ratio_cpu_this_over_base", "ratio_cpu_no_pins_over_base")},
                     indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
