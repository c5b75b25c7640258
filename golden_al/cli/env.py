"""``golden-al env``: the exact synthetic-acceptance settings one engine needs.

The golden AL comes from the store (``--golden-dir`` or the shipped curves); the
settings are each engine profile's ``synthetic_settings`` (``golden_al/engines/``). The draft length is
``--draft-len K`` or the engine's own spelling:

* ``--algorithm dflash --num-draft-tokens 8`` (or ``--block-size 8``): k = 7, a DFlash
  block holds the verified token plus 7 drafts;
* ``--algorithm eagle|eagle3|nextn --num-steps N``: k = N (chain, topk 1);
* ``--algorithm dspark --block-size G``: k = G (gamma);
* ``--algorithm ngram --num-draft-tokens N``: k = N - 1;
* ``--num-speculative-tokens N`` (vLLM/ATOM) or ``--max-draft-len N`` (TensorRT-LLM): k = N.

``--num-steps``, ``--num-draft-tokens`` and ``--block-size`` are SGLang's spellings and
follow SGLang's rules (``golden_al/engines/sglang/__init__.py``) whatever
``--engine`` is. ``--algorithm`` also picks the curve's method
(:func:`golden_al.golden.curve_method_for`: SGLang EAGLE/NEXTN -> mtp, or eagle3 for
Kimi-K2.5 and MiniMax-M3).

Formats (stdout carries nothing else):

* ``json``: exactly ``synthetic_settings`` (one line);
* ``yaml``: the same mapping (environment values quoted as strings);
* ``shell``: ``export K=V`` lines, values quoted for POSIX shells;
* ``dotenv``: ``K=V`` lines (a value with spaces or quotes is single-quoted).

SGLang and TensorRT-LLM settings are environment variables. For vLLM, shell/dotenv
print ``GOLDEN_AL_VLLM_SPECULATIVE_CONFIG`` holding a whole ``--speculative-config``
JSON (``num_speculative_tokens``, ``method`` when known, and the synthetic fields) for
``vllm serve M --speculative-config "$GOLDEN_AL_VLLM_SPECULATIVE_CONFIG"``; merge it into
your own config if it carries more keys (``model``, ...). For ATOM, shell/dotenv print
``GOLDEN_AL_ATOM_ARGS`` (the flag and its value) for ``... $GOLDEN_AL_ATOM_ARGS``. For
llama.cpp, json is ``{"--spec-synth-len": "4.05"}`` and shell/dotenv the environment form
``LLAMA_ARG_SPEC_SYNTH_LEN`` that llama-server reads instead of the flag.

A model, mode or k without a committed value exits 2 and lists what exists.
"""

from __future__ import annotations

import argparse
import io
import json
import shlex
import sys
from typing import Any

from golden_al.cli._common import (
    add_golden_dir_option,
    add_selector_option,
    draft_len_help,
    golden_dir,
    parse_selectors,
    thinking_mode,
)
from golden_al.errors import UsageError
from golden_al.plugin import registry

DESCRIPTION = __doc__

EXAMPLES = """\
examples:
  golden-al env --model muse-spark-open-816b-a42b-nvfp4 --thinking on \\
      --engine sglang --algorithm dflash --num-draft-tokens 8 --format json
  golden-al env --model deepseek-ai/DeepSeek-V4-Pro --thinking on --draft-len 3 --engine trtllm
  golden-al env --model kimi-k3 --thinking on --engine vllm --algorithm dspark \\
      --draft-len 7 --draft-sample-method probabilistic --format shell
  eval "$(golden-al env --model qwen3.5 --thinking off --engine sglang --algorithm nextn --num-steps 3)"
"""

def _caveats() -> str:
    """The engine caveats that concern ``env`` (from the profiles), for the help text."""
    lines = [f"  {name}: {c.text}" for name in registry.engine_names()
             for c in registry.get_profile(name).caveats if "env" in c.applies_to]
    return "caveats:\n" + "\n".join(lines) + "\n" if lines else ""


EXAMPLES += "\n" + _caveats()

FORMATS = ("shell", "dotenv", "yaml", "json")
#: Engines with synthetic-acceptance settings golden-al can emit.
ENGINES: tuple[str, ...] = registry.engine_names()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="model key, alias, served name, repo id or checkpoint path")
    parser.add_argument("--thinking", required=True, type=thinking_mode, metavar="MODE",
                        help="thinking mode: on, off or a named level (e.g. reasoning_effort_high)")
    parser.add_argument("--engine", required=True, choices=ENGINES, help="engine to emit settings for")
    k = parser.add_argument_group("draft length (give --draft-len, or the engine's own spelling)")
    k.add_argument("--draft-len", "-k", type=int, metavar="K", help=draft_len_help())
    k.add_argument("--algorithm", metavar="A",
                   help="speculative algorithm/method as the engine spells it (dflash, eagle, eagle3, nextn, "
                        "dspark, ngram, mtp, ...); also selects the curve method")
    for option, helps in _env_options().items():  # each engine's own spellings of k (shared ones once)
        k.add_argument(option.flag, type=int, metavar=option.metavar, help="; ".join(helps))
    c = parser.add_argument_group("curve selection (when a model has several curves)")
    c.add_argument("--method", metavar="M", help="curve method (mtp, eagle3, dflash, dspark, ...)")
    c.add_argument("--variant", metavar="V", help="curve variant or curve name (e.g. gqa)")
    c.add_argument("--draft-model", metavar="ID", help="draft model id or path (selects among variants)")
    c.add_argument("--draft-sample-method", choices=("greedy", "probabilistic"),
                   help="vLLM draft_sample_method (selects among variants)")
    add_selector_option(c, "a setting other than the engine's default that changes real AL, as the recipe runs it "
                           "(e.g. verification=block); the curve must have been measured with exactly these")
    parser.add_argument("--format", choices=FORMATS, default="shell", help="output format (default: shell)")
    add_golden_dir_option(parser)


