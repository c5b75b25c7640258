"""vLLM: everything golden-al knows about it, in one place.

Upstream (vllm-project/vllm, 0.33.0 unless noted):

* ``vllm/config/speculative.py``: ``--speculative-config`` keys, the draft length
  (``num_speculative_tokens``) and the synthetic rejection sampler's knobs
  (``rejection_sample_method``, ``synthetic_acceptance_length``/``_rates``), reproduced in
  :mod:`golden_al.engines.vllm.sampler`.
* ``vllm/v1/spec_decode/metrics.py`` ``SpecDecodingProm`` and ``SpecDecodingLogging``: the
  Prometheus counters and the ``SpecDecoding metrics:`` log line.
* ``vllm/v1/metrics/stats.py`` ``RequestSpecDecodeMetrics.to_dict``: the per-request
  ``metrics.speculative_decoding`` object (``--per-request-spec-decode-metrics``).
* ``vllm/entrypoints/openai/api_server.py``: the server and its ``non-default args`` log line.
"""

from __future__ import annotations

import ast
import itertools
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from distributions import units
from distributions.counts import (
    AcceptanceCounts,
    as_count,
    as_counts,
    counts_close,
    format_count,
    from_histogram,
    split_steps_by_draft_len,
)
from distributions.errors import DistributionError
from golden_al import plugin

__all__ = ["LENGTH_KEY", "METHOD_KEY", "PROFILE", "RATES_KEY", "counts_from_request_metrics", "draft_len",
           "speculative_config", "steps_by_draft_len", "synthetic_settings"]

VERSION = "0.33.0"
_REPO = "vllm-project/vllm"
_CONFIG = plugin.Source(_REPO, "vllm/config/speculative.py", VERSION)
_METRICS = plugin.Source(_REPO, "vllm/v1/spec_decode/metrics.py", VERSION)
_STATS = plugin.Source(_REPO, "vllm/v1/metrics/stats.py", VERSION)
_SERVER = plugin.Source(_REPO, "vllm/entrypoints/openai/api_server.py", VERSION)
#: vLLM 0.34.0 ``vllm/config/speculative.py``: ``num_speculative_tokens_per_batch_size`` (a
#: ``(range_start, range_end, k)`` schedule by batch size) and ``enable_adaptive_verification``
#: ("adaptively size the draft-verification budget from per-request confidence", DSpark).
_CONFIG_034 = plugin.Source(_REPO, "vllm/config/speculative.py", "0.34.0")

#: The releases whose facts golden-al knows. 0.34.0 ``SpeculativeMethod`` (``vllm/config/speculative.py``,
#: ``_validate_method``) lists ngram, draft_model, suffix, eagle, eagle3, extract_hidden_states, the ``*_mtp``
#: model types, dflash, ngram_gpu and dspark, and refuses any other method that no plugin registered:
#: ``medusa``, ``mlp_speculator`` and ``pard`` are gone. It also adds FLy (``rejection_sample_method: fly``,
#: lossy), ``dspark_draft_topk`` and ``draft_lm_head_quantization``.
VERSIONS: tuple[plugin.EngineVersion, ...] = (
    plugin.EngineVersion("0.33.0", _CONFIG, notes=("the V1 engine; medusa and mlp_speculator methods",)),
    plugin.EngineVersion("0.34.0", _CONFIG_034, refused_algorithms=("medusa", "mlp_speculator", "pard"),
                         notes=("medusa, mlp_speculator and pard refused", "FLy lossy acceptance (rejection_sample_method fly)",
                                "num_speculative_tokens_per_batch_size, enable_adaptive_verification (run-time k)")),
)
#: Where a file names the vLLM version: the official image's tag, a pip/uv pin.
VERSION_PATTERNS: tuple[str, ...] = (r"vllm/vllm-openai:v?(?P<version>\d+\.\d+\.\d+)",
                                     r"\bvllm\s*==\s*(?P<version>\d+\.\d+\.\d+)")

