"""The best draft length per model and thinking mode under the throughput model, for every committed curve.

For every curve of the golden store (default: the curves shipped with golden-al, which
includes the Qwen2.5-Coder curve once committed) and each thinking mode, this evaluates
:func:`simulators.throughput.evaluate_draft_lengths` over the committed draft lengths and
reports the k with the highest modelled speedup over no speculation, at batch sizes 1, 8
and 64, and how that choice moves with the draft cost per drafted token.

Only committed points count (golden-al never interpolates); a curve committed for
k = 3..8 is judged on those. Deterministic: no sampling. Writes ``results.json``,
``results.md``, the README's results table, and two plots with their JSON.

    /work/venv/bin/python experiments/best-draft-length/best_draft_length.py          # write
    /work/venv/bin/python experiments/best-draft-length/best_draft_length.py --check  # re-run, compare
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from distributions.stepcost import StepCostFit
from golden_al.golden import SHIPPED_CURVES_DIR, load_store
from golden_al.reporting.experiment import (
    check_or_publish,
    write_json,
)
from simulators.throughput import ASSUMED_COSTS, evaluate_draft_lengths

HERE = Path(__file__).resolve().parent
BATCH_SIZES = (1, 8, 64)
#: draft time per drafted token (ms) for the sensitivity sweep; the default model uses 0.5
#: (a one-layer EAGLE/MTP head next to a 10 ms target forward); 3.5 is about what a
#: separate draft model of a third of the target's size costs (the Qwen 0.5B/1.5B pair).
DRAFT_COSTS = (0.1, 0.25, 0.5, 1.0, 2.0, 3.5)
SENSITIVITY_BATCHES = (1, 64)


def analyse(golden_dir: Path) -> dict[str, Any]:
    """Best k per (curve, thinking mode, batch size), and its sensitivity to the draft cost."""
    store = load_store(golden_dir)
    rows: list[dict[str, Any]] = []
    for sc in sorted(store.curves, key=lambda s: (s.model, s.method, s.variant or "", s.name)):
        for mode, blk in sc.curve.modes().items():
            curve = {k: p.al for k, p in blk.points.items()}
            entry: dict[str, Any] = {
                "curve": sc.name, "model": sc.model, "method": sc.method, "variant": sc.variant,
                "thinking": mode, "ks": sorted(curve), "al": {str(k): v for k, v in sorted(curve.items())},
                "format": sc.format, "by_batch": {}, "sensitivity": {},
            }
            for b in BATCH_SIZES:
                table = evaluate_draft_lengths(curve, batch=b)
                best = next(r for r in table.draft_lengths if r.k == table.best_k)
                entry["by_batch"][str(b)] = {
                    "best_k": table.best_k, "al_at_best": best.al, "speedup": best.speedup,
                    "tokens_per_s_per_user": best.tokens_per_s_per_user,
                    "speedup_by_k": {str(r.k): r.speedup for r in table.draft_lengths},
                }
            for b in SENSITIVITY_BATCHES:
                entry["sensitivity"][str(b)] = {
                    f"{c:g}": evaluate_draft_lengths(
                        curve, StepCostFit.assumed(**{**ASSUMED_COSTS, "draft_ms_per_token": c}), batch=b).best_k
                    for c in DRAFT_COSTS
                }
            rows.append(entry)
    return {
        "golden_dir": "shipped" if golden_dir == SHIPPED_CURVES_DIR else str(golden_dir),
        "cost_model": dict(ASSUMED_COSTS),
        "batch_sizes": list(BATCH_SIZES),
        "draft_costs_ms": list(DRAFT_COSTS),
        "rows": rows,
    }


def table_md(res: dict[str, Any]) -> str:
    head = ("| model | method | thinking | committed k | " + " | ".join(f"best k (B={b})" for b in BATCH_SIZES)
            + " | best k as draft cost goes 0.1 → 3.5 ms (B=1) |")
    lines = [head, "| --- | --- | --- | --- | " + " | ".join("---:" for _ in BATCH_SIZES) + " | --- |"]
    for r in res["rows"]:
        ks = r["ks"]
        krange = (str(ks[0]) if len(ks) == 1 else f"{ks[0]}-{ks[-1]}" if ks == list(range(ks[0], ks[-1] + 1))
                  else ",".join(map(str, ks)))
        cells = [f"{r['by_batch'][str(b)]['best_k']} ({r['by_batch'][str(b)]['speedup']:.2f}x, AL "
                 f"{r['by_batch'][str(b)]['al_at_best']:.2f})" for b in BATCH_SIZES]
        sens = " → ".join(str(r["sensitivity"]["1"][f"{c:g}"]) for c in DRAFT_COSTS)
        method = r["method"] + (f" ({r['variant']})" if r["variant"] else "")
        lines.append(f"| {r['model']} | {method} | {r['thinking'].replace('thinking_', '')} | {krange} | "
                     + " | ".join(cells) + f" | {sens} |")
    return "\n".join(lines)


def plots(res: dict[str, Any]) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = res["rows"]
    # speedup against k at batch 1 and 64, one panel per thinking mode and batch size
    fig = Figure(figsize=(13, 9), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, 2)
    data: dict[str, Any] = {"x": "draft length k", "y": "modelled speedup over no speculation", "panels": []}
    for i, mode in enumerate(("thinking_on", "thinking_off")):
        for j, b in enumerate((1, 64)):
            ax = axes[j][i]
            panel = {"thinking": mode, "batch_size": b, "series": []}
            for r in rows:
                if r["thinking"] != mode:
                    continue
                sp = r["by_batch"][str(b)]["speedup_by_k"]
                ks = [int(k) for k in sp]
                label = f"{r['model']} ({r['method']}{', ' + r['variant'] if r['variant'] else ''})"
                (line,) = ax.plot(ks, list(sp.values()), marker="o", ms=3, label=label)
                best = r["by_batch"][str(b)]["best_k"]
                ax.plot([best], [sp[str(best)]], "*", ms=12, color=line.get_color())
                panel["series"].append({"label": label, "speedup_by_k": sp, "best_k": best})
            ax.set_title(f"{mode.replace('_', ' ')}, batch {b}: modelled speedup (star: best k)")
            ax.set_xlabel("draft length k (drafted tokens per verify step)")
            ax.set_ylabel("speedup over no speculation (x)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
            data["panels"].append(panel)
    fig.suptitle("Best draft length per committed golden curve (assumed costs: fixed 11 ms, verify 0.02 ms/token, "
                 "draft 0.5 ms/token)", fontsize=10)
    fig.savefig(HERE / "speedup_vs_k.png", dpi=100)
    write_json(HERE / "speedup_vs_k.json", {"plot": "speedup_vs_k", **data, "cost_model": res["cost_model"]})

    labels = [f"{r['model']} ({r['method']}{', ' + r['variant'] if r['variant'] else ''}) {r['thinking'][9:]}"
              for r in rows]
    fig = Figure(figsize=(14, 0.42 * len(rows) + 2.2), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 2, sharey=True)
    sdata: dict[str, Any] = {"x": "draft cost per drafted token (ms)", "y": "curve and thinking mode",
                             "value": "best draft length k", "panels": []}
    for ax, b in zip(axes, SENSITIVITY_BATCHES, strict=True):
        grid = [[r["sensitivity"][str(b)][f"{c:g}"] for c in DRAFT_COSTS] for r in rows]
        im = ax.imshow(grid, cmap="viridis", vmin=1, vmax=8, aspect="auto")
        for yi, row in enumerate(grid):
            for xi, v in enumerate(row):
                ax.text(xi, yi, str(v), ha="center", va="center", color="white" if v < 5 else "black", fontsize=9)
        ax.set_xticks(range(len(DRAFT_COSTS)), [f"{c:g}" for c in DRAFT_COSTS])
        ax.set_yticks(range(len(rows)), labels, fontsize=8)
        ax.set_title(f"Best k against draft cost, batch {b}")
        ax.set_xlabel("draft cost per drafted token (ms; target verify forward 10 ms)")
        sdata["panels"].append({"batch_size": b, "rows": labels, "draft_costs_ms": list(DRAFT_COSTS), "best_k": grid})
    fig.colorbar(im, ax=axes, label="best draft length k", shrink=0.8)
    fig.savefig(HERE / "sensitivity.png", dpi=100)
    write_json(HERE / "sensitivity.json", {"plot": "sensitivity", **sdata})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--golden-dir", type=Path, default=SHIPPED_CURVES_DIR)
    parser.add_argument("--check", action="store_true", help="recompute and compare with the committed results.json")
    args = parser.parse_args(argv)
    res = analyse(args.golden_dir)
    code, text = check_or_publish(HERE, res, check=args.check, table=table_md, plot=plots, show=None)
    print(text)
    return code


if __name__ == "__main__":
    sys.exit(main())
