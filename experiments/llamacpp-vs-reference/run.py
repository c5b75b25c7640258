"""The Qwen2.5-Coder pair's AL curve, k = 1..8, on llama.cpp's server against the reference engine.

    flock /tmp/golden-al-heavy.lock python experiments/llamacpp-vs-reference/run.py [--num-prompts 16]
    python experiments/llamacpp-vs-reference/run.py --plot-only      # redraw from the committed records

One run, side by side, on the same prompts (the first N HumanEval problems, greedy, thinking
off, M output tokens): llama-server (Q4_K_M GGUF files as shipped, live speculative decoding,
one launch per k) and golden-al's reference engine (the same files dequantized to fp32, replay
mode: one target generation + one teacher-forced draft pass serve every k, exact for greedy).
Writes the records under llamacpp/ and reference/, summary.json (AL with 95% CIs per k for
both, the committed golden curve, the differences, wall times and token agreement) and
curve.png.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CURVE = HERE.parents[1] / "golden_al" / "golden" / "curves" / "qwen2.5-coder-1.5b-instruct_draft-model.yaml"


def _run(cmd: list[str]) -> float:
    print("+", " ".join(cmd), flush=True)
    t0 = time.monotonic()
    subprocess.run(cmd, check=True)
    return time.monotonic() - t0


def _records(d: Path) -> dict[int, dict]:
    out = {}
    for p in sorted(d.glob("k*/measurement.json")):
        rec = json.loads(p.read_text())
        out[rec["draft_len"]] = rec
    return out


def _wall(rec: dict) -> float | None:
    """Seconds from the record's start to its end (provenance), or None."""
    from datetime import datetime

    prov = rec.get("provenance", {})
    try:
        return round((datetime.fromisoformat(prov["ended"]) - datetime.fromisoformat(prov["started"])).total_seconds(), 1)
    except (KeyError, TypeError, ValueError):
        return None


def _llamacpp_end_rule(run: Path, k: int, max_tokens: int) -> tuple[float, int]:
    """The reference run's AL at ``k`` counted by llama-server's end-of-request rule: (AL, verify steps).

    The reference engine drafts ``min(k, left)`` and counts those short final steps;
    llama-server (``n_min = k``) decodes them plainly (golden_al.engines.llamacpp.counted_steps).
    Greedy steps before that point are the same in both, so this recount of the reference's
    own steps is what llama-server would have counted on the same output.
    """
    from golden_al.engines.llamacpp import counted_steps

    acc = steps = 0
    for line in (run / f"k{k}" / "requests.jsonl").read_text().splitlines():
        if line.strip():
            kept = counted_steps(json.loads(line)["accept_lengths"], k, max_tokens)
            acc, steps = acc + sum(kept) - len(kept), steps + len(kept)
    return (1 + acc / steps if steps else float("nan")), steps


def _committed() -> dict[int, float]:
    from golden_al.golden import load_store

    store = load_store(None)
    out = {}
    for k in range(1, 9):
        out[k] = store.lookup("qwen2.5-coder-1.5b-instruct", "off", k).al
    return out