# ----------------------------------------------------------------- --speculative-config
FLAG_SPEC_CONFIG = "--speculative-config"
SPEC_CONFIG_FLAGS: tuple[str, ...] = (FLAG_SPEC_CONFIG, "--speculative_config", "-sc")
#: The key of the recipe/server-args dict that holds the speculative config.
SPEC_CONFIG_KEY = "speculative_config"
#: srt-slurm recipes (NVIDIA srt-slurm ``srtctl`` schema, as in SemiAnalysisAI/InferenceX
#: ``benchmarks/multi_node/srt-slurm-recipes`` at 843c6254f): the ``backend`` key holding per-role
#: engine arguments, and the ``backend.type`` spellings of this engine.
RECIPE_CONFIG_KEY = "vllm_config"
RECIPE_BACKEND_TYPES: tuple[str, ...] = ("vllm",)
K_KEY = "num_speculative_tokens"
METHOD_KEY = "rejection_sample_method"
LENGTH_KEY = "synthetic_acceptance_length"
RATES_KEY = "synthetic_acceptance_rates"
#: PR #38045's older MRV2 key (geometric decay), superseded by :data:`RATES_KEY`.
LEGACY_RATE_KEY = "synthetic_acceptance_rate"
#: The synthetic value keys of a speculative config, in the order a pin chooses its knob by (length first).
CONFIG_VALUE_KEYS: tuple[str, ...] = (LENGTH_KEY, RATES_KEY, LEGACY_RATE_KEY)
SYNTHETIC_METHOD = "synthetic"
#: ``rejection_sample_method`` values (``RejectionSampleMethod``, 0.33 and 0.34). ``standard`` (per-token rejection,
#: lossless) is the default (``vllm/config/speculative.py`` line 610 at 0.34.0); ``block`` (block verification, lossless)
#: accepts otherwise for sampled requests only (``v1/worker/gpu/spec_decode/rejection_sampler_utils.py`` lines 617, 645);
#: ``fly`` is lossy. A restore writes the golden curve's method where it names one, else the default.
REJECTION_METHODS: tuple[str, ...] = ("standard", SYNTHETIC_METHOD, "block", "fly")
REAL_METHOD_DEFAULT = "standard"
FLAG_PER_REQUEST_METRICS = "--per-request-spec-decode-metrics"
PER_REQUEST_LEVELS: tuple[str, ...] = ("summary", "detailed")
LAUNCH_MODULE = "vllm.entrypoints.openai.api_server"
#: ``golden-al env`` shell/dotenv variable holding a whole ``--speculative-config``.
SHELL_VARIABLE = "GOLDEN_AL_VLLM_SPECULATIVE_CONFIG"
#: ``--speculative-config`` methods that take a separate draft checkpoint.
DRAFT_METHODS: tuple[str, ...] = ("draft_model", "eagle", "eagle3", "dflash", "medusa", "mlp_speculator")
#: ``golden-al env --method`` (curve method) -> ``method`` key value.
ENV_METHOD_NAMES: dict[str, str] = {"mtp": "mtp", "eagle": "eagle", "eagle3": "eagle3", "dflash": "dflash",
                                    "dspark": "dspark", "ngram": "ngram", "draft-model": "draft_model",
                                    "medusa": "medusa", "suffix": "suffix"}
#: Golden-curve method per ``method`` (every ``*_mtp`` also maps to ``mtp``).
CURVE_METHODS: dict[str, str] = {
    "mtp": "mtp", "eagle3": "eagle3", "dflash": "dflash", "dspark": "dspark", "ngram": "ngram",
    "ngram-gpu": "ngram", "draft-model": "draft-model", "medusa": "medusa", "suffix": "suffix", "pard": "pard",
}


def curve_method_of(method: str) -> str | None:
    """The golden-curve method of a speculative-config ``method`` (lower case, ``-`` for ``_``); a
    model-specific MTP spelling (``deepseek_mtp``, ``qwen3_next_mtp``, ...) is ``mtp``."""
    low = method.strip().lower().replace("_", "-")
    return CURVE_METHODS.get(low) or ("mtp" if low.endswith("-mtp") else None)


# ----------------------------------------------------------------- metrics
METRIC_DRAFTS = "vllm:spec_decode_num_drafts_total"
METRIC_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
METRIC_ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
METRIC_ACCEPTED_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
METRIC_PREFIX = "vllm:spec_decode_"
POSITION_LABEL = "position"

# ----------------------------------------------------------------- per-request metrics
REQUEST_METRICS = "metrics"
REQUEST_SPEC = "speculative_decoding"
REQ_HISTOGRAM = "acceptance_histogram"
REQ_STEPS = "num_spec_steps"
REQ_ACCEPTED = "num_accepted_draft_tokens"
REQ_DRAFT_TOKENS = "num_draft_tokens"
REQ_K = "num_spec_tokens"
REQ_PER_STEP = "per_step_accepted"
#: Detailed level: proposed drafts per step, "the effective proposal length per step, so variable-length
#: drafting (e.g. adaptive speculation) is represented" (docs/features/spec_decode per-request metrics;
#: vllm/v1/metrics/stats.py RequestSpecDecodeMetrics.to_dict, 0.33.0).
REQ_PER_STEP_DRAFTED = "per_step_drafted"
REQ_MEAN_AL = "mean_acceptance_length"
REQ_RATE = "draft_acceptance_rate"

# `vllm bench serve --save-result` JSON (vllm-project/vllm vllm/benchmarks/serve.py, commit 009e6d4a):
# deltas of the /metrics spec-decode counters over the run; rates = accepted at the position / drafts
BENCH_DRAFTS = "spec_decode_num_drafts"
BENCH_DRAFT_TOKENS = "spec_decode_draft_tokens"
BENCH_ACCEPTED = "spec_decode_accepted_tokens"
BENCH_POSITION_RATES = "spec_decode_per_position_acceptance_rates"

_REQUEST_FIELDS = {
    "num_verify_steps": REQ_STEPS,
    "num_accepted_drafts": REQ_ACCEPTED,
    "num_draft_tokens": REQ_DRAFT_TOKENS,
    "histogram": REQ_HISTOGRAM,
}

