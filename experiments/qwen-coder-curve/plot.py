"""Plot AL vs k with 95% CI bands from the measurement records, and write summary.json.

    python experiments/qwen-coder-curve/plot.py
"""

from __future__ import annotations

import json
from pathlib import Path

from golden_al.measure.records import load_record
from golden_al.provenance import atomic_write_text

HERE = Path(__file__).resolve().parent
SETS = {"humaneval": "HumanEval", "mt-bench-coding": "MT-Bench coding (turn 1)"}


def main() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary: dict[str, list[dict[str, float]]] = {}
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for slug, label in SETS.items():
        dirs = sorted((HERE / slug).glob("k*/measurement.json"), key=lambda p: int(p.parent.name[1:]))
        if not dirs:
            continue
        recs = [load_record(p) for p in dirs]
        ks = [r.draft_len for r in recs]
        al = [r.al for r in recs]
        lo = [r.al_ci95[0] for r in recs]
        hi = [r.al_ci95[1] for r in recs]
        line = ax.plot(ks, al, marker="o", label=f"{label} (n={recs[0].num_requests}, "
                                                   f"max {recs[0].sampling.max_tokens} tokens)")[0]
        ax.fill_between(ks, lo, hi, color=line.get_color(), alpha=0.2)
        summary[slug] = [{"k": r.draft_len, "al": round(r.al, 4), "ci95": [round(r.al_ci95[0], 4),
                                                                           round(r.al_ci95[1], 4)],
                          "num_requests": r.num_requests, "num_verify_steps": r.num_verify_steps,
                          "num_accepted_drafts": r.num_accepted_drafts} for r in recs]
    ks_all = range(1, 9)
    ax.plot(list(ks_all), [k + 1 for k in ks_all], color="grey", lw=0.8, ls="--", label="k + 1 (all accepted)")
    ax.set_xlabel("draft length k")
    ax.set_ylabel("AL = 1 + accepted / verify steps")
    ax.set_title("Qwen2.5-Coder-1.5B-Instruct / 0.5B draft, greedy, thinking off")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(HERE / "curve.png", dpi=120)
    atomic_write_text(HERE / "summary.json", json.dumps(summary, indent=2) + "\n")
    for slug, rows in summary.items():
        print(slug, " ".join(f"k{r['k']}={r['al']:.3f}" for r in rows))


if __name__ == "__main__":
    main()
