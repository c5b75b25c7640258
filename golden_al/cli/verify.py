"""``golden-al verify RUN``: does a real run still reproduce its golden AL?

RUN is a measurement directory, a sweep directory (every measurement under it: one verdict per k and thinking mode,
a table, ``--plot``), or an engine's log files (``--engine``; SGLang decode lines, vLLM SpecDecoding lines, ATOM MTP
stats, llama-server request lines) from a run with real acceptance. The golden value is derived as ``check`` derives
a recipe's (one derivation, the same refusals: another curve method, a model other than the one measured, a thinking
mode the record contradicts) from what the run states (the record's model, thinking mode, k, draft method and curve
selectors, or the server's logged arguments; ``--model``/``--thinking``/``--selector`` must agree with them;
``--golden-dir``), or given bare with ``--expect-al`` (its own interval is then zero).

The test is an equivalence test against a relative band (``--band 0.05``, InferenceX's [0.95, 1.05] x golden) that
counts the run's interval over its independent units *and* the golden's own interval
(:mod:`distributions.equivalence`):

* ``consistent`` (exit 0): the 90 % interval of the relative difference lies inside the band (TOST at 5 %);
* ``drifted`` (exit 1): its 95 % interval lies outside the band; the direction, the size and the command that would
  re-measure the cell are named;
* ``inconclusive`` (exit 3): neither; it says how many more requests (or log windows) would decide it at the
  observed variance, or that no amount can (the golden's own interval fills the band).

A sweep exits 1 if any cell drifted, else 3 if any is inconclusive, else 0. Bad input is exit 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

from golden_al.cli._common import add_golden_dir_option, escape_control, golden_dir, thinking_mode

DESCRIPTION = __doc__

EXAMPLES = """\
examples:
  golden-al verify runs/qwen-k3/ --golden-dir curves/               # a measurement directory
  golden-al verify sweep-out/ --plot drift.png                      # every cell of a sweep: table and plot
  golden-al verify server.log --engine sglang --model deepseek-v4-pro --thinking on --draft-len 3
  golden-al verify vllm.log --engine vllm --expect-al 2.49 --draft-len 3 --format json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from golden_al.cli._common import add_selector_option
    from golden_al.measure.evidence import DEFAULT_DECODE_LOG_INTERVAL
    from golden_al.plugin.registry import engine_names

    parser.add_argument("run", nargs="+", metavar="RUN", help="measurement or sweep directory, or engine log files")
    parser.add_argument("--model", help="the golden curve's model (default: the record's target, or the server's log)")
    parser.add_argument("--thinking", type=thinking_mode, metavar="MODE",
                        help="thinking mode (default: the record's; required for logs)")
    parser.add_argument("--expect-al", type=float, metavar="AL", help="compare with this bare value instead")
    parser.add_argument("--band", type=float, default=0.05, help="relative band of equivalence (default 0.05)")
    parser.add_argument("--engine", choices=engine_names(), help="the engine that wrote the logs (logs only)")
    parser.add_argument("--draft-len", "-k", type=int, metavar="K", help="k of the logged run (default: its log)")
    parser.add_argument("--algorithm", help="the speculative algorithm (picks the curve method; default: its log)")
    add_selector_option(parser, "look the golden up: a setting other than the engine's default that changes real AL "
                                "(a record's own server.curve_selectors are used; a flag must agree with them)")
    parser.add_argument("--decode-log-interval", type=int, default=DEFAULT_DECODE_LOG_INTERVAL,
                        help=f"SGLang --decode-log-interval of the run (default {DEFAULT_DECODE_LOG_INTERVAL})")
    parser.add_argument("--format", choices=("text", "json", "github"), default="text",
                        help="text table, JSON, or GitHub annotations plus a job summary")
    parser.add_argument("--plot", metavar="PNG", help="a sweep: plot measured against golden per k and mode")
    add_golden_dir_option(parser)


