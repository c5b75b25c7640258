"""How often does ``golden-al verify`` cry drift, and how often does it catch one? Measured against known truth.

Real runs are simulated from a prompt population whose true AL is known (a very large run of the same population):
each request has its own acceptance rate (Beta-distributed: real prompt sets differ in how well the draft does), an
output length (log-normal; heavy-tailed in some scenarios, with long requests accepting less in one), and per-step
accepted drafts ``min(Geometric, k)``. A run is read as ``verify`` reads it: per-request units (a measurement
directory, llama-server request lines), or the consecutive log windows of a server at concurrency (SGLang decode
lines, vLLM/ATOM interval lines: correlated, since one request spans many windows), through the same code
(:func:`golden_al.verification.run_from_windows`, :func:`golden_al.verification.verify_run`).

For each scenario the golden value is put where the truth is known to sit: on it, on the band's upper and lower
edges (truth = golden x (1 +- band)), and 10 % off (truth = golden x 1.1, x 0.9). The golden carries a 95 % interval
of +-1 %. Reported per scenario: P(consistent) and P(drifted) at each placement. The claims checked: false drift at
the band's edge <= 2.5 %, false "consistent" at the edge <= 5 %, no drift at the truth, power against a 10 % shift,
and a run of a handful of requests inconclusive with a sample size.

    python experiments/verify-calibration/calibrate.py --reps 200          # results.json, results.md
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from golden_al.verification import GoldenRef, run_from_windows, verify_run

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Scenario:
    name: str
    requests: int
    k: int = 3
    length_median: float = 300.0
    length_sigma: float = 0.6  #: log-normal sigma of output lengths (1.5: heavy tails)
    beta: tuple[float, float] = (20.0, 6.0)  #: per-request acceptance rate ~ Beta (mean 0.77, sd 0.08)
    long_accept_less: bool = False  #: acceptance rate falls with length (rank-coupled)
    concurrency: int = 0  #: 0: per-request units; else log windows of a server at this concurrency
    interval: int = 40  #: batch steps per log window


SCENARIOS = (
    Scenario("handful of requests (4)", 4),
    Scenario("16 requests", 16),
    Scenario("80 requests", 80),
    Scenario("80 requests, heavy-tailed lengths", 80, length_sigma=1.5),
    Scenario("80 requests, long ones accept less", 80, length_sigma=1.0, long_accept_less=True),
    Scenario("log windows, 48 requests at concurrency 16", 48, concurrency=16),
    Scenario("log windows, 400 requests at concurrency 32", 400, concurrency=32),
)


def _requests(sc: Scenario, n: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Per request, its per-step accepted drafts."""
    lengths = np.maximum(8, rng.lognormal(math.log(sc.length_median), sc.length_sigma, n)).astype(int)
    rates = rng.beta(*sc.beta, n)
    if sc.long_accept_less:  # the longest requests get the lowest rates
        rates = np.sort(rates)[::-1][np.argsort(np.argsort(lengths))]
    out = []
    for length, p in zip(lengths, rates, strict=True):
        steps = max(1, math.ceil(length / (1.0 + p * (1 - p ** sc.k) / (1 - p))))
        out.append(np.minimum(rng.geometric(1.0 - p, steps) - 1, sc.k).astype(float))
    return out


def _windows(sc: Scenario, reqs: list[np.ndarray]) -> list[tuple[float, float]]:
    if sc.concurrency == 0:
        return [(float(a.sum()), float(a.size)) for a in reqs]
    slots: list[list[np.ndarray]] = [[] for _ in range(sc.concurrency)]
    load = [0] * sc.concurrency
    for a in reqs:  # each request to the slot that frees first
        i = int(np.argmin(load))
        slots[i].append(a)
        load[i] += a.size
    span = max(load)
    acc = np.zeros(span)
    steps = np.zeros(span)
    for parts in slots:
        line = np.concatenate(parts) if parts else np.zeros(0)
        acc[: line.size] += line
        steps[: line.size] += 1
    n = math.ceil(span / sc.interval)
    return [(float(acc[i * sc.interval:(i + 1) * sc.interval].sum()), float(steps[i * sc.interval:(i + 1) * sc.interval].sum()))
            for i in range(n) if steps[i * sc.interval:(i + 1) * sc.interval].sum() > 0]


def truth(sc: Scenario, rng: np.random.Generator, n: int = 100_000) -> float:
    reqs = _requests(sc, n, rng)
    return 1.0 + sum(float(a.sum()) for a in reqs) / sum(a.size for a in reqs)


#: (label, truth / golden)
PLACEMENTS = (("at the golden", 1.0), ("upper edge", 1.05), ("lower edge", 0.95), ("10% above", 1.10),
              ("10% below", 0.90))


def run(scenarios: tuple[Scenario, ...], reps: int, seed: int, band: float = 0.05) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    rows = []
    for sc in scenarios:
        t = truth(sc, rng)
        counts = {label: {"consistent": 0, "drifted": 0, "inconclusive": 0} for label, _ in PLACEMENTS}
        needed: list[int] = []
        for _ in range(reps):
            windows = _windows(sc, _requests(sc, sc.requests, rng))
            ra = run_from_windows(windows, unit="request" if sc.concurrency == 0 else "log line", k=sc.k)
            for label, ratio in PLACEMENTS:
                g = t / ratio
                res = verify_run(ra, GoldenRef(g, (g * 0.99, g * 1.01), "simulated"), band=band)
                counts[label][res.verdict] += 1
                if label == "at the golden" and res.verdict == "inconclusive" and res.test is not None \
                        and res.test.needed_units is not None:
                    needed.append(res.test.needed_units)
        rows.append({"scenario": asdict(sc), "name": sc.name, "truth_al": round(t, 4), "reps": reps,
                     "rates": {label: {v: c / reps for v, c in cs.items()} for label, cs in counts.items()},
                     "median_needed_units_when_inconclusive": int(np.median(needed)) if needed else None})
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    out = ["| scenario | truth AL | consistent at the golden | drifted at the golden | drifted at the band edge "
           "(false drift) | consistent at the band edge (false) | drifted at 10% off (power) | inconclusive at the "
           "golden | units needed (median) |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        x = r["rates"]
        edge_d = max(x["upper edge"]["drifted"], x["lower edge"]["drifted"])
        edge_c = max(x["upper edge"]["consistent"], x["lower edge"]["consistent"])
        power = min(x["10% above"]["drifted"], x["10% below"]["drifted"])
        out.append(f"| {r['name']} | {r['truth_al']} | {x['at the golden']['consistent']:.1%} | "
                   f"{x['at the golden']['drifted']:.1%} | {edge_d:.1%} | {edge_c:.1%} | {power:.1%} | "
                   f"{x['at the golden']['inconclusive']:.1%} | {r['median_needed_units_when_inconclusive'] or '-'} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=20261205)
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args(argv)
    t0 = time.time()
    rows = run(SCENARIOS, args.reps, args.seed)
    doc = {"reps": args.reps, "seed": args.seed, "band": 0.05, "golden_ci95_relative": 0.01,
           "seconds": round(time.time() - t0, 1), "scenarios": rows}
    (args.out / "results.json").write_text(json.dumps(doc, indent=2) + "\n")
    (args.out / "results.md").write_text(markdown(rows))
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
