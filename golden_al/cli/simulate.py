"""``golden-al simulate``: what an engine's synthetic sampler really does with an injected AL.

Prints the exact pmf of L (tokens per request-step) the engine realizes, its exact
mean (and bias, where the engine has one), a sampled mean from N draws made the
way the engine makes them, the values as the engine sees them, and warnings.
With ``--batch B`` it also runs B requests over N steps with one shared draw per
step (SGLang) and with per-request draws (vLLM, TensorRT-LLM, ATOM), side by side.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

import numpy as np

from golden_al.cli._common import add_format_option, draft_len_help, print_json
from golden_al.errors import UsageError

__all__ = ["EXAMPLES", "add_arguments", "run"]

DESCRIPTION = (
    "Reproduce an engine's synthetic-acceptance sampler for an injected AL: the exact pmf of "
    "L per request-step, its exact mean and bias, a sampled mean, and what to watch out for. "
    "--al always includes the bonus token (for TensorRT-LLM the tool injects AL-1 itself)."
)

EXAMPLES = """\
engines and methods:
  sglang  match-expected | multinomial   (one draw per verify step for the whole batch)
  vllm    synthetic                      (per request; --rates for explicit per-position rates)
  trtllm  force                          (per request; value AL-1; --trtllm-path one-model|two-model)
  atom    synthetic                      (per request; --acceptance-rate for the rate form)

examples:
  golden-al simulate --engine sglang --method multinomial --al 7.5 --draft-len 7
  golden-al simulate --engine sglang --method match-expected --al 4.05 --draft-len 7 \\
      --algorithm dflash --batch 32 --format json
  golden-al simulate --engine vllm --method synthetic --al 2.6 --draft-len 3 --steps 1000000
  golden-al simulate --engine vllm --method synthetic --rates 0.9,0.5,0.2 --draft-len 3
  golden-al simulate --engine trtllm --method force --al 4.05 --draft-len 7
  golden-al simulate --engine trtllm --method force --al 4 --draft-len 7 --trtllm-path two-model
  golden-al simulate --engine atom --method synthetic --acceptance-rate 0.45 --draft-len 7 --format json
  golden-al simulate --engine llamacpp --method synthetic --al 4.05 --draft-len 7
"""

#: Upper bound on B * N draws for the batch comparison (about 1.6 GB of int64 at worst per chunk set).
_MAX_BATCH_DRAWS = 200_000_000
#: Draws per chunk when sampling N request-steps.
_CHUNK = 10_000_000
_BAR_WIDTH = 40


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``golden-al simulate``."""
    from golden_al.plugin.registry import engine_names

    parser.add_argument("--engine", required=True, metavar="ENGINE",
                        help="an engine whose samplers simulators reproduce: " + ", ".join(engine_names()))
    parser.add_argument(
        "--method", default=None, metavar="METHOD",
        help="the sampler: sglang match-expected or multinomial; vllm synthetic; trtllm force; atom synthetic "
             "(default: the one the engine's synthetic knob uses, its profile's default_sampler)",
    )
    parser.add_argument(
        "--al", type=float, default=None, metavar="AL",
        help="injected acceptance length, bonus token included, in [1, K+1] "
        "(optional only with --rates or --acceptance-rate)",
    )
    parser.add_argument("--draft-len", "-k", type=int, required=True, metavar="K",
                        help=draft_len_help())
    parser.add_argument("--batch", type=int, default=1, metavar="B",
                        help="also simulate B concurrent requests over N steps, shared vs per-request draws (default: 1)")
    parser.add_argument("--steps", type=int, default=100_000, metavar="N",
                        help="request-steps sampled for sampled_mean, and steps of the batch run (default: 100000)")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the numpy generator (default: 0)")
    add_format_option(parser, ("text", "json"), "text")
    for flag, (option, owners) in _engine_options().items():
        parser.add_argument(flag, dest=_dest(flag), default=None, metavar=option.metavar, type=option.type,
                            choices=option.choices or None,
                            help=f"{' or '.join(owners)} only: " + "; ".join(
                                f"{o}: {h}" if len(owners) > 1 else h for o, h in owners.items()))


