"""``golden-al select``: the golden AL a launch recipe must run with, as launcher overrides.

The value is selected at launch from the recipe's own speculative settings and the run's identity, never written
into the recipe and never taken from the caller, by the derivation ``check`` judges pins with: the recipe with the
overrides applied is what ``check`` calls a ``match``, and a refusal (exit 2, naming the variant) is ``check``'s
reason. A shell launch script is read by ``check``'s shell reader; ``--format env``/``shell`` print the environment
it must start with.

``RECIPE[:SELECTOR]``: srtctl's selectors (``:base``, ``:override_x``, ``:zip_override_y[2]``, a glob); without
one every variant srtctl would run is planned. Identity: flags, else InferenceX's variables (``MODEL_PREFIX``,
``THINKING_MODE``, ``FRAMEWORK``, ``IS_AGENTIC``, ``SPEC_DECODING``, ``EVAL_ONLY``).

Formats: ``srtctl`` (``--set``/``--unset`` words, safe unquoted in ``$(...)``), ``json`` (every variant, its
overrides and inputs), ``env``/``shell`` (environment settings); ``--apply`` prints the recipe with the overrides
applied as srtctl applies them (``docs/maintainers.md``). Exit codes: 0 planned; 2 any refusal or bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from typing import Any, Literal

from golden_al.cli._common import add_golden_dir_option, golden_dir, thinking_mode

DESCRIPTION = __doc__

EXAMPLES = """\
examples:
  srtctl apply --file recipe.yaml $(golden-al select recipe.yaml --format srtctl)
  golden-al select recipe.yaml:zip_override_lowlat[1] --model glm5.2 --thinking on --format json
  MODEL_PREFIX=dsv4 THINKING_MODE=thinking_on golden-al select recipe.yaml:override_mtp3 --format srtctl
  EVAL_ONLY=1 golden-al select recipe.yaml --format srtctl       # eval run: real acceptance restored
  golden-al select recipe.yaml --unset roles.decode.env.X --format srtctl   # caller overrides go first
"""

FORMATS = ("srtctl", "json", "env", "shell")
_TRUE = ("1", "true", "yes", "on")
#: the harness environment ``select`` reads (InferenceX's variables): each is an input of the plan
_ENV_NAMES = ("MODEL_PREFIX", "THINKING_MODE", "FRAMEWORK", "IS_AGENTIC", "SPEC_DECODING", "EVAL_ONLY")
_FALSE = ("0", "false", "no", "off", "")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("recipe", metavar="RECIPE[:SELECTOR]", help="srt-slurm recipe, optionally with a selector")
    parser.add_argument("--model", help="the run's model (curve key, alias or model prefix; default MODEL_PREFIX, "
                                        "else the recipe's model names)")
    parser.add_argument("--thinking", type=thinking_mode, metavar="MODE",
                        help="the run's thinking mode: on, off or a level (default THINKING_MODE, else the "
                             "recipe's settings, else on as check assumes)")
    parser.add_argument("--framework", help="vllm, dynamo-vllm, dynamo-sglang, trt, dynamo-trt ... (default "
                                            "FRAMEWORK, else the recipe's backend.type)")
    parser.add_argument("--agentic", choices=("yes", "no"),
                        help="whether the run is agentic (default IS_AGENTIC, else the recipe says)")
    parser.add_argument("--mode", choices=("throughput", "eval-only"),
                        help="throughput: simulate the golden AL; eval-only: restore real acceptance "
                             "(default: eval-only when EVAL_ONLY is true)")
    parser.add_argument("--set", dest="caller", action="append", default=[], metavar="PATH=VALUE",
                        type=lambda t: ("set", t), help="the caller's own srtctl --set, applied to the recipe first")
    parser.add_argument("--unset", dest="caller", action="append", metavar="PATH",
                        type=lambda t: ("unset", t), help="the caller's own srtctl --unset, applied first")
    parser.add_argument("--format", choices=FORMATS, default="srtctl", help="output format (default: srtctl)")
    parser.add_argument("--apply", action="store_true",
                        help="print the recipe with the overrides applied, as srtctl applies them (YAML)")
    add_golden_dir_option(parser)


def _flag(value: str | None, name: str) -> bool | None:
    from golden_al.errors import UsageError

    if value is None:
        return None
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise UsageError(f"{name}={value!r} is not a boolean", hint="use 1/0, true/false")


def identity_from(args: argparse.Namespace, environ: Any) -> Any:
    """The run's identity: flags first, then the InferenceX environment (the CLI is the one reader of it)."""
    from golden_al.prompts.thinking import normalize_mode
    from golden_al.recipes.derive import Identity
    from golden_al.safeio.inputs import value_input

    model, model_source = (args.model, "--model") if args.model else (environ.get("MODEL_PREFIX") or None,
                                                                      "MODEL_PREFIX")
    thinking, thinking_source = args.thinking, "--thinking"
    if thinking is None and environ.get("THINKING_MODE"):
        try:
            thinking = normalize_mode(environ["THINKING_MODE"])
        except ValueError as exc:
            from golden_al.errors import UsageError

            raise UsageError(f"THINKING_MODE={environ['THINKING_MODE']!r}: {exc}") from None
        thinking_source = "THINKING_MODE"
    agentic = {"yes": True, "no": False}.get(args.agentic or "") if args.agentic else \
        _flag(environ.get("IS_AGENTIC"), "IS_AGENTIC")
    mode: Literal["throughput", "eval-only"] = args.mode or (
        "eval-only" if _flag(environ.get("EVAL_ONLY"), "EVAL_ONLY") else "throughput")
    return Identity(model=model, model_source=model_source, thinking=thinking, thinking_source=thinking_source,
                    framework=args.framework or environ.get("FRAMEWORK") or None, agentic=agentic,
                    spec_decoding=environ.get("SPEC_DECODING") or None, mode=mode,
                    inputs=tuple(value_input(n, environ.get(n)) for n in _ENV_NAMES))


