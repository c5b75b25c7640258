"""``golden-al check-run FILE...``: did the run realize the injected AL?

Reads SGLang decode log lines, vLLM ``SpecDecoding metrics`` lines, ATOM MTP stats
lines, or two Prometheus snapshots (before/after, in any order), and compares the
realized AL with the target: ``--expect-al``, or the golden value it looks up itself with
``--model M --thinking T`` (``--golden-dir``; an SGLang log's start-up ``server_args`` line
supplies the model, the algorithm and k when they are not given); the verdict names the
curve it used: within ``--tolerance-sigma`` standard errors of the
engine's synthetic sampler on long logs, by exact (Chernoff) tails at any length, with
SGLang's two-decimal rounding modelled. A correctly injected run fails with probability
at most 2 exp(-Z^2/2) (6.7e-4 at the default Z = 4). Exit 0 pass, 1 the run missed its
target, 2 usage errors or input without usable lines.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from golden_al.cli._common import draft_len_help

__all__ = ["DESCRIPTION", "EXAMPLES", "add_arguments", "run"]

DESCRIPTION = (
    "Check that a run with injected (synthetic) acceptance realized its target AL: the realized AL from the "
    "server's own log lines or Prometheus counters must lie within Z standard errors of --expect-al, where the "
    "standard error follows from the engine's sampler (its exact pmf at AL, k) and the number of independent "
    "draws (request-steps for vLLM/ATOM; batch steps for SGLang, which draws one length per step for the "
    "whole batch). The thresholds are exact tail bounds (Chernoff) of the sampler's law, and SGLang's "
    "two-decimal 'accept len' is modelled line by line, so the false-alarm rate holds for any log length and "
    "batch size: a correctly injected run fails with probability at most 2*exp(-Z^2/2), 6.7e-4 at the default "
    "Z = 4 (about 6e-5 on long logs)."
)

EXAMPLES = """\
examples:
  golden-al check-run server.log --engine sglang --expect-al 4.05 --draft-len 7
  golden-al check-run server.log --engine sglang --thinking on      # model, algorithm, k from server_args
  golden-al check-run before.prom after.prom --engine vllm --model deepseek-ai/DeepSeek-V4-Pro \\
      --thinking on --draft-len 3 --algorithm mtp --golden-dir golden_al_distribution
  golden-al check-run metrics.before.txt metrics.after.txt --engine vllm --expect-al 2.5 --draft-len 3
  golden-al check-run atom.log --engine atom --expect-al 2.78 --draft-len 3 --format json
  golden-al check-run llama-server.log --engine llamacpp --expect-al 3.85 --draft-len 3
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from golden_al.checks.run import DEFAULT_TOLERANCE_SIGMA
    from golden_al.measure.evidence import DEFAULT_DECODE_LOG_INTERVAL

    parser.add_argument("files", nargs="+", metavar="FILE",
                        help="server log(s) or exactly two /metrics snapshots (before/after, any order)")
    from golden_al.cli._common import (
        add_golden_dir_option,
        add_max_seconds_option,
        add_selector_option,
        thinking_mode,
    )

    add_max_seconds_option(parser)
    from golden_al.plugin.registry import engine_names

    parser.add_argument("--expect-al", type=float, default=None, metavar="AL",
                        help="the injected (golden) AL; or let check-run look it up with --model/--thinking")
    parser.add_argument("--model", default=None, metavar="M",
                        help="look the target up: the model (key, alias, repo id; default: the one an SGLang log's "
                             "server_args line names)")
    parser.add_argument("--thinking", type=thinking_mode, default=None, metavar="MODE",
                        help="look the target up: the thinking mode of the run (on, off or a level)")
    parser.add_argument("--algorithm", default=None, metavar="A",
                        help="look the target up: the speculative algorithm/method, which picks the curve (default: "
                             "the log's, when it names one)")
    add_selector_option(parser, "look the target up: a setting other than the engine's default that changes real AL "
                                "(e.g. verification=block; default: what an SGLang log's server_args line says)")
    add_golden_dir_option(parser)
    parser.add_argument("--draft-len", "-k", type=int, default=None, metavar="K",
                        help=draft_len_help() + "; required unless the log's server_args give it")
    parser.add_argument("--engine", required=True, choices=engine_names(),
                        help="the engine that produced the files")
    parser.add_argument("--method", default=None, metavar="M",
                        help="sampler method (default: sglang match-expected, vllm/atom synthetic)")
    parser.add_argument("--rates", type=_rates, default=None, metavar="P1,P2,...",
                        help="the run was injected with these per-position unconditional rates ("
                             + _rate_knobs() + "): judge it with their exact law; the expected AL is 1 + their "
                             "sum, which must round to --expect-al or the golden AL")
    parser.add_argument("--tolerance-sigma", type=float, default=DEFAULT_TOLERANCE_SIGMA, metavar="Z",
                        help=f"pass when the realized AL is within Z standard errors of the expected one (exact tail "
                             f"bounds on short logs); false-alarm rate <= 2*exp(-Z^2/2), 6.7e-4 at the default "
                             f"{DEFAULT_TOLERANCE_SIGMA:g}")
    parser.add_argument("--decode-log-interval", type=int, default=DEFAULT_DECODE_LOG_INTERVAL, metavar="N",
                        help=f"SGLang --decode-log-interval of the server (default {DEFAULT_DECODE_LOG_INTERVAL})")
    parser.add_argument("--batch-size", type=float, default=None, metavar="B",
                        help="SGLang Prometheus input only: mean running batch size (draws = verify calls / B)")
    parser.add_argument("--model-name", default=None, metavar="NAME",
                        help="Prometheus input: sum only series with this model_name label")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")


