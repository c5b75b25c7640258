"""How long does ``golden-al check`` take over the whole InferenceX tree?

Measures, side by side in one run, (1) the library call ``check_paths`` with the golden
store loaded inside the timed region, in-process, and (2) the CLI as a fresh subprocess
(``python -m golden_al check . --golden-dir golden_al_distribution --format json``),
which includes interpreter start-up and imports. Each is repeated and the median,
min and max wall times are reported. Writes ``bench_output.json`` and prints a summary.

    flock /tmp/golden-al-heavy.lock python experiments/inferencex-check/bench_check.py --repeats 7
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

from golden_al.checks.static import check_paths
from golden_al.golden import load_store
from golden_al.golden import store as store_module
from golden_al.provenance import atomic_write_text, collect, now_iso

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run_check import extract  # noqa: E402


def _stats(xs: list[float]) -> dict[str, float]:
    return {"median_s": round(statistics.median(xs), 4), "min_s": round(min(xs), 4), "max_s": round(max(xs), 4),
            "runs": len(xs)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror/SemiAnalysisAI+InferenceX/repo"))
    ap.add_argument("--commit", default="843c6254f")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", type=Path, default=HERE / "bench_output.json")
    args = ap.parse_args(argv)
    started = now_iso()
    tmp = Path(tempfile.mkdtemp(prefix="infx-bench-"))
    cwd = os.getcwd()
    try:
        sha = extract(args.mirror, args.commit, tmp)
        os.chdir(tmp)
        inproc, cli = [], []
        n_findings = None
        for _ in range(args.repeats):
            store_module._load_cached.cache_clear()  # the store is loaded inside the timed region
            t0 = time.perf_counter()
            report = check_paths(["."], store=load_store("golden_al_distribution"))
            inproc.append(time.perf_counter() - t0)
            n_findings = len(report.findings)
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "golden_al", "check", ".", "--golden-dir",
                                   "golden_al_distribution", "--format", "json"], capture_output=True, text=True)
            cli.append(time.perf_counter() - t0)
            if len(json.loads(proc.stdout)) != n_findings:
                raise SystemExit("CLI and library disagree")
        files = sum(1 for _ in tmp.rglob("*") if _.is_file())
    finally:
        os.chdir(cwd)
        shutil.rmtree(tmp, ignore_errors=True)
    result = {
        "provenance": collect(started=started, argv=[sys.argv[0], *(argv or sys.argv[1:])]),
        "inferencex_commit": sha,
        "files_in_tree": files,
        "findings": n_findings,
        "in_process_check_paths": _stats(inproc),
        "cli_subprocess": _stats(cli),
        "budget_s": 5.0,
        "within_budget": max(max(inproc), max(cli)) < 5.0,
        "machine": f"{os.cpu_count()} CPU(s), shared with other jobs (run under flock /tmp/golden-al-heavy.lock)",
    }
    atomic_write_text(args.out, json.dumps(result, indent=2) + "\n")
    print(f"InferenceX {sha[:9]} ({files} files, {n_findings} findings): in-process median "
          f"{result['in_process_check_paths']['median_s']:.2f} s (max {max(inproc):.2f}), CLI subprocess median "
          f"{result['cli_subprocess']['median_s']:.2f} s (max {max(cli):.2f}); budget 5 s: "
          f"{'met' if result['within_budget'] else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
