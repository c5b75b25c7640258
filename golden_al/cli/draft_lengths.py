"""``golden-al draft-lengths``: throughput, speedup and latency against draft length.

With ``--measured RUN...`` the step costs are fitted to the timed steps of measurement runs of several
k (:mod:`golden_al.reporting.draft_lengths`): per k the measured and predicted tokens/s, the speedup
over no speculation with intervals carrying both AL's and the fit's, the best k, every k whose interval
overlaps it, and the error of the fit made without each k. With ``--curve``/``--curve-file`` the costs
are assumed (every term an option) and the output says so (``"source": "assumed"``). With
``--output-tokens`` also the per-request latency percentiles under the engines' two-point schedule
against a measured-shaped distribution with the same mean.
"""

from __future__ import annotations

import argparse
import itertools
import math
from typing import Any

from golden_al.cli._common import add_format_option, print_json
from golden_al.errors import SchemaError, UsageError
from simulators.throughput import ASSUMED_COSTS

__all__ = ["EXAMPLES", "add_arguments", "run"]

DESCRIPTION = (
    "Throughput and speedup against draft length: from timed measurement runs (--measured: the step "
    "costs fitted, measured and predicted tokens/s with intervals, the best k and its neighbours within "
    "the interval, held-out error), or from an AL curve under assumed step costs; with --output-tokens "
    "also the latency spread of the engines' two-point schedule against a measured-shaped distribution."
)

EXAMPLES = """\
measured (the costs fitted to the runs' timed steps; docs/researchers.md):
  golden-al measure --target T --draft D --mode live --draft-lens 1-4 --out run/
  golden-al draft-lengths --measured run/ --format json

assumed cost model (milliseconds; illustrative defaults, override every term):
  step(k) = fixed-cost + k * (draft-cost + draft-cost-per-request * B) + verify-cost-per-token * B * (k+1)
  step(0) = fixed-cost + verify-cost-per-token * B          (no speculation, 1 token per step)

examples:
  golden-al draft-lengths --curve 1=1.83,2=2.43,3=2.88,4=3.24,5=3.46,6=3.62,7=3.71,8=3.77
  golden-al draft-lengths --curve 1=1.83,2=2.43,3=2.88,4=3.24 --batch 64 --verify-cost-per-token 0.05 --format json
  golden-al draft-lengths --curve-file golden_al/golden/curves/kimik2.5_eagle3.yaml --thinking on --output-tokens 1024
  golden-al draft-lengths --curve-file curve.txt --draft-cost 1.2 --fixed-cost 12   # curve.txt: lines of K=AL
"""