def _engine_options() -> dict[str, tuple[Any, dict[str, str]]]:
    """Every registered engine's ``simulate`` options by flag: ``(option, {engine: help})`` (one flag may
    serve several engines, e.g. ``--rates``; they must agree on its type)."""
    from golden_al.plugin import registry

    out: dict[str, tuple[Any, dict[str, str]]] = {}
    for name in registry.engine_names():
        for option in registry.get_profile(name).simulate.simulate_options:
            first, owners = out.setdefault(option.flag, (option, {}))
            if (first.type, first.choices, first.metavar) != (option.type, option.choices, option.metavar):
                raise TypeError(f"engines {sorted(owners)} and {name!r} declare {option.flag} differently")
            owners[name] = option.help
    return out


def _dest(flag: str) -> str:
    return "engine_option_" + flag.lstrip("-").replace("-", "_")


def _given(args: argparse.Namespace, profile: Any) -> list[tuple[Any, Any]]:
    """The engine's own options the command line set, as ``(option, value)``."""
    return [(o, getattr(args, _dest(o.flag))) for o in profile.simulate.simulate_options
            if getattr(args, _dest(o.flag), None) is not None]


def _build_sampler(args: argparse.Namespace) -> Any:
    from golden_al.plugin import registry

    engine = args.engine
    if engine in registry.engine_names():  # an engine whose sampler golden-al does not know: its profile says why
        registry.get_profile(engine).require("simulate", "simulate")
    if args.method is None:
        profile = registry.profile_or_usage(engine)
        if profile.simulate.default_sampler is None:
            raise UsageError(f"{profile.display_name} names no default sampler", hint="pass --method")
        args.method = profile.simulate.default_sampler
    method = args.method
    registry.get_sampler(engine, method)  # unknown engine or method first, with "did you mean"
    profile = registry.get_profile(engine)
    own = {o.flag for o in profile.simulate.simulate_options}
    for flag, (_, owners) in _engine_options().items():
        if flag not in own and getattr(args, _dest(flag), None) is not None:
            raise UsageError(f"{flag} applies only to --engine {' or '.join(owners)}, not {engine!r}")
    options = {o.kwarg: (o.parse(value) if o.parse else value) for o, value in _given(args, profile)}
    return registry.get_sampler(engine, method, **options)


def _check_args(args: argparse.Namespace) -> None:
    if args.steps < 1:
        raise UsageError(f"--steps must be >= 1, got {args.steps}")
    if args.batch < 1:
        raise UsageError(f"--batch must be >= 1, got {args.batch}")
    if args.seed < 0:
        raise UsageError(f"--seed must be >= 0, got {args.seed}")
    if args.batch > 1 and args.batch * args.steps > _MAX_BATCH_DRAWS:
        raise UsageError(
            f"--batch {args.batch} x --steps {args.steps} is {args.batch * args.steps:,} draws, over the "
            f"{_MAX_BATCH_DRAWS:,} limit; lower --steps"
        )


def _resolve_al(args: argparse.Namespace, sampler: Any) -> tuple[float, bool]:
    """The injected AL, and whether an engine option (rates, a rate) fixed it instead of ``--al``."""
    from distributions import units
    from golden_al.plugin import registry

    k = units.check_draft_len(args.draft_len)
    for option, _ in _given(args, registry.get_profile(args.engine)):
        if option.gives_al is not None:
            return float(option.gives_al(sampler, args.al, k)), True
    if args.al is None:
        raise UsageError("--al is required (the injected AL including the bonus token, in [1, K+1])")
    return units.check_al(args.al, k), False