# ----------------------------------------------------------------- server / log
#: vLLM logs its non-default args at startup; the dict holds ``speculative_config``.
LOG_NON_DEFAULT_ARGS = r"non-default args: (\{.*\})\s*$"
#: The repr of a config with the synthetic sampler on, as the startup log prints it.
LOG_SYNTHETIC_REPR = r"rejection_sample_method\s*=\s*'synthetic'"
#: ``/server_info`` exists only with this set (dev mode).
ENV_DEV_MODE = "VLLM_SERVER_DEV_MODE"
#: The interval line as 0.33.0 prints it (``vllm/v1/spec_decode/metrics.py``), for ``serve-reference``.
LOG_SPEC_DECODING_FORMAT = (
    "(APIServer pid={pid}) INFO {time} [metrics.py:120] SpecDecoding metrics: Mean acceptance length: {al:.2f}, "
    "Accepted throughput: {accepted_per_s:.2f} tokens/s, Drafted throughput: {drafted_per_s:.2f} tokens/s, "
    "Accepted: {accepted} tokens, Drafted: {drafted} tokens, Per-position acceptance rate: {rates}, "
    "Avg Draft acceptance rate: {rate:.1f}%"
)
_NUM = plugin.LOG_NUMBER
LOG_PATTERNS: tuple[plugin.LogPattern, ...] = (
    plugin.LogPattern("spec-head", r"SpecDecoding metrics: (?P<body>.*)$",
                      '"SpecDecoding metrics: " then the fields below, in this order (0.33.0 / 0.32.0)', _METRICS, marker='SpecDecoding metrics'),
    plugin.LogPattern("mean-al", rf"(?:^|, )Mean acceptance length: (?P<v>{_NUM})(?=,|$)",
                      '"Mean acceptance length: %.2f"', _METRICS),
    plugin.LogPattern("accepted-throughput", rf"(?:^|, )Accepted throughput: (?P<v>{_NUM}) tokens/s",
                      '"Accepted throughput: %.2f tokens/s"', _METRICS),
    plugin.LogPattern("drafted-throughput", rf"(?:^|, )Drafted throughput: (?P<v>{_NUM}) tokens/s",
                      '"Drafted throughput: %.2f tokens/s"', _METRICS),
    plugin.LogPattern("accepted", r"(?:^|, )Accepted: (?P<v>\d+) tokens", '"Accepted: %d tokens"', _METRICS),
    plugin.LogPattern("drafted", r"(?:^|, )Drafted: (?P<v>\d+) tokens", '"Drafted: %d tokens"', _METRICS),
    plugin.LogPattern("per-position", rf"(?:^|, )Per-position acceptance rate: (?P<v>(?:{_NUM})(?:, (?:{_NUM}))*)",
                      '"Per-position acceptance rate: %s" (", ".join of "%.3f")', _METRICS),
    plugin.LogPattern("rate", rf"(?:^|, )(?:Avg )?Draft acceptance rate: (?P<v>{_NUM})%",
                      '"Avg Draft acceptance rate: %.1f%%" (older V1: "Draft acceptance rate")', _METRICS),
    plugin.LogPattern("non-default-args", LOG_NON_DEFAULT_ARGS, "startup args that differ from defaults", _SERVER),
    plugin.LogPattern("synthetic-repr", LOG_SYNTHETIC_REPR, "the speculative config with the synthetic sampler",
                      _CONFIG),
)


# ----------------------------------------------------------------- draft length / settings
def draft_len(speculative_config: Mapping[str, Any] | str) -> plugin.DraftLen:
    """``k = num_speculative_tokens`` from ``--speculative-config`` (dict or JSON)."""
    cfg, why = plugin.json_object(speculative_config)
    if cfg is None:
        raise plugin.UsageError(f"{FLAG_SPEC_CONFIG} is {why}")
    k = plugin.int_flag(cfg.get(K_KEY), K_KEY)
    if k is None:
        raise plugin.UsageError(f"{FLAG_SPEC_CONFIG} has no {K_KEY}",
                                hint=f'e.g. {{"method": "mtp", "{K_KEY}": 3}}')
    return plugin.DraftLen(units.check_draft_len(k), K_KEY, chain=True)


#: Keys of a recipe role's arguments that hold the speculative config (srt-slurm writes either).
RECIPE_SPEC_KEYS: tuple[str, ...] = (FLAG_SPEC_CONFIG[2:], SPEC_CONFIG_KEY)


def read_recipe_role(args: Mapping[str, Any]) -> plugin.Speculation | None:
    """One srt-slurm role's speculative config (a mapping or JSON text); None: no such key. A config
    that is not a JSON object is a :attr:`Speculation.problem`, never read."""
    key = next((k for k in RECIPE_SPEC_KEYS if k in args), None)
    if key is None:
        return None
    spec, problem = plugin.json_object(args[key])
    if spec is None:
        return plugin.Speculation("vllm", None, {}, key, None, problem=problem, speculates=False)
    method = spec.get("method")
    return plugin.Speculation("vllm", str(method) if method else None, spec, key, spec.get("model"),
                              spec.get("draft_sample_method"), spec.get(METHOD_KEY), draft_inputs={K_KEY: spec.get(K_KEY)},
                              review_spec={"config": spec})


def settings_draft_len(spec: plugin.Speculation | None) -> plugin.DraftLen:
    """k of :func:`read_recipe_role`'s config (:func:`draft_len`).

    Raises:
        UsageError: no readable config, or no ``num_speculative_tokens`` in it.
    """
    if spec is None or spec.problem is not None:
        raise plugin.UsageError(f"no {FLAG_SPEC_CONFIG[2:]}" + (f": it is {spec.problem}" if spec and spec.problem else ""))
    d = draft_len(dict(spec.settings))
    return replace(d, described=f"vLLM {K_KEY}={d.k}", algorithm=spec.algorithm)


