"""``golden-al report``: ``report.md`` and PNG plots (each beside its JSON data) for records or curves.

Plots: AL against k with 95% CI bands per thinking mode (``al_vs_k``); per-position
acceptance, unconditional and conditional (``per_position``); measured per-step
histograms against what each engine's sampler injects for the same mean
(``histograms_<model>_<mode>``, records or curves with a ``.fit.json`` sidecar only); per cell the
token-weighted and per-request mean AL, the histogram and the per-position acceptance rates
(``acceptance``, saying which sources cannot give them). Records are fitted in memory
exactly as ``golden-al fit`` would (same refusals). Needs matplotlib (the ``plot`` extra).
"""

from __future__ import annotations

import argparse

DESCRIPTION = (
    "Write report.md and PNG plots, each beside its JSON data: AL against k with 95% CI bands per "
    "thinking mode; per-position acceptance (unconditional and conditional); measured per-step "
    "histograms against what each engine's sampler injects for the same mean; per cell the token-weighted "
    "and per-request mean AL, the histogram and per-position acceptance rates. Records are fitted in memory "
    "as 'golden-al fit' would. Needs matplotlib."
)

EXAMPLES = """\
examples:
  golden-al report experiments/qwen-coder-curve/ --out report/
  golden-al report golden_al/golden/curves/qwen3.5_mtp.yaml golden_al/golden/curves/dsv4_mtp.yaml --out cmp/
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``golden-al report``."""
    parser.add_argument("inputs", nargs="+", metavar="RECORD_OR_CURVE",
                        help="measurement.json files or directories (fitted in memory), or golden curve YAML files "
                        "(our schema or InferenceX's), or directories of curves")
    parser.add_argument("--out", required=True, metavar="DIR", help="directory for report.md, *.png and *.json")
    parser.add_argument("--title", default="golden-al report", help="the report's title")


def needs(_args: argparse.Namespace) -> list[tuple[str, str]]:
    """Every report draws plots: matplotlib is checked before any input is read or any file written."""
    return [("plot", "report")]


def run(args: argparse.Namespace) -> int:
    """Load the inputs, write the report, print where it is."""
    from golden_al.cli.progress import progress
    from golden_al.provenance import collect
    from golden_al.reporting import load_sources, write_report

    started = collect()["started"]
    with progress("reading inputs and drawing plots", total=2) as tick:
        series, inputs = load_sources(args.inputs)
        tick()
        result = write_report(series, inputs, args.out, title=args.title, provenance=collect(started=started))
        tick()
    pngs = sum(1 for f in result.files if f.suffix == ".png")
    print(f"wrote {result.report} and {pngs} plot(s) with their JSON data ({len(series)} series from "
          f"{len(inputs)} input file(s))")
    return 0