def _sampled(sampler: Any, al: float | None, k: int, n: int, rng: np.random.Generator) -> tuple[np.ndarray, float, float]:
    """Histogram (counts of L = 1..k+1), mean and std of n draws made the engine's way."""
    counts = np.zeros(k + 2, dtype=np.int64)
    for start in range(0, n, _CHUNK):
        size = min(_CHUNK, n - start)
        counts += np.bincount(sampler.simulate(al, k, size, rng), minlength=k + 2)[: k + 2]
    values = np.arange(k + 2, dtype=np.float64)
    mean = float(np.dot(values, counts) / n)
    var = float(np.dot((values - mean) ** 2, counts) / max(1, n - 1))
    return counts[1:], mean, math.sqrt(var)


def _analyse(args: argparse.Namespace) -> dict[str, Any]:
    _check_args(args)
    from golden_al.plugin import registry

    sampler = _build_sampler(args)
    al, fixed_by_option = _resolve_al(args, sampler)
    k = int(args.draft_len)
    opt_al = None if fixed_by_option else al
    dist = sampler.pmf(opt_al, k)
    rng = np.random.default_rng(args.seed)
    counts, s_mean, s_std = _sampled(sampler, opt_al, k, args.steps, rng)
    mean = dist.mean()
    out: dict[str, Any] = {
        "engine": args.engine,
        "method": args.method,
        "name": sampler.name,
        "draft_len": k,
        "al": al,
        "pmf": dist.to_list(),
        "mean": mean,
        "bias": mean - al,
        "relative_bias": (mean - al) / al,
        "std": dist.std(),
        "sampled_mean": s_mean,
        "sampled_std": s_std,
        "sampled_se": s_std / math.sqrt(args.steps),
        "sampled_pmf": (counts / args.steps).tolist(),
        "steps": args.steps,
        "seed": args.seed,
        "draw_unit": sampler.draw_unit,
        "guarantees_mean": sampler.guarantees_mean,
        "engine_settings": _engine_settings(sampler, opt_al, k),
        "unconditional_rates": dist.unconditional_rates().tolist(),
        "conditional_rates": dist.conditional_rates().tolist(),
        "summary": sampler.summary,
        "upstream": sampler.upstream,
        "warnings": [*sampler.warnings(opt_al, k), *_caveats(sampler)],
    }
    profile = registry.get_profile(args.engine)
    if profile.simulate.simulate_report is not None:
        out.update(profile.simulate.simulate_report(sampler, al, k, out["engine_settings"]))
    if args.batch > 1:
        out["batch"] = _batch(sampler, dist, args.batch, args.steps, rng)
    return out


def _engine_settings(sampler: Any, al: float | None, k: int) -> dict[str, Any]:
    """The injected value(s) as the engine sees them, from the engine's profile."""
    from golden_al.plugin import registry

    profile = registry.get_profile(sampler.engine)
    if profile.simulate.simulator_settings:
        return profile.simulate.simulator_settings(sampler, al, k)
    # an engine with one way to inject: the settings `env` gives
    return profile.check.synthetic_settings(al, k) if al is not None else {}


def _caveats(sampler: Any) -> list[str]:
    """The profile's caveats that concern this sampler (e.g. TensorRT-LLM two-model: greedy only)."""
    from golden_al.plugin import registry

    topic = getattr(sampler, "path", None) or getattr(sampler, "algorithm", None) or "simulate"
    return [c.text for c in registry.get_profile(sampler.engine).caveats
            if c.applies_to and topic in c.applies_to and "simulate" in c.applies_to]


