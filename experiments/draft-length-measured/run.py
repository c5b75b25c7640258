"""Measured draft-length choice on the Qwen2.5-Coder pair: AL(k), step costs and tokens/s, reference engine and llama.cpp.

    python experiments/draft-length-measured/run.py                   # the full experiment
    python experiments/draft-length-measured/run.py --quick           # the done-when: k 1-4, batch 1
    python experiments/draft-length-measured/run.py --summarize-only  # from the committed records

(on a machine shared with other jobs that load the pair, wrap it in ``flock LOCKFILE ...``: the pair takes ~10 GB)

Reference engine (fp32, live speculative decoding, every step timed): the pair is loaded once; for each
repetition, batch size and draft length in a shuffled order (so a load that drifts over minutes spreads
over every k instead of biasing one) one ``run_measurement`` writes ``reference/b{B}/r{rep}/k{k}/``.
llama.cpp (Q4_K_M, ``golden-al measure --engine llamacpp --launch``, one launch per k, concurrency 1):
each answer's ``timings.predicted_ms`` is its decode time, ``llamacpp/k{k}/``. Then
``draft-lengths --measured`` (golden_al.reporting.draft_lengths.measured_table) per source and batch
size, one joint fit over the reference batch sizes for how the best k moves with the batch, the
done-when judged on the reference runs at k <= 4, batch 1; ``summary.json``, ``results.md`` and
three plots. Every run notes the 1-minute load before and after it (the records hold it per step).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REF, LC = HERE / "reference", HERE / "llamacpp"
#: Batch sizes the joint reference fit extrapolates to (beyond the measured ones: marked so).
EXTRAPOLATE = (8, 16, 32)


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def measure_reference(ks: list[int], batches: list[int], reps: int, num_prompts: int, max_tokens: int) -> list[dict]:
    """Every (rep, batch, k) run not yet on disk, k in a shuffled order per (rep, batch); returns the run log."""
    import shutil

    from golden_al.cli._common import cache_dir
    from golden_al.measure.reference import ReferenceSettings, check_inputs, load_inputs, run_measurement
    from golden_al.reference import quiet_transformers

    quiet_transformers()
    settings = ReferenceSettings(draft_lens=ks, prompts="humaneval", num_prompts=num_prompts, max_tokens=max_tokens,
                                 mode="live", batch_size=max(batches), seed=0)
    cache = cache_dir()
    inputs = load_inputs(settings, cache_dir=cache, prompt_set=check_inputs(settings, cache_dir=cache))
    rng, log = random.Random(0), []
    for rep in range(reps):
        for b in batches:
            order = list(ks)
            rng.shuffle(order)
            for k in order:
                out = REF / f"b{b}" / f"r{rep}" / f"k{k}"
                if (out / "measurement.json").exists():
                    continue
                shutil.rmtree(out, ignore_errors=True)  # a run cut short: its steps are gone, measure it again
                before, t0 = _load(), time.monotonic()
                run_measurement(inputs, dataclasses.replace(settings, draft_lens=[k], batch_size=b), out_dir=out,
                                per_k=False, argv=["experiments/draft-length-measured/run.py"])
                log.append({"run": str(out.relative_to(HERE)), "wall_s": round(time.monotonic() - t0, 1),
                            "load1_before": before[0], "load1_after": _load()[0]})
                print(f"reference b={b} rep={rep} k={k}: {log[-1]['wall_s']} s, load {before[0]} -> "
                      f"{log[-1]['load1_after']}", flush=True)
    return log


def measure_llamacpp(ks: list[int], num_prompts: int, max_tokens: int, threads: int) -> list[dict]:
    """``golden-al measure --engine llamacpp --launch`` per k not yet on disk (one launch each, stopped after it;
    ``threads`` for llama-server's target and draft, ``-t``/``-td``)."""
    subprocess.run(["golden-al", "engines", "build", "llamacpp"], check=True)
    log = []
    for k in ks:
        out = LC / f"k{k}"
        if (out / "measurement.json").exists():
            continue
        before, t0 = _load(), time.monotonic()
        subprocess.run(["golden-al", "measure", "--engine", "llamacpp", "--launch", "--draft-len", str(k),
                        "--prompts", "humaneval", "--num-prompts", str(num_prompts), "--max-tokens", str(max_tokens),
                        "--temperature", "0", "--thinking", "off", "--out", str(out),
                        *(f"--engine-arg={a}" for a in ("-t", str(threads), "-td", str(threads)))], check=True)
        log.append({"run": str(out.relative_to(HERE)), "wall_s": round(time.monotonic() - t0, 1),
                    "load1_before": before[0], "load1_after": _load()[0]})
    return log


def _records(root: Path, *, max_k: int | None = None, batch: int | None = None) -> list[Path]:
    paths = sorted(root.rglob("measurement.json"))
    return [p for p in paths if (max_k is None or int(p.parent.name[1:]) <= max_k)
            and (batch is None or p.parent.parent.parent.name == f"b{batch}")]


def done_when(table: dict[str, Any]) -> dict[str, Any]:
    """Issue 53's done-when on one table: predicted tokens/s within 20 % of measured at each k, and the named best
    k the measured best or its neighbour."""
    rows = table["draft_lengths"]
    measured_best = max(rows, key=lambda r: r["tokens_per_s_measured"])["k"]
    worst = max(abs(r["prediction_error"]) for r in rows)
    return {"max_abs_prediction_error": worst, "within_20_percent": worst <= 0.20, "best_k": table["best_k"],
            "measured_best_k": measured_best, "best_k_is_measured_best_or_neighbour":
                abs(table["best_k"] - measured_best) <= 1,
            "max_abs_held_out_error": max((abs(r["held_out_error"]) for r in rows
                                           if r["held_out_error"] is not None), default=None)}


def summarize() -> dict[str, Any]:
    """Every table (CPU and wall clock), the joint fit's best k per batch size, and the done-when verdicts."""
    from golden_al.reporting.draft_lengths import measured_table

    out: dict[str, Any] = {"reference": {}, "llamacpp": None, "best_k_by_batch": [], "done_when": {}}
    batches = sorted(int(p.name[1:]) for p in REF.glob("b*")) if REF.exists() else []
    for clock in ("cpu", "wall") if batches else ():
        out["reference"][clock] = {str(b): measured_table(_records(REF, batch=b), batch=b, clock=clock)
                                   for b in batches}
        quick = measured_table(_records(REF, max_k=4, batch=1), batch=1, clock=clock)
        out["done_when"][clock] = {**done_when(quick), "table": quick}
    for b in sorted({*batches, *EXTRAPOLATE}) if batches else ():
        try:
            t = measured_table(_records(REF), batch=b, clock="cpu")
        except Exception as exc:  # a batch size the joint fit cannot predict: said, not guessed
            out["best_k_by_batch"].append({"batch": b, "why_not": str(exc)})
            continue
        out["best_k_by_batch"].append({"batch": b, "measured": b in batches, "best_k": t["best_k"],
                                       "overlaps_best": t["overlaps_best"],
                                       "tokens_per_s": {r["k"]: r["tokens_per_s_predicted"] for r in t["draft_lengths"]}})
    if LC.exists() and _records(LC):
        out["llamacpp"] = measured_table(_records(LC), batch=1)
    return out


def _tables(s: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = [(f"reference engine, batch {b}, {clock} time", t) for clock, by_b in s["reference"].items()
           for b, t in by_b.items()]
    return out + ([("llama.cpp (Q4_K_M), concurrency 1, wall time", s["llamacpp"])] if s.get("llamacpp") else [])


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.1f}%"


def results_md(s: dict[str, Any]) -> str:
    """The tables of ``summary.json`` in Markdown."""
    lines = ["# Results", ""]
    for name, t in _tables(s):
        terms = "; ".join(f"{n} {v['value']:.3g} [{v['ci95'][0]:.3g}, {v['ci95'][1]:.3g}]" if v else f"{n} -"
                          for n, v in t["cost_model"]["terms"].items())
        lines += [f"## {name}", "", f"Fitted step cost (ms): {terms}; load {t['cost_model']['load1']}.", "",
                  "| k | AL [95% CI] | tokens/s measured | predicted [95% CI] | error | held out | speedup [95% CI] |",
                  "| ---: | --- | ---: | --- | ---: | ---: | --- |"]
        for r in t["draft_lengths"]:
            pc, sc = r["tokens_per_s_predicted_ci95"], r["speedup_ci95"]
            lines.append(f"| {r['k']} | {r['al']:.3f} [{r['al_ci95'][0]:.3f}, {r['al_ci95'][1]:.3f}] | "
                         f"{r['tokens_per_s_measured']:.2f} | {r['tokens_per_s_predicted']:.2f} [{pc[0]:.2f}, "
                         f"{pc[1]:.2f}] | {_pct(r['prediction_error'])} | {_pct(r['held_out_error'])} | "
                         f"{r['speedup']:.2f}x [{sc[0]:.2f}, {sc[1]:.2f}] |")
        lines += ["", f"Best k: {t['best_k']}; within its interval: {t['overlaps_best']}.", ""]
    if s.get("best_k_by_batch"):
        lines += ["## Best k against batch size (joint reference fit)", "", "| batch | best k | within interval |",
                  "| ---: | ---: | --- |"]
        for r in s["best_k_by_batch"]:
            if "why_not" in r:
                lines.append(f"| {r['batch']} | - | {r['why_not']} |")
            else:
                lines.append(f"| {r['batch']}{'' if r['measured'] else ' (extrapolated)'} | {r['best_k']} | "
                             f"{r['overlaps_best']} |")
    for clock, d in s.get("done_when", {}).items():
        lines += ["", f"## Done-when (reference, k = 1..4, batch 1, {clock} time)", "",
                  f"Largest prediction error {_pct(d['max_abs_prediction_error'])} (within 20 %: "
                  f"{d['within_20_percent']}); named best k {d['best_k']}, measured best {d['measured_best_k']} "
                  f"(the measured best or its neighbour: {d['best_k_is_measured_best_or_neighbour']}); largest "
                  f"held-out error {_pct(d['max_abs_held_out_error'])}."]
    return "\n".join(lines) + "\n"


def plots(s: dict[str, Any]) -> None:
    """``tokens_per_s.png`` (measured, predicted with its band, held-out), ``step_ms.png`` (median steps and the
    fitted lines), ``best_k_vs_batch.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tables = _tables(s)
    fig, axes = plt.subplots(1, len(tables), figsize=(5 * len(tables), 4), squeeze=False)
    for ax, (name, t) in zip(axes[0], tables, strict=True):
        rows = t["draft_lengths"]
        ks = [r["k"] for r in rows]
        ax.fill_between(ks, [r["tokens_per_s_predicted_ci95"][0] for r in rows],
                        [r["tokens_per_s_predicted_ci95"][1] for r in rows], alpha=0.2, label="predicted, 95% CI")
        ax.plot(ks, [r["tokens_per_s_predicted"] for r in rows], "-", label="predicted (fit to every k)")
        ax.plot(ks, [r["tokens_per_s_measured"] for r in rows], "o", color="black", label="measured")
        held = [(r["k"], r["tokens_per_s_held_out"]) for r in rows if r["tokens_per_s_held_out"] is not None]
        ax.plot([h[0] for h in held], [h[1] for h in held], "x", color="crimson", label="predicted without that k")
        best = next(r for r in rows if r["k"] == t["best_k"])
        ax.plot([best["k"]], [best["tokens_per_s_predicted"]], "*", ms=14, color="gold", mec="black")
        ax.set_title(name)
        ax.set_xticks(ks)
        ax.set_xlabel("draft length k")
        ax.set_ylabel("tokens per CPU-second" if "cpu time" in name else "tokens/s")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(HERE / "tokens_per_s.png", dpi=110)
    plt.close(fig)
    ok = [r for r in s.get("best_k_by_batch", []) if "best_k" in r]
    if len(ok) > 1:  # one batch size measured: nothing to draw against the batch
        fig, ax = plt.subplots(figsize=(6, 4))
        for r in ok:
            ax.plot([r["batch"]] * len(r["overlaps_best"]), r["overlaps_best"], "s", color="lightgray", ms=10)
        ax.plot([r["batch"] for r in ok], [r["best_k"] for r in ok], "o-", color="tab:blue", label="best k")
        ax.plot([], [], "s", color="lightgray", label="k within the best's interval")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch size (measured up to the largest reference batch, then extrapolated)")
        ax.set_ylabel("draft length k")
        ax.set_title("Best k against batch size, joint fit of the reference runs (CPU time)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(HERE / "best_k_vs_batch.png", dpi=110)
        plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the done-when only: k 1-4, batch 1, no llama.cpp")
    ap.add_argument("--summarize-only", action="store_true", help="tables and plots from the records on disk")
    ap.add_argument("--ks", default=None, help="draft lengths, e.g. 1-4 (default: 1-8; --quick: 1-4)")
    ap.add_argument("--batches", default=None, help="reference batch sizes, e.g. 1,4 (default: 1,2,4; --quick: 1)")
    ap.add_argument("--skip-llamacpp", action="store_true", help="the reference engine only")
    ap.add_argument("--skip-reference", action="store_true", help="llama.cpp only")
    ap.add_argument("--num-prompts", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--reps", type=int, default=2, help="repetitions of every (batch, k) run (default: 2)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch threads of the reference engine, llama-server's -t/-td (default: 1: on a machine shared "
                    "with other jobs no thread waits for a descheduled sibling, so a step's CPU time is its work)")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from golden_al.cli._common import parse_int_list

    ks, batches = ([1, 2, 3, 4], [1]) if args.quick else (list(range(1, 9)), [1, 2, 4])
    ks = parse_int_list(args.ks, name="--ks") if args.ks else ks
    batches = parse_int_list(args.batches, name="--batches") if args.batches else batches
    runs: list[dict] = []
    if not args.summarize_only:
        if not args.skip_reference:
            runs += measure_reference(ks, batches, args.reps, args.num_prompts, args.max_tokens)
        if not (args.quick or args.skip_llamacpp):
            runs += measure_llamacpp(ks, args.num_prompts, args.max_tokens, args.threads)
    for r in runs:
        r["command"] = " ".join(["python", "experiments/draft-length-measured/run.py", *sys.argv[1:]])
    s = summarize()
    old = json.loads((HERE / "summary.json").read_text()) if (HERE / "summary.json").exists() else {}
    s["runs"] = old.get("runs", []) + runs
    s["settings"] = {"prompts": f"humaneval, first {args.num_prompts}", "max_tokens": args.max_tokens,
                     "sampling": "greedy, thinking off", "threads": args.threads,
                     "reps": "each run's r{rep} directory; every run's command is in runs"}
    (HERE / "summary.json").write_text(json.dumps(s, indent=2) + "\n")
    (HERE / "results.md").write_text(results_md(s))
    from golden_al.reporting.experiment import replace_section

    replace_section(HERE / "README.md", "results", results_md(s).replace("# Results\n", "", 1))
    plots(s)
    print(results_md(s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
