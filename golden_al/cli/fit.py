"""``golden-al fit``: measurement records -> one golden curve (our schema) + fit diagnostics.

Reads ``measurement.json`` records (files, or directories searched recursively), refuses
records that disagree on a setting (sampling, chat template, dataset, engine, target or
draft identity and dtype; the message names the records and the field), pools records of
the same (thinking mode, k) by summing their counts, fits one per-position profile per
thinking mode, and writes ``CURVE.yaml`` (AL per k rounded to two decimals, CI, counts,
measured/derived) and ``CURVE.fit.json`` beside it (every record and its hash, pooled
counts and histograms, the profile, fitted values, residuals and flags).
See :mod:`golden_al.curvefit.build` for the rules.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from golden_al.cli._common import (
    add_format_option,
    add_selector_option,
    parse_selectors,
    print_json,
)
from golden_al.cli.progress import progress
from golden_al.errors import CheckFailedError, UsageError

DESCRIPTION = (
    "Fit measurement records into a golden curve: one per-position profile per thinking mode, "
    "AL per draft length rounded to two decimals with its CI and counts, measured and derived "
    "points marked, and diagnostics (residuals, flagged points) in a CURVE.fit.json sidecar. "
    "Records that disagree on settings are refused, never averaged."
)

EXAMPLES = """\
examples:
  golden-al fit experiments/qwen-coder-curve/ --out qwen-coder.yaml
  golden-al fit runs/k*/measurement.json --out curve.yaml --model-key qwen2.5-coder-1.5b-instruct \\
      --alias Qwen/Qwen2.5-Coder-1.5B-Instruct --provenance-note "HumanEval, greedy, reference engine"
  golden-al fit sweep/ --out curve.yaml --fill-derived --monotone-conditional --format json

pooling: several records of the same thinking mode and k with identical settings are
pooled by summing their counts (AL = 1 + sum accepted / sum steps); their CI is the
studentized cluster bootstrap over the union of their clusters (seeded by --seed), or the
records' CIs combined when a requests.jsonl is missing.