def _env_options() -> dict[Any, list[str]]:
    """Every engine's ``env`` spellings of k (:attr:`CheckSupport.env_options`), a shared flag once with each
    engine's help."""
    out: dict[Any, list[str]] = {}
    seen: dict[str, Any] = {}
    for name in registry.engine_names():
        for option in registry.get_profile(name).check.env_options:
            first = seen.setdefault(option.flag, option)
            out.setdefault(first, []).append(option.help)
    return out


def resolve_draft_len(args: argparse.Namespace) -> int:
    """k from --draft-len or the engines' own spellings (each engine's ``env_draft_len``); contradictions are usage
    errors."""
    ks: list[tuple[int, str]] = []
    if args.draft_len is not None:
        ks.append((args.draft_len, "--draft-len"))
    for name in registry.engine_names():
        profile = registry.get_profile(name)
        values = {o.dest: getattr(args, o.dest) for o in profile.check.env_options if getattr(args, o.dest, None) is not None}
        if values and profile.check.env_draft_len is not None:
            dl = profile.check.env_draft_len(args.algorithm, values)
            where = " ".join(f"--{d.replace('_', '-')} {v}" for d, v in values.items())
            if args.algorithm:
                where += f" with --algorithm {args.algorithm} ({dl.rule})"
            if (dl.k, where) not in ks:  # a flag two engines share gives one k
                ks.append((dl.k, where))
    if not ks:
        raise UsageError("no draft length given",
                         hint="pass --draft-len K, or e.g. --algorithm dflash --num-draft-tokens 8")
    if len({k for k, _ in ks}) > 1:
        raise UsageError("the draft lengths given disagree: " + ", ".join(f"{src} gives k={k}" for k, src in ks))
    k = ks[0][0]
    if k < 1:
        raise UsageError(f"draft length must be >= 1, got {k}")
    return k


def _dotenv_value(value: str) -> str:
    if value and all(ch.isalnum() or ch in "._-/:+,=@" for ch in value):
        return value
    return "'" + value.replace("'", "'\\''") + "'"


def render(settings: dict[str, Any], fmt: str, *, engine: str, k: int, method: str | None) -> str:
    """The text ``golden-al env`` prints for ``settings`` in format ``fmt``."""
    if fmt == "json":
        return json.dumps(settings) + "\n"
    if fmt == "yaml":
        from ruamel.yaml import YAML

        buf = io.StringIO()
        y = YAML(typ="rt")
        y.default_flow_style = False
        y.dump(dict(settings), buf)
        return buf.getvalue()
    pairs: list[tuple[str, str]]
    profile = registry.get_profile(engine)
    if profile.check.shell_variable and profile.check.shell_value:
        pairs = [(profile.check.shell_variable, profile.check.shell_value(settings, k, method))]
    elif profile.check.shell_env is not None:  # llama.cpp: LLAMA_ARG_SPEC_SYNTH_LEN for --spec-synth-len
        pairs = list(profile.check.shell_env(settings).items())
    else:
        pairs = [(key, str(value)) for key, value in settings.items()]
    if fmt == "shell":
        return "".join(f"export {key}={shlex.quote(value)}\n" for key, value in pairs)
    return "".join(f"{key}={_dotenv_value(value)}\n" for key, value in pairs)


def run(args: argparse.Namespace) -> int:
    from golden_al.golden import load_store

    k = resolve_draft_len(args)
    store = load_store(golden_dir(args.golden_dir))
    method = args.method
    if args.algorithm:
        algo_method = store.method_for(args.engine, args.algorithm, args.model)
        if method is not None and method != algo_method:
            raise UsageError(f"--method {method} contradicts --algorithm {args.algorithm} (curve method {algo_method})")
        method = algo_method
    point = store.lookup(args.model, args.thinking, k, method=method, variant=args.variant,
                         draft_model=args.draft_model, draft_sample_method=args.draft_sample_method,
                         selectors=parse_selectors(args.selector, args.engine))
    profile = registry.get_profile(args.engine)
    if point.method:
        profile.check_k(point.method, k)
    settings = registry.synthetic_settings(args.engine, point.al, k)
    sys.stdout.write(render(settings, args.format, engine=args.engine, k=k, method=point.method))
    return 0
