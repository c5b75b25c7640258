"""``golden-al inject``: write the golden AL into an srt-slurm recipe in place.

What is written is what ``golden-al select`` would pass srtctl as overrides for this model and thinking mode
(one plan, the same refusals; the recipe's own pins allowed), applied to the text: the synthetic settings of
each role that simulates (SGLang's and TensorRT-LLM's environment blocks at the generating role's value, each
vLLM ``speculative-config`` and ATOM flag at its role's own k), a stale one elsewhere taken out. The recipe keeps
its comments, quotes, anchors and layout: only those values change (see :mod:`golden_al.injection.inject` for
where each goes). The engine comes from the recipe (or ``--engine``, which must agree with it).

Output: the unified diff of the change on stdout (nothing when the recipe already
holds the golden values); a one-line summary on stderr. Exit codes: 0 written or
already up to date (a second run changes nothing); 1 the recipe pins a different value
(nothing written; ``--force`` replaces it); 2 usage or input errors, or no committed
golden value (the message lists what exists). ``--dry-run`` prints the diff and writes
nothing (conflicts still exit 1 without ``--force``).

``--restore-real`` is the eval-only inverse (no model or curve needed): every synthetic
setting ``check``'s census finds is removed (SGLang variables, TensorRT-LLM, ATOM and
llama.cpp settings, any registered engine's knobs), vLLM ``rejection_sample_method`` goes
back to a real method (``standard``, or ``--real-method``), comments are kept, and a second
run changes nothing (:mod:`golden_al.injection.restore`); ``check`` on the result finds no pin.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from golden_al.cli._common import add_golden_dir_option, golden_dir, thinking_mode

DESCRIPTION = __doc__

EXAMPLES = """\
examples:
  golden-al inject recipes/sglang/deepseek-v4/agentic/disagg-gb300-2p1d.yaml \\
      --model deepseek-ai/DeepSeek-V4-Pro --thinking on
  golden-al inject recipe.yaml --model kimi-k3 --thinking on --dry-run > change.diff
  golden-al inject recipe.yaml --model glm5.2 --thinking on --force
  golden-al inject recipe.yaml --restore-real                  # eval run: real acceptance again
  golden-al inject recipe.yaml --restore-real --real-method block --dry-run
"""


def _real_knobs() -> list[Any]:
    """The knobs that switch synthetic acceptance on by one of their values and have a real default (vLLM's
    ``rejection_sample_method``): ``--real-method`` sets one of their real values."""
    from golden_al.plugin.registry import engine_names, get_profile

    return [(get_profile(n), k) for n in engine_names() for k in get_profile(n).check.synthetic_knobs
            if k.switch_value is not None and k.real_value is not None and k.choices]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from golden_al.plugin.registry import engine_names

    parser.add_argument("file", metavar="FILE", help="srt-slurm recipe YAML to rewrite in place")
    parser.add_argument("--model", help="model key, alias, served name or repo id (required unless --restore-real)")
    parser.add_argument("--thinking", type=thinking_mode, metavar="MODE",
                        help="thinking mode of the benchmark: on, off or a named level (e.g. reasoning_effort_high; "
                             "required unless --restore-real)")
    parser.add_argument("--engine", choices=engine_names(),
                        help="engine (default: from the recipe's backend.type)")
    parser.add_argument("--restore-real", action="store_true",
                        help="remove every synthetic-acceptance setting instead (eval runs measure real acceptance)")
    knobs = _real_knobs()
    parser.add_argument("--real-method", choices=sorted({c for _, k in knobs for c in k.choices if c != k.switch_value}),
                        default=None, help="with --restore-real: the real " + "; ".join(
                            f"{p.display_name} {k.name} to set (default: {k.real_value}, {p.display_name}'s default)"
                            for p, k in knobs))
    parser.add_argument("--force", action="store_true", help="replace values that differ from the golden one")
    parser.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    add_golden_dir_option(parser)


def _restore(args: argparse.Namespace) -> int:
    from golden_al.errors import UsageError
    from golden_al.injection.restore import restore_file

    if args.model or args.thinking or args.force:
        raise UsageError("--restore-real takes no --model, --thinking or --force: it removes every synthetic "
                         "setting whatever its value")
    real = {k.name: args.real_method for _, k in _real_knobs() if args.real_method in k.choices} or None
    result = restore_file(args.file, real_values=real, dry_run=args.dry_run)
    sys.stdout.write(result.diff())
    if not result.changed:
        sys.stderr.write(f"golden-al: inject: {args.file} has no synthetic-acceptance setting\n")
    else:
        verb = "would remove" if args.dry_run else "removed"
        names = ", ".join(dict.fromkeys(r.name for r in result.removals))
        sys.stderr.write(f"golden-al: inject: {verb} {len(result.removals)} synthetic setting(s) from {args.file}: "
                         f"{names}\n")
    return 0


def run(args: argparse.Namespace) -> int:
    from golden_al.errors import UsageError
    from golden_al.golden import load_store
    from golden_al.injection import inject_file
    from golden_al.plugin.registry import get_profile
    from golden_al.plugin.values import format_value

    if args.restore_real:
        return _restore(args)
    if args.real_method:
        raise UsageError("--real-method goes with --restore-real")
    if not args.model or not args.thinking:
        raise UsageError("inject needs --model and --thinking (or --restore-real)",
                         hint="golden-al inject RECIPE --model M --thinking on|off")
    profile = get_profile(args.engine) if args.engine else None
    if profile is not None and profile.recipe is None:
        knob = profile.check.synthetic_knobs[0].name if profile.check.synthetic_knobs else "synthetic"
        raise UsageError(f"{profile.display_name} has no srt-slurm recipe format to rewrite",
                         hint=f"use 'golden-al env --engine {profile.name}' for its {knob} setting")
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
