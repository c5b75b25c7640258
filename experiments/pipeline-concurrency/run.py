"""Issue 14 evidence: the same prompts at concurrency 1, 8 and 64 give the same AL within the interval,
and the pipeline's wall time against waves, measured side by side in one run.

Part A (AL against concurrency): serve-reference over real HTTP with the *reference engine* on a tiny
random target/draft pair built from a config (golden_al.reference.tiny, 2 layers,
hidden 32; the real Qwen pair is ~9 GB and too slow on 2 CPU cores for 5 x 64 requests), 64
HumanEval prompts, greedy, k=4. Once through SGLang's per-request meta_info, once through vLLM's
aggregate Prometheus counters (timed windows and batch means at concurrency > 1).

Part B (pipeline against waves): serve-reference with the fake engine sleeping ``STEP_DELAY`` per
verify step in each request's own thread, i.e. a server whose step time does not depend on how many
requests it runs (a GPU under its batch limit); answers of 16..256 tokens. The reference engine
serves one request at a time (a lock), so it cannot show a scheduling difference. Pipeline and waves
alternate, ``--reps`` repetitions each, at concurrency 1 (the control: a wave of one is a pipeline), 8 and
64, in one process.

Run:  flock /tmp/golden-al-heavy.lock python experiments/pipeline-concurrency/run.py   (20-30 minutes on 2 cores;
      --prompts-b 96 --reps 2 takes about 12)
Writes results.json, results.md and pipeline_concurrency.png next to this file.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import io
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
K = 4
CONCURRENCIES = (1, 8, 64)
STEP_DELAY = 0.02
"""Seconds per verify step in part B: long enough that sleeping, not the Python work of 64 threads on a
shared 2-core machine, sets the pace (at 4 ms the stand-in was CPU-bound at concurrency 64)."""


PROMPTS_SPEC = "humaneval"


def _prompts(n: int) -> list[Any]:
    from golden_al.measure.server import ChatPrompt
    from golden_al.prompts import load_prompts

    ps = load_prompts(PROMPTS_SPEC, cache_dir=Path("~/.cache/golden-al").expanduser(), limit=n)
    out = []
    for i, conv in enumerate(ps.conversations):
        msgs = tuple(dict(m) for m in conv.messages)
        out.append(ChatPrompt(i, msgs, hashlib.sha256(json.dumps(msgs, sort_keys=True).encode()).hexdigest()))
    return out


def _plan(engine: str, prompts: list[Any], concurrency: int, max_tokens: int, *, waves: bool = False) -> Any:
    from golden_al.measure.schema import DatasetInfo, ModelInfo, SamplingInfo
    from golden_al.measure.server import CellPlan

    return CellPlan(engine=engine, draft_len=K, thinking="off", sampling=SamplingInfo(temperature=0.0,
                    max_tokens=max_tokens), chat_template_kwargs={}, prompts=prompts,
                    dataset=DatasetInfo(name="humaneval", count=len(prompts), hash="h" * 64),
                    target=ModelInfo(name="tiny-target"), draft=ModelInfo(name="tiny-draft"),
                    draft_method="draft-model", served_model="m", concurrency=concurrency, waves=waves,
                    scrape_interval_s=0.05)


def _measure(url: str, plan: Any, source: str, out: Path) -> tuple[Any, float]:
    from golden_al.httpclient import RetryPolicy, ServerClient
    from golden_al.measure.server import measure_cell
    from golden_al.plugin.sources import make_source

    async def run() -> Any:
        async with ServerClient(url, policy=RetryPolicy(max_attempts=2, request_timeout_s=600)) as client:
            return await measure_cell(client, plan, make_source(source, plan.engine), out)

    t0 = time.monotonic()
    rec = asyncio.run(run())
    return rec, time.monotonic() - t0


def _serve(engine: Any, flavor: str) -> Any:
    from golden_al.servers.reference_server import ReferenceServer, ServeConfig

    srv = ReferenceServer(engine, ServeConfig(flavor=flavor, port=0, served_model_name="m"), io.StringIO())
    srv.start()
    return srv


def part_a(tmp: Path, n: int, max_tokens: int, device: str) -> list[dict[str, Any]]:
    import torch

    from golden_al.measure.records import read_request_results
    from golden_al.measure.schema import REQUESTS_FILE
    from golden_al.reference.tiny import save_tiny_pair
    from golden_al.servers.served_engine import ReferenceServedEngine

    torch.set_num_threads(1)  # the tiny model is latency-bound; more threads only contend on a shared machine
    target, draft = save_tiny_pair(tmp / "pair", seed=0, noise=0.04)
    prompts = _prompts(n)
    rows = []
    for flavor, source in (("sglang", "sglang-meta-info"), ("vllm", "vllm-prometheus")):
        srv = _serve(ReferenceServedEngine(str(target), str(draft), K, model_name="m", device=device), flavor)
        try:
            for c in CONCURRENCIES:
                out = tmp / f"a-{source}-c{c}"
                rec, wall = _measure(srv.url, _plan(flavor, prompts, c, max_tokens), source, out)
                rows.append({"source": source, "concurrency": c, "al": rec.al, "ci95": list(rec.al_ci95),
                             "clusters": len(read_request_results(out / REQUESTS_FILE)), "requests": rec.num_requests,
                             "verify_steps": rec.num_verify_steps, "accepted": rec.num_accepted_drafts,
                             "wall_s": round(wall, 3)})
                print(f"A {source:17s} c={c:3d}: AL {rec.al:.4f} [{rec.al_ci95[0]:.4f}, {rec.al_ci95[1]:.4f}] "
                      f"over {rows[-1]['clusters']} clusters, {wall:.1f} s", file=sys.stderr)
        finally:
            srv.shutdown()
    return rows


def part_b(tmp: Path, n: int, reps: int, step_delay: float = STEP_DELAY) -> list[dict[str, Any]]:
    from golden_al.servers.served_engine import FakeServedEngine

    prompts = _prompts(n)
    rows = []
    srv = _serve(FakeServedEngine(K, accept_rate=0.7, min_len=16, max_len=256, step_delay_s=step_delay,
                                  model_name="m"), "sglang")
    try:
        for c in CONCURRENCIES:  # at c=1 a wave is one request: the control, both schedules must tie
            for rep in range(reps):
                order = ("pipeline", "waves") if rep % 2 == 0 else ("waves", "pipeline")
                for schedule in order:
                    out = tmp / f"b-c{c}-{rep}-{schedule}"
                    plan = _plan("sglang", prompts, c, 4096, waves=schedule == "waves")
                    rec, wall = _measure(srv.url, plan, "sglang-meta-info", out)
                    rows.append({"concurrency": c, "rep": rep, "schedule": schedule, "wall_s": round(wall, 3),
                                 "al": rec.al, "verify_steps": rec.num_verify_steps})
                    print(f"B c={c:3d} rep {rep} {schedule:8s}: {wall:.2f} s, AL {rec.al:.4f}", file=sys.stderr)
    finally:
        srv.shutdown()
    return rows


def summarize(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> dict[str, Any]:
    agree = {}
    for source in sorted({r["source"] for r in a}):
        rs = [r for r in a if r["source"] == source]
        base = rs[0]
        agree[source] = all(r2["ci95"][0] <= base["al"] <= r2["ci95"][1] and base["ci95"][0] <= r2["al"] <= base["ci95"][1]
                            for r2 in rs)
    ratios = {}
    for c in sorted({r["concurrency"] for r in b}):
        pipe = [r["wall_s"] for r in b if r["concurrency"] == c and r["schedule"] == "pipeline"]
        waves = [r["wall_s"] for r in b if r["concurrency"] == c and r["schedule"] == "waves"]
        ratios[str(c)] = {"pipeline_median_s": statistics.median(pipe), "waves_median_s": statistics.median(waves),
                          "waves_over_pipeline": round(statistics.median(waves) / statistics.median(pipe), 3)}
    return {"al_within_each_others_interval": agree, "wall_time": ratios}


def plot(a: list[dict[str, Any]], b: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not a:  # part B only (--skip-a)
        fig, ax2 = plt.subplots(1, 1, figsize=(6, 4.2))
        _plot_b(ax2, b)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        return
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for j, source in enumerate(sorted({r["source"] for r in a})):
        rs = [r for r in a if r["source"] == source]
        xs = [i + (j - 0.5) * 0.18 for i in range(len(rs))]
        ys = [r["al"] for r in rs]
        err = [[r["al"] - r["ci95"][0] for r in rs], [r["ci95"][1] - r["al"] for r in rs]]
        ax1.errorbar(xs, ys, yerr=err, fmt="o", capsize=4, label=f"{source} (95% interval)")
    ax1.set_xticks(range(len(CONCURRENCIES)), [f"c={c}" for c in CONCURRENCIES])
    ax1.set_ylabel(f"AL (k={K})")
    ax1.set_title("Same prompts, tiny reference pair: AL against concurrency")
    ax1.legend(fontsize=8)
    _plot_b(ax2, b)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _plot_b(ax2: Any, b: list[dict[str, Any]]) -> None:
    cs = sorted({r["concurrency"] for r in b})
    for j, schedule in enumerate(("pipeline", "waves")):
        med = [statistics.median(r["wall_s"] for r in b if r["concurrency"] == c and r["schedule"] == schedule)
               for c in cs]
        ax2.bar([i + (j - 0.5) * 0.35 for i in range(len(cs))], med, width=0.35, label=schedule)
    ax2.set_xticks(range(len(cs)), [f"c={c}" for c in cs])
    ax2.set_ylabel("wall time (s), median of repetitions")
    ax2.set_title("Pipeline against waves (batching stand-in)")
    ax2.legend()


def results_markdown(result: dict[str, Any]) -> str:
    """``results.md`` from ``results.json``'s content (part A left out when it was not run)."""
    st, a, summary = result["settings"], result["al_vs_concurrency"], result["summary"]
    lines = ["# Pipeline and concurrency: results", ""]
    if a:
        lines += [f"k={st['k']}; part A {st['prompts']}, part B {st['prompts_b']} HumanEval prompts.", "",
                  "## AL against concurrency (tiny reference pair over serve-reference)", "",
                  "| source | concurrency | AL | 95% interval | clusters | wall (s) |", "|---|---|---|---|---|---|"]
        lines += [f"| {r['source']} | {r['concurrency']} | {r['al']:.4f} | [{r['ci95'][0]:.4f}, {r['ci95'][1]:.4f}] "
                  f"| {r['clusters']} | {r['wall_s']:.1f} |" for r in a]
        lines += ["", f"Each AL inside every other concurrency's interval: {summary['al_within_each_others_interval']}",
                  ""]
    else:
        lines += [f"k={st['k']}; part B only (--skip-a), {st['prompts_b']} HumanEval prompts, {st['reps']} "
                  f"repetitions; {st['part_b_engine']}.", ""]
    lines += ["## Wall time: pipeline against waves (fake engine, batching stand-in)", "",
              "| concurrency | pipeline median (s) | waves median (s) | waves / pipeline |", "|---|---|---|---|"]
    lines += [f"| {c} | {v['pipeline_median_s']:.2f} | {v['waves_median_s']:.2f} | {v['waves_over_pipeline']:.2f} |"
              for c, v in summary["wall_time"].items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=64, help="part A prompts (default 64)")
    ap.add_argument("--prompts-b", type=int, default=160, help="part B prompts (default 160)")
    ap.add_argument("--max-tokens", type=int, default=32, help="part A max_tokens (default 32)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--step-delay", type=float, default=STEP_DELAY,
                    help=f"part B seconds per verify step (default {STEP_DELAY})")
    ap.add_argument("--skip-a", action="store_true", help="run part B only (no torch needed)")
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument("--prompts-file", type=Path, default=None,
                    help="the same HumanEval prompts as chat-jsonl (for a machine without the HumanEval package)")
    ap.add_argument("--device", default="cpu", help="torch device of the tiny reference pair (default cpu)")
    args = ap.parse_args(argv)
    global PROMPTS_SPEC
    if args.prompts_file is not None:
        PROMPTS_SPEC = f"chat-jsonl:{args.prompts_file}"
    from golden_al.provenance import collect

    load_at_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        a = [] if args.skip_a else part_a(Path(tmp), args.prompts, args.max_tokens, args.device)
        b = part_b(Path(tmp), args.prompts_b, args.reps, args.step_delay)
    summary = summarize(a, b)
    result = {"settings": {"k": K, "prompts": args.prompts, "prompts_b": args.prompts_b,
                           "prompt_set": "humaneval (first N)",
                           "part_a_engine": "reference engine, tiny random pair from a config (2 layers, hidden 32)",
                           "part_a_max_tokens": args.max_tokens, "part_a_device": args.device,
                           "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                                       "loadavg_at_start": list(load_at_start)}, "part_b_engine": "fake engine, step delay "
                           f"{args.step_delay} s per verify step, answers 16..256 tokens", "reps": args.reps},
              "al_vs_concurrency": a, "pipeline_vs_waves": b, "summary": summary, "provenance": collect()}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    plot(a, b, args.out / "pipeline_concurrency.png")
    (args.out / "results.md").write_text(results_markdown(result))
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
