"""Benchmark: sampling 10^7 request-steps per engine sampler, side by side with baselines.

For each engine sampler (golden-al's ``simulators``) this times, in one run on one
machine, drawing N = 10^7 values of L (tokens per request-step):

* ``sample``: the library's fast path (inverse cdf of the exact pmf);
* ``simulate``: the engine's own mechanism, vectorized (normal-clamp-round,
  per-position uniforms against conditional rates, ...);
* ``searchsorted``: ``np.searchsorted(cdf, rng.random(N))`` (AcceptanceDistribution.rvs);
* ``rng.choice``: ``rng.choice(k + 1, size=N, p=pmf)``;
* ``naive loop``: a Python loop per request-step and per draft position
  (``rng.random() < c_j``, stop at the first rejection), timed on 10^5 draws and
  scaled to N (marked as extrapolated).

Each vectorized timing is the best and the median of ``--repeats`` runs; ratios
are taken against ``sample`` within this one run. Writes ``results.json`` (with
provenance) and ``results.md`` next to this script.

Run (on the shared machine, under the heavy-job lock):

    flock /tmp/golden-al-heavy.lock /work/venv/bin/python experiments/benchmarks/sampling/bench_sampling.py
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from golden_al.plugin.registry import get_sampler
from golden_al.provenance import atomic_write_text, collect, now_iso

HERE = Path(__file__).resolve().parent
KIMI_RATES_K7 = [0.83, 0.60, 0.45, 0.36, 0.22, 0.16, 0.09]  # increments of the Kimi-K2.5 EAGLE3 curve

# (label, engine, method, options, al, k)
CASES: list[tuple[str, str, str, dict[str, Any], float | None, int]] = [
    ("sglang/match-expected", "sglang", "match-expected", {}, 4.05, 7),
    ("sglang/multinomial", "sglang", "multinomial", {}, 4.05, 7),
    ("vllm/synthetic (length)", "vllm", "synthetic", {}, 4.05, 7),
    ("vllm/synthetic (rates)", "vllm", "synthetic", {"rates": KIMI_RATES_K7}, None, 7),
    ("trtllm/force (one-model)", "trtllm", "force", {"path": "one-model"}, 4.05, 7),
    ("atom/synthetic", "atom", "synthetic", {}, 4.05, 7),
]


def _time(fn: Callable[[], np.ndarray], repeats: int) -> tuple[list[float], np.ndarray]:
    times = []
    out = np.empty(0)
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return times, out


def _naive_loop(cond: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    out = np.empty(n, dtype=np.int64)
    random = rng.random
    for i in range(n):
        length = 1
        for c in cond:
            if random() < c:
                length += 1
            else:
                break
        out[i] = length
    return out


def run(n: int, naive_n: int, repeats: int, seed: int) -> dict[str, Any]:
    started = now_iso()
    load_before = os.getloadavg()
    rows = []
    for label, engine, method, options, al, k in CASES:
        sampler = get_sampler(engine, method, **options)
        dist = sampler.pmf(al, k)
        probs, cdf = dist.probs, np.cumsum(dist.probs)
        rng = np.random.default_rng(seed)
        timings: dict[str, dict[str, Any]] = {}
        draws: dict[str, np.ndarray] = {}
        contenders: dict[str, Callable[[], np.ndarray]] = {
            "sample": lambda s=sampler, a=al, kk=k, r=rng: s.sample(a, kk, n, r),
            "simulate": lambda s=sampler, a=al, kk=k, r=rng: s.simulate(a, kk, n, r),
            "searchsorted": lambda c=cdf, r=rng: np.searchsorted(c, r.random(n), side="right") + 1,
            "rng.choice": lambda p=probs, kk=k, r=rng: r.choice(kk + 1, size=n, p=p) + 1,
        }
        for name, fn in contenders.items():
            times, out = _time(fn, repeats)
            timings[name] = {"best_s": min(times), "median_s": statistics.median(times), "runs_s": times}
            draws[name] = out
        cond = dist.conditional_rates()
        naive_times, naive_out = _time(lambda c=cond, r=rng: _naive_loop(c, naive_n, r), 1)
        scale = n / naive_n
        timings["naive loop"] = {
            "best_s": naive_times[0] * scale,
            "median_s": naive_times[0] * scale,
            "runs_s": naive_times,
            "extrapolated_from": naive_n,
        }
        se = dist.std() / math.sqrt(n)
        checks = {
            name: {
                "mean": float(d.mean()),
                "z": 0.0 if se == 0 else float((d.mean() - dist.mean()) / se),
            }
            for name, d in draws.items()
        }
        base = timings["sample"]["best_s"]
        rows.append(
            {
                "sampler": label,
                "engine": engine,
                "method": method,
                "al": dist.mean() if al is None else al,
                "draft_len": k,
                "exact_mean": dist.mean(),
                "draws": n,
                "timings": timings,
                "ratio_to_sample": {name: t["best_s"] / base for name, t in timings.items()},
                "mean_checks": checks,
                "naive_mean": float(naive_out.mean()),
                "under_one_second": {name: timings[name]["best_s"] < 1.0 for name in ("sample", "simulate")},
            }
        )
    return {
        "question": "Does sampling 10^7 request-steps take under one second per engine sampler, "
        "and how does it compare with rng.choice, searchsorted and a naive per-position loop?",
        "draws": n,
        "repeats": repeats,
        "seed": seed,
        "machine": {
            "cpu": _cpu_name(),
            "cores": os.cpu_count(),
            "numpy": np.__version__,
            "python": platform.python_version(),
            "load_average_before": load_before,
            "load_average_after": os.getloadavg(),
        },
        "rows": rows,
        "provenance": collect(started=started, argv=sys.argv),
    }


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def markdown(res: dict[str, Any]) -> str:
    m = res["machine"]
    lines = [
        "# Sampling 10^7 request-steps per engine sampler",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores (shared), numpy {m['numpy']}, Python {m['python']}; "
        f"load average before {m['load_average_before'][0]:.2f}, after {m['load_average_after'][0]:.2f}.",
        f"N = {res['draws']:,} draws per sampler; best of {res['repeats']} runs (seconds); "
        "ratios are against `sample` in the same run. The naive loop is timed on "
        f"{res['rows'][0]['timings']['naive loop']['extrapolated_from']:,} draws and scaled to N.",
        "",
        "| sampler | AL, k | `sample` s | `simulate` s | `searchsorted` s | `rng.choice` s | naive loop s (extrap.) "
        "| choice / sample | naive / sample | < 1 s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for r in res["rows"]:
        t = r["timings"]
        ok = "yes" if all(r["under_one_second"].values()) else "NO"
        lines.append(
            f"| {r['sampler']} | {r['al']:g}, {r['draft_len']} | {t['sample']['best_s']:.3f} | "
            f"{t['simulate']['best_s']:.3f} | {t['searchsorted']['best_s']:.3f} | {t['rng.choice']['best_s']:.3f} | "
            f"{t['naive loop']['best_s']:.1f} | {r['ratio_to_sample']['rng.choice']:.1f}x | "
            f"{r['ratio_to_sample']['naive loop']:.0f}x | {ok} |"
        )
    lines += [
        "",
        "Every contender's sample mean is within 5 standard errors of the exact mean "
        "(largest |z| per sampler: "
        + ", ".join(f"{r['sampler']} {max(abs(c['z']) for c in r['mean_checks'].values()):.2f}" for r in res["rows"])
        + ").",
        "",
        "Re-run: `flock /tmp/golden-al-heavy.lock /work/venv/bin/python experiments/benchmarks/sampling/bench_sampling.py`",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=10_000_000)
    parser.add_argument("--naive-draws", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args(argv)
    res = run(args.draws, args.naive_draws, args.repeats, args.seed)
    for r in res["rows"]:
        for name, c in r["mean_checks"].items():
            if abs(c["z"]) > 5:
                print(f"WARNING {r['sampler']} {name}: mean {c['mean']:.5f} is {c['z']:.1f} SE off", file=sys.stderr)
    atomic_write_text(args.out / "results.json", json.dumps(res, indent=2, sort_keys=True) + "\n")
    md = markdown(res)
    atomic_write_text(args.out / "results.md", md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
