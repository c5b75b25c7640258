"""How many prompts a golden point needs for a 95% CI of +-0.02 and +-0.01, from measured per-request variance.

For each draft length k of the Qwen2.5-Coder measurement records, the per-request
accepted drafts ``a_i`` and verify steps ``s_i`` (``requests.jsonl``) are the pilot:

* **planner** (:func:`planning.plan_sample_size`): the ratio estimator
  ``AL = 1 + sum a / sum s`` has delta-method variance ``var(a_i - (AL-1) s_i) /
  (n mean(s)^2)``, so ``n = z^2 var(a - (AL-1)s) / (h^2 mean(s)^2)`` prompts reach a
  half-width ``h``; for comparison the verify steps an i.i.d.-steps model would want
  (``z^2 var(L) / h^2``) and the design effect (how much the clustering of steps within
  requests inflates the variance);
* **bootstrap check**: treat the pilot's requests as the population, draw ``n``
  requests with replacement (``n`` = the planned count) many times, and measure the
  95% half-width of the resampled AL (half the 2.5-97.5% quantile range) and how often
  it lands within +-h of the population AL (should be about 95%); also the cluster
  bootstrap CI of the pilot itself (:func:`planning.cluster_bootstrap_al`).

Caveat: the population is the pilot (a few dozen prompts): the check validates the
planner's arithmetic and its normal approximation, not how representative the pilot is.
Seeded; ``--check`` reproduces the committed numbers exactly.

    /work/venv/bin/python experiments/prompts-needed/prompts_needed.py
    /work/venv/bin/python experiments/prompts-needed/prompts_needed.py --check
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np
from planning import cluster_bootstrap_al, plan_sample_size

from distributions.acceptance import AcceptanceDistribution
from golden_al.measure.records import load_records
from golden_al.reporting.experiment import (
    check_or_publish,
    write_json,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DEFAULT_RECORDS = REPO / "experiments" / "qwen-coder-curve"
HALF_WIDTHS = (0.02, 0.01)
RESAMPLES = 2000


def _rel(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(REPO))
    except ValueError:
        return str(p)


def analyse(paths: list[Path], seed: int) -> dict[str, Any]:
    records = load_records(paths)
    ss = np.random.SeedSequence(seed)
    rows: list[dict[str, Any]] = []
    for lr in sorted(records, key=lambda r: (r.record.dataset.name, r.record.dataset.category or "",
                                             r.record.thinking, r.k)):
        reqs = lr.requests()
        if not reqs:
            continue
        rows_k = [r for r in reqs if float(r.num_verify_steps) > 0]
        acc = np.array([float(r.num_accepted_drafts) for r in rows_k])
        steps = np.array([float(r.num_verify_steps) for r in rows_k])
        dist = AcceptanceDistribution.from_accepted_histogram(lr.record.histogram, k=lr.k)
        rng = np.random.default_rng(ss.spawn(1)[0])
        pilot = cluster_bootstrap_al(acc, steps, rng=rng, num_resamples=RESAMPLES)
        entry: dict[str, Any] = {
            "record": _rel(lr.path), "sha256": lr.sha256, "thinking": lr.record.thinking, "k": lr.k,
            "dataset": lr.record.dataset.name + (f":{lr.record.dataset.category}" if lr.record.dataset.category else ""),
            "pilot_requests": int(acc.size), "pilot_verify_steps": float(steps.sum()), "al": pilot.al,
            "pilot_bootstrap_ci95": [pilot.ci_low, pilot.ci_high],
            "pilot_bootstrap_half_width": (pilot.ci_high - pilot.ci_low) / 2.0,
            "std_L": dist.std(), "mean_steps_per_request": float(steps.mean()), "targets": {},
        }
        for h in HALF_WIDTHS:
            plan = plan_sample_size(acc, steps, h, step_variance=dist.var())
            n = plan.num_requests
            idx = rng.integers(acc.size, size=(RESAMPLES, n))
            boot = 1.0 + acc[idx].sum(axis=1) / steps[idx].sum(axis=1)
            lo, hi = np.quantile(boot, [0.025, 0.975])
            entry["pilot_delta_half_width"] = plan.current_half_width
            entry["targets"][f"{h:g}"] = {
                "requests": n,
                "verify_steps": plan.num_verify_steps,
                "verify_steps_if_iid": plan.num_verify_steps_iid,
                "design_effect": plan.design_effect,
                "bootstrap_half_width_at_n": float((hi - lo) / 2.0),
                "bootstrap_coverage_at_n": float(np.mean(np.abs(boot - pilot.al) <= h)),
            }
        rows.append(entry)
    if not rows:
        raise SystemExit("no record with a requests.jsonl found in " + ", ".join(map(str, paths)))
    return {"seed": seed, "resamples": RESAMPLES, "half_widths": list(HALF_WIDTHS), "rows": rows}


def table_md(res: dict[str, Any]) -> str:
    lines = ["| dataset | thinking | k | AL | pilot prompts | pilot 95% half-width (bootstrap / delta) | "
             "prompts for ±0.02 | bootstrap half-width, coverage at that n | prompts for ±0.01 | "
             "bootstrap half-width, coverage at that n | verify steps for ±0.01 (clustered / if i.i.d.) | "
             "design effect |",
             "| --- | --- | ---: | ---: | ---: | --- | ---: | --- | ---: | --- | --- | ---: |"]
    for r in res["rows"]:
        a, b = r["targets"]["0.02"], r["targets"]["0.01"]
        lines.append(
            f"| {r['dataset']} | {r['thinking']} | {r['k']} | {r['al']:.3f} | {r['pilot_requests']} | "
            f"{r['pilot_bootstrap_half_width']:.3f} / {r['pilot_delta_half_width']:.3f} | {a['requests']} | "
            f"{a['bootstrap_half_width_at_n']:.4f}, {100 * a['bootstrap_coverage_at_n']:.1f}% | {b['requests']} | "
            f"{b['bootstrap_half_width_at_n']:.4f}, {100 * b['bootstrap_coverage_at_n']:.1f}% | "
            f"{b['verify_steps']} / {b['verify_steps_if_iid']} | {b['design_effect']:.1f} |")
    return "\n".join(lines)


def plot(res: dict[str, Any]) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 5), layout="constrained")
    FigureCanvasAgg(fig)
    ax_n, ax_k = fig.subplots(1, 2)
    data: dict[str, Any] = {"panels": []}
    ns = np.unique(np.geomspace(5, 40000, 60).astype(int))
    curves = []
    for r in [r for r in res["rows"] if r["k"] in (1, 4, 8)]:
        # delta-method half-width scales as 1/sqrt(n) from the pilot's
        hw = r["pilot_delta_half_width"] * np.sqrt(r["pilot_requests"] / ns)
        (line,) = ax_n.plot(ns, hw, label=f"{r['dataset']}, k={r['k']}")
        for h in HALF_WIDTHS:
            t = r["targets"][f"{h:g}"]
            ax_n.plot([t["requests"]], [t["bootstrap_half_width_at_n"]], "o", color=line.get_color(), ms=4)
        curves.append({"dataset": r["dataset"], "k": r["k"], "thinking": r["thinking"], "n": ns.tolist(),
                       "half_width": hw.tolist()})
    for h in HALF_WIDTHS:
        ax_n.axhline(h, color="gray", ls="--", lw=1)
    ax_n.set_xscale("log")
    ax_n.set_yscale("log")
    ax_n.set_xlabel("prompts (requests) in the measurement")
    ax_n.set_ylabel("95% CI half-width of AL (tokens per step)")
    ax_n.set_title("Half-width against prompts, k = 1, 4, 8\n(lines: planner; dots: bootstrap at the planned n)",
                   fontsize=10)
    ax_n.grid(alpha=0.3, which="both")
    ax_n.legend(fontsize=7, ncols=2)
    data["panels"].append({"plot": "half_width_vs_prompts", "curves": curves})
    for h, marker in zip(HALF_WIDTHS, ("o", "s"), strict=True):
        for ds in sorted({r["dataset"] for r in res["rows"]}):
            rows = [r for r in res["rows"] if r["dataset"] == ds]
            ax_k.plot([r["k"] for r in rows], [r["targets"][f"{h:g}"]["requests"] for r in rows], marker=marker,
                      label=f"±{h:g}, {ds}")
    ax_k.set_yscale("log")
    ax_k.set_xlabel("draft length k")
    ax_k.set_ylabel("prompts needed (planner)")
    ax_k.set_title("Prompts needed per golden point against k")
    ax_k.grid(alpha=0.3, which="both")
    ax_k.legend(fontsize=8)
    data["panels"].append({"plot": "prompts_vs_k", "rows": [{"dataset": r["dataset"], "k": r["k"], "thinking": r["thinking"],
                                                             **{f"n_{h:g}": r["targets"][f"{h:g}"]["requests"]
                                                                for h in HALF_WIDTHS}} for r in res["rows"]]})
    fig.savefig(HERE / "prompts_needed.png", dpi=100)
    write_json(HERE / "prompts_needed.json", {"plot": "prompts_needed", **data})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("records", nargs="*", type=Path, default=[DEFAULT_RECORDS],
                        help="measurement records with requests.jsonl (default: experiments/qwen-coder-curve)")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--check", action="store_true", help="recompute and compare with the committed results.json")
    args = parser.parse_args(argv)
    res = analyse(args.records, args.seed)
    code, text = check_or_publish(HERE, res, check=args.check, table=table_md, plot=plot)
    print(text)
    return code


if __name__ == "__main__":
    sys.exit(main())