def _is_env_path(path: tuple[str, ...]) -> bool:
    """``roles.<r>.env.KEY`` or ``backend.<role>_environment.KEY``."""
    return (len(path) == 2 and path[0] == "env") or (len(path) >= 3 and (
        (path[0] == "roles" and path[-2] == "env") or (path[0] == "backend" and path[-2].endswith("environment"))))


def render(plan: Any, fmt: str) -> str:
    """The text ``select`` prints for ``plan`` in format ``fmt``."""
    from golden_al.errors import UsageError

    if fmt == "json":
        return json.dumps(plan.to_dict(), indent=2) + "\n"
    overrides = plan.common_overrides()
    if fmt == "srtctl" and plan.provenance.get("kind") == "script":
        raise UsageError(f"{plan.recipe}: a launch script takes environment settings, not srtctl overrides",
                         hint="use --format env or shell (or json)")
    if fmt == "srtctl":
        words = [w for o in overrides for w in o.srtctl_args()]
        return " ".join(words) + ("\n" if words else "")
    env_sets = [o for o in overrides if o.op == "set" and _is_env_path(o.path)]
    if len(env_sets) != len(overrides):
        other = next(o for o in overrides if o not in env_sets)
        raise UsageError(f"{plan.recipe}: {other.op} {other.dotted} is not an environment setting; the {fmt} format "
                         "carries only environment variables", hint="use --format srtctl or json")
    pairs = list(dict.fromkeys((o.path[-1], str(o.value)) for o in env_sets))
    if fmt == "shell":
        return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in pairs)
    return "".join(f"{k}={v}\n" for k, v in pairs)


def applied(path: str, plan: Any, caller: list[Any]) -> str:
    """The recipe at ``path`` with the caller's and ``plan``'s overrides applied by srtctl's rules, as YAML."""
    import yaml

    from golden_al import safeio
    from golden_al.errors import UsageError
    from golden_al.recipes.srtctl import apply_overrides

    if plan.provenance.get("kind") == "script":
        raise UsageError(f"{plan.recipe}: a launch script takes environment settings, not srtctl overrides",
                         hint="use --format env or shell (or json)")
    doc = safeio.safe_load_yaml(safeio.read_text(path), path=path)
    return str(yaml.safe_dump(apply_overrides(doc, [*caller, *plan.common_overrides()]), sort_keys=False))


def run(args: argparse.Namespace) -> int:
    from golden_al.recipes.srtctl import parse_override, split_recipe_arg
    from golden_al.selection import select_recipe

    path, selector = split_recipe_arg(args.recipe)
    caller = [parse_override(op, text) for op, text in args.caller or []]
    identity = identity_from(args, os.environ)
    plan = select_recipe(path, selector=selector, identity=identity, golden_dir=golden_dir(args.golden_dir),
                         caller=caller)
    sys.stdout.write(applied(path, plan, caller) if args.apply else render(plan, args.format))
    for v in plan.variants:
        sys.stderr.write(f"golden-al select: {v.selector or path}: {v.mode}"
                         + (f", {v.engine} k={v.k} thinking {v.thinking} -> AL {v.al:g} [{v.curve}]" if v.al else "")
                         + (f" ({v.reason})" if v.mode == "off" else "") + "\n")
    return 0
