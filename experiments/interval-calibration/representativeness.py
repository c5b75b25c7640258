"""When are a record's requests too few or too uneven to hold the population's rare kinds (issue 54 item 9)?

The shipped AL interval covers 93 % at 16 clusters wherever the sample holds every kind of request
(``interval_choice.md``). A sample that holds no request of a rare kind cannot know what that kind does: on a
population where 10 % of requests are ten times longer and accept less, 16 requests cover about 80 %. A record
must say when its sample is in that danger, from statistics the record holds, and how many requests would not be.

Two statistics, each with its threshold from this experiment:

* **requests** ``n`` (too few): ``N*`` is the smallest size at which every population whose rare kinds make up at
  least 10 % of requests covers the goal (93 %, less two standard errors of the estimate), there and at every larger
  size. Rarer kinds need more (reported apart: a kind of share ``q`` is absent from ``(1 - q)^n`` of the samples);
* **heavy requests** ``h`` (too uneven): requests with more than :data:`HEAVY_RATIO` times the median request's
  verify steps, the sample's own sight of a kind that runs longer or accepts less. ``H* = 10 % x N*`` is how often
  ``N*`` requests hold a 10 % kind; a sample holding its heavy kind fewer times shows a kind rarer than the
  requests threshold guards. The table of coverage by heavy requests held shows that a sample holding the heavy
  kind at all covers; ``h = 0`` is either a population without such a kind or a sample that missed it, which no
  statistic of the sample tells apart (that is what ``N*`` is for).

A record with ``n < N*`` or ``0 < h < H*`` warns and names the requests that would do: ``N*``, or
``n * H* / h`` (the heavy kind held ``H*`` times at the rate this sample holds it).
Populations: the calibration's (``interval_choice.SCENARIOS`` without the autocorrelated one, whose problem is
clustering) and populations with a rare kind of 2-20 % that runs 1-30 times longer and accepts less.

Run (about 5 minutes on one core; ``--quick``: 200 data sets)::

    python experiments/interval-calibration/representativeness.py

Writes representativeness.json and representativeness.md next to this file. The thresholds shipped in
:mod:`distributions.uncertainty` (``REPRESENTATIVE_REQUESTS``, ``HEAVY_RATIO``, ``HEAVY_HELD``) are these
(tests/unit/test_representativeness.py checks they agree with the committed JSON).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from populations import Component as C  # noqa: E402
from populations import RequestPopulation as P  # noqa: E402

from distributions.uncertainty import AL_INTERVAL_RULE, al_intervals_batch  # noqa: E402

HERE = Path(__file__).resolve().parent
SIZES = (8, 16, 24, 32, 48, 80, 120)
GOAL = 0.93
HEAVY_RATIO = 4.0  #: a heavy request: more verify steps than this many times the sample's median request
HEAVY_BUCKETS = (0, 1, 2, 3, 4, 5)  #: heavy requests held: 0, 1, ..., 5 or more
RARE_SHARE = 0.10  #: the rare kinds the requests threshold is judged on (the issue's population)
SEED = 54
#: the issue's population: 10 % of requests ten times longer, accepting less
ISSUE = "10% 10x longer, accept less (the issue's) k=7"
#: populations with a rare kind (name -> its share of requests)
RARE: dict[str, tuple[float, P]] = {
    ISSUE: (0.10, P(7, (C(0.9, 8, 2), C(0.1, 2, 4, 10.0)), 64, 1024)),
    "10% 10x longer, accept less k=4": (0.10, P(4, (C(0.9, 6, 2), C(0.1, 2, 6, 10.0)), 64, 1024)),
    "20% 5x longer, accept less k=5": (0.20, P(5, (C(0.8, 8, 2), C(0.2, 2, 5, 5.0)), 64, 1024)),
    "10% 3x longer, accept less k=6": (0.10, P(6, (C(0.9, 8, 2), C(0.1, 1, 4, 3.0)), 64, 1024)),
    "10% as long, accept less k=5": (0.10, P(5, (C(0.9, 8, 2), C(0.1, 1, 6, 1.0)), 64, 1024)),
    "5% 10x longer, accept less k=7": (0.05, P(7, (C(0.95, 8, 2), C(0.05, 2, 4, 10.0)), 64, 1024)),
    "2% 30x longer, accept less k=7": (0.02, P(7, (C(0.98, 20, 2), C(0.02, 2, 8, 30.0)), 64, 512)),
}


def scenarios() -> dict[str, tuple[float | None, P]]:
    """Every population with the share of its rare kind (None: the calibration's, judged as they are; the 5 % rare
    long one of ``interval_choice`` has share 0.05)."""
    sys.path.insert(0, str(HERE))
    import interval_choice

    out: dict[str, tuple[float | None, P]] = {
        name: ((0.05 if name == interval_choice.RARE else None), pop)
        for name, pop in interval_choice.SCENARIOS.items() if name != interval_choice.AUTO}
    return {**out, **RARE}


def heavy(steps: np.ndarray) -> np.ndarray:
    """Heavy requests per sample (rows): more than HEAVY_RATIO times the median request's steps."""
    return (steps > HEAVY_RATIO * np.median(steps, axis=-1, keepdims=True)).sum(axis=-1)


