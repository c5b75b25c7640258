"""One-run derived curve vs separately measured AL(k), on the same prompts (Qwen2.5-Coder pair, greedy).

**Measure** (``--measure``; heavy, run under the shared lock; a few minutes each):

1. live chain speculative decoding once at the largest draft length K = 7
   (``golden-al measure --draft-len 7 --mode live``) -> ``data/live-k7/``;
2. greedy replay for every k = 1..7 on the same prompts (``golden-al measure --draft-lens 1-7
   --mode replay``; for a greedy target and draft, replay gives the exact accepted length of
   a live run at every k) -> ``data/replay/k{k}/``.

**Analyse** (default; cheap, reproduces the committed numbers exactly from the records):

* the one-run derived curve: the k=7 histogram truncated to each k
  (:meth:`AcceptanceDistribution.truncate`; mass above k folds onto k+1), per request too;
* the per-k measured curve from the replay records;
* 95% CIs of each (cluster bootstrap over prompts) and of their difference (a paired
  bootstrap: the same resampled prompts for both);
* a check that live k=7 equals replay k=7 request by request (greedy is lossless);
* a synthetic control that isolates the cause, **step boundaries**: a k-step run starts
  where the previous step stopped, so the positions where steps start depend on k. Truncating
  a k=7 run evaluates min(run, k) only at the k=7 step starts; a real k-run also starts steps
  in the middle of long agreeing stretches (after every full acceptance). If agreement were
  independent from position to position the two would agree in expectation; when agreement
  comes in bursts (it does in code: boilerplate, repeated identifiers) the k=7 starts
  under-sample mid-burst positions and the derived AL(k) falls below the measured one. The
  control draws agreement sequences (i.i.d. and two-state Markov with the same mean rate),
  runs both schedules on them, and shows the bias appears only with bursts.

    flock /tmp/golden-al-heavy.lock /work/venv/bin/python experiments/one-run-vs-per-k/one_run_vs_per_k.py --measure
    /work/venv/bin/python experiments/one-run-vs-per-k/one_run_vs_per_k.py            # analyse, write
    /work/venv/bin/python experiments/one-run-vs-per-k/one_run_vs_per_k.py --check    # re-run, compare
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from distributions import units
from golden_al.measure.records import load_record, read_request_results
from golden_al.measure.schema import RequestResult
from golden_al.provenance import sha256_file
from golden_al.reporting.experiment import (
    check_or_publish,
    write_json,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent / "prompts-needed"))
from planning import cluster_bootstrap_al  # noqa: E402  the percentile cluster bootstrap

DATA = HERE / "data"
K_MAX = 7
RESAMPLES = 4000
#: the measurement (see README): HumanEval, greedy, thinking off, the embedded default pair
NUM_PROMPTS = 24
MAX_TOKENS = 192
SEED = 0


def measure_commands(golden_al: str) -> list[list[str]]:
    common = ["--engine", "reference", "--prompts", "humaneval", "--num-prompts", str(NUM_PROMPTS),
              "--max-tokens", str(MAX_TOKENS), "--thinking", "off", "--temperature", "0", "--seed", str(SEED)]
    return [
        [golden_al, "measure", "--draft-len", str(K_MAX), "--mode", "live", *common, "--out", str(DATA / f"live-k{K_MAX}")],
        [golden_al, "measure", "--draft-lens", f"1-{K_MAX}", "--mode", "replay", *common, "--out", str(DATA / "replay")],
    ]


# ---------------------------------------------------------------------------------- per request
def _truncated_accepted(hist: list[float], k: int) -> float:
    """Accepted drafts of a request's K-histogram truncated to k (mass above k folds onto k)."""
    h = np.asarray(hist, dtype=np.float64)
    j = np.minimum(np.arange(h.size), k)
    return float(np.dot(j, h))


def _by_index(results: list[RequestResult]) -> dict[int, RequestResult]:
    return {r.index: r for r in results}