def summarize(num_prompts: int, max_tokens: int, walls: dict[str, float] | None) -> dict:
    from compare import compare_runs  # this folder's compare.py (next to this script)

    lc, ref = _records(HERE / "llamacpp"), _records(HERE / "reference")
    golden = _committed()
    rows = []
    for k in sorted(set(lc) & set(ref)):
        a, b = lc[k], ref[k]
        al_rule, steps_rule = _llamacpp_end_rule(HERE / "reference", k, max_tokens)
        rows.append({"k": k, "llamacpp_al": round(a["al"], 4), "llamacpp_ci95": [round(x, 4) for x in a["al_ci95"]],
                     "reference_al": round(b["al"], 4), "reference_ci95": [round(x, 4) for x in b["al_ci95"]],
                     "difference": round(a["al"] - b["al"], 4), "committed_golden_al": golden.get(k),
                     "reference_al_llamacpp_end_rule": round(al_rule, 4),
                     "reference_verify_steps_llamacpp_end_rule": steps_rule,
                     "difference_llamacpp_end_rule": round(a["al"] - al_rule, 4),
                     "llamacpp_verify_steps": a["num_verify_steps"], "reference_verify_steps": b["num_verify_steps"],
                     "llamacpp_wall_s": _wall(a), "warnings": sorted(set(a.get("warnings", []) + b.get("warnings", [])))})
    agreement = {}
    for k in (1, 3, 8):
        if k in lc and k in ref:
            cmp = compare_runs(HERE / "reference" / f"k{k}", HERE / "llamacpp" / f"k{k}")
            agreement[f"k{k}"] = {"token_agreement": round(cmp["token_agreement"], 4),
                                  "identical_outputs": cmp["identical_outputs"], "num_prompts": cmp["num_prompts"]}
    old = json.loads((HERE / "summary.json").read_text()) if (HERE / "summary.json").exists() else {}
    return {"prompts": f"humaneval, first {num_prompts}", "max_tokens": max_tokens, "sampling": "greedy",
            "rows": rows, "token_agreement": agreement,
            "wall_s": walls if walls is not None else old.get("wall_s"),
            "committed_curve": str(CURVE.relative_to(HERE.parents[1])),
            "committed_curve_prompts": "humaneval, first 80, max_tokens 256 (experiments/qwen-coder-curve)"}


def plot(summary: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = summary["rows"]
    ks = [r["k"] for r in rows]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for key, label in (("llamacpp", "llama.cpp server (Q4_K_M, live)"), ("reference", "reference engine (fp32, replay)")):
        al = [r[f"{key}_al"] for r in rows]
        line = ax.plot(ks, al, marker="o", label=label)[0]
        ax.fill_between(ks, [r[f"{key}_ci95"][0] for r in rows], [r[f"{key}_ci95"][1] for r in rows],
                        color=line.get_color(), alpha=0.2)
    ax.plot(ks, [r["reference_al_llamacpp_end_rule"] for r in rows], ls="--", marker=".", color="tab:green",
            label="reference, recounted by llama-server's end-of-request rule")
    ax.plot(ks, [r["committed_golden_al"] for r in rows], ls=":", marker="x", color="black",
            label="committed golden curve (80 prompts x 256)")
    ax.set_xlabel("draft length k")
    ax.set_ylabel("AL = 1 + accepted / verify steps")
    ax.set_title(f"Qwen2.5-Coder 1.5B / 0.5B, {summary['prompts']} x {summary['max_tokens']} tokens, greedy",
                 fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(HERE / "curve.png", dpi=120)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--num-prompts", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--plot-only", action="store_true",
                    help="re-summarize and redraw from the records (their prompt count and token budget)")
    args = ap.parse_args()
    walls = None
    if args.plot_only:
        first = next(iter(_records(HERE / "reference").values()))
        args.num_prompts, args.max_tokens = first["num_requests"], first["sampling"]["max_tokens"]
    if not args.plot_only:
        common = ["--draft-lens", "1-8", "--prompts", "humaneval", "--num-prompts", str(args.num_prompts),
                  "--max-tokens", str(args.max_tokens), "--temperature", "0", "--thinking", "off"]
        walls = {
            "llamacpp_s": round(_run(["golden-al", "measure", "--engine", "llamacpp", "--launch", "--save-text",
                                      *common, "--out", str(HERE / "llamacpp")]), 1),
            "reference_s": round(_run(["golden-al", "measure", "--mode", "replay", *common,
                                       "--out", str(HERE / "reference")]), 1),
        }
    summary = summarize(args.num_prompts, args.max_tokens, walls)
    (HERE / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    plot(summary)
    for r in summary["rows"]:
        print(f"k={r['k']}: llama.cpp {r['llamacpp_al']:.3f} {r['llamacpp_ci95']}  reference {r['reference_al']:.3f} "
              f"{r['reference_ci95']}  diff {r['difference']:+.3f}  golden {r['committed_golden_al']}")
    print("wall:", summary["wall_s"], "agreement:", summary["token_agreement"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