#: The assumed-cost options: flag, argument name, the step-cost term it sets, what it is.
_COST_FLAGS = (("--fixed-cost", "fixed_cost", "fixed_ms", "a step's fixed time: the target's weights read, launches"),
               ("--draft-cost", "draft_cost", "draft_ms_per_token", "draft time per drafted token per step"),
               ("--draft-cost-per-request", "draft_cost_per_request", "draft_ms_per_token_per_request",
                "extra draft time per drafted token per request in the batch"),
               ("--verify-cost-per-token", "verify_cost_per_token", "verify_ms_per_token",
                "target time per verified token, B*(k+1) tokens per step"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``golden-al draft-lengths``."""
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--curve", metavar="K=AL,...", help="AL per draft length, e.g. 1=1.83,2=2.43,3=2.88")
    src.add_argument("--measured", nargs="+", metavar="RUN",
                     help="measurement records (or directories of them, e.g. a measure --draft-lens 1-8 --mode live "
                     "run) of several k with their timing blocks: fit the step costs to the timed steps")
    src.add_argument("--curve-file", metavar="FILE",
                     help="a file of K=AL lines, a YAML mapping {K: AL}, a golden-al curve YAML, or an "
                     "InferenceX golden YAML (model -> thinking_on/thinking_off -> K -> AL); pick with "
                     "--model/--thinking")
    parser.add_argument("--model", default=None, help="model key inside a golden YAML (default: the only one)")
    parser.add_argument("--thinking", choices=("on", "off"), default=None,
                        help="thinking mode inside a golden YAML (required when the file has both)")
    for flag, dest, term, what in _COST_FLAGS:
        parser.add_argument(flag, dest=dest, type=float, default=None, metavar="MS",
                            help=f"assumed cost: {what} (default: {ASSUMED_COSTS[term]:g})")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="--measured: fit wall time per step (default), or the engine's CPU time per step (steadier "
                        "while other jobs share the machine; tokens per CPU-second)")
    parser.add_argument("--batch", type=int, default=None, metavar="B", help="concurrent requests (default: 1)")
    parser.add_argument("--output-tokens", type=int, default=None, metavar="N",
                        help="also give per-request latency percentiles for N output tokens: the two-point "
                        "schedule vs a measured-shaped distribution with the same mean")
    add_format_option(parser, ("text", "json"), "text")


def _cost_model(args: argparse.Namespace) -> Any:
    """The assumed step costs: :data:`simulators.throughput.ASSUMED_COSTS` with the terms given."""
    from distributions.errors import DistributionError
    from distributions.stepcost import StepCostFit

    terms = dict(ASSUMED_COSTS)
    for flag, dest, term, _ in _COST_FLAGS:
        value = getattr(args, dest)
        if value is not None and (not math.isfinite(value) or value < 0):
            raise UsageError(f"{flag} must be a finite number of milliseconds >= 0, got {value}")
        terms[term] = terms[term] if value is None else value
    try:
        return StepCostFit.assumed(**terms)
    except DistributionError as exc:
        raise UsageError(f"--fixed-cost, --verify-cost-per-token: {exc.message}") from None


def _measured(args: argparse.Namespace) -> dict[str, Any]:
    from golden_al.reporting.draft_lengths import measured_table

    given = [flag for flag, name, _, _ in _COST_FLAGS if getattr(args, name) is not None]
    if given:
        raise UsageError(f"{given[0]} sets an assumed cost; --measured fits the costs to the runs' timed steps",
                         hint="drop the cost options, or --measured")
    out = measured_table(args.measured, batch=args.batch, output_tokens=args.output_tokens, clock=args.clock)
    return {**out, "note": f"step costs fitted to the timed steps of {len(out['runs'])} record(s)"}


def _table(args: argparse.Namespace) -> dict[str, Any]:
    from distributions import units
    from distributions.errors import DistributionError
    from golden_al.golden import parse_al_pairs, read_al_table
    from golden_al.reporting.draft_lengths import ASSUMED_NOTE
    from simulators.throughput import evaluate_draft_lengths

    if args.output_tokens is not None and not (1 <= args.output_tokens <= 100_000):
        raise UsageError(f"--output-tokens must be in [1, 100000], got {args.output_tokens}")
    if args.batch is not None and args.batch < 1:
        raise UsageError(f"--batch must be an integer >= 1, got {args.batch}")
    if args.curve_file is None and (args.model is not None or args.thinking is not None):
        raise UsageError("--model and --thinking apply only to --curve-file")
    if args.clock != "wall" and args.measured is None:
        raise UsageError("--clock applies to --measured only (assumed costs have no clock)")
    if args.measured is not None:
        out = _measured(args)
    else:
        if args.curve is not None:
            try:
                curve, source = parse_al_pairs(args.curve.split(",")), "--curve"
            except SchemaError as err:
                raise UsageError(f"--curve: {err.message}") from None
        else:
            curve = read_al_table(args.curve_file, model=args.model, thinking=args.thinking)
            source = str(args.curve_file)
        for k, al in sorted(curve.items()):
            try:
                units.check_al(al, k)
            except DistributionError as err:
                raise UsageError(f"{source}: draft length {k}: {err}") from None
        out = {**evaluate_draft_lengths(curve, _cost_model(args), batch=args.batch or 1,
                                        output_tokens=args.output_tokens).to_dict(), "note": ASSUMED_NOTE}
    curve = {r["k"]: r["al"] for r in out["draft_lengths"]}
    out["curve"] = {str(k): v for k, v in sorted(curve.items())}
    falls = falling_points(curve)
    out["warnings"] = [
        f"AL falls from k={a} ({curve[a]:g}) to k={b} ({curve[b]:g}): a chain draft cannot accept less with more "
        "drafts (its k-token draft is a prefix of its (k+1)-token one), so this is noise or a draft that is not a "
        "chain (a block or tree draft); the best k here rests on those values" for a, b in falls]
    return out


def falling_points(curve: dict[int, float]) -> list[tuple[int, int]]:
    """Consecutive draft lengths ``(a, b)`` of ``curve`` where AL falls (``draft-lengths`` warns: the
    choice is to warn, not refuse, because committed curves fall by noise at large k)."""
    ks = sorted(curve)
    return [(a, b) for a, b in itertools.pairwise(ks) if curve[b] < curve[a]]


def _ci(ci: list[float] | None, fmt: str) -> str:
    return "" if ci is None else f" [{ci[0]:{fmt}}, {ci[1]:{fmt}}]"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.1f}%"


def _cost_text(t: dict[str, Any]) -> list[str]:
    cm, b = t["cost_model"], t["baseline"]
    terms = [f"{name} {v['value']:.3g}" + (_ci(v["ci95"], ".3g") if t["source"] == "measured" else "")
             if v else f"{name} not identified" for name, v in cm["terms"].items()]
    lines = [f"source: {t['source']}: {t['note']}", f"cost model ({cm['formula']}):", "  " + "; ".join(terms)]
    if t["source"] == "measured":
        load = cm["load1"]
        lines += [f"fitted to the {cm['clock']} time of {cm['steps']} timed units in {cm['cells']} (k, batch) cells, "
                  f"{', '.join(cm['timing_source'])}" + (f", 1-minute load {load[0]:g}-{load[1]:g} on {cm['cpus']} cpus"
                                                          if load else ""), *[f"note: {n}" for n in cm["notes"]]]
    return [*lines, f"no speculation: {b['step_ms']:.2f} ms/step, {b['tokens_per_s_predicted']:.1f} tokens/s at batch "
                    f"{t['draft_lengths'][0]['batch_size']}"]


def _text(t: dict[str, Any]) -> str:
    """The table in words: the source of the costs, the terms, one line per k, the best k."""
    rows = t["draft_lengths"]
    lines = [*_cost_text(t), "", f"  {'k':>2}  {'AL [95% CI]':>22}  {'step ms':>8}  {'measured':>9}  "
             f"{'tok/s [95% CI]':>24}  {'error':>7}  {'held out':>8}  speedup [95% CI]"]
    for r in rows:
        meas = "-" if r["tokens_per_s_measured"] is None else f"{r['tokens_per_s_measured']:.2f}"
        pred = f"{r['tokens_per_s_predicted']:.2f}{_ci(r['tokens_per_s_predicted_ci95'], '.2f')}"
        al = f"{r['al']:.3f}{_ci(r['al_ci95'], '.3f')}"
        lines.append(f"  {r['k']:>2}  {al:>22}  {r['step_ms']:>8.2f}  {meas:>9}  "
                     f"{pred:>24}  {_pct(r.get('prediction_error')):>7}  {_pct(r.get('held_out_error')):>8}  "
                     f"{r['speedup']:.3f}x{_ci(r['speedup_ci95'], '.3f')}" + ("  <- best" if r["k"] == t["best_k"] else ""))
    if rows and rows[0]["latency"]:
        n = rows[0]["latency"]["output_tokens"]
        lines += ["", f"latency of a {n}-token request in verify steps (P50/P90/P99), same mean AL:",
                  f"  {'k':>2}  {'two-point (engines)':>22}  {'measured-shaped':>20}  shape"]
        for r in rows:
            lat = r["latency"]
            tp, sh = lat["two_point"]["steps"], lat["shaped"]["steps"]
            lines.append(
                f"  {r['k']:>2}  {tp['p50']:>6.0f} {tp['p90']:>6.0f} {tp['p99']:>6.0f}    "
                f"  {sh['p50']:>6.0f} {sh['p90']:>6.0f} {sh['p99']:>6.0f}  {lat['shape']}"
            )
    others = [k for k in t["overlaps_best"] if k != t["best_k"]]
    lines += ["", f"best draft length: {t['best_k']}" + (
        f" (within its interval: {', '.join(map(str, others))})" if others else "")]
    lines += [f"note: {n}" for n in t["notes"]]
    lines += [f"warning: {w}" for w in t.get("warnings", [])]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Run ``golden-al draft-lengths``; returns the exit code."""
    table = _table(args)
    if args.format == "json":
        print_json(table)
    else:
        print(_text(table))
    return 0
