"""Coverage and width of AL intervals against known truth, by method and cluster count.

Draws per-request (accepted, steps) from synthetic populations with known AL
(:class:`populations.RequestPopulation`: Beta mixtures of per-request acceptance,
output lengths 32..4096 tokens, k 1..8, AL 1.3..8.2, including adversarial ones: few long
echo requests at the ceiling, a minority of poor requests), and for every method of
``candidates.intervals`` (the shipped methods are the engine behind ``al_interval``)
measures how often the 95% interval covers the truth and its median width relative to the
plain percentile cluster bootstrap, at 4..200 clusters.

Run (seconds to minutes, numpy only)::

    python experiments/interval-calibration/calibrate.py [--reps 1000] [--quick]

Writes results.json, results.md and calibration.png next to this file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from candidates import intervals  # noqa: E402
from populations import Component as C  # noqa: E402
from populations import RequestPopulation as P  # noqa: E402

from distributions.uncertainty import AL_INTERVAL_METHOD, al_intervals_batch  # noqa: E402

HERE = Path(__file__).resolve().parent
METHODS = ("percentile", "bca", "delta-z", "delta-t", "studentized")
CLUSTERS = (4, 8, 16, 32, 80, 200)
MIX = (C(0.5, 8, 2), C(0.3, 30, 1.5), C(0.2, 2, 3))  # the "Beta mixture" kind
SCENARIOS: dict[str, P] = {
    "mix k=1 128 tok": P(1, MIX),
    "mix k=2 128 tok": P(2, MIX),
    "mix k=4 128 tok": P(4, MIX),
    "mix k=7 128 tok": P(7, MIX),
    "mix k=8 32 tok": P(8, MIX, 32, 32),
    "mix k=4 4096 tok": P(4, MIX, 4096, 4096),
    "mix k=7 32..4096 tok": P(7, MIX, 32, 4096),
    "near ceiling Beta(20,1) k=3": P(3, (C(1, 20, 1),)),
    "near ceiling Beta(20,1) k=7": P(7, (C(1, 20, 1),)),
    "near ceiling Beta(50,1) k=8 32..4096": P(8, (C(1, 50, 1),), 32, 4096),
    "ceiling + 30% Beta(4,4) k=7": P(7, (C(0.7, 30, 1.5), C(0.3, 4, 4))),
    "ceiling + 20% Beta(2,2) k=7": P(7, (C(0.8, 40, 1), C(0.2, 2, 2))),
    "15% long echo at ceiling k=7": P(7, (C(0.85, 5, 3), C(0.15, 400, 1, 8.0)), 64, 512),
    "low AL Beta(2,5) k=2 32..4096": P(2, (C(1, 2, 5),), 32, 4096),
    "three rates k=4 20..200": P(4, (C(1, 60, 40), C(1, 75, 25), C(1, 90, 10)), 20, 200),
    "two groups k=6": P(6, (C(0.5, 200, 2), C(0.5, 50, 10))),
}


def run(reps: int, clusters: tuple[int, ...], seed: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for si, (name, pop) in enumerate(SCENARIOS.items()):
        rng = np.random.default_rng([seed, si])
        truth = pop.true_al(rng)
        for n in clusters:
            acc, st = pop.sample(rng, (reps, n))
            base_width = None
            for method in METHODS:
                lo, hi = intervals(acc, st, method=method)
                width = float(np.median(hi - lo))
                if method == "percentile":
                    base_width = width
                rows.append({
                    "scenario": name, "k": pop.draft_len, "true_al": round(truth, 4), "clusters": n,
                    "method": method, "coverage": float(np.mean((lo <= truth) & (truth <= hi))),
                    "miss_low_side": float(np.mean(truth < lo)), "miss_high_side": float(np.mean(truth > hi)),
                    "median_width": width, "width_ratio": width / base_width if base_width else float("nan"),
                })
        print(f"  {name}: AL {truth:.3f}", file=sys.stderr, flush=True)
    return rows


def table(rows: list[dict[str, object]], n: int) -> list[str]:
    out = [f"\n### {n} clusters: coverage % (median width / percentile bootstrap's)\n",
           "| scenario | AL | " + " | ".join(METHODS) + " |", "|---|---|" + "---|" * len(METHODS)]
    for name in SCENARIOS:
        cells = {r["method"]: r for r in rows if r["scenario"] == name and r["clusters"] == n}
        if not cells:
            continue
        al = next(iter(cells.values()))["true_al"]
        out.append(f"| {name} | {al} | " + " | ".join(
            f"{100 * cells[m]['coverage']:.1f} ({cells[m]['width_ratio']:.2f})" for m in METHODS) + " |")
    return out


def summary(rows: list[dict[str, object]], clusters: tuple[int, ...]) -> list[str]:
    out = ["| method | " + " | ".join(f"n={n}" for n in clusters) + " |", "|---|" + "---|" * len(clusters)]
    for m in METHODS:
        cells = []
        for n in clusters:
            sel = [r for r in rows if r["method"] == m and r["clusters"] == n]
            cov = np.array([r["coverage"] for r in sel])
            wr = np.array([r["width_ratio"] for r in sel])
            cells.append(f"{100 * np.median(cov):.1f} / {100 * cov.min():.1f} ({np.median(wr):.2f})")
        out.append(f"| {m} | " + " | ".join(cells) + " |")
    return out


def plot(rows: list[dict[str, object]], clusters: tuple[int, ...], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_c, ax_w) = plt.subplots(1, 2, figsize=(12, 4.6))
    for m in METHODS:
        med, low, wr = [], [], []
        for n in clusters:
            sel = [r for r in rows if r["method"] == m and r["clusters"] == n]
            cov = np.array([r["coverage"] for r in sel])
            med.append(100 * np.median(cov))
            low.append(100 * cov.min())
            wr.append(np.median([r["width_ratio"] for r in sel]))
        (line,) = ax_c.plot(clusters, med, "o-", label=f"{m} (median)", lw=2 if m == "studentized" else 1)
        ax_c.plot(clusters, low, "v:", color=line.get_color(), alpha=0.7)
        ax_w.plot(clusters, wr, "o-", color=line.get_color(), label=m, lw=2 if m == "studentized" else 1)
    ax_c.axhline(95, color="k", lw=0.8)
    ax_c.set(xscale="log", xlabel="clusters (requests)", ylabel="coverage of the 95% interval (%)",
             title=f"Coverage over {len(SCENARIOS)} populations (solid: median, dotted: worst)")
    ax_c.set_xticks(clusters, [str(n) for n in clusters])
    ax_c.set_ylim(50, 100)
    ax_c.legend(fontsize=8, loc="lower right")
    ax_w.axhline(1.0, color="k", lw=0.8)
    ax_w.set(xscale="log", xlabel="clusters (requests)", ylabel="median width / percentile bootstrap's",
             title="Median width / percentile bootstrap's (median over populations)")
    ax_w.set_xticks(clusters, [str(n) for n in clusters])
    ax_w.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


STOPPING = ("mix k=4 128 tok", "mix k=7 32..4096 tok", "near ceiling Beta(20,1) k=7", "ceiling + 20% Beta(2,2) k=7")


def stopping(reps: int, seed: int, batch: int = 16, cap: int = 400) -> list[dict[str, object]]:
    """Coverage when prompts are added in batches until the half-width target (``measure --ci-half-width``).

    The target of each population is 40% of its median half-width at one batch, so runs stop
    at roughly 6 batches; the interval and the stopping rule are the shipped ones
    (:func:`distributions.uncertainty.next_sample_size`).
    """
    from distributions.uncertainty import next_sample_size

    rows: list[dict[str, object]] = []
    sizes = list(range(batch, cap + 1, batch))
    for si, name in enumerate(STOPPING):
        pop = SCENARIOS[name]
        rng = np.random.default_rng([seed, 1000 + si])
        truth = pop.true_al(rng)
        acc, st = pop.sample(rng, (reps, cap))
        bounds = {n: al_intervals_batch(acc[:, :n], st[:, :n]) for n in sizes}
        target = 0.4 * float(np.median(bounds[batch][1] - bounds[batch][0])) / 2.0
        covered, used, reached = [], [], []
        for r in range(reps):
            n = batch
            while True:
                lo, hi = bounds[n][0][r], bounds[n][1][r]
                nxt = next_sample_size(n, (hi - lo) / 2.0, target, batch=batch, available=cap)
                if nxt is None:
                    break
                n = min(cap, -(-nxt // batch) * batch)
            covered.append(lo <= truth <= hi)
            used.append(n)
            reached.append((hi - lo) / 2.0 <= target)
        fixed = int(np.median(used))
        fixed = min(sizes, key=lambda m: abs(m - fixed))
        lo_f, hi_f = bounds[fixed]
        rows.append({"scenario": name, "true_al": round(truth, 4), "target_half_width": round(target, 5),
                     "coverage_stopped": float(np.mean(covered)), "median_prompts": float(np.median(used)),
                     "reached": float(np.mean(reached)), "fixed_n": fixed,
                     "coverage_fixed_n": float(np.mean((lo_f <= truth) & (truth <= hi_f)))})
        print(f"  stopping: {name}", file=sys.stderr, flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000, help="replications per cell (default: 1000)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--quick", action="store_true", help="16 and 80 clusters only, no files written")
    ap.add_argument("--plot-only", action="store_true", help="redraw calibration.png from results.json")
    ap.add_argument("--stopping", action="store_true",
                    help="only the stopping-rule experiment (measure --ci-half-width): writes stopping.md/json")
    args = ap.parse_args()
    if args.stopping:
        srows = stopping(min(args.reps, 500), args.seed)
        md = ["# Coverage with the --ci-half-width stopping rule", "",
              "Batches of 16 prompts, at most 400, until the 95% half-width is at most the target (40% of the "
              "population's median half-width at 16 prompts). `fixed n`: the same interval at the median stopping "
              "size, without stopping.", "",
              "| population | AL | target +/- | median prompts | reached | coverage (stopped) | fixed n | coverage (fixed n) |",
              "|---|---|---|---|---|---|---|---|"]
        md += [f"| {r['scenario']} | {r['true_al']} | {r['target_half_width']} | {r['median_prompts']:.0f} | "
               f"{100 * float(r['reached']):.0f}% | {100 * float(r['coverage_stopped']):.1f} | {r['fixed_n']} | "
               f"{100 * float(r['coverage_fixed_n']):.1f} |" for r in srows]
        (HERE / "stopping.json").write_text(json.dumps({"reps": min(args.reps, 500), "seed": args.seed,
                                                       "rows": srows}, indent=1) + "\n")
        (HERE / "stopping.md").write_text("\n".join(md) + "\n")
        print("\n".join(md))
        return
    if args.plot_only:
        rows = json.loads((HERE / "results.json").read_text())["rows"]
        plot(rows, tuple(sorted({int(r["clusters"]) for r in rows})), HERE / "calibration.png")
        return
    clusters = (16, 80) if args.quick else CLUSTERS
    t0 = time.time()
    rows = run(args.reps, clusters, args.seed)
    md = ["# Interval calibration results", "",
          f"{args.reps} replications per cell, seed {args.seed}, {time.time() - t0:.0f} s. "
          f"Shipped method: `{AL_INTERVAL_METHOD}` (its bootstrap half is `studentized` below; the hull is chosen in "
          "interval_choice.md).", "",
          "## Summary over populations: median / worst coverage % (median width ratio)", "",
          *summary(rows, clusters)]
    for n in clusters:
        md += table(rows, n)
    text = "\n".join(md) + "\n"
    if args.quick:
        print(text)
        return
    (HERE / "results.json").write_text(json.dumps(
        {"reps": args.reps, "seed": args.seed, "shipped_method": AL_INTERVAL_METHOD,
         "scenarios": {k: repr(v) for k, v in SCENARIOS.items()}, "rows": rows}, indent=1) + "\n")
    (HERE / "results.md").write_text(text)
    plot(rows, clusters, HERE / "calibration.png")
    print(text)


if __name__ == "__main__":
    main()
