"""False rejects and power of ``check-run`` by log length and batch size, with each engine's sampler.

For each engine configuration, number of log lines (1..20000) and batch size (1..256), draws
many synthetic runs whose truth is known, builds the evidence ``check-run`` would read from
their logs, and applies the decision rule (:func:`golden_al.checks.run.check_evidence`):

* **SGLang** (one ``L`` per batch step, shared by the batch): every decode line covers 40
  batch steps drawn with the sampler's own procedure (``golden_al.engines.sglang.sampler`` ``simulate``),
  and prints ``accept len = sum(bs * L) / sum(bs)`` to two decimals, exactly as SGLang
  formats it. Batch patterns: constant, and a ``ramp`` where the batch falls from B to B/2
  inside every interval (requests finishing), which blurs the 1/40 grid.
* **vLLM, ATOM** (one ``L`` per request-step): a run of ``lines * batch * 40`` request-steps;
  the totals of ``Accepted`` / ``Drafted`` (integers, so no rounding) are drawn with the
  sampler's ``simulate`` when small, else as a multinomial of its pmf (the same law).

Correct runs have the injected AL; wrong ones AL - 0.1 and AL - 0.25. The old rule (rounding as
zero-mean noise of variance 0.01^2/12, normal tails at 4 sigma) is evaluated on the same runs.

Run (a few minutes; --quick for a smaller grid)::

    python experiments/check-run-calibration/calibrate_check_run.py

Writes results.json, results.md and check_run_calibration.png next to this file.
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

from golden_al.checks.run import (  # noqa: E402
    DEFAULT_TOLERANCE_SIGMA,
    RunEvidence,
    check_evidence,
    false_alarm_bound,
)
from golden_al.plugin.registry import get_sampler  # noqa: E402

HERE = Path(__file__).resolve().parent
INTERVAL = 40
CONFIGS = (  # engine, method, injected AL, k
    ("sglang", "match-expected", 4.05, 7),
    ("sglang", "match-expected", 1.3, 1),
    ("sglang", "multinomial", 5.0, 8),
    ("vllm", "synthetic", 2.5, 3),
    ("atom", "synthetic", 2.78, 3),
)
LINES = (1, 10, 100, 2000, 20000)
BATCHES = (1, 32, 256)
SHIFTS = (0.0, -0.1, -0.25)


def _reps(lines: int, base: int) -> int:
    return max(100, min(base, 4_000_000 // (lines * INTERVAL)))


def _printed(numerators: np.ndarray, denominator: int) -> np.ndarray:
    """``float(f"{n / d:.2f}")`` for integer numerators, via a lookup table (exact formatting)."""
    lo, hi = int(numerators.min()), int(numerators.max())
    table = np.array([float(f"{v / denominator:.2f}") for v in range(lo, hi + 1)])
    return table[numerators - lo]


def sglang_runs(engine: str, method: str, al: float, k: int, lines: int, batch: int, pattern: str,
                reps: int, rng: np.random.Generator) -> np.ndarray:
    """Realized AL of ``reps`` SGLang logs (weighted by #running-req as check-run does: constant here)."""
    sampler = get_sampler(engine, method)
    out = np.empty(reps)
    chunk = max(1, 2_000_000 // (lines * INTERVAL))
    for r0 in range(0, reps, chunk):
        n = min(chunk, reps - r0)
        draws = sampler.simulate(al, k, n * lines * INTERVAL, rng).reshape(n, lines, INTERVAL).astype(np.int64)
        if pattern == "ramp" and batch > 1:
            bs = np.round(np.linspace(batch, batch / 2, INTERVAL)).astype(np.int64)
            printed = _printed(draws @ bs, int(bs.sum()))
        else:
            printed = _printed(draws.sum(axis=2), INTERVAL)
        out[r0:r0 + n] = printed.mean(axis=1)  # every line has the same #running-req
    return out


def request_step_runs(engine: str, method: str, al: float, k: int, lines: int, batch: int, reps: int,
                      rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """Realized AL of ``reps`` vLLM/ATOM runs of ``lines * batch * 40`` request-steps."""
    sampler = get_sampler(engine, method)
    steps = lines * batch * INTERVAL
    if steps * reps <= 20_000_000:
        draws = sampler.simulate(al, k, steps * reps, rng).reshape(reps, steps)
        return draws.mean(axis=1).astype(np.float64), float(steps)
    pmf = sampler.pmf(al, k).probs
    counts = rng.multinomial(steps, pmf, size=reps)
    return (counts @ np.arange(1, k + 2)) / steps, float(steps)


def old_rule(realized: np.ndarray, al: float, var: float, n_eff: float, round_var: float) -> np.ndarray:
    """The rule before this change: normal tails at 4 sigma, rounding as zero-mean noise."""
    se = math.sqrt(var / n_eff + round_var)
    return np.abs(realized - al) > DEFAULT_TOLERANCE_SIGMA * se


def run(base_reps: int, lines_grid: tuple[int, ...], seed: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for ci, (engine, method, al, k) in enumerate(CONFIGS):
        sampler = get_sampler(engine, method)
        var = float(sampler.pmf(al, k).var())
        patterns = ("constant", "ramp") if engine == "sglang" else ("constant",)
        for lines in lines_grid:
            for batch in BATCHES:
                for pattern in patterns:
                    if pattern == "ramp" and batch == 1:
                        continue
                    if engine == "sglang" and lines > 2000 and batch != 32:
                        continue  # SGLang's draws do not depend on a constant batch size; keeps the run short
                    reps = _reps(lines, base_reps) if engine == "sglang" else base_reps
                    if engine == "sglang" and lines == 2000 and batch == 32 and pattern == "constant":
                        reps = base_reps  # the contract cell: full replications
                    cell: dict[str, object] = {"engine": engine, "method": method, "al": al, "k": k, "lines": lines,
                                               "batch": batch, "pattern": pattern, "reps": reps}
                    for shift in SHIFTS:
                        rng = np.random.default_rng([seed, ci, lines, batch, int(1000 * -shift),
                                                     pattern == "ramp"])
                        true_al = al + shift
                        if engine == "sglang":
                            realized = sglang_runs(engine, method, true_al, k, lines, batch, pattern, reps, rng)
                            n = float(lines * INTERVAL)
                            ev_args = {"steps_per_line": INTERVAL, "line_weights": ((1.0 / lines, lines),)}
                            round_var = (0.01 ** 2 / 12.0) / lines
                        else:
                            realized, n = request_step_runs(engine, method, true_al, k, lines, batch, reps, rng)
                            ev_args, round_var = {}, 0.0
                        # the accepted range does not depend on the realized value: one call per cell
                        ev = RunEvidence(engine, "simulated", al, n * (batch if engine == "sglang" else 1),
                                         n, n, lines, **ev_args)  # type: ignore[arg-type]
                        res = check_evidence(ev, expect_al=al, draft_len=k, method=method)
                        slack = 1e-9 * max(1.0, al)
                        fails = int(np.sum((realized < res.accept_low - slack) | (realized > res.accept_high + slack)))
                        key = "correct" if shift == 0 else f"AL{shift:+g}"
                        cell[f"reject_{key}"] = fails / reps
                        cell["accepted_range"] = [res.accept_low, res.accept_high]
                        cell[f"old_reject_{key}"] = float(np.mean(old_rule(realized, al, var, n, round_var)))
                    rows.append(cell)
            print(f"  {engine}/{method} AL {al} k={k}: {lines} lines done", file=sys.stderr, flush=True)
    return rows


def markdown(rows: list[dict[str, object]], seconds: float, seed: int) -> str:
    bound = false_alarm_bound(DEFAULT_TOLERANCE_SIGMA)
    md = ["# check-run calibration results", "",
          f"seed {seed}, {seconds:.0f} s. Default tolerance {DEFAULT_TOLERANCE_SIGMA:g} sigma: stated false-alarm "
          f"bound {bound:.2g}. Cells: % of runs rejected (new rule / old rule).", ""]
    for engine, method, al, k in CONFIGS:
        sel = [r for r in rows if r["engine"] == engine and r["method"] == method and r["al"] == al]
        if not sel:
            continue
        md += [f"## {engine} {method}, AL {al}, k={k}", "",
               "| lines | batch | pattern | reps | correct run rejected | AL-0.1 rejected | AL-0.25 rejected |",
               "|---:|---:|---|---:|---|---|---|"]
        for r in sel:
            def c(key: str, r: dict[str, object] = r) -> str:
                return f"{100 * float(r['reject_' + key]):.1f} / {100 * float(r['old_reject_' + key]):.1f}"
            md.append(f"| {r['lines']} | {r['batch']} | {r['pattern']} | {r['reps']} | {c('correct')} | "
                      f"{c('AL-0.1')} | {c('AL-0.25')} |")
        md.append("")
    return "\n".join(md) + "\n"


def plot(rows: list[dict[str, object]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    for engine, method, al, k in CONFIGS:
        sel = [r for r in rows if r["engine"] == engine and r["al"] == al and r["batch"] == 32
               and r["pattern"] == "constant"]
        if not sel:
            continue
        xs = [int(r["lines"]) for r in sel]  # type: ignore[call-overload]
        label = f"{engine} {method} AL {al} k={k}"
        (line,) = axes[0].plot(xs, [100 * float(r["reject_correct"]) for r in sel], "o-", label=label)  # type: ignore[arg-type]
        axes[0].plot(xs, [100 * float(r["old_reject_correct"]) for r in sel], "x:", color=line.get_color())  # type: ignore[arg-type]
        axes[1].plot(xs, [100 * float(r["reject_AL-0.1"]) for r in sel], "o-", color=line.get_color(), label=label)  # type: ignore[arg-type]
        axes[1].plot(xs, [100 * float(r["reject_AL-0.25"]) for r in sel], "s--", color=line.get_color())  # type: ignore[arg-type]
    axes[0].set(xscale="log", xlabel="log lines (batch 32)", ylabel="correct runs rejected (%)",
                title="False rejects: new rule (solid) vs old (dotted)")
    axes[0].axhline(5, color="k", lw=0.6)
    axes[1].set(xscale="log", xlabel="log lines (batch 32)", ylabel="wrong runs rejected (%)",
                title="Power: true AL - 0.1 (solid), - 0.25 (dashed)")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000, help="runs per cell (fewer for very long SGLang logs)")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="1..2000 lines, 200 reps, print only")
    args = ap.parse_args()
    lines_grid = LINES[:4] if args.quick else LINES
    reps = 200 if args.quick else args.reps
    t0 = time.time()
    rows = run(reps, lines_grid, args.seed)
    text = markdown(rows, time.time() - t0, args.seed)
    if not args.quick:
        (HERE / "results.json").write_text(json.dumps({"seed": args.seed, "rows": rows}, indent=1) + "\n")
        (HERE / "results.md").write_text(text)
        plot(rows, HERE / "check_run_calibration.png")
    print(text)


if __name__ == "__main__":
    main()
