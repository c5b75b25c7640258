"""How long does ``golden-al inject`` take on every InferenceX recipe and on the largest recipe it accepts?

Issue 10: no command may take more than a few seconds on any input under the size cap.
``inject`` reads at most ``safeio.DEFAULT_MAX_BYTES`` (2 MiB) of recipe, as ``select`` does (it used to read 64 KiB,
parsed with ruamel.yaml; it now plans with ``select`` and edits at PyYAML's marks). This script measures, in one run:

* **every srt-slurm recipe of InferenceX** (one commit, extracted to a temporary directory):
  ``plan_injection`` in-process (what ``inject --dry-run --force`` does after start-up), with
  InferenceX's own golden directory and the model from the recipe folder (as
  ``run_inject.py`` does); the slowest recipes are named;
* **generated recipes**: SGLang disaggregated recipes padded with engine arguments,
  environment variables, an anchored environment block and comments to just under the
  cap, and a vLLM one whose ``speculative-config`` sits in every role; each run as the CLI
  (``python -m golden_al inject FILE ... --dry-run``, a fresh process, imports included)
  and, separately, ``plan_injection`` alone in a fresh process (the part that reads YAML);
* **a recipe over the cap** (8 MiB): refused (exit 2) without being parsed.

With ``--base REV`` the generated cases also run from that commit of this repository
(extracted with ``git archive``), alternating run by run with the working tree, and the
ratio after / before is reported. Writes ``bench_inject.json`` with every time, the CLI
exit codes and the load average.

    python experiments/inferencex-check/bench_inject.py --base 85e649c
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from golden_al import safeio
from golden_al.errors import GoldenALError
from golden_al.golden import load_store
from golden_al.injection.inject import plan_injection
from golden_al.provenance import atomic_write_text, collect, now_iso
from golden_al.recipes.srt_slurm import read_recipe, recipe_document

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from run_check import extract  # noqa: E402

RECIPES = "benchmarks/multi_node/srt-slurm-recipes"
GOLDEN = """\
dsv4:
  thinking_on:
    1: 1.79
    3: 2.49
  thinking_off:
    3: 2.97
