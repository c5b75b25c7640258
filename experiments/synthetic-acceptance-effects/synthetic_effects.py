"""What synthetic acceptance changes: shared per-batch draws vs per-request draws, two-point vs measured shape.

Benchmarks replay traffic with *synthetic* acceptance at the golden AL. Two choices in
how engines draw the per-step accepted length L are compared, at the same mean AL:

* **draw unit**: SGLang draws one L per verify step for the whole batch (``shared``);
  vLLM, TensorRT-LLM and ATOM draw one per request per step (``per-request``);
* **shape**: the engines' two-point, minimum-variance schedule (L in {floor(AL),
  floor(AL)+1}: SGLang match-expected, vLLM/ATOM synthetic) against the measured
  distribution of L with the same mean (what real speculative decoding produces).

Two measured shapes at draft length k=7: the Qwen2.5-Coder-1.5B/0.5B pair's measured
histogram (a golden-al measurement record), and the per-position profile of a public
curve (Kimi-K2.5 EAGLE3, thinking on: its increments AL(j) - AL(j-1) are the
unconditional rates, :func:`simulators.throughput.curve_shape`).

For batch sizes 1, 4, 16, 64 and each (shape, draw unit) this reports:

* tokens per step: mean and standard deviation of the batch's tokens per verify step
  divided by B (the batch's per-step AL), from :func:`simulators.batch.simulate_batch`;
* the spread of one benchmark run's realized AL (std over runs of ``S`` steps);
* per-request latency in verify steps to emit N output tokens (P50, P90, P99), and the
  static-batch drain time (the batch's slowest request: P50, P90, P99), from
  :func:`completion.simulate_completion`, checked against the exact renewal
  percentiles (:func:`simulators.batch.completion_percentiles`); milliseconds via the
  default cost model's step time at that batch size.

Seeded (``--seed``, one independent stream per scenario), so ``--check`` reproduces the
committed numbers exactly.

    /work/venv/bin/python experiments/synthetic-acceptance-effects/synthetic_effects.py
    /work/venv/bin/python experiments/synthetic-acceptance-effects/synthetic_effects.py --check
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from distributions.acceptance import AcceptanceDistribution
from golden_al.golden import SHIPPED_CURVES_DIR, load_store
from golden_al.measure.records import load_record
from golden_al.provenance import sha256_file
from golden_al.reporting.experiment import (
    check_or_publish,
    write_json,
)
from simulators.batch import completion_percentiles, simulate_batch
from simulators.throughput import curve_shape, evaluate_draft_lengths

sys.path.insert(0, str(Path(__file__).resolve().parent))
from completion import simulate_completion

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
K = 7
BATCH_SIZES = (1, 4, 16, 64)
OUTPUT_TOKENS = 512
NUM_REQUESTS = 64 * 128  # a multiple of every batch size
TOKEN_STEPS = 20_000
RUN_STEPS = 200  # steps in one "benchmark run" for the realized-AL spread
DEFAULT_RECORDS = [REPO / "experiments" / "qwen-coder-curve" / d / f"k{K}" / "measurement.json"
                   for d in ("humaneval", "mt-bench-coding")]
PUBLIC = ("kimi-k2.5-nvfp4", "thinking_on")


def _rel(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(REPO))
    except ValueError:
        return str(p)


def shapes(record_paths: list[Path]) -> dict[str, dict[str, Any]]:
    """The measured shapes at k=7 (one per Qwen record, then the public curve) and where they come from."""
    out: dict[str, dict[str, Any]] = {}
    for path in record_paths:
        rec = load_record(path)
        if rec.draft_len != K:
            raise SystemExit(f"{path}: expected a k={K} record, got k={rec.draft_len}")
        dataset = rec.dataset.name + (f":{rec.dataset.category}" if rec.dataset.category else "")
        name = f"qwen2.5-coder {dataset} (measured histogram)"
        while name in out:
            name += " (again)"
        out[name] = {
            "dist": AcceptanceDistribution.from_accepted_histogram(rec.histogram, k=K), "source": _rel(path),
            "sha256": sha256_file(path), "record": path,
            "detail": f"{rec.target.name} / {rec.draft.name}, {dataset}, {rec.num_requests} prompts, "
                      f"{rec.num_verify_steps} verify steps, max_tokens {rec.sampling.max_tokens}",
        }
    store = load_store(SHIPPED_CURVES_DIR)
    sc = store.curve(PUBLIC[0])
    curve = {k: p.al for k, p in sc.curve.mode(PUBLIC[1]).points.items()}
    public, how = curve_shape(curve, K)
    out["kimi-k2.5 eagle3 thinking_on (public curve profile)"] = {
        "dist": public, "source": f"golden_al/golden/curves/{sc.path.name}", "record": None,
        "sha256": sha256_file(sc.path), "detail": f"shape from {how} of the committed curve, AL({K}) = {curve[K]}",
    }
    return out


def _request_sequences(record_path: Path) -> list[np.ndarray] | None:
    """Per-request sequences of L (accept_lengths) of the measured record, when it has them."""
    from golden_al.measure.records import read_request_results

    rec = load_record(record_path)
    if not rec.per_request_file:
        return None
    reqs = read_request_results(record_path.parent / rec.per_request_file)
    seqs = [np.asarray(r.accept_lengths, dtype=np.int64) for r in reqs
            if r.draft_len == K and r.accept_lengths]
    return seqs or None


def _stream(seq: np.ndarray, length: int, rng: np.random.Generator) -> np.ndarray:
    """``length`` values of ``seq`` read cyclically from a random offset."""
    start = int(rng.integers(seq.size))
    return np.resize(np.roll(seq, -start), length)


def real_requests_scenario(seqs: list[np.ndarray], b: int, rng: np.random.Generator) -> dict[str, Any]:
    """Each simulated request replays one measured request's own sequence of L (whole-request resampling)."""
    blocks = []
    for _ in range(TOKEN_STEPS // RUN_STEPS):  # each run: B freshly drawn requests for RUN_STEPS steps
        picks = rng.integers(len(seqs), size=b)
        blocks.append(np.stack([_stream(seqs[i], RUN_STEPS, rng) for i in picks], axis=1))
    streams = np.concatenate(blocks, axis=0)
    per_step_al = streams.sum(axis=1) / b
    runs = per_step_al.reshape(-1, RUN_STEPS).mean(axis=1)
    steps = np.empty(NUM_REQUESTS, dtype=np.int64)
    for n, i in enumerate(rng.integers(len(seqs), size=NUM_REQUESTS)):
        seq = _stream(seqs[i], OUTPUT_TOKENS, rng)  # L >= 1, so OUTPUT_TOKENS steps always suffice
        steps[n] = int(np.searchsorted(np.cumsum(seq), OUTPUT_TOKENS, side="left")) + 1
    drain = steps.reshape(-1, b).max(axis=1)
    step_ms = evaluate_draft_lengths({K: 1.0}, batch=b).draft_lengths[0].step_ms
    req = {f"p{q}": float(np.percentile(steps, q, method="inverted_cdf")) for q in (50, 90, 99)}
    req["mean"] = float(steps.mean())
    dr = {f"p{q}": float(np.percentile(drain, q, method="inverted_cdf")) for q in (50, 90, 99)}
    dr["mean"] = float(drain.mean())
    return {
        "tokens_per_step_per_request_mean": float(per_step_al.mean()),
        "tokens_per_step_per_request_std": float(per_step_al.std(ddof=1)),
        "batch_tokens_per_step_std": float(np.std(streams.sum(axis=1), ddof=1)),
        "run_al_std": float(runs.std(ddof=1)),
        "request_steps": req, "drain_steps": dr, "step_ms": step_ms,
        "request_ms": {k: v * step_ms for k, v in req.items()},
        "drain_ms": {k: v * step_ms for k, v in dr.items()},
    }


def scenario(dist: AcceptanceDistribution, b: int, shared: bool, rng: np.random.Generator) -> dict[str, Any]:
    tok = simulate_batch(dist, b, TOKEN_STEPS, rng, shared=shared)
    per_step_al = tok.per_step_al
    runs = per_step_al[: (TOKEN_STEPS // RUN_STEPS) * RUN_STEPS].reshape(-1, RUN_STEPS).mean(axis=1)
    comp = simulate_completion(dist, OUTPUT_TOKENS, rng, num_requests=NUM_REQUESTS, batch_size=b, shared=shared)
    step_ms = evaluate_draft_lengths({K: 1.0}, batch=b).draft_lengths[0].step_ms
    req = comp.percentiles()
    drain = comp.drain_percentiles()
    return {
        "tokens_per_step_per_request_mean": float(per_step_al.mean()),
        "tokens_per_step_per_request_std": float(per_step_al.std(ddof=1)),
        "batch_tokens_per_step_std": float(np.std(tok.per_step_tokens, ddof=1)),
        "run_al_std": float(runs.std(ddof=1)),
        "request_steps": req,
        "drain_steps": drain,
        "step_ms": step_ms,
        "request_ms": {k: v * step_ms for k, v in req.items()},
        "drain_ms": {k: v * step_ms for k, v in drain.items()},
    }


def analyse(record_paths: list[Path], seed: int) -> dict[str, Any]:
    src = shapes(record_paths)
    ss = np.random.SeedSequence(seed)
    streams = iter(ss.spawn(len(src) * (2 * 2 + 1) * len(BATCH_SIZES)))
    out: dict[str, Any] = {"k": K, "output_tokens": OUTPUT_TOKENS, "num_requests": NUM_REQUESTS,
                           "token_steps": TOKEN_STEPS, "run_steps": RUN_STEPS, "seed": seed, "sources": {}}
    for name, info in src.items():
        shaped: AcceptanceDistribution = info["dist"]
        al = shaped.mean()
        two = AcceptanceDistribution.min_variance(al, K)
        entry: dict[str, Any] = {
            "source": info["source"], "sha256": info["sha256"], "detail": info["detail"], "al": al,
            "pmfs": {"measured": shaped.to_list(), "two-point": two.to_list()},
            "std_L": {"measured": shaped.std(), "two-point": two.std()},
            "exact_request_steps": {"measured": completion_percentiles(shaped, OUTPUT_TOKENS),
                                    "two-point": completion_percentiles(two, OUTPUT_TOKENS)},
            "scenarios": {},
        }
        for shape_name, dist in (("measured", shaped), ("two-point", two)):
            for unit, shared in (("per-request", False), ("shared", True)):
                key = f"{shape_name} / {unit}"
                entry["scenarios"][key] = {
                    str(b): scenario(dist, b, shared, np.random.default_rng(next(streams))) for b in BATCH_SIZES
                }
        seqs = _request_sequences(info["record"]) if info["record"] is not None else None
        if seqs is not None:
            entry["scenarios"]["measured requests (resampled whole) / per-request"] = {
                str(b): real_requests_scenario(seqs, b, np.random.default_rng(next(streams))) for b in BATCH_SIZES
            }
            entry["num_measured_requests"] = len(seqs)
        out["sources"][name] = entry
    return out


def tables(res: dict[str, Any]) -> str:
    lines = []
    for name, e in res["sources"].items():
        lines += [f"**{name}**: AL({K}) = {e['al']:.3f}; std of L per step: measured {e['std_L']['measured']:.3f}, "
                  f"two-point {e['std_L']['two-point']:.3f}. Per-request latency for {OUTPUT_TOKENS} output tokens, "
                  f"exact (any batch, either draw unit): measured P50/P90/P99 = "
                  + "/".join(f"{e['exact_request_steps']['measured'][p]:.0f}" for p in ("p50", "p90", "p99"))
                  + " steps, two-point " + "/".join(f"{e['exact_request_steps']['two-point'][p]:.0f}"
                                                      for p in ("p50", "p90", "p99")) + " steps.", "",
                  "| shape / draw unit | B | tokens/step/request (mean ± std) | std of a run's AL | "
                  "request P50 / P90 / P99 (steps) | batch drain P50 / P90 / P99 (steps) | request P99 (ms) |",
                  "| --- | ---: | --- | ---: | --- | --- | ---: |"]
        for key, by_b in e["scenarios"].items():
            for b, s in by_b.items():
                rq, dr = s["request_steps"], s["drain_steps"]
                lines.append(f"| {key} | {b} | {s['tokens_per_step_per_request_mean']:.3f} ± "
                             f"{s['tokens_per_step_per_request_std']:.3f} | {s['run_al_std']:.4f} | "
                             f"{rq['p50']:.0f} / {rq['p90']:.0f} / {rq['p99']:.0f} | "
                             f"{dr['p50']:.0f} / {dr['p90']:.0f} / {dr['p99']:.0f} | {s['request_ms']['p99']:.0f} |")
        lines.append("")
    return "\n".join(lines)


STYLES = {"measured / per-request": ("tab:blue", "-"), "measured / shared": ("tab:blue", "--"),
          "two-point / per-request": ("tab:orange", "-"), "two-point / shared": ("tab:orange", "--"),
          "measured requests (resampled whole) / per-request": ("tab:green", "-")}


def _short(name: str) -> str:
    if name.startswith("qwen2.5-coder "):
        return "Qwen2.5-Coder, " + name.split(" ")[1] + " (measured)"
    return "Kimi-K2.5 EAGLE3, thinking on (public curve)"


def _legend(fig: Any, extra: list[Any] | None = None) -> None:
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=c, ls=ls, label=key) for key, (c, ls) in STYLES.items()] + (extra or [])
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8)


