"""ATOM (ROCm): everything golden-al knows about it, in one place.

Upstream (ROCm/ATOM, HEAD ffdf3bb5d):

* ``atom/model_engine/arg_utils.py``: ``--method``, ``--num-speculative-tokens``
  (default 1), ``--draft-model`` and the mutually exclusive forced-acceptance flags
  ``--spec-decode-acceptance-length`` / ``--spec-decode-acceptance-rate``.
* ``atom/config.py`` ``Config.__post_init__``: sequential drafters (MTP, Eagle3) refuse
  ``num_speculative_tokens`` above 4 (``max_spec = 4``); DSpark's cap is its block or
  window; ``SpeculativeConfig._resolve_synthetic_acceptance`` resolves the forced AL
  (reproduced in :mod:`golden_al.engines.atom.sampler`).
* ``atom/model_engine/llm_engine.py`` ``get_mtp_statistics``: ``GET /debug/mtp_stats``;
  ``atom/model_engine/scheduler.py`` ``SpecStats``: its counts and the ``[MTP Stats]`` log
  line; ``atom/entrypoints/openai_server.py``: the server, ``GET /server_info``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from distributions import units
from distributions.counts import (
    AcceptanceCounts,
    Count,
    as_count,
    counts_close,
    delta,
    format_count,
    from_histogram,
)
from distributions.errors import DistributionError
from golden_al import plugin

__all__ = ["LENGTH_FLAG", "METHODS", "PROFILE", "RATE_FLAG", "counts_from_mtp_stats", "draft_len",
           "mtp_stats_delta", "spec_flags", "synthetic_settings"]

VERSION = "ffdf3bb5d"
_REPO = "ROCm/ATOM"
_ARGS = plugin.Source(_REPO, "atom/model_engine/arg_utils.py", VERSION)
_CONFIG = plugin.Source(_REPO, "atom/config.py", VERSION)
_ENGINE = plugin.Source(_REPO, "atom/model_engine/llm_engine.py", VERSION)
_SCHEDULER = plugin.Source(_REPO, "atom/model_engine/scheduler.py", VERSION)
_SERVER = plugin.Source(_REPO, "atom/entrypoints/openai_server.py", VERSION)
_METRICS = plugin.Source(_REPO, "atom/entrypoints/openai/metrics.py", VERSION)

LENGTH_FLAG = "--spec-decode-acceptance-length"
RATE_FLAG = "--spec-decode-acceptance-rate"
#: The same two settings as keys of ``/server_info`` or a JSON config.
LENGTH_KEY = "spec_decode_acceptance_length"
RATE_KEY = "spec_decode_acceptance_rate"
FLAG_METHOD = "--method"
FLAG_K = "--num-speculative-tokens"
FLAG_DRAFT_MODEL = "--draft-model"
FLAG_SERVER_PORT = "--server-port"
METHODS: tuple[str, ...] = ("mtp", "eagle3", "dspark")
#: Sequential drafters: ``max_spec = 4`` in ``Config.__post_init__``.
SEQUENTIAL_METHODS: tuple[str, ...] = ("mtp", "eagle3")
MAX_SEQUENTIAL_K = 4
DEFAULT_K = 1
LAUNCH_MODULE = "atom.entrypoints.openai_server"
SHELL_VARIABLE = "GOLDEN_AL_ATOM_ARGS"
CURVE_METHODS: dict[str, str] = {"mtp": "mtp", "eagle3": "eagle3", "dspark": "dspark"}

# ----------------------------------------------------------------- /debug/mtp_stats
MTP_STATS_PATH = "/debug/mtp_stats"
SERVER_INFO_PATH = "/server_info"
STATS_ENABLED = "enabled"
STATS_DISTRIBUTION = "distribution"
STATS_DRAFT_TOKENS = "total_draft_tokens"
STATS_ACCEPTED = "total_accepted_tokens"
STATS_AVG_TOKENS = "average_tokens_per_forward"
STATS_RATE = "acceptance_rate"
STATS_DISTRIBUTION_PERCENT = "distribution_percent"
_FIELD_NAMES = {
    "num_verify_steps": f"sum({STATS_DISTRIBUTION})",
    "num_accepted_drafts": STATS_ACCEPTED,
    "num_draft_tokens": STATS_DRAFT_TOKENS,
    "histogram": STATS_DISTRIBUTION,
}

# ----------------------------------------------------------------- metrics / log
METRIC_DRAFT_TOKENS = "atom:mtp_draft_tokens_total"
METRIC_ACCEPTED = "atom:mtp_accepted_tokens_total"
METRIC_DECODE_STEPS = "atom:mtp_decode_steps_total"
METRIC_AVG_TOKENS_PER_FORWARD = "atom:mtp_average_tokens_per_forward"
METRIC_PREFIX = "atom:mtp_"
ACCEPTED_LABEL = "accepted_tokens"
LOG_FORCED = r"Forced speculative acceptance ON"
#: The stats line as ``scheduler.py`` prints it (``tag``: ``Interval`` or 8 spaces), for ``serve-reference``.
LOG_MTP_STATS_FORMAT = (
    "{time} - atom - INFO - [MTP Stats {tag}] Average toks/fwd: {avg:.2f}, Accepted/Total Draft tokens: "
    "{accepted}/{drafted}, Acceptance rate: {rate:.2f}%, Accepted tokens distribution: {{{distribution}}}"
)
_NUM = plugin.LOG_NUMBER
LOG_PATTERNS: tuple[plugin.LogPattern, ...] = (
    plugin.LogPattern("mtp-stats",
                      rf"\[MTP Stats(?P<kind> Interval|\s+)\] Average toks/fwd: (?P<avg>{_NUM}), "
                      rf"Accepted/Total Draft tokens: (?P<acc>\d+)/(?P<draft>\d+), "
                      rf"Acceptance rate: (?P<rate>{_NUM})%"
                      rf"(?:, Accepted tokens distribution: \{{(?P<dist>[^}}]*)\}})?",
                      '"[MTP Stats Interval] Average toks/fwd: {:.2f}, Accepted/Total Draft tokens: {a}/{d}, '
                      'Acceptance rate: {:.2%}, Accepted tokens distribution: {...}"', _SCHEDULER, marker='[MTP Stats'),
    plugin.LogPattern("mtp-distribution-item", rf"(?P<k>\d+): '(?P<p>{_NUM})%'", "one {k: 'p%'} item", _SCHEDULER),
    plugin.LogPattern("forced", LOG_FORCED, "forced acceptance is on", _CONFIG),
)


def draft_len(num_speculative_tokens: Any) -> plugin.DraftLen:
    """``k = --num-speculative-tokens`` (its default is 1 when absent)."""
    k = plugin.int_flag(num_speculative_tokens, FLAG_K)
    if k is None:
        return plugin.DraftLen(DEFAULT_K, f"num-speculative-tokens default ({DEFAULT_K})", chain=True)
    return plugin.DraftLen(units.check_draft_len(k), "num-speculative-tokens", chain=True)


def script_speculation(flags: Mapping[str, Any]) -> plugin.Speculation:
    """ATOM's speculative launch flags (``--method``, ``--num-speculative-tokens``, ``--draft-model``);
    an absent ``--num-speculative-tokens`` is ATOM's default."""
    method, n = flags.get(FLAG_METHOD), flags.get(FLAG_K)
    return plugin.Speculation("atom", str(method) if method else None, {FLAG_K: n}, None, flags.get(FLAG_DRAFT_MODEL),
                              draft_inputs={FLAG_K: n})


