"""Tables and the plot of the trained-DFlash experiment, from the committed records (no GPU).

* AL at k = 3, 7, 15 measured live, and k = 3, 7 derived from the k = 15 run, with 95 % intervals;
* the paired difference derived - live per k: both are ratios over the same 32 prompts, so the
  difference is bootstrapped over prompts (one resample of prompts feeds both);
* the k = 15 run's conditional acceptance per block position;
* ``al_vs_k.png``.

    python experiments/dflash-trained/summarize.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from golden_al.measure.records import load_record, read_request_results

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
B = 4000


def _per_request(folder: Path) -> dict[int, tuple[float, float]]:
    return {r.index: (float(r.num_accepted_drafts), float(r.num_verify_steps))
            for r in read_request_results(folder / "requests.jsonl")}


def paired_difference(derived: Path, live: Path, rng: np.random.Generator) -> dict[str, float]:
    """AL(derived) - AL(live) over the same prompts, with a percentile bootstrap over prompts."""
    d, v = _per_request(derived), _per_request(live)
    idx = sorted(set(d) & set(v))
    da, ds = np.array([d[i][0] for i in idx]), np.array([d[i][1] for i in idx])
    va, vs = np.array([v[i][0] for i in idx]), np.array([v[i][1] for i in idx])
    point = da.sum() / ds.sum() - va.sum() / vs.sum()
    pick = rng.integers(0, len(idx), size=(B, len(idx)))
    boot = da[pick].sum(1) / ds[pick].sum(1) - va[pick].sum(1) / vs[pick].sum(1)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return {"difference": round(float(point), 4), "ci95": [round(float(lo), 4), round(float(hi), 4)],
            "prompts": len(idx)}


def main() -> None:
    rng = np.random.default_rng(0)
    rows = []
    for k in (3, 7, 15):
        live = load_record(RESULTS / "live" / f"k{k}")
        row = {"k": k, "block": k + 1, "live": round(live.al, 4), "live_ci95": [round(x, 4) for x in live.al_ci95]}
        if (RESULTS / "derived" / f"k{k}").is_dir():
            der = load_record(RESULTS / "derived" / f"k{k}")
            row.update(derived=round(der.al, 4), derived_ci95=[round(x, 4) for x in der.al_ci95],
                       paired=paired_difference(RESULTS / "derived" / f"k{k}", RESULTS / "live" / f"k{k}", rng))
        rows.append(row)
    rates = load_record(RESULTS / "live" / "k15").acceptance_rates or {}
    cond = rates.get("conditional_accept_rates", [])
    doc = {"rows": rows, "k15_conditional_accept_rates": cond, "bootstrap_resamples": B}
    (RESULTS / "tables.json").write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(doc, indent=2))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    ks = [r["k"] for r in rows]
    live = [r["live"] for r in rows]
    err = np.array([[r["live"] - r["live_ci95"][0], r["live_ci95"][1] - r["live"]] for r in rows]).T
    ax.errorbar(ks, live, yerr=err, marker="o", capsize=3, label="measured live at each k")
    der = [r for r in rows if "derived" in r]
    ax.errorbar([r["k"] + 0.25 for r in der], [r["derived"] for r in der],
                yerr=np.array([[r["derived"] - r["derived_ci95"][0], r["derived_ci95"][1] - r["derived"]]
                               for r in der]).T, marker="s", capsize=3, label="derived from the k = 15 run")
    six = json.loads((HERE / "results-6000-steps" / "summary.json").read_text())["rows"]
    ax.plot([r["k"] for r in six], [r["live_al"] for r in six], "x--", color="grey",
            label="live, the 6,000-step draft")
    ax.set_xlabel("draft length k (block size k + 1)")
    ax.set_ylabel("AL")
    ax.set_xticks(ks)
    ax.set_title("DFlash draft for SmolLM2-135M, 32 held-out HumanEval prompts", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(HERE / "al_vs_k.png", dpi=120)


if __name__ == "__main__":
    main()