def _golden_for_record(run: Any, args: argparse.Namespace, store: Any) -> Any:
    """The golden value of a record: its settings (engine, k, model, thinking mode) with the curve method and
    selectors its server stated, derived as ``check`` derives a recipe's (:func:`golden_al.recipes.derive.derive`)."""
    from golden_al.cli._common import parse_selectors
    from golden_al.errors import UsageError
    from golden_al.prompts.thinking import REQUEST
    from golden_al.recipes.derive import Identity, derive, run_settings
    from golden_al.recipes.srt_slurm import ModelName
    from golden_al.verification import GoldenRef

    if args.expect_al is not None:
        return GoldenRef(args.expect_al, None, f"--expect-al {args.expect_al:g}")
    selectors = dict(run.selectors)
    for name, value in parse_selectors(args.selector, run.engine).items():
        if name in selectors and selectors[name] != value:
            raise UsageError(f"--selector {name}={value} but {run.path} was measured with {name}={selectors[name]}",
                             hint="drop the flag: the record says which curve its server realized")
        selectors[name] = value
    settings = run_settings(run.engine, run.k, "the record's draft_len", thinking=run.thinking,
                            thinking_source="the record's thinking", models=[ModelName(run.model, "the record's target")]
                            if run.model else [])
    identity = Identity(model=args.model, thinking=args.thinking, thinking_priority=REQUEST)
    d = derive(settings, store, identity=identity, what="record", method=run.method, selectors=selectors)
    return _golden_ref(d.require(run.path), store)


def _golden_ref(point: Any, store: Any) -> Any:
    """The golden value of ``point``, with its interval and its curve's provenance."""
    from golden_al.verification import GoldenRef, curve_provenance

    curve = next(sc.curve for sc in store.curves if sc.name == point.curve and sc.path == point.source)
    return GoldenRef(point.al, point.ci95, f"golden {point.model} {point.thinking} k={point.k} = {point.al:g} "
                                           f"[{point.curve}]", point.curve, curve_provenance(curve, point.thinking))


def _golden_for_logs(files: list[str], k: int | None, args: argparse.Namespace, store: Any) -> tuple[Any, int]:
    from golden_al.cli._common import parse_selectors
    from golden_al.errors import UsageError
    from golden_al.measure.evidence import golden_target, logged_draft_len
    from golden_al.verification import GoldenRef

    if args.expect_al is not None:
        logged_k, _logged = logged_draft_len(files, args.engine, k)
        if logged_k is None:
            raise UsageError("the logs do not give k", hint="pass --draft-len K")
        return GoldenRef(args.expect_al, None, f"--expect-al {args.expect_al:g}"), int(logged_k)
    if args.thinking is None:
        raise UsageError("verify on logs needs --thinking (or --expect-al)")
    target = golden_target(files, engine=args.engine, store=store, thinking=args.thinking, model=args.model,
                           draft_len=k, algorithm=args.algorithm, selectors=parse_selectors(args.selector, args.engine))
    return _golden_ref(target.point, store), target.draft_len


def _row(r: Any) -> str:
    d = r.to_dict()
    ci = d["measured_ci95"]
    ci_s = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "-"
    diff = f"{d['relative_diff']:+.1%}" if d["relative_diff"] is not None else "-"
    return (f"k={d['k']} {d['thinking'] or '?'}: golden {d['golden_al']:g}, measured {d['measured_al']:.3f} {ci_s} "
            f"({diff}, {d['units']} {d['unit']}s): {r.verdict.upper()}")


def _summary_markdown(results: list[Any]) -> str:
    out = ["## golden-al verify", "", "| k | thinking | golden | measured (95%) | difference | verdict | why |",
           "|---:|---|---:|---|---:|---|---|"]
    for r in results:
        d = r.to_dict()
        ci = d["measured_ci95"]
        out.append(f"| {d['k']} | {d['thinking'] or ''} | {d['golden_al']:g} | {d['measured_al']:.3f}"
                   + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "") + " | "
                   + (f"{d['relative_diff']:+.1%}" if d["relative_diff"] is not None else "") + f" | **{r.verdict}** | "
                   + escape_control(r.reason).replace("|", "\\|") + " |")
    return "\n".join(out) + "\n"