#: The roles recipe's ATOM role: its server flags without their dashes (SemiAnalysisAI/InferenceX
#: ``infx/srt_slurm/synthetic_acceptance.py``, the version that plans ``atom``/``atom-disagg``).
RECIPE_FLAGS = (FLAG_METHOD, FLAG_K, FLAG_DRAFT_MODEL)


def read_recipe_role(args: Mapping[str, Any]) -> plugin.Speculation | None:
    """One roles-recipe role's ATOM flags (``method``, ``num-speculative-tokens``, ``draft-model``; an absent k is
    ATOM's default 1, ``atom/model_engine/arg_utils.py``); None without ``method`` (no speculative decoding). A
    DSpark draft is verified by probabilistic block rejection (the curve's draft sampler, per InferenceX's planner)."""
    method, k = args.get(FLAG_METHOD[2:]), args.get(FLAG_K[2:])
    if not method:
        return None
    name = str(method).lower()
    length, rate = LENGTH_FLAG[2:], RATE_FLAG[2:]
    return plugin.Speculation("atom", name, {FLAG_K: k}, None, args.get(FLAG_DRAFT_MODEL[2:]),
                              "probabilistic" if name == "dspark" else None, draft_inputs={FLAG_K: k},
                              review_spec={"method_flag": True, "both": length in args and rate in args,
                                           "dspark_config": args.get("dspark-config")})