def run(reps: int, truth_draws: int = 400_000) -> list[dict[str, object]]:
    """One row per (population, size): coverage, median heavy requests, and per heavy count (0..4, 5+) the samples
    and how many covered."""
    rows: list[dict[str, object]] = []
    for si, (name, (share, pop)) in enumerate(scenarios().items()):
        rng = np.random.default_rng([SEED, si])
        acc, st = pop.sample(rng, (truth_draws,))
        truth = 1.0 + float(acc.sum() / st.sum())
        for n in SIZES:
            acc, st = pop.sample(rng, (reps, n))
            lo, hi = al_intervals_batch(acc, st, method=AL_INTERVAL_RULE, draft_len=pop.draft_len)
            covered = (lo <= truth) & (truth <= hi)
            h = np.minimum(heavy(st), HEAVY_BUCKETS[-1])
            rows.append({"scenario": name, "rare_share": share, "k": pop.draft_len, "true_al": round(truth, 4),
                         "requests": n, "coverage": float(covered.mean()),
                         "by_heavy": {int(b): [int((h == b).sum()), int(covered[h == b].sum())]
                                      for b in HEAVY_BUCKETS}})
        print(f"  {name}: AL {truth:.3f}", file=sys.stderr, flush=True)
    return rows


def _tolerance(reps: int) -> float:
    """Two standard errors of a coverage estimate at the goal."""
    return 2.0 * math.sqrt(GOAL * (1 - GOAL) / reps)


def thresholds(rows: list[dict[str, object]], reps: int) -> dict[str, object]:
    """``N*`` (requests), ``H*`` (heavy requests held) and the tables they rest on."""
    floor = GOAL - _tolerance(reps)
    judged = [r for r in rows if r["rare_share"] is None or float(r["rare_share"]) >= RARE_SHARE]  # type: ignore[arg-type]
    n_star = None
    for n in SIZES:
        if all(float(r["coverage"]) >= floor for r in judged if int(r["requests"]) >= n):  # type: ignore[call-overload]
            n_star = n
            break
    pooled = {b: [0, 0] for b in HEAVY_BUCKETS}
    for r in rows:
        for b, (count, cov) in r["by_heavy"].items():  # type: ignore[attr-defined]
            pooled[int(b)][0] += count
            pooled[int(b)][1] += cov
    rate = {b: (c / n if n else None) for b, (n, c) in pooled.items()}
    h_star = None if n_star is None else RARE_SHARE * n_star  # how often N* requests hold a 10 % kind
    return {"requests": n_star, "heavy_held": h_star, "heavy_ratio": HEAVY_RATIO, "goal": GOAL,
            "floor": round(floor, 4), "pooled_by_heavy": {b: {"samples": n, "coverage": rate[b]}
                                                            for b, (n, _c) in pooled.items()}}


def markdown(rows: list[dict[str, object]], reps: int, seconds: float) -> str:
    th = thresholds(rows, reps)
    out = ["# Too few or too uneven to hold the rare kinds (issue 54 item 9)", "",
           f"{AL_INTERVAL_RULE}, seed {SEED}, {reps} data sets per cell, {seconds:.0f} s. Generated by "
           "`representativeness.py`; goal {:.0%}, judged at {:.1%} (two standard errors of a cell).".format(
               GOAL, float(th["floor"])), "",  # type: ignore[arg-type]
           f"**Thresholds.** Too few: fewer than **N\\* = {th['requests']}** requests: every population whose rare "
           f"kinds make up {RARE_SHARE:.0%} or more covers from there on. Too uneven: a sample whose heavy requests "
           f"(more than {HEAVY_RATIO:g}x the median request's verify steps) are fewer than **H\\* = "
           f"{th['heavy_held']:g}**, the number of times N\\* requests hold a {RARE_SHARE:.0%} kind: it holds its long "
           "or slow kind less often than the requests threshold assumes; n * H\\* / h requests would hold it as often. "
           "Once a sample holds the heavy kind at all it covers (table below): the danger is the samples that hold "
           "none, which only the number of requests guards against.", "",
           "## Coverage by requests (all samples)", "",
           "| population (rare share) | " + " | ".join(str(n) for n in SIZES) + " |",
           "|---|" + "---:|" * len(SIZES)]
    for name in dict.fromkeys(str(r["scenario"]) for r in rows):
        cells = {int(r["requests"]): r for r in rows if r["scenario"] == name}  # type: ignore[call-overload]
        share = cells[SIZES[0]]["rare_share"]
        label = f"{name} ({float(share):.0%})" if share is not None else name  # type: ignore[arg-type]
        out.append(f"| {label} | " + " | ".join(f"{float(cells[n]['coverage']):.1%}" for n in SIZES) + " |")
    out += ["", "## Coverage by heavy requests held, pooled over every population and size", "",
            "| heavy requests | samples | coverage |", "|---:|---:|---:|"]
    for b, cell in th["pooled_by_heavy"].items():  # type: ignore[attr-defined]
        cov = "-" if cell["coverage"] is None else f"{cell['coverage']:.1%}"
        out.append(f"| {b}{'+' if b == HEAVY_BUCKETS[-1] else ''} | {cell['samples']} | {cov} |")
    out += ["", "0 heavy requests pools samples of populations without a heavy kind (which cover) with samples "
            "that missed their population's (which do not): no statistic of a sample tells them apart, which is "
            "what the requests threshold is for."]
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--quick", action="store_true", help="200 data sets per cell")
    args = ap.parse_args()
    reps = 200 if args.quick else args.reps
    t0 = time.perf_counter()
    rows = run(reps)
    seconds = time.perf_counter() - t0
    th = thresholds(rows, reps)
    (HERE / "representativeness.json").write_text(json.dumps(
        {"rule": AL_INTERVAL_RULE, "reps": reps, "seed": SEED, "thresholds": th, "rows": rows}, indent=1) + "\n")
    (HERE / "representativeness.md").write_text(markdown(rows, reps, seconds))
    print(f"N* = {th['requests']}, H* = {th['heavy_held']} ({seconds:.0f} s)")


if __name__ == "__main__":
    main()
