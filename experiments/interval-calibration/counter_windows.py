"""Do batch means over aggregate counter windows cover at concurrency > 1?

When a server offers only aggregate counters (vLLM/ATOM ``/metrics``) and the requests run
concurrently, ``measure`` scrapes the counters every ``--scrape-interval`` into windows and
groups contiguous windows into 24 batches, the clusters of the interval (``golden_al/measure/server.py``
``batch_windows``). Batches share the requests in flight at their boundaries, so they are not
independent. This simulates that pipeline against known truth and measures the coverage of

* ``batch-means-24``: what ``measure`` does (24 contiguous batches);
* ``long-batches``: as many batches as the session holds spans of its longest request (2 to 24),
  so that only neighbouring batches share a request;
* ``per-request``: the interval over requests, what a per-request source gives.

Model: ``populations.py`` populations give each request its accepted drafts and verify
steps; a request does one verify step per batch step while in flight (its accepted drafts spread
evenly over its steps); ``c`` slots run requests back to back in order; counters are read every
25 batch steps. Truth: 1 + E[accepted] / E[steps] of the population.

Run (about 2 minutes)::

    python experiments/interval-calibration/counter_windows.py

Writes counter_windows.json and counter_windows.md next to this file.
"""

from __future__ import annotations

import heapq
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from populations import Component as C  # noqa: E402
from populations import RequestPopulation as P  # noqa: E402

from distributions.uncertainty import al_interval_result  # noqa: E402

HERE = Path(__file__).resolve().parent
WINDOW = 25  # batch steps between two scrapes
MIX = (C(0.5, 8, 2), C(0.3, 30, 1.5), C(0.2, 2, 3))
POPULATIONS = {
    "mix k=7 32..4096 tok": P(7, MIX, 32, 4096),
    "15% long echo at ceiling k=7": P(7, (C(0.85, 5, 3), C(0.15, 400, 1, 8.0)), 64, 512),
}
REQUESTS = (80, 320)
CONCURRENCY = (8, 64)
REPS = 300
SEED = 26


def windows(acc: np.ndarray, steps: np.ndarray, c: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Counter windows of one session: (accepted, steps) per window, and the longest request's span."""
    n = acc.size
    dur = steps.astype(np.int64)
    start = np.empty(n, dtype=np.int64)
    free = [0] * min(c, n)
    heapq.heapify(free)
    for i in range(n):
        t = heapq.heappop(free)
        start[i] = t
        heapq.heappush(free, t + int(dur[i]))
    end = start + dur
    horizon = int(end.max())
    rate_s = np.zeros(horizon + 1)
    rate_a = np.zeros(horizon + 1)
    np.add.at(rate_s, start, 1.0)
    np.add.at(rate_s, end, -1.0)
    np.add.at(rate_a, start, acc / dur)
    np.add.at(rate_a, end, -acc / dur)
    per_step_s = np.cumsum(rate_s)[:horizon]
    per_step_a = np.cumsum(rate_a)[:horizon]
    m = -(-horizon // WINDOW) * WINDOW
    ws = np.pad(per_step_s, (0, m - horizon)).reshape(-1, WINDOW).sum(axis=1)
    wa = np.pad(per_step_a, (0, m - horizon)).reshape(-1, WINDOW).sum(axis=1)
    keep = ws > 0
    return wa[keep], ws[keep], int(dur.max())


def batches(wa: np.ndarray, ws: np.ndarray, b: int) -> tuple[np.ndarray, np.ndarray]:
    """``b`` contiguous groups of windows, as equal in count as possible (measure/server.batch_windows)."""
    n = wa.size
    if n <= b:
        return wa, ws
    edges = [round(i * n / b) for i in range(b + 1)]
    return (np.array([wa[x:y].sum() for x, y in itertools.pairwise(edges) if y > x]),
            np.array([ws[x:y].sum() for x, y in itertools.pairwise(edges) if y > x]))


def run() -> list[dict[str, object]]:
    rows = []
    for pi, (name, pop) in enumerate(POPULATIONS.items()):
        truth = pop.true_al(np.random.default_rng([SEED, pi]))
        for n in REQUESTS:
            for c in CONCURRENCY:
                rng = np.random.default_rng([SEED, pi, n, c])
                hits = {"batch-means-24": 0, "long-batches": 0, "per-request": 0}
                widths: dict[str, list[float]] = {m: [] for m in hits}
                nb_long = []
                for rep in range(REPS):
                    acc, steps = pop.sample(rng, (n,))
                    wa, ws, longest = windows(acc, steps, c)
                    span = ws.size  # windows in the session
                    b_long = int(np.clip(span * WINDOW // max(longest, 1), 2, 24))
                    nb_long.append(b_long)
                    for method, (a, s) in (("batch-means-24", batches(wa, ws, 24)),
                                           ("long-batches", batches(wa, ws, b_long)),
                                           ("per-request", (acc, steps))):
                        lo, hi = al_interval_result(a, s, seed=rep, draft_len=pop.draft_len).ci
                        hits[method] += lo <= truth <= hi
                        widths[method].append(hi - lo)
                rows.append({"population": name, "requests": n, "concurrency": c, "reps": REPS,
                             "true_al": round(truth, 4), "long_batches_median": float(np.median(nb_long)),
                             **{f"coverage_{m}": h / REPS for m, h in hits.items()},
                             **{f"median_width_{m}": float(np.median(w)) for m, w in widths.items()}})
                print(f"  {name} n={n} c={c}: " + ", ".join(f"{m} {h / REPS:.3f}" for m, h in hits.items()),
                      file=sys.stderr, flush=True)
    return rows


def markdown(rows: list[dict[str, object]], seconds: float) -> str:
    md = ["# Counter windows at concurrency > 1: coverage of 95 % intervals", "",
          f"seed {SEED}, {REPS} sessions per cell, counters read every {WINDOW} batch steps, {seconds:.0f} s.", "",
          "Cells: coverage (median interval width).", "",
          "| population | requests | concurrency | batch means, 24 batches | long batches (median count) | "
          "per request |", "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        def c(m: str, r: dict[str, object] = r) -> str:
            return f"{100 * float(r[f'coverage_{m}']):.1f} % ({float(r[f'median_width_{m}']):.2f})"  # type: ignore[arg-type]
        md.append(f"| {r['population']} | {r['requests']} | {r['concurrency']} | {c('batch-means-24')} | "
                  f"{c('long-batches')}, {r['long_batches_median']:g} batches | {c('per-request')} |")
    return "\n".join(md) + "\n"


def main() -> None:
    t0 = time.time()
    rows = run()
    seconds = time.time() - t0
    doc = {"what": "coverage of batch-means intervals over counter windows at concurrency > 1", "seed": SEED,
           "window_steps": WINDOW, "reps": REPS, "seconds": round(seconds, 1),
           "script": "experiments/interval-calibration/counter_windows.py", "rows": rows}
    (HERE / "counter_windows.json").write_text(json.dumps(doc, indent=2) + "\n")
    (HERE / "counter_windows.md").write_text(markdown(rows, seconds))
    print(markdown(rows, seconds))


if __name__ == "__main__":
    main()