def settings_draft_len(spec: plugin.Speculation | None) -> plugin.DraftLen:
    """k from ATOM's launch flags (``--num-speculative-tokens`` in ``settings``; absent: its default)."""
    d = draft_len(spec.settings.get(FLAG_K) if spec is not None else None)
    return replace(d, described=f"ATOM {d.rule}={d.k}", algorithm=spec.algorithm if spec else None)


def spec_flags(method: str, k: int, *, draft_model: str | None = None) -> list[str]:
    """Launch flags for draft length ``k``.

    Raises:
        UsageError: an unknown method, or ``k > 4`` for ``mtp``/``eagle3`` (ATOM refuses it).
    """
    if method not in METHODS:
        raise plugin.UsageError(f"unknown ATOM {FLAG_METHOD} {method!r}", hint="one of " + ", ".join(METHODS))
    k = units.check_draft_len(k)
    PROFILE.check_k(method, k)
    flags = [FLAG_METHOD, method, FLAG_K, str(k)]
    if draft_model:
        flags += [FLAG_DRAFT_MODEL, draft_model]
    return flags


def review_pin(ctx: plugin.PinContext) -> plugin.PinReview:
    """ATOM's rules for a forced length or rate (``atom/config.py`` ``_resolve_synthetic_acceptance``); ``ctx.spec``:
    ``both`` (length and rate set), ``dspark_config``, ``method_flag`` (whether the launch line gives ``--method``;
    False: it does not, so speculative decoding and with it the forced acceptance are off; None: not known)."""
    knob, raw, value, k = ctx.knob, ctx.raw, ctx.value, ctx.k
    both, dspark_config, method_flag = bool(ctx.spec.get("both")), ctx.spec.get("dspark_config"), ctx.spec.get(
        "method_flag")
    r = plugin.PinReview()
    if value is None:
        r.problems.append(("unsafe-value", f"{knob}={raw!r} is not a number"))
        return r
    if method_flag is False:
        r.problems.append(("unsafe-value", f"{knob} without {FLAG_METHOD}: ATOM ignores it (speculative decoding, "
                                           f"and with it synthetic acceptance, is off unless {FLAG_METHOD} is given; "
                                           "atom/config.py _resolve_synthetic_acceptance)"))
    if both:
        r.problems.append(("unsafe-value", f"both {LENGTH_FLAG} and -rate are set; ATOM rejects "
                                           "the pair (atom/config.py _resolve_synthetic_acceptance)"))
    if isinstance(dspark_config, str) and re.search(r'"confidence_schedule"\s*:\s*true', dspark_config):
        r.problems.append(("unsafe-value", "ATOM rejects forced acceptance with the DSpark confidence_schedule"))
    if knob.endswith("rate"):  # the flag, or its spec_decode_acceptance_rate key form
        if not 0.0 <= value <= 1.0:
            r.problems.append(("unsafe-value", f"rate {raw} is outside [0, 1]"))
            return r
        if k is None:
            return r
        r.al = units.al_from_acceptance_rate(value, k)
        r.notes.append(f"ATOM rate: AL = 1 + k*rate = 1 + {k}*{raw}")
        return r
    if k is not None and not 1.0 <= value <= k + 1:
        r.problems.append(("unsafe-value", f"AL {raw} is outside [1, k+1] = [1, {k + 1}]; ATOM rejects it"))
    r.al = value
    return r


def synthetic_settings(al: float, k: int) -> dict[str, Any]:
    """``{"--spec-decode-acceptance-length": "4.05"}``."""
    al = units.check_al(al, k)
    return {LENGTH_FLAG: plugin.format_value(al)}


def simulator_settings(sampler: Any, al: float | None, k: int) -> dict[str, Any]:
    """The flags a :mod:`golden_al.engines.atom.sampler` sampler stands for."""
    length = sampler.resolve_al(al, k)
    out: dict[str, Any] = {FLAG_K: str(k)}
    if sampler.rate is not None:
        out[RATE_FLAG] = units.format_number(sampler.rate)
    else:
        out[LENGTH_FLAG] = units.format_number(length)
    return out


def shell_value(settings: Mapping[str, Any], k: int, curve_method: str | None) -> str:
    """The flags and values, for ``... $GOLDEN_AL_ATOM_ARGS``."""
    return " ".join(f"{flag} {value}" for flag, value in settings.items())