def plots(res: dict[str, Any]) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    names = list(res["sources"])
    ncol = len(names)
    # 1. the shapes side by side
    fig = Figure(figsize=(4.5 * ncol, 4), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, ncol, squeeze=False)[0]
    pdata: dict[str, Any] = {"x": "tokens per verify step L", "y": "probability", "panels": []}
    for ax, name in zip(axes, names, strict=True):
        e = res["sources"][name]
        xs = np.arange(1, K + 2)
        ax.bar(xs - 0.2, e["pmfs"]["measured"], 0.4, color="tab:blue",
               label=f"measured (std {e['std_L']['measured']:.2f})")
        ax.bar(xs + 0.2, e["pmfs"]["two-point"], 0.4, color="tab:orange",
               label=f"two-point, same mean (std {e['std_L']['two-point']:.2f})")
        ax.set_title(f"{_short(name)}\nAL({K}) = {e['al']:.2f}", fontsize=9)
        ax.set_xlabel("tokens per verify step L")
        ax.set_ylabel("probability")
        ax.legend(fontsize=8, loc="upper left")
        ax.grid(alpha=0.3, axis="y")
        pdata["panels"].append({"source": name, "al": e["al"], "pmfs": e["pmfs"]})
    fig.suptitle(f"Per-step distribution at k={K}: measured vs. the engines' two-point schedule", fontsize=10)
    fig.savefig(HERE / "shapes.png", dpi=100)
    write_json(HERE / "shapes.json", {"plot": "shapes", **pdata})

    # 2. per-step spread and a run's realized-AL spread against batch size
    fig = Figure(figsize=(4.5 * ncol, 7.5), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, ncol, squeeze=False)
    tdata: dict[str, Any] = {"x": "batch size B", "panels": []}
    for col, name in enumerate(names):
        e = res["sources"][name]
        for row, (metric, ylabel) in enumerate((
                ("tokens_per_step_per_request_std", "std of the batch's per-step AL (tokens)"),
                ("run_al_std", f"std of a {RUN_STEPS}-step run's realized AL"))):
            ax = axes[row][col]
            for key, by_b in e["scenarios"].items():
                color, ls = STYLES[key]
                ax.plot(BATCH_SIZES, [by_b[str(b)][metric] for b in BATCH_SIZES], ls, marker="o", ms=4, color=color)
                tdata["panels"].append({"source": name, "metric": metric, "scenario": key,
                                        "values": {str(b): by_b[str(b)][metric] for b in BATCH_SIZES}})
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xticks(BATCH_SIZES, [str(b) for b in BATCH_SIZES])
            ax.set_xlabel("batch size B (concurrent requests)")
            ax.set_ylabel(ylabel)
            ax.set_title(_short(name), fontsize=9)
            ax.grid(alpha=0.3, which="both")
    _legend(fig)
    fig.suptitle("Shared per-batch draw (SGLang, dashed) vs per-request draws (vLLM/TRT-LLM/ATOM, solid): "
                 "the shared draw's spread does not average out over the batch", fontsize=10)
    fig.savefig(HERE / "tokens_per_step.png", dpi=100)
    write_json(HERE / "tokens_per_step.json", {"plot": "tokens_per_step", **tdata})

    # 3. latency tails: per-request and static-batch drain, P50 and P99, against batch size
    fig = Figure(figsize=(4.5 * ncol, 7.5), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, ncol, squeeze=False)
    ldata: dict[str, Any] = {"x": "batch size B", "y": f"verify steps to emit {OUTPUT_TOKENS} tokens", "panels": []}
    for col, name in enumerate(names):
        e = res["sources"][name]
        for row, (metric, title) in enumerate((("request_steps", "per-request latency"),
                                               ("drain_steps", "batch drain (slowest request)"))):
            ax = axes[row][col]
            for key, by_b in e["scenarios"].items():
                color, ls = STYLES[key]
                for q, marker in (("p50", "o"), ("p99", "^")):
                    ax.plot(BATCH_SIZES, [by_b[str(b)][metric][q] for b in BATCH_SIZES], ls, marker=marker, ms=4,
                            color=color)
                ldata["panels"].append({"source": name, "metric": metric, "scenario": key,
                                        "values": {str(b): by_b[str(b)][metric] for b in BATCH_SIZES}})
            ax.set_xscale("log", base=2)
            ax.set_xticks(BATCH_SIZES, [str(b) for b in BATCH_SIZES])
            ax.set_xlabel("batch size B (concurrent requests)")
            ax.set_ylabel(f"verify steps for {OUTPUT_TOKENS} tokens")
            ax.set_title(f"{title}\n{_short(name)}", fontsize=9)
            ax.grid(alpha=0.3)
    _legend(fig, [Line2D([], [], marker="o", ls="", color="gray", label="P50"),
                  Line2D([], [], marker="^", ls="", color="gray", label="P99")])
    fig.suptitle("Latency tail: the two-point schedule (orange) hides the measured tail (blue, green)", fontsize=10)
    fig.savefig(HERE / "latency_tail.png", dpi=100)
    write_json(HERE / "latency_tail.json", {"plot": "latency_tail", **ldata})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--record", type=Path, action="append", default=None,
                        help="a k=7 Qwen measurement record (repeatable; default: the HumanEval and MT-Bench coding "
                        "records of experiments/qwen-coder-curve)")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--check", action="store_true", help="recompute and compare with the committed results.json")
    args = parser.parse_args(argv)
    res = analyse(args.record or DEFAULT_RECORDS, args.seed)
    code, text = check_or_publish(HERE, res, check=args.check, table=tables, plot=plots)
    print(text)
    return code


if __name__ == "__main__":
    sys.exit(main())