profile: by default a smooth decaying profile c_j = c1 * r^j-1 (2 parameters), so with
three or more draft lengths the residuals (printed in standard errors, z) can flag points
and a chi-square test says whether a richer profile is needed. Records of one run share
their prompts, so their ALs move together: one cluster bootstrap over the prompts, the same
resample at every k, gives their joint law, and the fit, residuals, drops and jumps are
judged against it (a point is flagged when the profile of the other points cannot predict
it). A flagged point exits 1 (the curve and CURVE.fit.json are still written for review;
--format json lists each flag with its size and interval); --allow-flags exits 0; --profile free fits one
rate per position (as many parameters as points: only drops and jumps can be flagged). A measured k supersedes one-run derived
records at that k (the difference is reported in CURVE.fit.json).
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``golden-al fit``."""
    from distributions.fit import PROFILES

    parser.add_argument("records", nargs="+", metavar="RECORD",
                        help="measurement.json files or directories holding them (searched recursively)")
    parser.add_argument("--out", required=True, metavar="CURVE.yaml",
                        help="the curve to write (our schema); diagnostics go to CURVE.fit.json beside it")
    parser.add_argument("--model-key", default=None, metavar="KEY",
                        help="the curve's model key (default: from the target name, e.g. qwen2.5-coder-1.5b-instruct)")
    parser.add_argument("--alias", action="append", default=[], metavar="NAME",
                        help="another name of the model (served name, repo id); repeatable")
    parser.add_argument("--method", default=None, metavar="METHOD",
                        help="the curve's draft method (default: the records' draft_method, e.g. draft-model, mtp, eagle3)")
    parser.add_argument("--profile", choices=PROFILES, default="mixture",
                        help="mixture: the prompts' shares of decaying profiles, whose pooled rates may rise (default); "
                             "decaying: one profile c_j = c1 r^(j-1), 2 parameters; free: one rate per position")
    parser.add_argument("--monotone-conditional", action="store_true",
                        help="free profile: also constrain c_1 >= c_2 >= ... (default: 0 <= c_j <= 1 only)")
    parser.add_argument("--fill-derived", action="store_true",
                        help="fill every unmeasured k <= the largest measured k from the profile, marked derived")
    parser.add_argument("--provenance-note", default=None, metavar="TEXT",
                        help="a sentence for the curve's provenance notes (where, why, by whom)")
    parser.add_argument("--tolerance", type=float, default=None, metavar="AL",
                        help="absolute residual tolerance for flags (default: 3 standard errors from the CIs)")
    add_selector_option(parser, "a curve selector the records were measured with, where their server did not "
                                "report it (it must agree with any it did)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the pooled-CI bootstrap (default: 0)")
    parser.add_argument("--allow-flags", action="store_true",
                        help="exit 0 even when a point is flagged (exploratory fits); by default a flagged point "
                        "exits 1, after the curve and its sidecar are written for review")
    parser.add_argument("--strict", action="store_true", help=argparse.SUPPRESS)  # the default since 0.2
    add_format_option(parser, ("text", "json"), "text")


def run(args: argparse.Namespace) -> int:
    """Fit, write the curve and its sidecar, print a table (or the diagnostics as JSON)."""
    from golden_al.curvefit import FitOptions, fit_records, sidecar_path
    from golden_al.golden import save_curve
    from golden_al.measure.records import load_records
    from golden_al.provenance import atomic_write_text, collect, sha256_file

    out = Path(args.out)
    if out.suffix not in (".yaml", ".yml"):
        raise UsageError(f"--out {args.out!r} must end in .yaml or .yml")
    if args.tolerance is not None and not args.tolerance > 0:
        raise UsageError(f"--tolerance must be > 0, got {args.tolerance!r}")
    started = collect()["started"]
    records = load_records(args.records)
    with progress(f"fitting {len(records)} record(s) (joint bootstrap over shared prompts)"):
        fit = fit_records(records, FitOptions(
            model_key=args.model_key, aliases=tuple(args.alias), method=args.method,
            monotone_conditional=args.monotone_conditional, fill_derived=args.fill_derived, profile=args.profile,
            provenance_note=args.provenance_note, tolerance=args.tolerance, seed=args.seed,
            selectors=parse_selectors(args.selector, records[0].record.engine if records else None),
        ))
    save_curve(fit.curve, out)
    side = sidecar_path(out)
    diag = fit.diagnostics(curve_file=out.name, curve_sha256=sha256_file(out), provenance=collect(started=started))
    atomic_write_text(side, json.dumps(diag, indent=2) + "\n")
    for w in fit.warnings:
        sys.stderr.write(f"golden-al: warning: {w}\n")
    flags = fit.flags
    if args.format == "json":
        print_json(diag)
    else:
        for mode, mf in fit.modes.items():
            blk = fit.curve.mode(mode)
            assert blk is not None
            fr = mf.fit
            gof = ("" if fr.p_value is None else
                   f"; goodness of fit chi2 {fr.chi2:.2f} on {fr.dof} dof, p = {fr.p_value:.3g}"
                   + (": a richer profile is needed" if fr.richer_profile_needed else ""))
            weighting = (f"joint law over {mf.joint.clusters} shared prompts" if mf.joint is not None
                         else f"{fr.weighting}-weighted")
            shape = (fr.mixture.summary() if fr.mixture is not None
                     else "c = " + ", ".join(f"{c:.3f}" for c in fr.conditional))
            size = f"{fr.num_params} prompt profiles" if fr.mixture is not None else f"{fr.num_params} parameters"
            print(f"{fit.curve.model} {mode} ({fr.profile} profile, {size}, {weighting}, {shape}{gof})")
            print(f"  {'k':>2}  {'AL':>5}  {'95% CI':<15}  {'clusters':>8}  {'origin':<8}  {'steps':>8}  {'fitted':>6}  "
                  f"{'resid':>7}  {'z':>5}  flags")
            zs = fr.standardized_residuals
            zmap = dict(zip(fr.ks.tolist(), zs.tolist(), strict=True)) if zs is not None else {}
            fitted = dict(zip(mf.fit.ks.tolist(), zip(mf.fit.fitted, mf.fit.residuals, strict=True), strict=True))
            for k, p in blk.points.items():
                ci = f"[{p.ci95[0]:.3f}, {p.ci95[1]:.3f}]" if p.ci95 else "-"
                f, r = fitted.get(k, (mf.fit.curve([k])[k], None))
                kinds = ",".join(sorted({fl.kind for fl in mf.point_flags(k)})) or "-"
                steps = str(p.num_verify_steps) if p.num_verify_steps is not None else "-"
                resid = f"{r:+.4f}" if r is not None else "-"
                clusters = str(p.uncertainty.clusters) if p.uncertainty is not None else "-"
                z = f"{zmap[k]:+.1f}" if k in zmap else "-"
                print(f"  {k:>2}  {p.al:>5.2f}  {ci:<15}  {clusters:>8}  {p.origin:<8}  {steps:>8}  {f:>6.3f}  "
                      f"{resid:>7}  {z:>5}  {kinds}")
            for fl in mf.fit.flags:
                size = "" if fl.by is None else f" [by {fl.by:+.4f}" + (
                    "" if fl.interval is None else f", 95% interval {fl.interval[0]:+.4f} to {fl.interval[1]:+.4f}") + "]"
                print(f"  flag {fl}{size}")
        n_points = sum(len(b.points) for b in fit.curve.modes().values())
        print(f"wrote {out} ({n_points} points, {len(fit.modes)} thinking mode(s), {len(records)} records, "
              f"{len(flags)} flag(s)) and {side}")
    if flags and not args.allow_flags:
        raise CheckFailedError(f"the profile cannot explain {len(flags)} point(s): "
                               + "; ".join(f"{m} {f}" for m, f in flags[:3]),
                               hint=f"see {side} (each flag's size and interval); re-measure the flagged k, or "
                               "--allow-flags for an exploratory fit")
    return 0
