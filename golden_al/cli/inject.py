"""``golden-al inject``: write the golden AL into an srt-slurm recipe in place.

The recipe keeps its comments, quotes, anchors and layout: only the injected values
change (see :mod:`golden_al.injection.inject` for exactly what is written where). The
engine comes from the recipe's ``backend.type`` (or ``--engine``); the draft length k
from its generating role (``decode``, else ``aggregated``) by each engine's rules
(SGLang EAGLE/NEXTN ``speculative-num-steps``, DFLASH ``num-draft-tokens - 1``, DSPARK
``dspark-block-size``; vLLM ``num_speculative_tokens``; TensorRT-LLM ``max_draft_len``,
MTP ``num_nextn_predict_layers``); the curve method from the recipe's algorithm and,
among variants, its draft model and ``draft_sample_method``. SGLang and TensorRT-LLM
environment blocks all get the generating role's value; each vLLM
``speculative-config`` gets the value at its own ``num_speculative_tokens``.

Output: the unified diff of the change on stdout (nothing when the recipe already
holds the golden values); a one-line summary on stderr. Exit codes: 0 written or
already up to date (a second run changes nothing); 1 the recipe pins a different value
(nothing written; ``--force`` replaces it); 2 usage or input errors, or no committed
golden value (the message lists what exists). ``--dry-run`` prints the diff and writes
nothing (conflicts still exit 1 without ``--force``).
"""

from __future__ import annotations

import argparse
import sys

from golden_al.cli._common import add_golden_dir_option, golden_dir, thinking_mode
from golden_al.engines import atom

DESCRIPTION = __doc__

EXAMPLES = """\
examples:
  golden-al inject recipes/sglang/deepseek-v4/agentic/disagg-gb300-2p1d.yaml \\
      --model deepseek-ai/DeepSeek-V4-Pro --thinking on
  golden-al inject recipe.yaml --model kimi-k3 --thinking on --dry-run > change.diff
  golden-al inject recipe.yaml --model glm5.2 --thinking on --force
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="srt-slurm recipe YAML to rewrite in place")
    parser.add_argument("--model", required=True, help="model key, alias, served name or repo id")
    parser.add_argument("--thinking", required=True, type=thinking_mode, metavar="MODE",
                        help="thinking mode of the benchmark: on, off or a named level (e.g. reasoning_effort_high)")
    parser.add_argument("--engine", choices=("sglang", "vllm", "trtllm", "atom"),
                        help="engine (default: from the recipe's backend.type)")
    parser.add_argument("--force", action="store_true", help="replace values that differ from the golden one")
    parser.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    add_golden_dir_option(parser)


def run(args: argparse.Namespace) -> int:
    from golden_al.engines._values import format_value
    from golden_al.errors import UsageError
    from golden_al.golden import load_store
    from golden_al.injection import inject_file

    if args.engine == "atom":
        raise UsageError("ATOM has no srt-slurm recipe format to rewrite",
                         hint=f"use 'golden-al env --engine atom' for its {atom.LENGTH_FLAG} flag")
    store = load_store(golden_dir(args.golden_dir))
    result = inject_file(args.file, store=store, model=args.model, thinking=args.thinking, engine=args.engine,
                         force=args.force, dry_run=args.dry_run)
    sys.stdout.write(result.diff())
    pt = result.point
    what = (f"{pt.model} {pt.thinking} k={result.k} AL {format_value(pt.al)} "
            f"(curve {pt.curve}, {result.engine})")
    if not result.changed:
        sys.stderr.write(f"golden-al: inject: {args.file} already holds the golden values: {what}\n")
    else:
        verb = "would write" if args.dry_run else "wrote"
        forced = f", {len(result.conflicts)} conflicting replaced" if result.conflicts else ""
        sys.stderr.write(f"golden-al: inject: {verb} {len(result.changes)} value{'s' if len(result.changes) != 1 else ''}{forced} into {args.file}: {what}\n")
    return 0