def server_args(req: plugin.LaunchRequest) -> list[str]:
    """``-m atom.entrypoints.openai_server`` and its flags (ATOM's ``--port`` is its internal engine port)."""
    method = (req.algorithm or "mtp").lower()
    if method not in METHODS:
        raise plugin.UsageError(f"unknown ATOM {FLAG_METHOD} {method!r}", hint="one of " + ", ".join(METHODS))
    return ["-m", LAUNCH_MODULE, "--model", req.target, "--host", req.host, FLAG_SERVER_PORT, str(req.port),
            "-tp", str(req.tp), *spec_flags(method, req.draft_len, draft_model=req.draft)]


# ----------------------------------------------------------------- counts
def _distribution(dist: Any, where: str) -> list[Count]:
    if not isinstance(dist, Mapping):
        raise DistributionError(f"{where}: {STATS_DISTRIBUTION} must be a {{accepted: steps}} object, got {dist!r}")
    out: dict[int, Count] = {}
    for key, value in dist.items():
        try:
            j = int(key)
        except (TypeError, ValueError):
            raise DistributionError(f"{where}: {STATS_DISTRIBUTION} key {key!r} is not an integer") from None
        if j < 0:
            raise DistributionError(f"{where}: {STATS_DISTRIBUTION} key {key!r} is negative")
        out[j] = as_count(value, f"{where}: {STATS_DISTRIBUTION}[{key!r}]")
    size = max(out) + 1 if out else 1
    return [out.get(j, 0) for j in range(size)]


def counts_from_mtp_stats(stats: Mapping[str, Any], *, k: int | None = None) -> AcceptanceCounts:
    """Counts from ``GET /debug/mtp_stats`` JSON (cumulative since server start).

    Mirrors ``llm_engine.py`` ``get_mtp_statistics`` (summed over DP ranks):
    ``distribution`` ``{accepted draft tokens: steps}`` (JSON keys are strings; only values
    seen appear), ``total_draft_tokens`` (every step is charged K, ``scheduler.py``
    ``SpecStats.update``) and ``total_accepted_tokens``. For one run use
    :func:`mtp_stats_delta` on snapshots taken before and after it.

    Args:
        k: ``--num-speculative-tokens``; inferred as drafted / steps when omitted.
    """
    src = "atom-mtp-stats"
    if stats.get(STATS_ENABLED) is False:
        raise DistributionError(
            f"{src}: enabled=false: the server runs without speculative decoding",
            hint=f"start ATOM with {FLAG_METHOD} {'|'.join(METHODS)} {FLAG_K} K",
        )
    missing = [key for key in (STATS_DISTRIBUTION, STATS_DRAFT_TOKENS, STATS_ACCEPTED) if key not in stats]
    if missing:
        raise DistributionError(f"{src}: missing {missing} in {sorted(stats)}", hint=f"is this {MTP_STATS_PATH}?")
    hist = _distribution(stats[STATS_DISTRIBUTION], src)
    steps = float(sum(hist))
    drafted = as_count(stats[STATS_DRAFT_TOKENS], f"{src}: {STATS_DRAFT_TOKENS}")
    if k is None:
        if steps == 0:
            raise DistributionError(f"{src}: no steps recorded, so k cannot be inferred", hint="pass k")
        ratio = float(drafted) / steps
        if abs(ratio - round(ratio)) > 1e-9 or round(ratio) < 1:
            raise DistributionError(
                f"{src}: {STATS_DRAFT_TOKENS}={format_count(drafted)} is not a whole multiple of the "
                f"{format_count(steps)} steps",
                hint=f"ATOM charges K draft tokens per step; pass k={FLAG_K}",
            )
        k = round(ratio)
    k = units.check_draft_len(k)
    if not counts_close(drafted, k * steps):
        raise DistributionError(
            f"{src}: {STATS_DRAFT_TOKENS}={format_count(drafted)} but k*steps={k}*{format_count(steps)}"
            f"={format_count(k * steps)}",
            hint="ATOM charges K draft tokens to every step; is k right, and are the fields from one snapshot?",
        )
    acc = as_count(stats[STATS_ACCEPTED], f"{src}: {STATS_ACCEPTED}")
    weighted = sum(j * float(h) for j, h in enumerate(hist))
    if not counts_close(weighted, acc):
        raise DistributionError(
            f"{src}: {STATS_DISTRIBUTION} {hist} holds {format_count(weighted)} accepted drafts (sum of j*steps_j) "
            f"but {STATS_ACCEPTED}={format_count(acc)}",
            hint=f"keys of {STATS_DISTRIBUTION} are accepted DRAFT tokens per step (bonus excluded)",
        )
    return from_histogram(hist, k=k, num_draft_tokens=drafted, source=src, field_names=_FIELD_NAMES)