def needs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """``--plot`` draws with matplotlib."""
    return [("plot", "verify --plot")] if args.plot else []


def _plot(results: list[Any], path: str, band: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    modes = sorted({r.run.thinking or "?" for r in results})
    fig, axes = plt.subplots(1, len(modes), figsize=(5.5 * len(modes), 4), squeeze=False)
    for ax, mode in zip(axes[0], modes, strict=True):
        rows = sorted((r for r in results if (r.run.thinking or "?") == mode), key=lambda r: r.run.k)
        ks = [r.run.k for r in rows]
        golden = [r.golden.al for r in rows]
        ax.fill_between(ks, [g * (1 - band) for g in golden], [g * (1 + band) for g in golden], alpha=0.2,
                        label=f"golden +-{band:.0%}")
        ax.plot(ks, golden, "k--", label="golden")
        for r in rows:
            lo, hi = r.run.ci95 or (r.run.al, r.run.al)
            color = {"consistent": "tab:green", "drifted": "tab:red", "inconclusive": "tab:orange"}[r.verdict]
            ax.errorbar([r.run.k], [r.run.al], yerr=[[r.run.al - lo], [hi - r.run.al]], fmt="o", color=color)
        ax.set_title(f"thinking {mode}: measured (95%) vs golden")
        ax.set_xlabel("draft length k")
        ax.set_ylabel("acceptance length")
        ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run(args: argparse.Namespace) -> int:
    from golden_al.errors import UsageError
    from golden_al.golden import load_store
    from golden_al.measure.records import record_dirs
    from golden_al.verification import run_from_evidence, run_from_record, verify_run

    if not 0 < args.band < 1:
        raise UsageError(f"--band must be in (0, 1), got {args.band}")
    if args.expect_al is not None and args.selector:
        raise UsageError("--expect-al or --selector, not both", hint="a selector picks a curve; --expect-al is none")
    store = load_store(golden_dir(args.golden_dir)) if args.expect_al is None else None
    paths = [Path(p) for p in args.run]
    results = []
    if len(paths) == 1 and paths[0].is_dir():
        if args.engine:
            raise UsageError("--engine is for log files; a directory holds measurement records")
        for d in record_dirs(paths[0]):
            rec = run_from_record(d)
            if args.draft_len is not None and args.draft_len != rec.k:
                continue
            results.append(verify_run(rec, _golden_for_record(rec, args, store), band=args.band))
        if not results:
            raise UsageError(f"no measurement at k={args.draft_len} under {paths[0]}")
    else:
        if args.engine is None:
            raise UsageError("log files need --engine (the engine that wrote them)",
                             hint="or pass a measurement directory")
        files = [str(p) for p in paths]
        golden, k = _golden_for_logs(files, args.draft_len, args, store)
        ev = run_from_evidence(files, engine=args.engine, k=k, decode_log_interval=args.decode_log_interval)
        ev = dataclasses.replace(ev, thinking=args.thinking, model=args.model)
        results.append(verify_run(ev, golden, band=args.band))
    if args.plot:
        _plot(results, args.plot, args.band)
    if args.format == "json":
        sys.stdout.write(json.dumps({"results": [r.to_dict() for r in results]}, indent=2) + "\n")
    else:
        for r in results:
            sys.stdout.write(escape_control(_row(r)) + "\n")
            sys.stdout.write("  " + escape_control(r.reason) + "\n")
            for note in r.notes:
                sys.stdout.write(f"  note: {escape_control(note)}\n")
            if r.verdict == "drifted" and r.run.remeasure:
                sys.stdout.write(f"  re-measure: {r.run.remeasure}\n")
            if args.format == "github" and r.verdict != "consistent":
                level = "error" if r.verdict == "drifted" else "warning"
                sys.stdout.write(f"::{level} title=golden-al verify: {r.verdict}::{escape_control(r.reason)}\n")
        if args.format == "github" and os.environ.get("GITHUB_STEP_SUMMARY"):
            with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as fh:
                fh.write(_summary_markdown(results))
    codes = {r.exit_code for r in results}
    return 1 if 1 in codes else (3 if 3 in codes else 0)