def harness_pin(value: str | None, spec: plugin.Speculation | None) -> tuple[dict[str, Any], list[str]]:
    """What InferenceX's vLLM injector (``runners/synthetic_injectors/vllm.py`` at 843c6254f) writes beside
    a master-config length: the speculative config the review reads, and a note when it replaces a real
    ``rejection_sample_method`` of the recipe's decode role."""
    notes = []
    method = spec.rejection_sample_method if spec is not None else None
    if method not in (None, SYNTHETIC_METHOD, "standard"):
        notes.append(f"the injector replaces {METHOD_KEY} {method!r}")
    return {"config": {METHOD_KEY: SYNTHETIC_METHOD, LENGTH_KEY: value}}, notes


def speculative_config(k: int, *, method: str | None = None, model: str | None = None,
                       extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A ``--speculative-config`` dict asking for draft length ``k``."""
    cfg: dict[str, Any] = {}
    if method:
        cfg["method"] = method
    if model:
        cfg["model"] = model
    cfg[K_KEY] = units.check_draft_len(k)
    cfg.update(extra or {})
    return cfg


def synthetic_settings(al: float, k: int) -> dict[str, Any]:
    """``{"rejection_sample_method": "synthetic", "synthetic_acceptance_length": 4.05}``.

    Keys to merge into ``--speculative-config``.
    """
    al = units.check_al(al, k)
    return {METHOD_KEY: SYNTHETIC_METHOD, LENGTH_KEY: float(plugin.format_value(al))}


def simulator_settings(sampler: Any, al: float | None, k: int) -> dict[str, Any]:
    """The ``--speculative-config`` a :mod:`golden_al.engines.vllm.sampler` sampler stands for."""
    k = units.check_draft_len(k)
    spec: dict[str, Any] = {K_KEY: k, METHOD_KEY: SYNTHETIC_METHOD}
    if sampler.rates is not None:
        spec[RATES_KEY] = sampler.unconditional_rates(al, k).tolist()
    else:
        spec[LENGTH_KEY] = units.check_al(al, k) if al is not None else None
    return {FLAG_SPEC_CONFIG: spec}


def shell_value(settings: Mapping[str, Any], k: int, curve_method: str | None) -> str:
    """A whole ``--speculative-config`` JSON (k, ``method`` when known, the synthetic keys)."""
    method = ENV_METHOD_NAMES.get(curve_method) if curve_method else None
    return json.dumps(speculative_config(k, method=method, extra=settings), separators=(",", ":"))


def method_for_launch(algorithm: str | None, draft: str | None) -> str:
    """The speculative method of a launch: the given one, else ``draft_model`` with a draft."""
    if algorithm:
        return algorithm.lower().replace("-", "_")
    if draft:
        return "draft_model"
    raise plugin.UsageError("vLLM launch needs --algorithm (e.g. ngram, mtp, eagle3) or --draft",
                            hint="e.g. --algorithm ngram --speculative-extra "
                            "'{\"prompt_lookup_max\": 4, \"prompt_lookup_min\": 2}'")


def launch_config(req: plugin.LaunchRequest) -> dict[str, Any]:
    """The ``--speculative-config`` dict of a launch (refuses synthetic keys in the extras)."""
    method = method_for_launch(req.algorithm, req.draft)
    if method in DRAFT_METHODS and method != "draft_model" and not req.draft:
        raise plugin.UsageError(f"vLLM method {method} needs a draft checkpoint", hint="pass --draft PATH")
    cfg = speculative_config(req.draft_len, method=None if method == "draft_model" else method,
                             model=req.draft if method in DRAFT_METHODS else None, extra=req.speculative_extra)
    if cfg.get(K_KEY) != req.draft_len:
        raise plugin.UsageError(f"--speculative-extra must not set {K_KEY}; use --draft-len")
    return cfg


def server_args(req: plugin.LaunchRequest) -> list[str]:
    """``-m vllm.entrypoints.openai.api_server`` and its flags for a ``measure --launch`` request."""
    cmd = ["-m", LAUNCH_MODULE, "--model", req.target, "--host", req.host, "--port", str(req.port),
           "--tensor-parallel-size", str(req.tp),
           FLAG_SPEC_CONFIG, json.dumps(launch_config(req), separators=(",", ":"))]
    if req.per_request_metrics:
        if req.per_request_metrics not in PER_REQUEST_LEVELS:
            raise plugin.UsageError(f"per-request metrics level must be summary or detailed, got {req.per_request_metrics!r}")
        cmd += [FLAG_PER_REQUEST_METRICS, req.per_request_metrics]
    return cmd


def forced_in_config(cfg: Mapping[str, Any]) -> tuple[str, str] | None:
    """The synthetic rejection sampler in a speculative config (``rejection_sample_method: synthetic`` or a
    ``synthetic_acceptance_*`` key), as (what, hint), or None."""
    method = cfg.get(METHOD_KEY)
    if isinstance(method, str) and method.strip().lower() == SYNTHETIC_METHOD:
        return f'"{METHOD_KEY}": "{SYNTHETIC_METHOD}"', f'drop {METHOD_KEY} (or set it to "standard") for a measurement'
    for key in (LENGTH_KEY, RATES_KEY):
        if cfg.get(key) is not None:
            return f'"{key}": {cfg[key]!r}', f"drop {key} for a measurement"
    return None


def forced_in_args(args: Sequence[str]) -> tuple[str, str] | None:
    """:func:`forced_in_config` of the ``--speculative-config`` among server arguments."""
    cfg = find_speculative_config(args)
    return forced_in_config(cfg) if cfg is not None else None


_ARGS_LINE = re.compile(LOG_NON_DEFAULT_ARGS)
_SPEC_REPR = re.compile(LOG_SYNTHETIC_REPR)


def non_default_args(line: str) -> dict[str, Any] | None:
    """The ``non-default args: {...}`` dict of a vLLM start-up log line (a Python repr), or None."""
    m = _ARGS_LINE.search(line)
    if not m:
        return None
    try:
        value = ast.literal_eval(m.group(1))
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, dict) else None


def forced_in_log_line(line: str) -> tuple[str, str] | None:
    """The synthetic sampler in a log line: the ``non-default args: {...}`` start-up line's speculative config, or
    the config's repr naming ``rejection_sample_method='synthetic'``."""
    args = non_default_args(line)
    if args is not None:
        if isinstance(args.get(SPEC_CONFIG_KEY), Mapping):
            found = forced_in_config(args[SPEC_CONFIG_KEY])
            if found is not None:
                return found
    if _SPEC_REPR.search(line):
        return f"{METHOD_KEY}='{SYNTHETIC_METHOD}'", "restart vLLM without the synthetic sampler"
    return None


def find_speculative_config(args: Sequence[str]) -> dict[str, Any] | None:
    """The JSON of ``--speculative-config`` in an argument list (``--x v`` or ``--x=v``)."""
    for i, arg in enumerate(args):
        value: str | None = None
        for name in SPEC_CONFIG_FLAGS:
            if arg == name and i + 1 < len(args):
                value = args[i + 1]
            elif arg.startswith(name + "="):
                value = arg.split("=", 1)[1]
        if value is not None:
            try:
                loaded = json.loads(value)
            except json.JSONDecodeError:
                return None
            return loaded if isinstance(loaded, dict) else None
    return None


# ----------------------------------------------------------------- check's rules
def review_pin(ctx: plugin.PinContext) -> plugin.PinReview:
    """vLLM's rules for the synthetic keys of a ``--speculative-config`` (``vllm/config/speculative.py``;
    ``ctx.spec["config"]``)."""
    knob, raw, k, cfg = ctx.knob, ctx.raw, ctx.k, ctx.spec.get("config") or {}
    r = plugin.PinReview()
    method = cfg.get(METHOD_KEY)
    has_len = LENGTH_KEY in cfg
    has_rates = RATES_KEY in cfg
    has_old = LEGACY_RATE_KEY in cfg
    if method != SYNTHETIC_METHOD:
        shown = repr(method) if method else "absent"
        r.problems.append(("missing-companion", f"{METHOD_KEY} is {shown}, not "
                                                f"'{SYNTHETIC_METHOD}': vLLM rejects synthetic_acceptance_* without it"))
    if has_len and has_rates:
        r.problems.append(("unsafe-value", f"both {LENGTH_KEY} and _rates are set; vLLM requires exactly one"))
    if not has_len and not has_rates and not has_old:
        r.problems.append(("missing-companion", f"{METHOD_KEY} is {SYNTHETIC_METHOD} but neither "
                                                f"{LENGTH_KEY} nor _rates is set"))
        return r
    if has_old and not has_len and not has_rates:
        r.notes.append(f"{LEGACY_RATE_KEY} (singular) is the older vLLM MRV2 key (PR #38045, geometric decay); "
                       "its mean is not comparable with a golden AL")
        return r
    if knob == RATES_KEY or (has_rates and not has_len):
        rates = cfg.get(RATES_KEY)
        if not isinstance(rates, list) or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                  for x in rates):
            return r
        if k is not None and len(rates) != k:
            r.problems.append(("unsafe-value", f"{RATES_KEY} has {len(rates)} entries, "
                                               f"{K_KEY} is {k}: vLLM rejects it"))
        if any(not 0.0 <= x <= 1.0 for x in rates) or any(b > a + 1e-12 for a, b in itertools.pairwise(rates)):
            r.problems.append(("unsafe-value", f"{RATES_KEY} must lie in [0, 1] and not increase: vLLM rejects them"))
            return r
        r.notes.append("vLLM rates: AL = 1 + sum(rates)")
        r.al = 1.0 + math.fsum(float(x) for x in rates)
        return r
    length = PROFILE.review_value(LENGTH_KEY, raw, plugin.parse_number(raw), k)  # an AL in [1, k+1]
    r.al, r.problems = length.al, r.problems + length.problems
    return r


