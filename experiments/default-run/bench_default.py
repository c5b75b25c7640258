"""The embedded default, `golden-al measure --draft-len 7`: time, peak memory and disk.

Later runs (models cached): the default command and the other exact modes on the same
workload, side by side in one run, each a fresh process timed by ``/usr/bin/time``
(wall seconds, peak resident set). First run: with ``--first-run`` the default command
also runs once on an empty cache (download, assemble, verify, convert, measure); without
it, the first-run cost is read from the conversion manifests of the cache in use.
Writes ``results.json`` next to this file (or ``--out``) with the machine's load. Before each
scenario the model files it loads are read into the page cache (``--page-cache warm``) or the
page cache is dropped (``cold``: what a later run meets after a reboot; root only).

    python experiments/default-run/bench_default.py [--first-run] [--page-cache cold]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from golden_al.provenance import cpu_info

HERE = Path(__file__).resolve().parent
GOLDEN_AL = [sys.executable, "-m", "golden_al"]

#: Limits oneDNN, MKL and torch's own kernels to AVX2: what this workload runs on a CPU without AVX-512.
AVX2_ONLY = {"ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}

SCENARIOS: list[tuple[str, list[str], dict[str, str]]] = [
    ("default: golden-al measure --draft-len 7 (auto = live, continuous batching of 16, oneDNN linear layers, "
     "shared prompt prefix)", [], {}),
    ("--cpu-kernels transposed ((W x^T)^T through MKL, the default before)", ["--cpu-kernels", "transposed"], {}),
    ("--cpu-kernels torch (nn.Linear as it is)", ["--cpu-kernels", "torch"], {}),
    ("--no-prefix-sharing (every prompt prefilled whole)", ["--no-prefix-sharing"], {}),
    ("--mode replay (output from the target alone)", ["--mode", "replay"], {}),
    ("--mode replay --replay-trajectory-k 7 (output by k = 7, checked)", ["--mode", "replay",
                                                                        "--replay-trajectory-k", "7"], {}),
    ("default, kernels limited to AVX2", [], AVX2_ONLY),
    ("--cpu-kernels transposed, kernels limited to AVX2", ["--cpu-kernels", "transposed"], AVX2_ONLY),
    ("weights from float32 safetensors (the layout before; needs models fetch --weights safetensors)",
     ["--target", "{cache}/models/qwen2.5-coder-1.5b-instruct/safetensors-float32",
      "--draft", "{cache}/models/qwen2.5-coder-0.5b-instruct/safetensors-float32"], {}),
]


def _page_cache(mode: str, cache: Path, argv: list[str]) -> None:
    """``warm``: read the files the scenario loads (its ``--target``/``--draft`` directories, else the
    GGUF files and their ``gguf-float32`` conversions) into the page cache; ``cold``: drop the page
    cache (root only); ``as-is``: nothing."""
    if mode == "warm":
        dirs = [Path(argv[i + 1]) for i, a in enumerate(argv[:-1]) if a in ("--target", "--draft")]
        paths = ([p for d in dirs for p in sorted(d.rglob("*"))] if dirs else
                 sorted((cache / "models").glob("*/*.gguf")) + sorted((cache / "models").glob("*/gguf-float32/*")))
        for path in paths:
            if path.is_file():
                with path.open("rb") as fh:
                    while fh.read(1 << 24):
                        pass
    elif mode == "cold":
        os.sync()
        try:
            Path("/proc/sys/vm/drop_caches").write_text("3\n")
        except OSError as err:
            raise SystemExit(f"--page-cache cold needs root (writing /proc/sys/vm/drop_caches: {err})") from err


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _timed(cmd: list[str], env: dict[str, str] | None = None) -> dict:
    """Run ``cmd`` under /usr/bin/time: wall seconds, peak RSS (GiB), exit code, last stderr lines."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        load_before = _load()
        t0 = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-o", tf.name, "-f", "%e %M", *cmd], capture_output=True,
                              text=True, env=env, check=False)
        wall = time.perf_counter() - t0
        fields = Path(tf.name).read_text().split()  # empty if /usr/bin/time itself was killed
    max_kb = fields[-1] if len(fields) >= 2 and fields[-1].isdigit() else None
    return {"rc": proc.returncode, "wall_s": round(wall, 1),
            "peak_rss_gib": round(int(max_kb) / 2**20, 2) if max_kb else None,
            "load_before": load_before, "load_after": _load(), "stdout": proc.stdout.strip()[-400:],
            "stderr_tail": proc.stderr.strip().splitlines()[-2:] if proc.returncode else []}


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def _record(out: Path) -> dict:
    r = json.loads((out / "measurement.json").read_text())
    ref = r["provenance"]["reference_engine"]
    lines = [json.loads(x) for x in (out / "requests.jsonl").read_text().splitlines() if x.strip()]
    return {"al": r["al"], "al_ci95": r["al_ci95"], "mode": r["mode"], "num_requests": r["num_requests"],
            "measure_wall_s": ref.get("measure_wall_s"), "load_seconds": ref.get("load_seconds"),
            "batch_size": ref.get("batch_size"), "linear_kernels": ref.get("linear_kernels"),
            "trajectory_checks": sorted({x["extra"].get("trajectory_check") for x in lines} - {None}),
            "outputs": {x["index"]: x["extra"]["output_token_ids"] for x in lines}}