def mtp_stats_delta(before: Mapping[str, Any], after: Mapping[str, Any], *,
                    k: int | None = None) -> AcceptanceCounts:
    """Counts of one run from two ``/debug/mtp_stats`` snapshots (ATOM has no reset endpoint).

    Raises:
        CounterWentBackwardsError: if any count decreased (the server restarted).
    """
    src = "atom-mtp-stats"
    picked = []
    for snap, label in ((before, "before"), (after, "after")):
        if snap.get(STATS_ENABLED) is False:
            raise DistributionError(f"{src} ({label}): enabled=false: speculative decoding is off")
        try:
            picked.append({
                STATS_DISTRIBUTION: dict(enumerate(_distribution(snap[STATS_DISTRIBUTION], f"{src} ({label})"))),
                STATS_DRAFT_TOKENS: snap[STATS_DRAFT_TOKENS],
                STATS_ACCEPTED: snap[STATS_ACCEPTED],
            })
        except KeyError as exc:
            raise DistributionError(f"{src} ({label}): missing {exc.args[0]!r}",
                                    hint=f"is this {MTP_STATS_PATH}?") from None
    d = delta(picked[0], picked[1], name=src)
    return counts_from_mtp_stats(d, k=k)


def _simulate_rate_al(sampler: Any, al: float | None, k: int) -> float:
    """The AL ``--spec-decode-acceptance-rate`` injects; ``--al`` with it is refused (the knobs exclude each other)."""
    if al is not None:
        raise plugin.UsageError("give --al or --acceptance-rate, not both (ATOM's knobs are mutually exclusive)")
    return units.al_from_acceptance_rate(sampler.rate, k)


def simulate_report(sampler: Any, al: float, k: int, settings: Mapping[str, Any]) -> dict[str, Any]:
    """``simulate``'s ATOM field: the rate form of the AL."""
    return {"acceptance_rate": (al - 1.0) / k}

def _tolerance(ctx: plugin.PinContext) -> float:
    """A rate is a rounded ``(AL - 1) / k``: it matches when it is the golden rate rounded to the digits
    written (``spec["decimals"]``) and still gives the golden AL to half a unit of its second decimal."""
    if ctx.knob.endswith("rate") and ctx.k:
        decimals = int(ctx.spec.get("decimals", 6))
        return min(ctx.k * 0.5 * 10.0 ** (-decimals), 0.005) + 1e-9
    return 1e-9



def env_draft_len(algorithm: str | None, values: Mapping[str, int]) -> plugin.DraftLen:
    """k from ``golden-al env --num-speculative-tokens N``: N itself."""
    return plugin.DraftLen(int(values["num_speculative_tokens"]), "--num-speculative-tokens N")



def forced_in_args(args: Sequence[str]) -> tuple[str, str] | None:
    """``--spec-decode-acceptance-length`` / ``-rate`` among server arguments, as (what, hint), or None."""
    found = plugin.set_flag(args, (LENGTH_FLAG, RATE_FLAG))
    return None if found is None else (f"{found[0]} {found[1]}", f"drop {found[0]} for a measurement")


_FORCED = re.compile(LOG_FORCED)


def forced_in_log_line(line: str) -> tuple[str, str] | None:
    """ATOM's "Forced speculative acceptance ON" log line, as (what, hint), or None."""
    if _FORCED.search(line):
        return "ATOM forced acceptance", f"restart ATOM without {LENGTH_FLAG}/{RATE_FLAG}"
    return None