"""


def _sglang_recipe(target_bytes: int) -> str:
    """An SGLang disaggregated MTP recipe of about ``target_bytes`` (under it)."""
    head = ["# generated: a large srt-slurm recipe", "name: big-disagg", "model:", "  path: dsv4", "backend:",
            "  type: sglang", "  prefill_environment: &worker_env"]
    env = [f'    EXTRA_VAR_{i}: "{i}"  # padding' for i in range(400)]
    mid = ["  decode_environment:", "    <<: *worker_env", '    DECODE_ONLY: "1"', "  sglang_config:"]
    roles = []
    for role, steps in (("prefill", 1), ("decode", 3)):
        roles += [f"    {role}:", f"      disaggregation-mode: {role}", "      speculative-algorithm: EAGLE",
                  f"      speculative-num-steps: {steps}", "      speculative-eagle-topk: 1",
                  f"      speculative-num-draft-tokens: {steps + 1}"]
        roles += [f"      extra-flag-{i}: {i}" for i in range(150)]
    text = "\n".join(head + env + mid + roles) + "\n"
    pad = []
    size = len(text)
    while size + 100 < target_bytes:
        pad.append(f"# comment line {len(pad)} padding the recipe towards the byte cap of inject ............")
        size += len(pad[-1]) + 1
    return text + "\n".join(pad) + "\n"


def _vllm_recipe(target_bytes: int) -> str:
    spec = '\'{"method":"mtp","num_speculative_tokens":3}\''
    lines = ["name: big-vllm", "model:", "  path: dsv4", "backend:", "  type: vllm", "  vllm_config:"]
    for role in ("prefill", "decode"):
        lines += [f"    {role}:", f"      speculative-config: {spec}"]
        lines += [f"      extra-arg-{i}: value-{i}" for i in range(300)]
    text = "\n".join(lines) + "\n"
    pad: list[str] = []
    size = len(text)
    while size + 100 < target_bytes:
        pad.append(f"# pad {len(pad)} ......................................................................")
        size += len(pad[-1]) + 1
    return text + "\n".join(pad) + "\n"


ROOT = HERE.parents[1]


def _cli(recipe: Path, golden: Path, src: Path) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "golden_al", "inject", str(recipe), "--model", "dsv4", "--thinking",
                          "on", "--golden-dir", str(golden), "--dry-run"], capture_output=True, text=True, check=False,
                         env=env, cwd=golden)  # a neutral folder: the working directory comes first on sys.path
    return time.perf_counter() - t0, out.returncode


_PLAN = """
import sys, time
from golden_al.golden import load_store
from golden_al.injection.inject import plan_injection
text = open(sys.argv[1], encoding="utf-8").read()
store = load_store(sys.argv[2])
t0 = time.perf_counter()
plan_injection(text, path=sys.argv[1], store=store, model="dsv4", thinking="on")
print(time.perf_counter() - t0)
"""


def _plan_in_process(recipe: Path, golden: Path, src: Path) -> float:
    """Seconds of ``plan_injection`` alone (what ``inject`` does after start-up), in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-c", _PLAN, str(recipe), str(golden)], capture_output=True, text=True,
                         check=True, env=env, cwd=golden)
    return float(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror/SemiAnalysisAI+InferenceX/repo"))
    ap.add_argument("--commit", default="843c6254f")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--base", help="a commit of this repository to time the generated cases against")
    ap.add_argument("--out", type=Path, default=HERE / "bench_inject.json")
    args = ap.parse_args(argv)
    started = now_iso()
    load_before = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="infx-bench-inject-"))
    per_recipe: dict[str, float] = {}
    outcome: dict[str, str] = {}
    try:
        (tmp / "tree").mkdir()
        sha = extract(args.mirror, args.commit, tmp / "tree")
        store = load_store(tmp / "tree" / "golden_al_distribution")
        for path in sorted((tmp / "tree" / RECIPES).rglob("*.yaml")):
            rel = str(path.relative_to(tmp / "tree"))
            text = path.read_text(encoding="utf-8")
            folder = rel.split("/")[4] if rel.count("/") > 4 else ""
            t0 = time.perf_counter()
            try:
                recipe = read_recipe(recipe_document(text, rel)[0])
                target = recipe.base.target if recipe is not None else None
                names = [m.name for m in recipe.base.models] if recipe is not None else []
                model = next((m for m in (*names, folder) if m and store.resolve_model(m)), "")
                if target is None or not model:
                    outcome[rel] = "no-speculation" if target is None else "no-model"
                else:
                    res = plan_injection(text, path=rel, store=store, model=model, thinking="on")
                    outcome[rel] = "rewritten" if res.changed else "already-golden"
            except GoldenALError as exc:
                outcome[rel] = type(exc).__name__
            per_recipe[rel] = time.perf_counter() - t0
        golden = tmp / "golden"
        golden.mkdir()
        (golden / "dsv4_mtp.yaml").write_text(GOLDEN)
        cases = {
            "sglang-just-under-cap": _sglang_recipe(safeio.DEFAULT_MAX_BYTES - 256),
            "vllm-just-under-cap": _vllm_recipe(safeio.DEFAULT_MAX_BYTES - 256),
            "sglang-8MiB-over-cap": _sglang_recipe(8 * 1024 * 1024 - 4096),
        }
        sources = {"after": ROOT}
        base_sha = None
        if args.base:
            base_sha = subprocess.run(["git", "rev-parse", args.base], cwd=ROOT, capture_output=True, text=True,
                                      check=True).stdout.strip()
            (tmp / "base").mkdir()
            archive = subprocess.run(["git", "archive", base_sha], cwd=ROOT, capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(tmp / "base")], input=archive, check=True)
            sources = {"before": tmp / "base", "after": ROOT}
        generated: dict[str, dict[str, object]] = {}
        for name, text in cases.items():
            f = tmp / f"{name}.yaml"
            f.write_text(text)
            runs: dict[str, list[tuple[float, int]]] = {label: [] for label in sources}
            for _ in range(args.repeats):
                for label, src in sources.items():
                    runs[label].append(_cli(f, golden, src))
            entry: dict[str, object] = {"bytes": len(text.encode())}
            if len(text.encode()) <= safeio.DEFAULT_MAX_BYTES:
                plans: dict[str, list[float]] = {label: [] for label in sources}
                for _ in range(args.repeats):
                    for label, src in sources.items():
                        plans[label].append(_plan_in_process(f, golden, src))
                entry["plan_injection_s"] = {label: [round(t, 3) for t in ts] for label, ts in plans.items()}
                if "before" in plans:
                    entry["plan_ratio_after_over_before"] = round(statistics.median(plans["after"])
                                                                  / statistics.median(plans["before"]), 4)
            for label, rs in runs.items():
                entry[label] = {"seconds": [round(t, 3) for t, _ in rs],
                                "median_s": round(statistics.median(t for t, _ in rs), 3),
                                "exit_codes": sorted({rc for _, rc in rs})}
            if "before" in runs:
                entry["ratio_after_over_before"] = round(statistics.median(t for t, _ in runs["after"])
                                                         / statistics.median(t for t, _ in runs["before"]), 4)
            generated[name] = entry
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    slowest = sorted(per_recipe.items(), key=lambda kv: -kv[1])[:5]
    doc = {
        "provenance": collect(started=started, argv=[sys.argv[0], *(argv or sys.argv[1:])]),
        "inferencex_commit": sha,
        "base_commit": base_sha,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "inferencex_recipes": {
            "count": len(per_recipe),
            "total_s": round(sum(per_recipe.values()), 3),
            "median_s": round(statistics.median(per_recipe.values()), 4),
            "max_s": round(max(per_recipe.values()), 4),
            "slowest": [{"recipe": r, "seconds": round(t, 4), "outcome": outcome[r]} for r, t in slowest],
            "outcomes": {o: sum(1 for v in outcome.values() if v == o) for o in sorted(set(outcome.values()))},
        },
        "generated_cli": generated,
        "cap_bytes": safeio.DEFAULT_MAX_BYTES,
    }
    import json

    atomic_write_text(args.out, json.dumps(doc, indent=2) + "\n")
    print(f"inject over {len(per_recipe)} InferenceX recipes: max {doc['inferencex_recipes']['max_s']} s, total "
          f"{doc['inferencex_recipes']['total_s']} s; generated (CLI, median): "
          + ", ".join(f"{k} {v['after']['median_s']} s exit {v['after']['exit_codes']}"  # type: ignore[index]
                      + (f" (before {v['before']['median_s']} s)" if "before" in v else "")  # type: ignore[index]
                      for k, v in generated.items())
          + f"; load {doc['load_average_before']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