# ----------------------------------------------------------------- counts
def counts_from_request_metrics(metrics: Mapping[str, Any], *, k: int | None = None) -> AcceptanceCounts:
    """Counts from one response's ``metrics.speculative_decoding``.

    Mirrors ``vllm/v1/metrics/stats.py`` ``RequestSpecDecodeMetrics.to_dict`` (server flag
    ``--per-request-spec-decode-metrics summary|detailed``): ``acceptance_histogram``
    (dense, index = accepted drafts, length K+1), ``num_spec_steps`` (= sum of the
    histogram), ``num_accepted_draft_tokens``, ``num_draft_tokens``, ``num_spec_tokens``
    (= K) and, at the detailed level, ``per_step_accepted``. Accepts the outer ``metrics``
    dict too. Reported totals are checked against the histogram.
    """
    src = "vllm-request-metrics"
    if REQUEST_SPEC in metrics and isinstance(metrics[REQUEST_SPEC], Mapping):
        metrics = metrics[REQUEST_SPEC]
    if REQ_HISTOGRAM not in metrics:
        raise DistributionError(
            f"{src}: no {REQ_HISTOGRAM} in {sorted(metrics)}",
            hint=f"start vLLM (>= {VERSION}) with {FLAG_PER_REQUEST_METRICS} summary",
        )
    hist = as_counts(metrics[REQ_HISTOGRAM], f"{src}: {REQ_HISTOGRAM}")
    spec_tokens = metrics.get(REQ_K)
    if spec_tokens is not None:
        spec_tokens = int(as_count(spec_tokens, f"{src}: {REQ_K}"))
        if k is not None and int(k) != spec_tokens:
            raise DistributionError(f"{src}: {REQ_K}={spec_tokens} but k={k} was given")
    k = k if k is not None else (spec_tokens if spec_tokens is not None else len(hist) - 1)
    counts = from_histogram(hist, k=k, num_draft_tokens=metrics.get(REQ_DRAFT_TOKENS), source=src,
                            field_names=_REQUEST_FIELDS)
    for key, have in ((REQ_STEPS, counts.num_verify_steps), (REQ_ACCEPTED, counts.num_accepted_drafts)):
        if metrics.get(key) is not None and not counts_close(as_count(metrics[key], f"{src}: {key}"), have):
            raise DistributionError(
                f"{src}: {key}={metrics[key]!r} but {REQ_HISTOGRAM} {hist} implies {format_count(have)}",
                hint=f"index j of {REQ_HISTOGRAM} is the number of accepted draft tokens in a step",
            )
    per_step = metrics.get(REQ_PER_STEP)
    if per_step is not None:
        steps = as_counts(per_step, f"{src}: {REQ_PER_STEP}")
        if len(steps) != counts.num_verify_steps or not counts_close(sum(steps), counts.num_accepted_drafts):
            raise DistributionError(
                f"{src}: {REQ_PER_STEP} ({len(steps)} steps, {sum(steps)} accepted) disagrees with the "
                f"histogram ({counts.num_verify_steps} steps, {counts.num_accepted_drafts} accepted)"
            )
    return counts