PROFILE = plugin.EngineProfile(
    name="atom",
    frameworks=("atom", "atom-disagg"),
    display_name="ATOM",
    algorithms=METHODS,
    draft_len_rules=(plugin.DraftLenRule("*", f"k = {FLAG_K} (default {DEFAULT_K})", True, _ARGS),),
    limits=(
        plugin.Limit("num_speculative_tokens", SEQUENTIAL_METHODS, MAX_SEQUENTIAL_K,
                     f"sequential drafters (mtp, eagle3) accept {FLAG_K} 1..{MAX_SEQUENTIAL_K} "
                     "(Config.__post_init__ raises ValueError above)", _CONFIG),
    ),
    sources=(_ARGS, _CONFIG, _ENGINE, _SCHEDULER, _SERVER, _METRICS),
    curve_methods=CURVE_METHODS,
    env_prefixes=("ATOM_",),
    check=plugin.CheckSupport(
        forced_in_args=forced_in_args,
        forced_in_log_line=forced_in_log_line,
        env_options=(plugin.EnvOption("--num-speculative-tokens", f"ATOM {FLAG_K} (k = N)"),),
        env_draft_len=env_draft_len,
        review_pin=review_pin,
        pin_tolerance=_tolerance,
        settings_draft_len=settings_draft_len,
        script_speculation=script_speculation,
        script_settings="the ATOM launch flags",
        script_flags=(FLAG_K, FLAG_METHOD, FLAG_DRAFT_MODEL),
        script_pin=plugin.lazy(f"{__name__}.pins:atom_pin"),
        synthetic_knobs=(
            plugin.SyntheticKnob(LENGTH_FLAG, "flag", "al", source=_ARGS),
            plugin.SyntheticKnob(RATE_FLAG, "flag", "rate", source=_ARGS),
        ),
        synthetic_settings=synthetic_settings,
        shell_variable=SHELL_VARIABLE,
        shell_value=shell_value,
    ),
    server=plugin.ServerSupport(
        metrics=(
            plugin.Metric(METRIC_DRAFT_TOKENS, "counter", "drafted tokens (K per step)", source=_METRICS),
            plugin.Metric(METRIC_ACCEPTED, "counter", "accepted draft tokens", source=_METRICS),
            plugin.Metric(METRIC_DECODE_STEPS, "counter", "decode steps by accepted drafts", (ACCEPTED_LABEL,), _METRICS),
            plugin.Metric(METRIC_AVG_TOKENS_PER_FORWARD, "gauge", "1 + accepted / steps", source=_METRICS),
        ),
        response_fields={
            "num_accepted_drafts": plugin.ResponseField("accepted drafts", (STATS_ACCEPTED,), MTP_STATS_PATH, _ENGINE),
            "num_draft_tokens": plugin.ResponseField("drafted tokens", (STATS_DRAFT_TOKENS,), MTP_STATS_PATH, _ENGINE),
            "histogram": plugin.ResponseField("steps by accepted drafts", (STATS_DISTRIBUTION,), MTP_STATS_PATH, _ENGINE),
            "reported_al": plugin.ResponseField("tokens per forward", (STATS_AVG_TOKENS,), MTP_STATS_PATH, _ENGINE),
        },
        server_info_fields={"length": LENGTH_KEY, "rate": RATE_KEY},
        counter_reader=plugin.lazy(f"{__name__}.counters:read"),
        reference_flavor=plugin.lazy(f"{__name__}.reference:AtomFlavor"),
        counter_marker=METRIC_DRAFT_TOKENS,
        lifetime_prefixes=(METRIC_PREFIX,),
        al_sources=("atom-mtp-stats",),
        source_impls={"atom-mtp-stats": plugin.lazy(f"{__name__}.server:AtomMtpStatsSource")},
        server_probe=plugin.lazy(f"{__name__}.server:probe"),
    ),
    launch=plugin.LaunchSupport(
        spec_flags=spec_flags,
        launch_command=("-m", LAUNCH_MODULE),
        server_args=server_args,
        reserved_flags=("--model", FLAG_SERVER_PORT, "--host", "--tensor-parallel-size", "-tp", FLAG_METHOD,
                        FLAG_K, FLAG_DRAFT_MODEL, "--served-model-name"),
    ),
    simulate=plugin.SimulateSupport(
        default_sampler="synthetic",
        samplers={"synthetic": plugin.lazy(f"{__name__}.sampler:AtomSynthetic")},
        simulator_settings=simulator_settings,
        simulate_options=(plugin.SimulateOption(
            "--acceptance-rate", "rate", type=float, metavar="RATE", gives_al=_simulate_rate_al,
            help=f"{RATE_FLAG} (AL-1)/K in [0, 1], instead of --al"),),
        simulate_report=simulate_report,
    ),
    recipe=plugin.RecipeFormat("atom_config", ("atom",), read_recipe_role, inject_into="args",
                               spec_keys=tuple(f[2:] for f in RECIPE_FLAGS)),
    run_logs=plugin.RunLogSupport(
        log_patterns=LOG_PATTERNS,
        run_evidence=plugin.lazy(f"{__name__}.evidence:read"),
        log_reader=plugin.LogReader(plugin.lazy(f"{__name__}.logs:parse_atom_mtp_line"), ("[MTP Stats",)),
    ),
)