def _paired_bootstrap(acc_a: np.ndarray, steps_a: np.ndarray, acc_b: np.ndarray, steps_b: np.ndarray,
                      rng: np.random.Generator) -> tuple[float, float, float]:
    """(difference a - b, lo, hi): the same resampled prompts for both ratio estimators."""
    n = acc_a.size
    w = rng.multinomial(n, np.full(n, 1.0 / n), size=RESAMPLES).astype(np.float64)
    da = 1.0 + (w @ acc_a) / (w @ steps_a)
    db = 1.0 + (w @ acc_b) / (w @ steps_b)
    diff = da - db
    point = units.al_from_counts(acc_a.sum(), steps_a.sum()) - units.al_from_counts(acc_b.sum(), steps_b.sum())
    lo, hi = np.quantile(diff, [0.025, 0.975])
    return float(point), float(lo), float(hi)


def _rel(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(REPO))
    except ValueError:
        return str(p)


def analyse_records(live_dir: Path, replay_dir: Path, seed: int) -> dict[str, Any]:
    live = load_record(live_dir)
    live_reqs = _by_index(read_request_results(live_dir / (live.per_request_file or "requests.jsonl")))
    ss = np.random.SeedSequence(seed)
    per_k: list[dict[str, Any]] = []
    derived_pooled = {k: live.distribution().truncate(k).mean() for k in range(1, K_MAX + 1)}
    records = {"live": {"path": _rel(live_dir / "measurement.json"), "sha256": sha256_file(live_dir / "measurement.json"),
                        "al": live.al, "num_requests": live.num_requests, "num_verify_steps": live.num_verify_steps}}
    same_as_live: dict[str, Any] = {}
    for k in range(1, K_MAX + 1):
        rdir = replay_dir / f"k{k}"
        rec = load_record(rdir)
        reqs = _by_index(read_request_results(rdir / (rec.per_request_file or "requests.jsonl")))
        common = sorted(set(reqs) & set(live_reqs))
        if len(common) != len(live_reqs) or len(common) != len(reqs):
            raise SystemExit(f"k={k}: the live and replay runs hold different prompts ({len(live_reqs)} vs {len(reqs)})")
        for i in common:
            if reqs[i].prompt_hash != live_reqs[i].prompt_hash:
                raise SystemExit(f"k={k}: prompt {i} differs between the live and the replay run")
        steps7 = np.array([float(live_reqs[i].num_verify_steps) for i in common])
        acc_d = np.array([_truncated_accepted(live_reqs[i].histogram, k) for i in common])
        steps_m = np.array([float(reqs[i].num_verify_steps) for i in common])
        acc_m = np.array([float(reqs[i].num_accepted_drafts) for i in common])
        rng = np.random.default_rng(ss.spawn(1)[0])
        bd = cluster_bootstrap_al(acc_d, steps7, rng=rng, num_resamples=RESAMPLES)
        bm = cluster_bootstrap_al(acc_m, steps_m, rng=rng, num_resamples=RESAMPLES)
        diff, lo, hi = _paired_bootstrap(acc_d, steps7, acc_m, steps_m, rng)
        assert abs(bd.al - derived_pooled[k]) < 1e-9  # per-request truncation == pooled truncation
        per_k.append({
            "k": k, "derived_al": bd.al, "derived_ci95": [bd.ci_low, bd.ci_high],
            "measured_al": bm.al, "measured_ci95": [bm.ci_low, bm.ci_high],
            "difference": diff, "difference_ci95": [lo, hi], "within_ci": bool(lo <= 0.0 <= hi),
            "measured_verify_steps": float(steps_m.sum()), "derived_verify_steps": float(steps7.sum()),
            "record": _rel(rdir / "measurement.json"), "sha256": sha256_file(rdir / "measurement.json"),
        })
        if k == K_MAX:
            same = all(reqs[i].accept_lengths == live_reqs[i].accept_lengths for i in common
                       if reqs[i].accept_lengths is not None and live_reqs[i].accept_lengths is not None)
            same_as_live = {"identical_accept_lengths": same,
                            "identical_tokens": all(reqs[i].num_output_tokens == live_reqs[i].num_output_tokens
                                                    for i in common),
                            "live_al": live.al, "replay_al": rec.al}
    return {"records": records, "per_k": per_k, "live_vs_replay_k7": same_as_live,
            "num_prompts": len(live_reqs), "target": live.target.name, "draft": live.draft.name,
            "dataset": live.dataset.name, "max_tokens": live.sampling.max_tokens}