def steps_by_draft_len(metrics: Mapping[str, Any], *, k: int, max_tokens: int | None = None,
                       output_tokens: int | None = None) -> dict[int, AcceptanceCounts] | None:
    """One response's steps split by the draft length they were proposed at, or None.

    Needs the detailed level (``per_step_accepted`` and ``per_step_drafted``); a step the
    request's end capped is still a step of ``k`` (see
    :func:`distributions.counts.split_steps_by_draft_len`). None when the arrays are absent
    (the summary level cannot tell the lengths apart).
    """
    if REQUEST_SPEC in metrics and isinstance(metrics[REQUEST_SPEC], Mapping):
        metrics = metrics[REQUEST_SPEC]
    acc, drafted = metrics.get(REQ_PER_STEP), metrics.get(REQ_PER_STEP_DRAFTED)
    if acc is None or drafted is None:
        return None
    return split_steps_by_draft_len(acc, drafted, k=k, max_tokens=max_tokens, output_tokens=output_tokens,
                                    source="vllm-request-metrics")


# ----------------------------------------------------------------- the profile
def _simulate_rates_al(sampler: Any, al: float | None, k: int) -> float:
    """The AL explicit rates inject (a given ``--al`` must agree with them)."""
    implied = float(sampler.implied_al(k))
    if al is not None:
        sampler.unconditional_rates(al, k)  # raises if they disagree
    return implied