def _rate_knobs() -> str:
    """Every engine's per-position-rates knob, from the profiles (for the help)."""
    from golden_al.plugin.registry import engine_names, get_profile

    return ", ".join(f"{p.display_name} {k.name}" for p in map(get_profile, engine_names())
                     for k in p.check.synthetic_knobs if k.unit == "rates")


def _rates(text: str) -> list[float]:
    """``--rates 0.9,0.8,0.6``: comma-separated numbers."""
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers like 0.9,0.8,0.6, got {text!r}") from None
    if not values or not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"expected comma-separated finite numbers, got {text!r}")
    return values


def _fmt(x: float) -> str:
    return f"{x:.4f}" if math.isfinite(x) else str(x)


def _target(args: argparse.Namespace) -> tuple[float, int, dict | None]:
    """(expected AL, k, the golden value it came from) from the options or the store."""
    from golden_al.errors import UsageError

    if args.expect_al is not None:
        if args.model or args.thinking or args.algorithm or args.selector:
            raise UsageError("--expect-al or --model/--thinking/--algorithm/--selector, not both",
                             hint="give the AL, or let check-run look the golden value up")
        from golden_al.measure.evidence import logged_draft_len

        k, _logged = logged_draft_len(args.files, args.engine, args.draft_len)
        if k is None:
            raise UsageError("--expect-al needs --draft-len K: the files do not log the server's k",
                             hint="pass --draft-len K")
        return args.expect_al, int(k), None
    if args.thinking is None and args.rates is not None:  # the rates are the target
        k = args.draft_len if args.draft_len is not None else len(args.rates)
        return min(1.0 + math.fsum(args.rates), k + 1.0), k, None
    if args.thinking is None:
        raise UsageError("check-run needs --expect-al AL, or --thinking (with --model, or a log that names the "
                         "model) to look the golden AL up", hint="e.g. --thinking on")
    from golden_al.cli._common import golden_dir, parse_selectors
    from golden_al.golden import load_store
    from golden_al.measure.evidence import golden_target

    target = golden_target(args.files, engine=args.engine, store=load_store(golden_dir(args.golden_dir)),
                           thinking=args.thinking, model=args.model, draft_len=args.draft_len,
                           algorithm=args.algorithm, selectors=parse_selectors(args.selector, args.engine))
    return target.expect_al, target.draft_len, target.golden


def run(args: argparse.Namespace) -> int:
    from golden_al.checks.run import check_run
    from golden_al.cli._common import time_limit
    from golden_al.errors import CounterResetError, InputFileError, MetricMissingError

    expect_al, k, golden = _target(args)
    try:
        with time_limit(args.max_seconds, f"reading {len(args.files)} file(s)"):
            result = check_run(
                args.files, expect_al=expect_al, draft_len=k, engine=args.engine, method=args.method,
                tolerance_sigma=args.tolerance_sigma, decode_log_interval=args.decode_log_interval,
                batch_size=args.batch_size, labels={"model_name": args.model_name} if args.model_name else None,
                golden=golden, rates=args.rates,
            )
    except (CounterResetError, MetricMissingError) as exc:  # unusable input: exit 2, not "missed target"
        raise InputFileError(exc.message, hint=exc.hint) from None
    if args.format == "json":
        sys.stdout.write(json.dumps(result.to_dict(), indent=2) + "\n")
    else:
        out = sys.stdout.write
        out(f"engine {result.engine}/{result.method}, k={result.draft_len}, evidence: {result.source} "
            f"({result.lines_used} line(s)/snapshot(s))\n")
        if result.golden is not None:
            g = result.golden
            told = (" (from the log: " + ", ".join(f"{key} {v}" for key, v in g["from_log"].items()) + ")"
                    if g["from_log"] else "")
            out(f"target          golden {g['model']} {g['thinking']} k={g['k']} = {g['al']:g} "
                f"[curve {g['curve']}]{told}\n")
        out(f"realized AL     {_fmt(result.realized_al)}\n")
        out(f"expected AL     {_fmt(result.expected_al)}  (sampler mean {_fmt(result.sampler_mean)}, "
            f"var {_fmt(result.sampler_var)})\n")
        out(f"request-steps   {result.request_steps:.0f}\n")
        out(f"independent draws {result.independent_draws:.0f} (effective {result.effective_draws:.1f})\n")
        out(f"std error       {_fmt(result.std_error)}; z = {_fmt(result.z_score)}; "
            f"tolerance {result.tolerance_sigma:g} sigma = +/-{_fmt(result.tolerance)}\n")
        out(f"accepted range  [{_fmt(result.accept_low)}, {_fmt(result.accept_high)}] "
            f"(false-alarm rate <= {result.false_alarm_bound:.2g})\n")
        for w in result.warnings:
            out(f"note: {w}\n")
        curve = f" (golden, curve {result.golden['curve']})" if result.golden is not None else ""
        out(f"verdict: {result.verdict.upper()}: realized AL {_fmt(result.realized_al)} vs expected "
            f"{result.expected_al:g}{curve} (z = {_fmt(result.z_score)})\n")
    return 0 if result.passed else 1