# ---------------------------------------------------------------------------------- synthetic control
def schedule_accepts(agree: np.ndarray, k: int) -> np.ndarray:
    """Accepted drafts per verify step of a greedy chain draft with draft length k over an agreement sequence.

    A step starting at output position t drafts positions t..t+k-1; it accepts the leading
    agreements (at most k, and leaves the bonus token inside the sequence) and emits n + 1 tokens.
    """
    T = agree.size
    # run[t] = number of consecutive agreements starting at t
    run = np.zeros(T + 1, dtype=np.int64)
    for t in range(T - 1, -1, -1):
        run[t] = run[t + 1] + 1 if agree[t] else 0
    out = []
    t = 0
    while t < T:
        n = min(int(run[t]), k, T - t - 1)
        out.append(n)
        t += n + 1
    return np.asarray(out, dtype=np.int64)


def markov_agreement(size: int, rate: float, stay: float, rng: np.random.Generator) -> np.ndarray:
    """Two-state Markov agreement with stationary rate ``rate`` and P(agree | agreed) = ``stay``."""
    back = rate * (1.0 - stay) / (1.0 - rate)  # P(agree | disagreed), so the stationary rate is ``rate``
    u = rng.random(size)
    a = np.empty(size, dtype=bool)
    a[0] = u[0] < rate
    for t in range(1, size):
        a[t] = u[t] < (stay if a[t - 1] else back)
    return a


def synthetic_control(seed: int, *, sequences: int = 400, length: int = 400, rate: float = 0.7) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {"sequences": sequences, "length": length, "rate": rate, "cases": {}}
    for name, stay in (("independent (i.i.d.)", rate), ("bursty (two-state Markov, P(agree after agree) = 0.9)", 0.9)):
        seqs = [markov_agreement(length, rate, stay, rng) for _ in range(sequences)]
        big = [schedule_accepts(s, K_MAX) for s in seqs]
        steps7 = np.array([b.size for b in big], dtype=np.float64)
        rows = []
        for k in range(1, K_MAX + 1):
            acc_d = np.array([np.minimum(b, k).sum() for b in big], dtype=np.float64)
            sched = [schedule_accepts(s, k) for s in seqs]
            acc_m = np.array([x.sum() for x in sched], dtype=np.float64)
            steps_m = np.array([x.size for x in sched], dtype=np.float64)
            diff, lo, hi = _paired_bootstrap(acc_d, steps7, acc_m, steps_m, rng)
            rows.append({"k": k, "derived_al": units.al_from_counts(acc_d.sum(), steps7.sum()),
                         "measured_al": units.al_from_counts(acc_m.sum(), steps_m.sum()),
                         "difference": diff, "difference_ci95": [lo, hi]})
        out["cases"][name] = rows
    return out


