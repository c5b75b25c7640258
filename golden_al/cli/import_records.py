"""``golden-al import FORMAT FILE... --out DIR``: measurement records from results users already hold.

Formats: ``vllm-bench`` (``vllm bench serve --save-result --save-detailed`` JSON, with
``/metrics`` snapshots taken during the run as windows), ``vllm-log`` (a vLLM server
log's ``SpecDecoding metrics`` intervals) and ``inferencex-speedbench`` (the results
directory of InferenceX's SPEED-Bench collector), ``sglang-bench`` (``python -m
sglang.bench_serving --output-file`` JSON lines, with saved per-request responses when the
user has them) and ``sglang-log`` (an SGLang server log's ``Decode batch`` lines, aggregate
only). See :mod:`golden_al.measure.imported`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from golden_al.cli._common import add_max_seconds_option, time_limit
from golden_al.errors import UsageError

DESCRIPTION = ("Write measurement records from results users already hold: vLLM bench serve JSON with /metrics "
               "snapshots, vLLM and SGLang server logs (aggregate only), InferenceX SPEED-Bench collector output, "
               "SGLang bench_serving output (aggregate only; per request with saved responses). Each record "
               "says mode 'imported' and names the files (and their sha256) it came from.")

EXAMPLES = """\
examples:
  golden-al import vllm-bench speedbench_off_mtp3.json before.prom mid1.prom after.prom --thinking off \\
      --temperature 0.7 --top-p 0.8 --max-tokens 4096 --draft-method mtp --out imported/off-k3
  golden-al import vllm-log server.log --thinking off --temperature 0 --max-tokens 4096 --draft-len 3 --out imp
  golden-al import inferencex-speedbench speedbench_results/ --model dsv4 --out imported/dsv4
  golden-al import sglang-bench bench.jsonl --thinking off --temperature 0 --max-tokens 1024 --out imp/sgl
  golden-al import sglang-bench bench.jsonl responses.jsonl --thinking off --temperature 0 --max-tokens 1024 \\
      --out imp/sgl-per-request
  golden-al import sglang-log server.log --thinking on --temperature 0.6 --max-tokens 4096 --out imp/sgl-log
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``golden-al import``."""
    from golden_al.measure.imported import formats

    parser.add_argument("format", choices=tuple(formats()), help="what the files are")
    parser.add_argument("files", nargs="+", metavar="FILE", help="the files (or, for inferencex-speedbench, the directory)")
    parser.add_argument("--out", required=True, metavar="DIR", help="where the records go (one cell: DIR itself)")
    add_max_seconds_option(parser)
    parser.add_argument("--model", help="target model name (default: the file's model_id)")
    parser.add_argument("--draft-method", help="draft method (mtp, eagle3, draft-model, ...)")
    parser.add_argument("--draft-len", "-k", type=int, help="k, when the files do not show it")
    parser.add_argument("--thinking", choices=("on", "off"), help="the thinking mode of the run")
    parser.add_argument("--temperature", type=float, help="the run's temperature")
    parser.add_argument("--top-p", type=float, help="the run's top_p (default 1)")
    parser.add_argument("--top-k", type=int, help="the run's top_k")
    parser.add_argument("--max-tokens", type=int, help="the run's max_tokens (output length)")
    parser.add_argument("--dataset", help="prompt set name, e.g. speed-bench:coding")
    parser.add_argument("--chat-template-kwargs", default=None, metavar="JSON", help="the run's chat_template_kwargs")
    parser.add_argument("--decode-log-interval", type=int, default=None, metavar="N",
                        help="sglang-log: the server's --decode-log-interval, when its start-up line is not in the log "
                             "(default: the logged value, else 40)")


def run(args: argparse.Namespace) -> int:
    """Import, write, print one line per record."""
    from golden_al.measure.imported import import_files, write_imported
    from golden_al.plugin.imported import ImportOptions

    kwargs = {}
    if args.chat_template_kwargs:
        try:
            kwargs = json.loads(args.chat_template_kwargs)
        except json.JSONDecodeError as exc:
            raise UsageError(f"--chat-template-kwargs is not JSON: {exc.msg}") from None
        if not isinstance(kwargs, dict):
            raise UsageError("--chat-template-kwargs must be a JSON object")
    opts = ImportOptions(model=args.model, draft_method=args.draft_method, draft_len=args.draft_len,
                         thinking=args.thinking, temperature=args.temperature, top_p=args.top_p, top_k=args.top_k,
                         max_tokens=args.max_tokens, dataset=args.dataset, chat_template_kwargs=kwargs,
                         decode_log_interval=args.decode_log_interval)
    if args.decode_log_interval is not None and args.decode_log_interval < 1:
        raise UsageError(f"--decode-log-interval must be >= 1, got {args.decode_log_interval}")
    with time_limit(args.max_seconds, f"importing {len(args.files)} file(s)"):
        items = import_files(args.format, args.files, opts)
    for item, d in zip(items, write_imported(items, Path(args.out)), strict=True):
        r = item.record
        unit = "requests" if r.uncertainty is not None and r.uncertainty.unit == "request" else "windows"
        sys.stdout.write(f"imported thinking {r.thinking} k={r.draft_len}: AL {r.al:.3f} [{r.al_ci95[0]:.3f}, "
                         f"{r.al_ci95[1]:.3f}] over {len(item.rows)} {unit}, source {r.al_source} -> {d}\n")
        for w in r.warnings:
            sys.stderr.write(f"golden-al: warning: {w}\n")
    return 0
