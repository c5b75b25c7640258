"""check-run on runs injected by per-position rates (``--rates``), by log length.

A run injected with unconditional rates p_1..p_k (vLLM ``synthetic_acceptance_rates``,
llama.cpp ``--spec-synth-rates``) realizes AL 1 + sum p_j, but with the spread of the law those
rates give, not of the schedule a length injection resolves to. For each profile and run length
this draws many runs whose truth is known (the engine sampler's own ``simulate``), applies
``check_evidence`` judged by the rates' law (``rates=``) and by the length law at the same AL,
and counts rejections of correct runs and of wrong ones (every rate scaled so AL falls by 0.1
and by 0.25).

Run (about a minute)::

    python experiments/check-run-calibration/calibrate_rates.py

Writes rates_results.json and rates_results.md next to this file.
"""

from __future__ import annotations

import json
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
PROFILES = (  # engine, rates
    ("vllm", (0.9, 0.7, 0.35)),
    ("vllm", (0.95, 0.9, 0.8, 0.6, 0.5, 0.3, 0.1)),
    ("llamacpp", (0.8, 0.6, 0.5)),
)
STEPS = (40, 400, 4000, 40000)  # request-steps in the run
SHIFTS = (0.0, -0.1, -0.25)
REPS = 1000
SEED = 5


def _scaled(rates: tuple[float, ...], shift: float) -> list[float]:
    """Rates scaled by one factor so that 1 + sum falls by ``-shift``."""
    total = sum(rates)
    return [r * (total + shift) / total for r in rates]


def run() -> list[dict[str, object]]:
    rows = []
    for pi, (engine, rates) in enumerate(PROFILES):
        k, al = len(rates), 1 + sum(rates)
        for n in STEPS:
            cell: dict[str, object] = {"engine": engine, "rates": list(rates), "k": k, "al": round(al, 6),
                                       "request_steps": n, "reps": REPS}
            ev = RunEvidence(engine, "simulated", al, n, n, n, 1)
            by_rates = check_evidence(ev, expect_al=round(al, 2), draft_len=k, rates=list(rates))
            by_length = check_evidence(ev, expect_al=al, draft_len=k)
            cell["accepted_range_rates_law"] = [by_rates.accept_low, by_rates.accept_high]
            cell["accepted_range_length_law"] = [by_length.accept_low, by_length.accept_high]
            for shift in SHIFTS:
                rng = np.random.default_rng([SEED, pi, n, int(1000 * -shift)])
                truth = get_sampler(engine, "synthetic", rates=_scaled(rates, shift))
                realized = truth.simulate(None, k, n * REPS, rng).reshape(REPS, n).mean(axis=1)
                key = "correct" if shift == 0 else f"AL{shift:+g}"
                for law, res in (("rates_law", by_rates), ("length_law", by_length)):
                    out = (realized < res.accept_low - 1e-9) | (realized > res.accept_high + 1e-9)
                    cell[f"reject_{key}_{law}"] = float(out.mean())
            rows.append(cell)
            print(f"  {engine} {rates}: {n} request-steps done", file=sys.stderr, flush=True)
    return rows


def markdown(rows: list[dict[str, object]], seconds: float) -> str:
    md = ["# check-run on rate-injected runs", "",
          f"seed {SEED}, {REPS} runs per cell, {seconds:.0f} s. Tolerance {DEFAULT_TOLERANCE_SIGMA:g} sigma, stated "
          f"false-alarm bound {false_alarm_bound(DEFAULT_TOLERANCE_SIGMA):.2g}. Cells: % of runs rejected, judged "
          "by the rates' own law (`--rates`) / by the law of a length injection at the same AL.", "",
          "| engine | rates | request-steps | correct run rejected | AL-0.1 rejected | AL-0.25 rejected |",
          "|---|---|---:|---|---|---|"]
    for r in rows:
        def c(key: str, r: dict[str, object] = r) -> str:
            return (f"{100 * float(r[f'reject_{key}_rates_law']):.1f} / "  # type: ignore[arg-type]
                    f"{100 * float(r[f'reject_{key}_length_law']):.1f}")  # type: ignore[arg-type]
        md.append(f"| {r['engine']} | {', '.join(f'{x:g}' for x in r['rates'])} | {r['request_steps']} | "  # type: ignore[attr-defined]
                  f"{c('correct')} | {c('AL-0.1')} | {c('AL-0.25')} |")
    return "\n".join(md) + "\n"


def main() -> None:
    t0 = time.time()
    rows = run()
    seconds = time.time() - t0
    doc = {"what": "check-run on runs injected by per-position rates: rates law vs length law", "seed": SEED,
           "tolerance_sigma": DEFAULT_TOLERANCE_SIGMA, "false_alarm_bound": false_alarm_bound(DEFAULT_TOLERANCE_SIGMA),
           "seconds": round(seconds, 1), "script": "experiments/check-run-calibration/calibrate_rates.py",
           "rows": rows}
    (HERE / "rates_results.json").write_text(json.dumps(doc, indent=2) + "\n")
    (HERE / "rates_results.md").write_text(markdown(rows, seconds))
    print(markdown(rows, seconds))


if __name__ == "__main__":
    main()