# ---------------------------------------------------------------------------------- output
def table_md(res: dict[str, Any]) -> str:
    rec = res["records"]
    lines = [f"{res['num_prompts']} HumanEval prompts, greedy, max_tokens {res['max_tokens']}, "
             f"{res['target']} / {res['draft']}. Live k={K_MAX}: AL {rec['live']['al']:.3f} over "
             f"{rec['live']['num_verify_steps']} verify steps; live k={K_MAX} and replay k={K_MAX} request by "
             f"request: identical accept lengths = {res['live_vs_replay_k7'].get('identical_accept_lengths')}.", "",
             "| k | derived from the k=7 run (95% CI) | measured at k (95% CI) | derived − measured (paired 95% CI) | "
             "zero inside the CI? |", "| ---: | --- | --- | --- | --- |"]
    for r in res["per_k"]:
        lines.append(f"| {r['k']} | {r['derived_al']:.3f} [{r['derived_ci95'][0]:.3f}, {r['derived_ci95'][1]:.3f}] | "
                     f"{r['measured_al']:.3f} [{r['measured_ci95'][0]:.3f}, {r['measured_ci95'][1]:.3f}] | "
                     f"{r['difference']:+.3f} [{r['difference_ci95'][0]:+.3f}, {r['difference_ci95'][1]:+.3f}] | "
                     f"{'yes' if r['within_ci'] else 'no'} |")
    ctrl = res["synthetic_control"]
    lines += ["", f"Synthetic control ({ctrl['sequences']} sequences of {ctrl['length']} positions, agreement rate "
              f"{ctrl['rate']}): derived − measured (paired 95% CI)", "",
              "| k | " + " | ".join(ctrl["cases"]) + " |", "| ---: | " + " | ".join("---" for _ in ctrl["cases"]) + " |"]
    for i in range(K_MAX):
        cells = []
        for rows in ctrl["cases"].values():
            r = rows[i]
            cells.append(f"{r['difference']:+.3f} [{r['difference_ci95'][0]:+.3f}, {r['difference_ci95'][1]:+.3f}]")
        lines.append(f"| {i + 1} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plots(res: dict[str, Any]) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(13, 4.8), layout="constrained")
    FigureCanvasAgg(fig)
    ax_al, ax_d, ax_c = fig.subplots(1, 3)
    rows = res["per_k"]
    ks = [r["k"] for r in rows]
    for key, label, color in (("measured", "measured at each k (replay)", "tab:blue"),
                              ("derived", f"derived from one live k={K_MAX} run", "tab:orange")):
        al = [r[f"{key}_al"] for r in rows]
        ax_al.plot(ks, al, "o-", color=color, label=label, ms=4)
        ax_al.fill_between(ks, [r[f"{key}_ci95"][0] for r in rows], [r[f"{key}_ci95"][1] for r in rows],
                           color=color, alpha=0.2, lw=0)
    ax_al.set_title("AL against k (bands: 95% cluster-bootstrap CI)")
    ax_al.set_xlabel("draft length k")
    ax_al.set_ylabel("AL (tokens per verify step)")
    ax_al.grid(alpha=0.3)
    ax_al.legend(fontsize=8)
    d = [r["difference"] for r in rows]
    ax_d.errorbar(ks, d, yerr=[[r["difference"] - r["difference_ci95"][0] for r in rows],
                               [r["difference_ci95"][1] - r["difference"] for r in rows]], fmt="o", capsize=3)
    ax_d.axhline(0, color="gray", lw=1)
    ax_d.set_title("derived − measured (paired 95% CI)")
    ax_d.set_xlabel("draft length k")
    ax_d.set_ylabel("AL difference (tokens per verify step)")
    ax_d.grid(alpha=0.3)
    for name, crow in res["synthetic_control"]["cases"].items():
        ax_c.errorbar([r["k"] for r in crow], [r["difference"] for r in crow],
                      yerr=[[r["difference"] - r["difference_ci95"][0] for r in crow],
                            [r["difference_ci95"][1] - r["difference"] for r in crow]], fmt="o-", capsize=3, label=name)
    ax_c.axhline(0, color="gray", lw=1)
    ax_c.set_title("Synthetic control: bias only with bursts")
    ax_c.set_xlabel("draft length k")
    ax_c.set_ylabel("derived − measured AL")
    ax_c.grid(alpha=0.3)
    ax_c.legend(fontsize=8)
    fig.savefig(HERE / "one_run_vs_per_k.png", dpi=100)
    write_json(HERE / "one_run_vs_per_k.json", {"plot": "one_run_vs_per_k", "per_k": rows,
                                                "synthetic_control": res["synthetic_control"]})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--measure", action="store_true", help="run the two measurements first (heavy: use the lock)")
    parser.add_argument("--golden-al", default=str(Path(sys.executable).with_name("golden-al")))
    parser.add_argument("--live", type=Path, default=DATA / f"live-k{K_MAX}")
    parser.add_argument("--replay", type=Path, default=DATA / "replay")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--check", action="store_true", help="recompute and compare with the committed results.json")
    args = parser.parse_args(argv)
    if args.measure:
        for cmd in measure_commands(args.golden_al):
            print("+", " ".join(cmd), flush=True)
            subprocess.run(cmd, check=True)
    res = analyse_records(args.live, args.replay, args.seed)
    res["synthetic_control"] = synthetic_control(args.seed)
    code, text = check_or_publish(HERE, res, check=args.check, table=table_md, plot=plots)
    print(text)
    return code


if __name__ == "__main__":
    sys.exit(main())
