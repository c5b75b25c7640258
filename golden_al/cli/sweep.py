"""``golden-al sweep``: measure every (thinking mode, draft length) cell against a server, resumably."""

from __future__ import annotations

import argparse
from pathlib import Path

from golden_al.cli._common import parse_int_list
from golden_al.cli._servers import (
    add_prompt_arguments,
    add_server_arguments,
    print_server_result,
    server_runner,
)
from golden_al.cli.progress import progress
from golden_al.errors import UsageError
from golden_al.schedulers import SCHEDULERS

DESCRIPTION = (
    "Measure every (thinking mode, draft length) cell against a serving engine: one measurement.json per "
    "cell in OUT/thinking_{on,off}/k{K}/, per-request results appended as they finish. With --launch the "
    "server is started per draft length (its log captured in OUT/logs/) and always stopped. --resume "
    "continues a killed sweep without losing or double-counting a request. --one-run measures the largest "
    "k once and derives the smaller ones from its per-step acceptance."
)

EXAMPLES = """\
examples:
  # SGLang DFLASH, both thinking modes, k=1..7 (server relaunched per k with --speculative-num-draft-tokens k+1)
  golden-al sweep --engine sglang --launch --target /models/Target --draft /models/Target-DFlash \\
      --algorithm dflash --tp 8 --draft-lens 1-7 --thinking on,off \\
      --prompts speed-bench:/data/speed-bench:coding --out runs/dflash
  # resume it after a crash or Ctrl-C
  golden-al sweep ... --out runs/dflash --resume
  # one server run at k=7, k=1..6 derived, k=3 and k=5 measured to validate the derivation
  golden-al sweep --engine vllm --launch --target /m/t --algorithm mtp --draft-lens 1-7 --thinking on \\
      --one-run --validate-k 3,5 --out runs/mtp-onerun
  # against an already running server (its own draft length)
  golden-al sweep --engine sglang --server http://127.0.0.1:30000 --draft-lens 3 --thinking on,off --out runs/k3
  # every (k, mode) cell as one task of a Slurm job array, each on its own 8-GPU allocation
  golden-al sweep --scheduler slurm --slurm-arg=--partition=gpu --slurm-arg=--gres=gpu:8 \\
      --slurm-arg=--time=04:00:00 --engine sglang --launch --target /models/T --draft /models/D \\
      --algorithm eagle3 --tp 8 --draft-lens 1-8 --thinking on,off --out /shared/runs/eagle3
  golden-al sweep --status /shared/runs/eagle3     # the cell table, later, from any shell
  golden-al sweep ... --scheduler slurm --resume   # resubmit only the missing or failed cells
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_server_arguments(parser, with_engine=True)
    g = parser.add_argument_group("cells")
    g.add_argument("--draft-lens", required=True, metavar="LIST", help="draft lengths k, e.g. 1-8 or 1,3,5")
    g.add_argument("--thinking", default="off", metavar="LIST",
                   help="thinking modes: on, off, named levels (reasoning_effort_high), comma-separated (default off)")
    g.add_argument("--target", metavar="MODEL", help="target model (path or hub id) the server loads / serves")
    g.add_argument("--draft", metavar="MODEL", help="draft model (path or hub id), if the method has one")
    g.add_argument("--out", required=True, metavar="DIR", help="output directory")
    g.add_argument("--one-run", action="store_true",
                   help="measure only the largest k and derive the smaller ones (records marked derived)")
    g.add_argument("--allow-derived", action="store_true",
                   help="with --one-run of a block draft (DFlash): derive anyway; refused without it, since a block "
                   "draft's drafts depend on the block size")
    g.add_argument("--validate-k", default=None, metavar="LIST",
                   help="with --one-run: also measure these k for real and compare with the derived AL")
    g.add_argument("--cache-dir", metavar="DIR", help="prompt/model cache (default $GOLDEN_AL_CACHE)")
    add_prompt_arguments(parser)
    g = parser.add_argument_group("scheduler")
    g.add_argument("--scheduler", choices=SCHEDULERS, default="local",
                   help="local: measure the cells here, one server per k (default); slurm: one job array, one task "
                   "per (k, mode) cell, each running 'golden-al measure --launch' on its allocation")
    g.add_argument("--slurm-arg", action="append", default=[], metavar="ARG",
                   help="one more sbatch option for every cell (repeat), e.g. --slurm-arg=--partition=gpu "
                   "--slurm-arg=--gres=gpu:8 --slurm-arg=--time=04:00:00")
    g.add_argument("--slurm-max-running", type=int, default=None, metavar="N",
                   help="at most N cells running at once (sbatch --array=...%%N)")
    g.add_argument("--status", metavar="OUT", default=None,
                   help="print the cell table of the sweep in OUT (Slurm or local) and exit: 0 when every cell "
                   "is done, 1 when some failed or are missing, 3 while some are pending or running")
    g.add_argument("--poll", type=float, default=10.0, metavar="S",
                   help="slurm: seconds between queue polls of the live cell table (default 10)")
    g.add_argument("--detach", action="store_true",
                   help="slurm: submit and return at once (follow with --status); Ctrl-C no longer cancels")
    for action in parser._actions:  # not required with --status OUT; run() checks them otherwise
        if action.dest in ("engine", "draft_lens", "out"):
            action.required = False


def parse_thinking(text: str) -> list[str]:
    """``"on,off"`` -> ``["on", "off"]``; named levels too (``on,reasoning_effort_high``); order kept, no duplicates."""
    from golden_al.prompts.thinking import normalize_mode

    out: list[str] = []
    for part in str(text).split(","):
        if not part.strip():
            continue
        try:
            mode = normalize_mode(part)
        except ValueError as exc:
            raise UsageError(f"--thinking: {exc}") from None
        if mode not in out:
            out.append(mode)
    if not out:
        raise UsageError("--thinking: no mode given")
    return out


def needs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """``--serve-reference`` cells run the reference engine."""
    from golden_al.cli._servers import serve_reference_needs

    return serve_reference_needs(args)


def run(args: argparse.Namespace) -> int:
    if args.status is not None:
        from golden_al.cli._sweep_array import print_status

        return print_status(Path(args.status))
    missing = [opt for opt, dest in (("--engine", "engine"), ("--draft-lens", "draft_lens"), ("--out", "out"))
               if getattr(args, dest) is None]
    if missing:
        raise UsageError(f"sweep needs {', '.join(missing)}", hint="or --status OUT to show a sweep's cells")
    if args.scheduler == "slurm":
        from golden_al.cli._sweep_array import run_slurm_sweep

        return run_slurm_sweep(args, draft_lens=parse_int_list(args.draft_lens, name="--draft-lens"),
                               thinking=parse_thinking(args.thinking), sweep_arguments=add_arguments)
    if args.slurm_arg or args.slurm_max_running is not None or args.detach:
        raise UsageError("--slurm-arg, --slurm-max-running and --detach need --scheduler slurm")
    draft_lens = parse_int_list(args.draft_lens, name="--draft-lens")
    if min(draft_lens) < 1:
        raise UsageError(f"--draft-lens must be >= 1, got {args.draft_lens}")
    validate = parse_int_list(args.validate_k, name="--validate-k") if args.validate_k else []
    if validate and not args.one_run:
        raise UsageError("--validate-k needs --one-run")
    runner = server_runner(args, engine=args.engine, draft_lens=draft_lens, thinking=parse_thinking(args.thinking),
                           out=Path(args.out), layout="sweep", one_run=args.one_run, validate_k=validate,
                           allow_derived=args.allow_derived)
    if runner is not None:  # None: --print-command printed the launch commands
        with progress(runner.label, unit=runner.unit) as bar:
            runner.measure(None, args.resume, bar)
        print_server_result(runner.result)
    return 0