def _cache_disk(cache: Path) -> dict:
    models = cache / "models"
    out = {"total_gib": round(_du(cache) / 2**30, 2), "downloads_gib": round(_du(cache / "downloads") / 2**30, 2)}
    for d in sorted(models.glob("*")) if models.exists() else []:
        if d.is_dir():
            out[d.name] = {"gguf_gib": round(sum(p.stat().st_size for p in d.glob("*.gguf")) / 2**30, 2),
                           **{c.name: round(_du(c) / 2**30, 2) for c in sorted(d.iterdir())
                              if c.is_dir() and c.name.startswith(("safetensors-", "gguf-"))}}
    return out


def _conversion_timings(cache: Path) -> dict:
    out = {}
    for m in sorted((cache / "models").glob("*/*/golden_al_conversion.json")):
        try:
            timings = json.loads(m.read_text()).get("timings_s")
        except ValueError:
            timings = None
        out.setdefault(m.parent.parent.name, {})[m.parent.name] = timings
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache-dir", type=Path, default=None, help="the cache with the pair (default: golden-al's)")
    ap.add_argument("--first-run", action="store_true", help="also time one run on an empty cache (downloads 1.5 GB)")
    ap.add_argument("--out", type=Path, default=HERE / "results.json")
    ap.add_argument("--scenarios", default="0,8,1,2,3,4,5",
                    help=f"which of the {len(SCENARIOS)} scenarios, by index (default: 0,8,1-5; 0 is the default "
                    "command, 4 and 5 the replay modes, 6 and 7 the default and transposed layers with every kernel "
                    "library limited to AVX2, as on a CPU without AVX-512, 8 the weights from float32 safetensors)")
    ap.add_argument("--page-cache", choices=("warm", "cold", "as-is"), default="warm",
                    help="before each scenario: read the model files it loads (warm, default), drop the page cache "
                    "(cold, root only: a later run after a reboot) or leave it (as-is)")
    ap.add_argument("--render", type=Path, default=None, metavar="JSON",
                    help="only write the Markdown table of an earlier run's JSON next to it")
    ap.add_argument("--disk-only", action="store_true",
                    help="only measure the cache's disk use and read its conversion timings (loads no model)")
    args = ap.parse_args()
    if args.render is not None:
        args.render.with_suffix(".md").write_text(_markdown(json.loads(args.render.read_text())))
        return 0
    chosen = [SCENARIOS[int(i)] for i in args.scenarios.split(",") if i.strip()]
    work = Path(tempfile.mkdtemp(prefix="bench-default-"))
    env = dict(os.environ)
    cache_args = ["--cache-dir", str(args.cache_dir)] if args.cache_dir else []
    cache = args.cache_dir or Path(env.get("GOLDEN_AL_CACHE") or Path.home() / ".cache" / "golden-al")
    doc: dict = {"what": "golden-al measure --draft-len 7 (the embedded default) and the other exact modes",
                 "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cpus": os.cpu_count(), "cpu": cpu_info(),
                 "page_cache": args.page_cache,
                 "python": platform.python_version(), "uptime_start": _load()}
    if args.disk_only:
        doc.update(disk=_cache_disk(cache), conversion_timings_s_of_this_cache=_conversion_timings(cache),
                   manifests={m.parent.name: {k: json.loads(m.read_text()).get(k) for k in ("updated",)}
                              | {"gguf_verified_at": json.loads(m.read_text())["gguf"].get("verified_at")}
                              for m in sorted((cache / "models").glob("*/manifest.json"))})
        args.out.write_text(json.dumps(doc, indent=2) + "\n")
        return 0
    try:
        runs = []
        for i, (name, extra, extra_env) in enumerate(chosen):
            out = work / f"s{i}"
            extra = [a.replace("{cache}", str(cache)) for a in extra]
            _page_cache(args.page_cache, cache, extra)
            r = _timed([*GOLDEN_AL, "measure", "--draft-len", "7", *cache_args, "--out", str(out), *extra],
                       {**env, **extra_env})
            if r["rc"] == 0:
                r.update(_record(out))
            runs.append({"scenario": name, "argv": ["--draft-len", "7", *extra], "env": extra_env, **r})
            print(f"{name}: {r['wall_s']} s, peak {r['peak_rss_gib']} GiB, AL {r.get('al')}, load {r['load_after']}",
                  flush=True)
        ok = [r for r in runs if r["rc"] == 0]
        ref = ok[0]["outputs"] if ok else {}
        if ok:
            doc["outputs_identical_across_modes"] = all(r["outputs"] == ref for r in ok)
            doc["al_identical_across_modes"] = len({r["al"] for r in ok}) == 1
        for r in runs:
            if ok and r["rc"] == 0:  # other roundings of the same model may flip a near-tie token
                r["requests_with_the_default_output"] = sum(r["outputs"].get(i) == o for i, o in ref.items())
            r.pop("outputs", None)
            if ok and r["rc"] == 0:
                r["wall_ratio_to_default"] = round(r["wall_s"] / ok[0]["wall_s"], 3)
        if runs:
            doc["later_runs"] = runs
        doc["disk_after"] = _cache_disk(cache)
        doc["conversion_timings_s_of_this_cache"] = _conversion_timings(cache)
        if args.first_run:
            fresh = work / "fresh-cache"
            r = _timed([*GOLDEN_AL, "measure", "--draft-len", "7", "--cache-dir", str(fresh),
                        "--out", str(work / "first")], env)
            if r["rc"] == 0:
                rec = _record(work / "first")
                rec.pop("outputs")
                r.update(rec)
            r["disk_after"] = _cache_disk(fresh)
            doc["first_run"] = r
            print(f"first run: {r['wall_s']} s, peak {r['peak_rss_gib']} GiB, disk {r['disk_after']['total_gib']} GiB",
                  flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    doc["ended"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    doc["uptime_end"] = _load()
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(_markdown(doc))
    return 0


def _markdown(doc: dict) -> str:
    """The results as the table the README quotes."""
    cpu = doc.get("cpu") or {}
    lines = [f"Run {doc['started']} .. {doc['ended']}; load average (1, 5, 15 min) at the start "
             f"{doc['uptime_start']}, at the end {doc['uptime_end']}, on {doc['cpus']} CPUs "
             f"({cpu.get('model', '?')}; {', '.join(cpu.get('isa', []))}); page cache before each scenario: "
             f"{doc.get('page_cache', 'as-is')}."]
    if doc.get("later_runs"):
        lines += ["", "| scenario | wall s | ratio to default | peak RSS GiB | decoding s | AL k=7 | 95% CI "
                  "| outputs equal to the default's | load after |", "|---|---|---|---|---|---|---|---|---|"]
        for r in doc["later_runs"]:
            ci = r.get("al_ci95") or [None, None]
            al = f"{r['al']:.3f}" if r.get("al") is not None else "failed"
            cis = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci[0] is not None else ""
            lines.append(f"| {r['scenario']} | {r['wall_s']} | {r.get('wall_ratio_to_default', '')} | "
                         f"{r['peak_rss_gib']} | {r.get('measure_wall_s', '')} | {al} | {cis} | "
                         f"{r.get('requests_with_the_default_output', '')}/{r.get('num_requests', '')} | "
                         f"{r['load_after'][0]} |")
        lines += ["", f"Outputs identical across modes: {doc.get('outputs_identical_across_modes')}; "
                  f"AL identical: {doc.get('al_identical_across_modes')}."]
    lines += ["", f"Disk of the cache after the runs: {json.dumps(doc.get('disk_after'))}", "",
              f"Conversion timings recorded in this cache (s): {json.dumps(doc.get('conversion_timings_s_of_this_cache'))}"]
    if "first_run" in doc:
        f = doc["first_run"]
        lines += ["", f"First run on an empty cache: {f['wall_s']} s, peak RSS {f['peak_rss_gib']} GiB, "
                  f"disk {f['disk_after']['total_gib']} GiB, AL {f.get('al')}, decoding {f.get('measure_wall_s')} s, "
                  f"model preparation and load {f.get('load_seconds')}."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