async def per_request_probe(client: Any, served_model: str, messages: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the server adds ``metrics.speculative_decoding`` to a response (vLLM >= 0.33 started with
    ``--per-request-spec-decode-metrics``; vllm-project/vllm ``vllm/entrypoints/openai/protocol.py``,
    0.33.0): one 2-token request, sent before any counter snapshot."""
    body = {"model": served_model, "messages": [dict(m) for m in messages], "max_tokens": 2,
            "temperature": 0.0, "stream": False}
    resp = await client.post_json("/v1/chat/completions", body, label="per-request metrics probe")
    metrics = resp.get(REQUEST_METRICS) if isinstance(resp, Mapping) else None
    return isinstance(metrics, Mapping) and isinstance(metrics.get(REQUEST_SPEC), Mapping)


def response_steps_by_draft_len(resp: Mapping[str, Any], k: int, *, max_tokens: int | None,
                                output_tokens: int | None) -> dict[int, Any] | None:
    """A response's steps by the draft length they were proposed at (``per_step_drafted``), or None."""
    metrics = resp.get(REQUEST_METRICS)
    if not isinstance(metrics, Mapping):
        return None
    return steps_by_draft_len(metrics, k=k, max_tokens=max_tokens, output_tokens=output_tokens)

#: vLLM 0.34.0 ``vllm/config/speculative.py`` (``SpeculativeConfig``): settings other than the default that
#: change what the draft proposes or what verification keeps, so the real AL: they choose among curves.
SELECTOR_KEYS: dict[str, str] = {
    "draft_lm_head_quantization": "the draft's copy of the shared lm_head quantized (fp8, nvfp4; default off)",
    "dspark_draft_topk": "Qwen3 DSpark Markov projection on the top-k base-logit candidates only (default all)",
    "fly_window_size": "FLy deferred window (rejection_sample_method fly; default min(6, k - 1))",
    "fly_entropy_threshold": "FLy loose-acceptance entropy bound (default 0.3)",
    "fly_entropy_top_k": "FLy entropy gate's top-k probabilities (default 3)",
}
_LM_HEAD_QUANT = ("fp8", "nvfp4")
_FLY_DEFAULTS = {"fly_entropy_threshold": 0.3, "fly_entropy_top_k": 3}


def curve_selectors(spec: Mapping[str, Any], k: int | None) -> dict[str, str]:
    """The curve selectors of a speculative config (``spec["config"]``): each :data:`SELECTOR_KEYS` setting
    set to other than its default (FLy's only under ``rejection_sample_method: fly``, where they apply).

    Raises:
        UsageError: a value vLLM refuses (naming the key, the value and what it accepts).
    """
    cfg = spec.get("config") or {}
    if not isinstance(cfg, Mapping):
        raise plugin.UsageError(f"{FLAG_SPEC_CONFIG[2:]} is not a JSON object, got {cfg!r}")
    out: dict[str, str] = {}
    quant = cfg.get("draft_lm_head_quantization")
    if quant is not None:
        if str(quant).strip().lower() not in _LM_HEAD_QUANT:
            raise plugin.UsageError(f"draft_lm_head_quantization={quant!r}: vLLM accepts {' or '.join(_LM_HEAD_QUANT)}")
        out["draft_lm_head_quantization"] = plugin.selector_text(quant, "draft_lm_head_quantization")
    topk = cfg.get("dspark_draft_topk")
    if topk is not None:
        out["dspark_draft_topk"] = str(_positive_int(topk, "dspark_draft_topk"))
    if str(cfg.get(METHOD_KEY) or "").strip().lower() == "fly":
        window = cfg.get("fly_window_size")
        if window is not None and (k is None or _positive_int(window, "fly_window_size") != min(6, k - 1)):
            out["fly_window_size"] = str(_positive_int(window, "fly_window_size"))
        for key, default in _FLY_DEFAULTS.items():
            value = cfg.get(key)
            if value is not None and plugin.parse_number(str(value)) != default:
                out[key] = plugin.selector_text(value, key)
    return out


def require_lossless(spec: Mapping[str, Any], where: str) -> None:
    """Refuse a speculative config whose verification is lossy: ``rejection_sample_method: fly`` accepts drafts
    the target would reject (vLLM 0.34.0 ``vllm/config/speculative.py``: "FLy verification is a lossy
    speculative decoding method"), so its AL is no curve point.

    Raises:
        LossyAcceptanceError: FLy, naming where it was seen.
    """
    if str(spec.get(METHOD_KEY) or "").strip().lower() == "fly":
        raise plugin.LossyAcceptanceError(
            f"{where}: the vLLM server verifies with FLy ({METHOD_KEY}: fly), which accepts drafts the target "
            "would reject: its AL is inflated and is not the draft's",
            hint=f"restart it with {METHOD_KEY} standard (or block) to measure a golden AL")


def _positive_int(value: Any, key: str) -> int:
    n = plugin.int_flag(value, key)
    if n is None or n < 1:
        raise plugin.UsageError(f"{key}={value!r}: vLLM requires an integer >= 1")
    return n



def env_draft_len(algorithm: str | None, values: Mapping[str, int]) -> plugin.DraftLen:
    """k from ``golden-al env --num-speculative-tokens N``: N itself."""
    return plugin.DraftLen(int(values["num_speculative_tokens"]), "--num-speculative-tokens N")


PROFILE = plugin.EngineProfile(
    name="vllm",
    frameworks=("dynamo-vllm", "vllm", "vllm-disagg"),
    display_name="vLLM",
    algorithms=("mtp", "eagle", "eagle3", "dflash", "dspark", "ngram", "draft_model", "suffix"),
    versions=VERSIONS,
    version_patterns=VERSION_PATTERNS,
    draft_len_rules=(plugin.DraftLenRule("*", f"k = {FLAG_SPEC_CONFIG} {K_KEY}", True, _CONFIG),),
    sources=(_CONFIG, _METRICS, _STATS, _SERVER),
    curve_methods=CURVE_METHODS,
    curve_method_of=curve_method_of,
    env_prefixes=("VLLM_",),
    check=plugin.CheckSupport(
        forced_in_args=forced_in_args,
        forced_in_config=forced_in_config,
        forced_in_log_line=forced_in_log_line,
        env_options=(plugin.EnvOption("--num-speculative-tokens", f"vLLM {K_KEY} (k = N)"),),
        env_draft_len=env_draft_len,
        review_pin=review_pin,
        curve_selectors=curve_selectors,
        selector_keys=SELECTOR_KEYS,
        settings_draft_len=settings_draft_len,
        harness_pin=harness_pin,
        script_pin=plugin.lazy(f"{__name__}.pins:vllm_pin"),
        script_flags=(FLAG_SPEC_CONFIG,),
        synthetic_knobs=(
            plugin.SyntheticKnob(METHOD_KEY, "config-key", "choice", role="companion", choices=REJECTION_METHODS,
                                 required_value=SYNTHETIC_METHOD, switch_value=SYNTHETIC_METHOD,
                                 real_value=REAL_METHOD_DEFAULT, source=_CONFIG),
            plugin.SyntheticKnob(LENGTH_KEY, "config-key", "al", source=_CONFIG),
            plugin.SyntheticKnob(RATES_KEY, "config-key", "rates", aliases=(LEGACY_RATE_KEY,), source=_CONFIG),
        ),
        synthetic_settings=synthetic_settings,
        shell_variable=SHELL_VARIABLE,
        shell_value=shell_value,
        runtime_draft_len=(
            plugin.RuntimeDraftLen(("num_speculative_tokens_per_batch_size",),
                                   "chooses the number of speculative tokens by batch size at run time", _CONFIG_034),
            plugin.RuntimeDraftLen(("enable_adaptive_verification",),
                                   "sizes the verification budget per request at run time", _CONFIG_034),
        ),
    ),
    server=plugin.ServerSupport(
        metrics=(
            plugin.Metric(METRIC_DRAFTS, "counter", "request-steps that carried drafts", source=_METRICS),
            plugin.Metric(METRIC_DRAFT_TOKENS, "counter", "drafted tokens", source=_METRICS),
            plugin.Metric(METRIC_ACCEPTED, "counter", "accepted draft tokens (bonus excluded)", source=_METRICS),
            plugin.Metric(METRIC_ACCEPTED_PER_POS, "counter", "accepted draft tokens by position", (POSITION_LABEL,),
                          _METRICS),
        ),
        response_fields={
            "num_verify_steps": plugin.ResponseField("verify steps", (REQ_STEPS,), f"{REQUEST_METRICS}.{REQUEST_SPEC}", _STATS),
            "num_accepted_drafts": plugin.ResponseField("accepted drafts", (REQ_ACCEPTED,), f"{REQUEST_METRICS}.{REQUEST_SPEC}",
                                                        _STATS),
            "num_draft_tokens": plugin.ResponseField("drafted tokens", (REQ_DRAFT_TOKENS,), f"{REQUEST_METRICS}.{REQUEST_SPEC}",
                                                     _STATS),
            "histogram": plugin.ResponseField("steps by accepted drafts", (REQ_HISTOGRAM,), f"{REQUEST_METRICS}.{REQUEST_SPEC}",
                                              _STATS),
            "k": plugin.ResponseField("draft length", (REQ_K,), f"{REQUEST_METRICS}.{REQUEST_SPEC}", _STATS),
            "reported_al": plugin.ResponseField("mean acceptance length", (REQ_MEAN_AL,), f"{REQUEST_METRICS}.{REQUEST_SPEC}",
                                                _STATS),
        },
        server_info_fields={"config": SPEC_CONFIG_KEY},
        counter_reader=plugin.lazy(f"{__name__}.counters:read"),
        reference_flavor=plugin.lazy(f"{__name__}.reference:VllmFlavor"),
        counter_marker=METRIC_DRAFTS,
        lifetime_prefixes=(METRIC_PREFIX,),
        al_sources=("vllm-prometheus", "vllm-per-request"),
        source_impls={
            "vllm-prometheus": plugin.lazy(f"{__name__}.server:VllmPrometheusSource"),
            "vllm-per-request": plugin.lazy(f"{__name__}.server:PER_REQUEST"),
        },
        per_request_source="vllm-per-request",
        per_request_probe=per_request_probe,
        response_steps_by_draft_len=response_steps_by_draft_len,
        server_probe=plugin.lazy(f"{__name__}.server:probe"),
    ),
    launch=plugin.LaunchSupport(
        spec_flags=lambda algorithm, k, **kw: [FLAG_SPEC_CONFIG, json.dumps(
            speculative_config(k, method=algorithm, **kw), separators=(",", ":"))],
        launch_command=("-m", LAUNCH_MODULE),
        server_args=server_args,
        reserved_flags=("--model", "--port", "--host", "--tensor-parallel-size", "-tp", *SPEC_CONFIG_FLAGS,
                        "--served-model-name", FLAG_PER_REQUEST_METRICS),
        launch_method=method_for_launch,
    ),
    simulate=plugin.SimulateSupport(
        default_sampler="synthetic",
        samplers={"synthetic": plugin.lazy(f"{__name__}.sampler:VllmSynthetic")},
        simulator_settings=simulator_settings,
        simulate_options=(plugin.SimulateOption(
            "--rates", "rates", metavar="P1,P2,...", parse=plugin.parse_rates, gives_al=_simulate_rates_al,
            help=f"{RATES_KEY}, K unconditional non-increasing rates in [0, 1]"),),
    ),
    run_logs=plugin.RunLogSupport(
        log_patterns=LOG_PATTERNS,
        run_evidence=plugin.lazy(f"{__name__}.evidence:read"),
        log_reader=plugin.LogReader(plugin.lazy(f"{__name__}.logs:parse_vllm_spec_line"), ("SpecDecoding metrics",)),
        importers={"vllm-bench": plugin.lazy(f"{__name__}.imported:import_bench_files"),
                   "vllm-log": plugin.lazy(f"{__name__}.imported:import_vllm_log"),
                   "inferencex-speedbench": plugin.lazy(f"{__name__}.inferencex:import_inferencex")},
    ),
    recipe=plugin.RecipeFormat(RECIPE_CONFIG_KEY, RECIPE_BACKEND_TYPES, read_recipe_role, inject_into="config",
                               spec_keys=RECIPE_SPEC_KEYS,
                               config_pin=plugin.lazy(f"{__name__}.pins:recipe_config_pin")),
)