def _batch(sampler: Any, dist: Any, batch: int, steps: int, rng: np.random.Generator) -> dict[str, Any]:
    from simulators.batch import simulate_batch

    shared = simulate_batch(dist, batch, steps, rng, shared=True).summary()
    per_request = simulate_batch(dist, batch, steps, rng, shared=False).summary()
    var_l = dist.var()
    out: dict[str, Any] = {
        "batch_size": batch,
        "steps": steps,
        "engine_draws": "shared" if sampler.draw_unit == "batch-step" else "per_request",
        "shared": shared,
        "per_request": per_request,
        "expected_per_step_tokens_std": {
            "shared": batch * math.sqrt(var_l),
            "per_request": math.sqrt(batch * var_l),
        },
    }
    s_std, p_std = shared["per_step_tokens_std"], per_request["per_step_tokens_std"]
    out["variance_ratio"] = (s_std / p_std) ** 2 if s_std is not None and p_std else None
    return out


# ---------------------------------------------------------------------- text output


def _bar(p: float, top: float) -> str:
    if top <= 0:
        return ""
    eighths = round(p / top * _BAR_WIDTH * 8)
    full, rest = divmod(eighths, 8)
    return "█" * full + ("" if rest == 0 else " ▏▎▍▌▋▊▉"[rest])


def _fmt(x: float | None, spec: str = ".4f") -> str:
    return "-" if x is None else format(x, spec)


def _text(r: dict[str, Any]) -> str:
    lines = [f"{r['name']}: {r['summary']}", f"  reproduces  {r['upstream']}"]
    settings = " ".join(
        f"{key}={json.dumps(val) if isinstance(val, (dict, list)) else val}" for key, val in r["engine_settings"].items()
    )
    lines.append(f"  injected    {settings}")
    draws = "one per verify step for the whole batch" if r["draw_unit"] == "batch-step" else "one per request per step"
    lines.append(f"  draft length k={r['draft_len']}, target AL {r['al']:g}, draws: {draws}")
    lines.append("")
    lines.append("   L   P(L) exact   sampled")
    top = max(r["pmf"])
    for i, (p, q) in enumerate(zip(r["pmf"], r["sampled_pmf"], strict=True)):
        lines.append(f"  {i + 1:>2}   {p:>10.4f}   {q:>7.4f}   {_bar(p, top)}")
    lines.append("")
    lines.append(f"  mean (exact)   {r['mean']:.4f}   bias {r['bias']:+.4f} ({r['relative_bias']:+.2%})")
    lines.append(f"  std (exact)    {r['std']:.4f}")
    lines.append(
        f"  sampled mean   {r['sampled_mean']:.4f} ± {r['sampled_se']:.4f} (N={r['steps']:,} draws, seed {r['seed']})"
    )
    if "long_run_mean" in r:
        lines.append(f"  long-run mean  {r['long_run_mean']:.4f} (TensorRT-LLM's fixed uniform pool)")
    if "batch" in r:
        b = r["batch"]
        lines.append("")
        lines.append(f"batch of {b['batch_size']} requests over {b['steps']:,} steps "
                     f"(this engine draws {'shared' if b['engine_draws'] == 'shared' else 'per request'}):")
        lines.append(f"  {'':30}{'shared draw':>14}{'per-request':>14}")
        rows = [
            ("per-step batch tokens mean", "per_step_tokens_mean"),
            ("per-step batch tokens std", "per_step_tokens_std"),
            ("per-step AL std", "per_step_al_std"),
            ("per-request AL min", "per_request_al_min"),
            ("per-request AL max", "per_request_al_max"),
            ("request-request correlation", "mean_pairwise_correlation"),
        ]
        for label, key in rows:
            lines.append(f"  {label:30}{_fmt(b['shared'][key]):>14}{_fmt(b['per_request'][key]):>14}")
        if b["variance_ratio"] is not None:
            lines.append(f"  per-step token variance ratio shared/per-request: {b['variance_ratio']:.2f} "
                         f"(expected {b['batch_size']})")
    if r["warnings"]:
        lines.append("")
        lines.append("warnings:")
        lines.extend(f"  - {w}" for w in r["warnings"])
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Run ``golden-al simulate``; returns the exit code."""
    result = _analyse(args)
    if args.format == "json":
        print_json(result)
    else:
        print(_text(result))
    return 0
